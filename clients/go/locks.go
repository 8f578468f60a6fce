package queen

// Locks and semaphores on the 2.x wire: POST /api/v1/locks {operations}; ops independent,
// verdicts at 200. A held permit's token changes at every renew; its guard is the KV check op a
// transaction carries (Transaction.Guard) to commit only while the permit is still held.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// Locks is the lock API (Client.Locks).
type Locks struct{ c *Client }

// Locks returns the lock API.
func (c *Client) Locks() Locks { return Locks{c} }

// Batch sends raw lock ops ({"op": "acquire", ...}); one result per op, in order.
func (l Locks) Batch(ctx context.Context, ops ...map[string]any) ([]json.RawMessage, error) {
	var a struct {
		Results []json.RawMessage `json:"results"`
	}
	if err := l.c.Do(ctx, "POST", "/api/v1/locks", map[string]any{"operations": ops}, &a); err != nil {
		return nil, err
	}
	if len(a.Results) != len(ops) {
		return nil, fmt.Errorf("queen: locks: %d results for %d ops", len(a.Results), len(ops))
	}
	return a.Results, nil
}

// LockHolder is one holder of a lock's permit.
type LockHolder struct {
	Slot      int    `json:"slot"`
	Owner     string `json:"owner"`
	Token     int64  `json:"token"`
	Since     string `json:"since"`
	ExpiresAt string `json:"expiresAt"`
	RenewedAt string `json:"renewedAt"`
}

// LockInfo is the answer of Get.
type LockInfo struct {
	Held    bool         `json:"held"`
	Holders []LockHolder `json:"holders"`
}

// Get reads who holds name.
func (l Locks) Get(ctx context.Context, name string) (LockInfo, error) {
	rs, err := l.Batch(ctx, map[string]any{"op": "get", "name": name})
	if err != nil {
		return LockInfo{}, err
	}
	var info LockInfo
	err = json.Unmarshal(rs[0], &info)
	return info, err
}

// LockOptions configures a Lock.
type LockOptions struct {
	// TTL is the permit's lifetime, renewed every TTL/3 while held (default 30 s; whole
	// seconds, rounded up).
	TTL time.Duration
	// Limit > 1 makes it a semaphore of that many permits (up to 1024).
	Limit int
	// Owner names this holder (default host:pid:12hex).
	Owner string
}

// Lock is one lock (or semaphore permit) handle. Safe for concurrent use.
type Lock struct {
	locks Locks
	name  string
	ttl   int64
	limit int
	owner string

	mu       sync.Mutex
	token    int64
	slot     int
	hasSlot  bool
	guard    json.RawMessage
	lost     bool
	deadline time.Time
	stop     chan struct{}
	done     chan struct{}
}

// Lock returns a handle of name; nothing is sent until Acquire.
func (l Locks) Lock(name string, opts LockOptions) *Lock {
	ttl := int64((opts.TTL + time.Second - 1) / time.Second)
	if ttl <= 0 {
		ttl = 30
	}
	owner := opts.Owner
	if owner == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "host"
		}
		owner = fmt.Sprintf("%s:%d:%s", host, os.Getpid(), randHex(6))
	}
	return &Lock{locks: l, name: name, ttl: ttl, limit: opts.Limit, owner: owner}
}

// LockVerdict is the answer of Acquire, Renew or Release.
type LockVerdict struct {
	Acquired bool            `json:"acquired"`
	Renewed  bool            `json:"renewed"`
	Released bool            `json:"released"`
	Already  bool            `json:"already"`
	Reason   string          `json:"reason"` // held, contended, lost
	Slot     *int            `json:"slot"`
	Token    int64           `json:"token"`
	Owner    string          `json:"owner"`
	Guard    json.RawMessage `json:"guard"`
	Holders  []LockHolder    `json:"holders"`
}

func (k *Lock) Name() string  { return k.name }
func (k *Lock) Owner() string { return k.owner }

// Token is the permit's current token (0 when not held).
func (k *Lock) Token() int64 { k.mu.Lock(); defer k.mu.Unlock(); return k.token }

// Held reports whether the permit is held: acquired, not lost, and its lifetime not passed
// on the local clock.
func (k *Lock) Held() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.token != 0 && !k.lost && time.Now().Before(k.deadline)
}

func (k *Lock) one(ctx context.Context, op map[string]any) (LockVerdict, error) {
	rs, err := k.locks.Batch(ctx, op)
	if err != nil {
		return LockVerdict{}, err
	}
	var v LockVerdict
	if err := json.Unmarshal(rs[0], &v); err != nil {
		return LockVerdict{}, fmt.Errorf("queen: locks: %w", err)
	}
	return v, nil
}

// Acquire tries once to take the lock (a permit of the semaphore). Acquired false: it is held
// (Reason held or contended). While held, the permit is renewed every TTL/3 in the background
// until Release or loss.
func (k *Lock) Acquire(ctx context.Context) (LockVerdict, error) {
	op := map[string]any{"op": "acquire", "name": k.name, "ttlSeconds": k.ttl, "owner": k.owner}
	if k.limit > 0 {
		op["limit"] = k.limit
	}
	v, err := k.one(ctx, op)
	if err != nil || !v.Acquired {
		return v, err
	}
	k.mu.Lock()
	k.token, k.guard, k.lost = v.Token, v.Guard, false
	k.hasSlot = v.Slot != nil
	if v.Slot != nil {
		k.slot = *v.Slot
	}
	k.deadline = time.Now().Add(time.Duration(k.ttl) * time.Second)
	if k.stop == nil {
		k.stop, k.done = make(chan struct{}), make(chan struct{})
		go k.renewLoop(k.stop, k.done)
	}
	k.mu.Unlock()
	return v, nil
}

func (k *Lock) renewLoop(stop, done chan struct{}) {
	defer close(done)
	defer func() {
		// ended by itself (the permit was lost): a later Acquire starts a new loop
		k.mu.Lock()
		if k.stop == stop {
			k.stop, k.done = nil, nil
		}
		k.mu.Unlock()
	}()
	every := time.Duration(k.ttl) * time.Second / 3
	if every < 100*time.Millisecond {
		every = 100 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), every)
			v, err := k.Renew(ctx)
			cancel()
			if err == nil && !v.Renewed {
				return
			}
		}
	}
}

// Renew renews the permit now (the background renewal does it by itself). Renewed false: the
// permit is lost.
func (k *Lock) Renew(ctx context.Context) (LockVerdict, error) {
	k.mu.Lock()
	if k.token == 0 || k.lost || !time.Now().Before(k.deadline) {
		k.lost = true
		k.mu.Unlock()
		return LockVerdict{Reason: "lost"}, nil
	}
	op := map[string]any{"op": "renew", "name": k.name, "token": k.token, "ttlSeconds": k.ttl, "owner": k.owner}
	if k.hasSlot {
		op["slot"] = k.slot
	}
	k.mu.Unlock()
	v, err := k.one(ctx, op)
	if err != nil {
		return v, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if v.Renewed {
		k.token, k.guard = v.Token, v.Guard
		k.deadline = time.Now().Add(time.Duration(k.ttl) * time.Second)
	} else {
		k.lost = true
	}
	return v, nil
}

// Release gives the permit back and stops the renewal.
func (k *Lock) Release(ctx context.Context) (LockVerdict, error) {
	k.mu.Lock()
	stop, done := k.stop, k.done
	k.stop, k.done = nil, nil
	k.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	k.mu.Lock()
	if k.token == 0 {
		k.mu.Unlock()
		return LockVerdict{}, nil
	}
	op := map[string]any{"op": "release", "name": k.name, "token": k.token}
	if k.hasSlot {
		op["slot"] = k.slot
	}
	k.token = 0
	k.mu.Unlock()
	return k.one(ctx, op)
}

// guardOp is the KV check op of the permit at its current token, for a transaction's kv
// rider.
func (k *Lock) guardOp() (json.RawMessage, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.token == 0 {
		return nil, &InvalidError{Message: fmt.Sprintf("lock %q is not held", k.name)}
	}
	if len(k.guard) > 0 {
		var g map[string]any
		if json.Unmarshal(k.guard, &g) == nil {
			g["required"] = true
			g["expect"] = k.token
			return json.Marshal(g)
		}
	}
	key := k.name + "#0"
	if k.hasSlot {
		key = fmt.Sprintf("%s#%d", k.name, k.slot)
	}
	return json.Marshal(map[string]any{"op": "check", "ns": "queen-locks", "key": key, "expect": k.token, "required": true})
}

// setToken is the transaction's resend after the holder's own renew moved the token.
func (k *Lock) setToken(t int64) {
	k.mu.Lock()
	k.token = t
	k.mu.Unlock()
}

func (k *Lock) markLost() {
	k.mu.Lock()
	k.lost = true
	k.mu.Unlock()
}
