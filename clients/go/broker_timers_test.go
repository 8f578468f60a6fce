package queen

// Broker tests (QUEEN_URL; helpers in broker_test.go).

import (
	"testing"
	"time"
)

func TestBrokerTimers(t *testing.T) {
	c, ctx := broker(t)
	tm := c.Timers()
	q := uniq("timers")
	r, err := tm.Schedule(ctx, q, "soon/1", map[string]string{"hello": "timer"}, 0)
	if err != nil || !r.OK || r.Status != "scheduled" || r.Txn == "" || r.DeliverAt == "" {
		t.Fatalf("schedule: %+v %v", r, err)
	}
	ms, err := c.Queue(q).Timeout(15 * time.Second).Pop(ctx)
	if err != nil || len(ms) != 1 || string(ms[0].Data) != `{"hello":"timer"}` || ms[0].TransactionID != r.Txn {
		t.Fatalf("fired: %+v %v", ms, err)
	}
	rs, err := tm.Batch(ctx,
		TimerSchedule(q, "later/a", 1, time.Hour).Partition("p9"),
		TimerSchedule(q, "later/b", 2, time.Hour).Txn("my-txn"),
		TimerReschedule(q, "later/a", 3, 2*time.Hour),
		TimerCancel(q, "never"))
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Status != "scheduled" || rs[1].Txn != "my-txn" || rs[2].Status != "rescheduled" || rs[3].Status != "absent" || rs[3].OK {
		t.Fatalf("batch: %+v", rs)
	}
	p, err := tm.Peek(ctx, q, "later/a")
	if err != nil || !p.Found || string(p.Payload) != "3" || p.Partition != "p9" && p.Partition != "Default" {
		t.Fatalf("peek: %+v %v", p, err)
	}
	if p, err = tm.Peek(ctx, q, "nope"); err != nil || p.Found {
		t.Fatalf("peek miss: %+v %v", p, err)
	}
	page, err := tm.List(ctx, q, "", 1)
	if err != nil || len(page.Rows) != 1 || !page.Truncated || page.Rows[0].TimerKey != "later/a" {
		t.Fatalf("list: %+v %v", page, err)
	}
	page, err = tm.List(ctx, q, *page.NextAfter, 10)
	if err != nil || len(page.Rows) != 1 || page.Rows[0].TimerKey != "later/b" || page.Truncated {
		t.Fatalf("list page 2: %+v %v", page, err)
	}
	if r, err = tm.Cancel(ctx, q, "later/b"); err != nil || r.Status != "cancelled" || r.Txn != "my-txn" {
		t.Fatalf("cancel: %+v %v", r, err)
	}
	if r, err = tm.Cancel(ctx, q, "later/b"); err != nil || r.Status != "absent" {
		t.Fatalf("cancel again: %+v %v", r, err)
	}
}
