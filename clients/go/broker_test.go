package queen

// Broker tests: against the node whose URL is QUEEN_URL (clients/go/scripts/test-with-broker.mjs
// starts one with its own PostgreSQL and always sets it). Skipped only when QUEEN_URL is unset.

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

var seq int64

func broker(t *testing.T) (*Client, context.Context) {
	t.Helper()
	if os.Getenv("QUEEN_URL") == "" {
		t.Skip("QUEEN_URL is not set (clients/go/scripts/test-with-broker.mjs sets it)")
	}
	c, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c, ctx
}

// uniq makes a name no other test (or earlier run on the same node) uses.
func uniq(prefix string) string {
	return fmt.Sprintf("go-%s-%d-%d", prefix, time.Now().UnixNano()%1e9, atomic.AddInt64(&seq, 1))
}

func mustPush(t *testing.T, ctx context.Context, q Queue, items ...Item) []PushResult {
	t.Helper()
	rs, err := q.Push(ctx, items...)
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	for i, r := range rs {
		if !r.IsQueued() {
			t.Fatalf("push item %d: %+v", i, r)
		}
	}
	return rs
}

func payloads(t *testing.T, ms []Message) []int {
	t.Helper()
	out := make([]int, len(ms))
	for i, m := range ms {
		var v struct{ N int }
		if err := m.Decode(&v); err != nil {
			t.Fatalf("decode %s: %v", m.Data, err)
		}
		out[i] = v.N
	}
	return out
}

func n(i int) Item { return Item{Data: map[string]int{"n": i}} }
