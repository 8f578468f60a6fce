package streams_test

// Helpers of the broker tests: they run against the broker named by QUEEN_URL, which
// scripts/test-with-broker.mjs (make sdk-go) starts with its own PostgreSQL. Without QUEEN_URL
// they are skipped (the offline run: go test ./...), unless QUEEN_REQUIRE_BROKER=1.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	queen "github.com/queen-mq/queen/clients/go"
)

func client(t *testing.T) *queen.Client {
	t.Helper()
	if os.Getenv("QUEEN_URL") == "" {
		if os.Getenv("QUEEN_REQUIRE_BROKER") == "1" {
			t.Fatal("QUEEN_URL is not set: these tests run against a broker (make sdk-go starts one)")
		}
		t.Skip("QUEEN_URL is not set: a broker test (make sdk-go runs it)")
	}
	c, err := queen.New(queen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var seq atomic.Int64

// uniq is a name no other test (or run) uses.
func uniq(prefix string) string {
	return fmt.Sprintf("go-%s-%d-%d-%d", prefix, os.Getpid(), time.Now().UnixMilli()%1_000_000, seq.Add(1))
}

func txnID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	ms := uint64(time.Now().UnixMilli())
	for i := 0; i < 6; i++ {
		b[i] = byte(ms >> (40 - 8*i))
	}
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func push(t *testing.T, c *queen.Client, queue, partition string, payloads ...any) {
	t.Helper()
	items := make([]map[string]any, len(payloads))
	for i, p := range payloads {
		items[i] = map[string]any{"queue": queue, "partition": partition, "payload": p, "transactionId": txnID()}
	}
	var out any
	if err := c.Do(context.Background(), "POST", "/api/v1/push", map[string]any{"items": items}, &out); err != nil {
		t.Fatal(err)
	}
	if arr, ok := out.([]any); ok {
		for _, r := range arr {
			if m, ok := r.(map[string]any); ok && m["status"] != "queued" {
				t.Fatalf("push: %v", r)
			}
		}
	}
}

func pushTs(t *testing.T, c *queen.Client, queue, partition string, tss ...int64) {
	t.Helper()
	ps := make([]any, len(tss))
	for i, ts := range tss {
		ps[i] = map[string]any{"ts": ts, "amount": 1}
	}
	push(t, c, queue, partition, ps...)
}

func configure(t *testing.T, c *queen.Client, queue string, opts map[string]any) {
	t.Helper()
	o := map[string]any{"leaseTime": 300, "retryLimit": 3, "priority": 0, "delayedProcessing": 0, "windowBuffer": 0,
		"maxSize": 0, "retentionSeconds": 0, "completedRetentionSeconds": 0, "encryptionEnabled": false}
	for k, v := range opts {
		o[k] = v
	}
	if err := c.Do(context.Background(), "POST", "/api/v1/configure", map[string]any{"queue": queue, "namespace": nil, "task": nil, "options": o}, nil); err != nil {
		t.Fatal(err)
	}
}

type popped struct {
	TransactionID string `json:"transactionId"`
	PartitionID   string `json:"partitionId"`
	Partition     string `json:"partition"`
	LeaseID       string `json:"leaseId"`
	Data          map[string]any
}

// drain pops queue as group until want messages came or timeout passed, acks them, and
// returns the payloads in delivery order.
func drain(t *testing.T, c *queen.Client, queue, group string, want int, timeout time.Duration) []map[string]any {
	t.Helper()
	out, _ := drainMsgs(t, c, queue, group, want, timeout)
	return out
}

func drainMsgs(t *testing.T, c *queen.Client, queue, group string, want int, timeout time.Duration) ([]map[string]any, []popped) {
	t.Helper()
	var out []map[string]any
	var msgs []popped
	deadline := time.Now().Add(timeout)
	for len(out) < want && time.Now().Before(deadline) {
		var ans struct {
			Messages []popped `json:"messages"`
		}
		path := fmt.Sprintf("/api/v1/pop/queue/%s?batch=100&wait=true&timeout=300&consumerGroup=%s&partitions=10", queue, group)
		if err := c.Do(context.Background(), "GET", path, nil, &ans); err != nil {
			t.Fatal(err)
		}
		for _, m := range ans.Messages {
			out = append(out, m.Data)
			msgs = append(msgs, m)
			ack := map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "status": "completed", "consumerGroup": group, "leaseId": m.LeaseID}
			if err := c.Do(context.Background(), "POST", "/api/v1/ack", ack, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out, msgs
}

// drainExact is drain, then keeps reading for extra to show that nothing more arrives.
func drainExact(t *testing.T, c *queen.Client, queue, group string, want int, timeout, extra time.Duration) []map[string]any {
	t.Helper()
	out := drain(t, c, queue, group, want, timeout)
	return append(out, drain(t, c, queue, group, 1<<30, extra)...)
}

func num(m map[string]any, k string) int64 {
	f, _ := m[k].(float64)
	return int64(f)
}

func sortedBy(v []map[string]any, k string) []map[string]any {
	sort.SliceStable(v, func(i, j int) bool { return num(v[i], k) < num(v[j], k) })
	return v
}
