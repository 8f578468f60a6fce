package queen

// Transactions: acks and pushes committed together (POST /api/v1/transaction), with the kv and
// timers riders (top-level siblings of operations, omitted when unused) applied in the same
// PostgreSQL transaction.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Transaction is a bundle being built; Commit sends it. Not safe for concurrent use.
type Transaction struct {
	c          *Client
	operations []map[string]any
	leases     []string
	kv         []KVOp
	guards     []*Lock
	timers     []TimerOp
	err        error
}

// Transaction starts a bundle.
func (c *Client) Transaction() *Transaction {
	return &Transaction{c: c, operations: []map[string]any{}}
}

// Ack adds the ack of messages with status (StatusCompleted, ...). Every ack carries its
// message's leaseId, and the bundle requires those leases.
func (t *Transaction) Ack(status string, ms ...Message) *Transaction {
	for _, m := range ms {
		op := map[string]any{"type": "ack", "transactionId": m.TransactionID, "partitionId": m.PartitionID, "status": status}
		if g := m.group(); g != nil {
			op["consumerGroup"] = g
		}
		if m.LeaseID != "" {
			op["leaseId"] = m.LeaseID
			seen := false
			for _, l := range t.leases {
				seen = seen || l == m.LeaseID
			}
			if !seen {
				t.leases = append(t.leases, m.LeaseID)
			}
		}
		t.operations = append(t.operations, op)
	}
	return t
}

// Push adds a push of items to q (its partition, minted transactionIds, as Queue.Push).
func (t *Transaction) Push(q Queue, items ...Item) *Transaction {
	body := make([]pushItem, len(items))
	for i, it := range items {
		body[i] = q.pushItem(it)
	}
	t.operations = append(t.operations, map[string]any{"type": "push", "items": body})
	return t
}

// KV adds ops to the kv rider. KVGetPrefix is refused (unbounded inside a transaction).
func (t *Transaction) KV(ops ...KVOp) *Transaction {
	for _, o := range ops {
		if o.m["op"] == "getPrefix" && t.err == nil {
			t.err = &InvalidError{Code: "kv_invalid_op", Message: "getPrefix is refused inside a transaction (unbounded cost)"}
		}
		if o.err != nil && t.err == nil {
			t.err = o.err
		}
	}
	t.kv = append(t.kv, ops...)
	return t
}

// Timers adds ops to the timers rider.
func (t *Transaction) Timers(ops ...TimerOp) *Transaction {
	for _, o := range ops {
		if o.err != nil && t.err == nil {
			t.err = o.err
		}
	}
	t.timers = append(t.timers, ops...)
	return t
}

// Once is the dedup gate: a required putIfAbsent of (ns, key) — the whole bundle rolls back
// (TxResult.Reason "kv_precondition") when the key is live. ttl: a TTL or Forever.
func (t *Transaction) Once(ns, key string, ttl time.Duration) *Transaction {
	return t.KV(KVPutIfAbsent(ns, key, true, ttl).Required())
}

// Guard commits the bundle only while lock is still held: its check op goes first in the kv
// rider. When the holder's own background renew moved the token meanwhile, Commit resends
// with the new token (at most 3 times); otherwise the lock is marked lost.
func (t *Transaction) Guard(lock *Lock) *Transaction {
	t.guards = append(t.guards, lock)
	return t
}

// TxResult is the answer of a committed bundle.
type TxResult struct {
	Success bool `json:"success"`
	// Reason is "kv_precondition" when a required kv op (a Once, a Guard) did not apply:
	// nothing was committed. FailedIndex is that op's index in Results' flat layout.
	Reason        string            `json:"reason"`
	KVReason      string            `json:"kvReason"`
	FailedIndex   *int              `json:"failedIndex"`
	Version       int64             `json:"version"`
	Value         json.RawMessage   `json:"value"`
	Error         string            `json:"error"`
	TransactionID string            `json:"transactionId"`
	Results       []json.RawMessage `json:"results"`
	Raw           json.RawMessage   `json:"-"`
}

func (t *Transaction) flatPushAckCount() int {
	n := 0
	for _, op := range t.operations {
		if items, ok := op["items"].([]pushItem); ok {
			n += len(items)
		} else {
			n++
		}
	}
	return n
}

// Commit sends the bundle. A lost precondition returns a TxResult with Success false and
// Reason "kv_precondition" (not an error); any other failure is an error.
func (t *Transaction) Commit(ctx context.Context) (TxResult, error) {
	if t.err != nil {
		return TxResult{}, t.err
	}
	if len(t.operations) == 0 && len(t.kv) == 0 && len(t.timers) == 0 && len(t.guards) == 0 {
		return TxResult{}, &InvalidError{Message: "a transaction needs at least one operation"}
	}
	for attempt := 0; ; attempt++ {
		body := map[string]any{"operations": t.operations, "requiredLeases": append([]string{}, t.leases...)}
		var kv []any
		for _, g := range t.guards {
			op, err := g.guardOp()
			if err != nil {
				return TxResult{}, err
			}
			kv = append(kv, op)
		}
		for _, o := range t.kv {
			kv = append(kv, o)
		}
		if len(kv) > 0 {
			body["kv"] = kv
		}
		if len(t.timers) > 0 {
			body["timers"] = t.timers
		}
		var raw json.RawMessage
		if err := t.c.Do(ctx, "POST", "/api/v1/transaction", body, &raw); err != nil {
			return TxResult{}, err
		}
		var r TxResult
		if err := json.Unmarshal(raw, &r); err != nil {
			return TxResult{}, fmt.Errorf("queen: transaction: answer %s", raw)
		}
		r.Raw = raw
		if !r.Success && r.Reason == "kv_precondition" {
			if r.FailedIndex != nil {
				gi := *r.FailedIndex - t.flatPushAckCount()
				if gi >= 0 && gi < len(t.guards) {
					lock := t.guards[gi]
					var owner struct {
						Owner string `json:"owner"`
					}
					_ = json.Unmarshal(r.Value, &owner)
					if r.KVReason == "version" && owner.Owner == lock.owner && attempt < 3 {
						lock.setToken(r.Version)
						continue
					}
					lock.markLost()
				}
			}
			return r, nil
		}
		if !r.Success {
			msg := r.Error
			if msg == "" {
				msg = string(raw)
			}
			return r, fmt.Errorf("queen: transaction: %s", msg)
		}
		return r, nil
	}
}
