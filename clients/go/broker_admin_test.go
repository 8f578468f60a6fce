package queen

// Broker tests (QUEEN_URL; helpers in broker_test.go).

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestBrokerDeadLettersAndMessages(t *testing.T) {
	c, ctx := broker(t)
	q := c.Queue(uniq("dlq"))
	mustPush(t, ctx, q.Partition("p"), Item{Data: map[string]int{"n": 1}, TransactionID: "poison-1"})
	ms, err := q.Partition("p").Wait(false).Pop(ctx)
	if err != nil || len(ms) != 1 {
		t.Fatalf("%d %v", len(ms), err)
	}
	if ok, err := c.Ack(ctx, ms[0], StatusDLQ, "poison"); err != nil || !ok {
		t.Fatalf("dlq ack: %v %v", ok, err)
	}
	page, err := c.DLQ(ctx, q.Name(), DLQOptions{Partition: "p", Limit: 10})
	if err != nil || page.Total != 1 || len(page.Messages) != 1 {
		t.Fatalf("dlq: %+v %v", page, err)
	}
	d := page.Messages[0]
	if d.TransactionID != "poison-1" || d.ErrorMessage != "poison" || string(d.Data) != `{"n":1}` || d.DLQID <= 0 || d.RequeuedAt != nil {
		t.Fatalf("dead letter: %+v", d)
	}
	info, err := c.GetMessage(ctx, ms[0].PartitionID, "poison-1")
	var st struct{ Status string }
	if err != nil || json.Unmarshal(info, &st) != nil || st.Status != "dead_letter" {
		t.Fatalf("message: %s %v", info, err)
	}
	// retry: the dead letter's record again, with its transactionId
	if _, err := c.RetryMessage(ctx, ms[0].PartitionID, "poison-1"); err != nil {
		t.Fatal(err)
	}
	again, err := q.Partition("p").Wait(false).Pop(ctx)
	if err != nil || len(again) != 1 || again[0].TransactionID != "poison-1" {
		t.Fatalf("retried: %+v %v", again, err)
	}
	if _, err := c.RetryMessage(ctx, ms[0].PartitionID, "poison-1"); ErrorCode(err) != "no_failed_message" {
		t.Fatalf("a second retry: %v", err)
	}
	if _, err := c.RequeueDeadLetter(ctx, d.DLQID, false); !IsStatus(err, 409) {
		t.Fatalf("requeue of a retried dead letter: %v", err)
	}
	if err := c.DeleteDeadLetter(ctx, d.DLQID); err != nil {
		t.Fatal(err)
	}
	if page, _ = c.DLQ(ctx, q.Name(), DLQOptions{}); page.Total != 0 {
		t.Fatalf("after delete: %+v", page)
	}
	if _, err := c.GetMessage(ctx, ms[0].PartitionID, "never-pushed"); !IsStatus(err, 404) {
		t.Fatalf("unknown message: %v", err)
	}
}

func TestBrokerTracesAndDepth(t *testing.T) {
	c, ctx := broker(t)
	q := c.Queue(uniq("trace"))
	mustPush(t, ctx, q, n(1), n(2), n(3))
	d, err := q.Depth(ctx, "g")
	if err != nil || d.Pending != 3 || d.PartitionsPending != 1 || d.Conflation {
		t.Fatalf("depth: %+v %v", d, err)
	}
	ms, err := q.Group("g").Wait(false).Pop(ctx)
	if err != nil || len(ms) != 1 {
		t.Fatalf("%d %v", len(ms), err)
	}
	id, err := c.Trace(ctx, ms[0], "step", map[string]any{"took_ms": 12.50}, "order-flow")
	if err != nil || id == "" {
		t.Fatalf("trace: %q %v", id, err)
	}
	tr, err := c.Traces(ctx, ms[0].PartitionID, ms[0].TransactionID)
	if err != nil || !strings.Contains(string(tr), `"event_type":"step"`) || !strings.Contains(string(tr), "order-flow") {
		t.Fatalf("traces: %s %v", tr, err)
	}
	if _, err := c.Ack(ctx, ms[0], StatusCompleted, ""); err != nil {
		t.Fatal(err)
	}
	if d, err = q.Depth(ctx, "g"); err != nil || d.Pending != 2 {
		t.Fatalf("depth after an ack: %+v %v", d, err)
	}
	if _, err := c.Queue(uniq("nope")).Depth(ctx, ""); ErrorCode(err) != "queue_not_found" {
		t.Fatalf("depth of an unknown queue: %v", err)
	}
	if _, err := c.Trace(ctx, Message{TransactionID: "x", PartitionID: ms[0].PartitionID}, "", 1); ErrorCode(err) != "message_not_found" {
		t.Fatalf("trace of an unknown record: %v", err)
	}
}
