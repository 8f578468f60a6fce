package queen

// Broker tests (QUEEN_URL; helpers in broker_test.go).

import (
	"errors"
	"testing"
	"time"
)

func TestBrokerKV(t *testing.T) {
	c, ctx := broker(t)
	kv := c.KV()
	ns := uniq("kv")
	r, err := kv.Put(ctx, ns, "a", map[string]any{"x": 1}, Forever)
	if err != nil || !r.Applied || r.Version <= 0 {
		t.Fatalf("put: %+v %v", r, err)
	}
	v1 := r.Version
	g, err := kv.Get(ctx, ns, "a")
	if err != nil || !g.Found || string(g.Value) != `{"x":1}` || g.Version != v1 || g.ExpiresAt != nil {
		t.Fatalf("get: %+v %v", g, err)
	}
	if r, _ = kv.PutIfAbsent(ctx, ns, "a", 2, time.Minute); r.Applied || r.Reason != "exists" {
		t.Fatalf("putIfAbsent on a live key: %+v", r)
	}
	b, err := kv.Batch(ctx, KVPut(ns, "a", 3, time.Minute).Expect(v1+1000), KVPut(ns, "a", 4, time.Minute).Expect(v1))
	if err != nil || b.Results[0].Applied || b.Results[0].Reason != "version" || !b.Results[1].Applied {
		t.Fatalf("fenced puts: %+v %v", b, err)
	}
	if b.Results[1].ExpiresAt == nil {
		t.Fatal("a put with a TTL has no expiresAt")
	}
	for i := 0; i < 3; i++ {
		if r, err = kv.Incr(ctx, ns, "n", 2, Forever); err != nil || !r.Applied {
			t.Fatalf("incr: %+v %v", r, err)
		}
	}
	if string(r.Value) != "6" {
		t.Fatalf("counter %s", r.Value)
	}
	if r, _ = kv.one(ctx, KVIncr(ns, "n", 5, Forever).Max(10)); r.Applied || r.Reason != "max_exceeded" {
		t.Fatalf("incr past max: %+v", r)
	}
	m, err := kv.GetMany(ctx, ns, "a", "n", "zz")
	if err != nil || len(m.Rows) != 2 || len(m.Missing) != 1 || m.Missing[0] != "zz" {
		t.Fatalf("getMany: %+v %v", m, err)
	}
	for _, k := range []string{"p/1", "p/2", "p/3"} {
		if _, err := kv.Put(ctx, ns, k, k, Forever); err != nil {
			t.Fatal(err)
		}
	}
	page, err := kv.GetPrefix(ctx, ns, "p/", "", 2)
	if err != nil || len(page.Rows) != 2 || !page.Truncated || page.NextAfter == nil || *page.NextAfter != "p/2" {
		t.Fatalf("getPrefix: %+v %v", page, err)
	}
	page, err = kv.GetPrefix(ctx, ns, "p/", *page.NextAfter, 2)
	if err != nil || len(page.Rows) != 1 || page.Rows[0].Key != "p/3" || page.Truncated {
		t.Fatalf("getPrefix page 2: %+v %v", page, err)
	}
	cur, _ := kv.Get(ctx, ns, "a")
	if r, err = kv.Check(ctx, ns, "a", cur.Version); err != nil || !r.Applied {
		t.Fatalf("check: %+v %v", r, err)
	}
	// a required op that does not apply rolls the batch back
	b, err = kv.Batch(ctx, KVPut(ns, "rb", 1, Forever), KVCheck(ns, "a", cur.Version+1).Required())
	if err != nil || !b.RolledBack || b.FailedIndex != 1 {
		t.Fatalf("rollback: %+v %v", b, err)
	}
	if g, _ = kv.Get(ctx, ns, "rb"); g.Found {
		t.Fatal("a rolled-back put was kept")
	}
	if r, err = kv.Delete(ctx, ns, "a"); err != nil || !r.Applied {
		t.Fatalf("delete: %+v %v", r, err)
	}
	if r, _ = kv.Delete(ctx, ns, "a"); r.Applied || r.Reason != "absent" {
		t.Fatalf("delete absent: %+v", r)
	}
	// refused client-side, as the 2.x clients do
	if _, err := kv.Put(ctx, ns, "x", 1, 0); ErrorCode(err) != "kv_expiry_not_specified" {
		t.Fatalf("no expiry: %v", err)
	}
	if _, err := kv.GetPrefix(ctx, ns, "", "", 0); ErrorCode(err) != "kv_prefix_required" {
		t.Fatalf("no prefix: %v", err)
	}
	// refused by the broker, with its stable code
	var ae *APIError
	if _, err := kv.Put(ctx, "", "x", 1, Forever); !errors.As(err, &ae) || ae.Status != 400 || ae.Code != "kv_invalid_name" {
		t.Fatalf("empty ns: %v", err)
	}
}
