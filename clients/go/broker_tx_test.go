package queen

// Broker tests (QUEEN_URL; helpers in broker_test.go).

import (
	"fmt"
	"testing"
	"time"
)

func TestBrokerTransactionAckPush(t *testing.T) {
	c, ctx := broker(t)
	src, dst := c.Queue(uniq("txsrc")), c.Queue(uniq("txdst"))
	mustPush(t, ctx, src, n(1))
	ms, err := src.Wait(false).Pop(ctx)
	if err != nil || len(ms) != 1 {
		t.Fatalf("%d %v", len(ms), err)
	}
	r, err := c.Transaction().Ack(StatusCompleted, ms[0]).Push(dst.Partition("out"), Item{Data: map[string]int{"n": 2}, TransactionID: "derived-1"}).Commit(ctx)
	if err != nil || !r.Success || len(r.Results) != 2 {
		t.Fatalf("commit: %+v %v", r, err)
	}
	if left, _ := src.Wait(false).Pop(ctx); len(left) != 0 {
		t.Fatal("the acked message came back")
	}
	out, err := dst.Partition("out").Wait(false).Pop(ctx)
	if err != nil || len(out) != 1 || out[0].TransactionID != "derived-1" {
		t.Fatalf("pushed: %d %v", len(out), err)
	}
	// the lease is gone now: the same ack again is refused (an error, nothing pushed)
	if _, err := c.Transaction().Ack(StatusCompleted, ms[0]).Push(dst, n(3)).Commit(ctx); err == nil {
		t.Fatal("a transaction acking a settled message committed")
	}
	if _, err := c.Transaction().Commit(ctx); err == nil {
		t.Fatal("an empty transaction was sent")
	}
}

func TestBrokerTransactionRiders(t *testing.T) {
	c, ctx := broker(t)
	dst := c.Queue(uniq("txkv"))
	ns := uniq("ns")
	first, err := c.Transaction().Once(ns, "event-1", time.Hour).Push(dst, n(1)).KV(KVIncr(ns, "count", 1, Forever)).Commit(ctx)
	if err != nil || !first.Success {
		t.Fatalf("first: %+v %v", first, err)
	}
	second, err := c.Transaction().Once(ns, "event-1", time.Hour).Push(dst, n(2)).KV(KVIncr(ns, "count", 1, Forever)).Commit(ctx)
	if err != nil || second.Success || second.Reason != "kv_precondition" || second.FailedIndex == nil || *second.FailedIndex != 1 {
		t.Fatalf("second (the gate must hold): %+v %v", second, err)
	}
	ms, _ := dst.Batch(10).Wait(false).Pop(ctx)
	if fmt.Sprint(payloads(t, ms)) != "[1]" {
		t.Fatalf("pushed %v", payloads(t, ms))
	}
	cnt, err := c.KV().Get(ctx, ns, "count")
	if err != nil || !cnt.Found || string(cnt.Value) != "1" {
		t.Fatalf("count: %+v %v", cnt, err)
	}
	tq := uniq("txtimer")
	r, err := c.Transaction().KV(KVPut(ns, "k", "v", Forever)).Timers(TimerSchedule(tq, "t1", map[string]int{"n": 5}, time.Hour)).Commit(ctx)
	if err != nil || !r.Success {
		t.Fatalf("kv+timer only: %+v %v", r, err)
	}
	p, err := c.Timers().Peek(ctx, tq, "t1")
	if err != nil || !p.Found || string(p.Payload) != `{"n":5}` {
		t.Fatalf("peek: %+v %v", p, err)
	}
	if _, err := c.Transaction().KV(KVGetPrefix(ns, "k")).Commit(ctx); ErrorCode(err) != "kv_invalid_op" {
		t.Fatalf("getPrefix in a transaction: %v", err)
	}
}
