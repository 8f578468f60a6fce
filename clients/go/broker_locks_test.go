package queen

// Broker tests (QUEEN_URL; helpers in broker_test.go).

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestBrokerLocks(t *testing.T) {
	c, ctx := broker(t)
	name := uniq("lock")
	a := c.Locks().Lock(name, LockOptions{TTL: 3 * time.Second, Owner: "a"})
	b := c.Locks().Lock(name, LockOptions{TTL: 3 * time.Second, Owner: "b"})
	v, err := a.Acquire(ctx)
	if err != nil || !v.Acquired || !a.Held() || a.Token() <= 0 {
		t.Fatalf("acquire: %+v %v", v, err)
	}
	if v, err = b.Acquire(ctx); err != nil || v.Acquired || v.Reason != "held" {
		t.Fatalf("second holder: %+v %v", v, err)
	}
	info, err := c.Locks().Get(ctx, name)
	if err != nil || !info.Held || len(info.Holders) != 1 || info.Holders[0].Owner != "a" {
		t.Fatalf("get: %+v %v", info, err)
	}
	// the background renewal (every TTL/3) keeps it past its TTL, with a new token each time
	tok := a.Token()
	time.Sleep(3500 * time.Millisecond)
	if !a.Held() || a.Token() == tok {
		t.Fatalf("not renewed: held %v token %d -> %d", a.Held(), tok, a.Token())
	}
	// a guarded transaction commits while the lock is held ...
	ns := uniq("lockns")
	r, err := c.Transaction().Guard(a).KV(KVPut(ns, "k", 1, Forever)).Commit(ctx)
	if err != nil || !r.Success {
		t.Fatalf("guarded commit: %+v %v", r, err)
	}
	if v, err = a.Release(ctx); err != nil || !v.Released {
		t.Fatalf("release: %+v %v", v, err)
	}
	if v, err = b.Acquire(ctx); err != nil || !v.Acquired {
		t.Fatalf("acquire after release: %+v %v", v, err)
	}
	defer b.Release(context.Background())
	// ... and not once it is released (the guard of a handle that is not held is refused)
	if _, err := c.Transaction().Guard(a).KV(KVPut(ns, "k", 2, Forever)).Commit(ctx); err == nil {
		t.Fatal("a transaction guarded by a released lock was sent")
	}
	// a semaphore of 2
	sem := uniq("sem")
	s1 := c.Locks().Lock(sem, LockOptions{TTL: 10 * time.Second, Limit: 2})
	s2 := c.Locks().Lock(sem, LockOptions{TTL: 10 * time.Second, Limit: 2})
	s3 := c.Locks().Lock(sem, LockOptions{TTL: 10 * time.Second, Limit: 2})
	for i, s := range []*Lock{s1, s2, s3} {
		v, err := s.Acquire(ctx)
		if err != nil || v.Acquired != (i < 2) {
			t.Fatalf("permit %d: %+v %v", i, v, err)
		}
	}
	s1.Release(ctx)
	s2.Release(ctx)
}

func TestBrokerGuardResendAndLost(t *testing.T) {
	c, ctx := broker(t)
	name := uniq("lost")
	a := c.Locks().Lock(name, LockOptions{TTL: 30 * time.Second, Owner: "a"})
	if v, err := a.Acquire(ctx); err != nil || !v.Acquired {
		t.Fatal(v, err)
	}
	tok := a.Token()
	// the holder's own renew moved the row's version past the token this handle has (here a
	// stale token by hand): the guard fails with kvReason "version" and value.owner "a", and
	// the commit is resent with the row's token
	a.setToken(tok + 1000)
	dst := c.Queue(uniq("lostdst"))
	r, err := c.Transaction().Guard(a).Push(dst, n(1)).Commit(ctx)
	if err != nil || !r.Success || a.Token() != tok {
		t.Fatalf("resend after the holder's own token move: %+v %v (token %d, want %d)", r, err, a.Token(), tok)
	}
	// someone else holds it now (the permit was released behind the handle's back and taken
	// by b): the guard fails, nothing is committed, the handle is lost
	if _, err := c.Locks().Batch(ctx, map[string]any{"op": "release", "name": name, "token": tok}); err != nil {
		t.Fatal(err)
	}
	b := c.Locks().Lock(name, LockOptions{TTL: 30 * time.Second, Owner: "b"})
	if v, err := b.Acquire(ctx); err != nil || !v.Acquired {
		t.Fatal(v, err)
	}
	defer b.Release(context.Background())
	r, err = c.Transaction().Guard(a).Push(dst, n(2)).Commit(ctx)
	if err != nil || r.Success || r.Reason != "kv_precondition" || r.KVReason != "version" {
		t.Fatalf("commit under a lost guard: %+v %v", r, err)
	}
	if a.Held() {
		t.Fatal("the handle still says held")
	}
	ms, _ := dst.Batch(10).Wait(false).Pop(ctx)
	if fmt.Sprint(payloads(t, ms)) != "[1]" {
		t.Fatalf("pushed %v: the guarded push of a lost lock was committed", payloads(t, ms))
	}
	a.Release(ctx)
}

func TestBrokerLockReacquireAfterLoss(t *testing.T) {
	c, ctx := broker(t)
	name := uniq("reacq")
	a := c.Locks().Lock(name, LockOptions{TTL: time.Second, Owner: "a"})
	if v, err := a.Acquire(ctx); err != nil || !v.Acquired {
		t.Fatal(v, err)
	}
	// the permit is taken from under the handle: its next background renew finds it lost
	if _, err := c.Locks().Batch(ctx, map[string]any{"op": "release", "name": name, "token": a.Token()}); err != nil {
		t.Fatal(err)
	}
	b := c.Locks().Lock(name, LockOptions{TTL: 30 * time.Second, Owner: "b"})
	if v, err := b.Acquire(ctx); err != nil || !v.Acquired {
		t.Fatal(v, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for a.Held() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if a.Held() {
		t.Fatal("the handle did not notice the loss")
	}
	if _, err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// acquired again, the handle renews again: held past several TTLs
	if v, err := a.Acquire(ctx); err != nil || !v.Acquired {
		t.Fatal(v, err)
	}
	time.Sleep(2500 * time.Millisecond)
	if !a.Held() {
		t.Fatal("after a re-acquire the permit was not renewed")
	}
	if v, err := a.Release(ctx); err != nil || !v.Released {
		t.Fatalf("release: %+v %v", v, err)
	}
}
