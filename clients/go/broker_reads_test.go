package queen

// Broker tests (QUEEN_URL; helpers in broker_test.go).

import (
	"testing"
	"time"
)

func TestBrokerFetchAndChanged(t *testing.T) {
	c, ctx := broker(t)
	q := c.Queue(uniq("fetch"))
	before := time.Now().Add(-time.Second)
	for i := 0; i < 5; i++ {
		mustPush(t, ctx, q.Partition("a"), n(i))
	}
	mustPush(t, ctx, q.Partition("b"), n(100))
	f, err := q.Partition("a").Fetch(ctx, 0)
	if err != nil || len(f.Records) != 5 || f.HighWatermark != 5 || f.NextOffset != 5 || f.Records[4].Offset != 4 {
		t.Fatalf("fetch: %+v %v", f, err)
	}
	if string(f.Records[2].Payload) != `{"n":2}` || f.Records[0].TS == "" || f.Records[0].TransactionID == "" {
		t.Fatalf("record: %+v", f.Records[2])
	}
	f, err = c.Fetch(ctx, q.Name(), "a", 3)
	if err != nil || len(f.Records) != 2 || f.Records[0].Offset != 3 {
		t.Fatalf("fetch from 3: %+v %v", f, err)
	}
	f, err = c.Fetch(ctx, q.Name(), "nope", 0)
	if err != nil || !f.Unknown {
		t.Fatalf("unknown partition: %+v %v", f, err)
	}
	// a lease-free read moves no cursor: a pop still gets everything
	ms, _ := q.Partition("a").Batch(10).Wait(false).Pop(ctx)
	if len(ms) != 5 {
		t.Fatalf("pop after fetch: %d", len(ms))
	}
	ch, err := q.ChangedSince(ctx, time.Time{})
	if err != nil || len(ch.Partitions) != 2 || ch.SafeTime == "" {
		t.Fatalf("changed: %+v %v", ch, err)
	}
	for _, p := range ch.Partitions {
		if p.Name == "a" && p.LastOffset != 4 || p.Name == "b" && p.LastOffset != 0 || p.ID == "" || p.LastWriteAt == "" {
			t.Fatalf("partition %+v", p)
		}
	}
	if ch, err = q.ChangedSince(ctx, before); err != nil || len(ch.Partitions) != 2 {
		t.Fatalf("changed since before: %+v %v", ch, err)
	}
	later, _ := time.Parse(time.RFC3339Nano, ch.SafeTime)
	if ch, err = q.ChangedSince(ctx, later.Add(time.Microsecond)); err != nil || len(ch.Partitions) != 0 {
		t.Fatalf("changed since safeTime: %+v %v", ch, err)
	}
	if ch, err = c.ChangedSince(ctx, uniq("none"), time.Time{}); err != nil || len(ch.Partitions) != 0 {
		t.Fatalf("changed of an unknown queue: %+v %v", ch, err)
	}
}
