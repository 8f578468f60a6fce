package queen

// Unit tests of what the client puts on the wire (no broker).

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestUUIDs(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, b := NewUUIDv7(), NewUUIDv7()
	if !re.MatchString(a) || a == b {
		t.Fatalf("%s %s", a, b)
	}
	if isUUIDv4(a) || !isUUIDv4("0190c2d4-0000-4000-8000-000000000001") || isUUIDv4("0190c2d4-0000-4000-c000-000000000001") || isUUIDv4("x") {
		t.Fatal("isUUIDv4")
	}
}

func TestPopPath(t *testing.T) {
	c, _ := New(Options{URLs: []string{"http://x:1"}})
	got := c.Queue("a b").Partition("p/1").Group("g").Batch(5).Partitions(3).Wait(false).Timeout(2 * time.Second).
		AutoAck(true).SubscriptionMode("new").SubscriptionFrom("now").Conflation(true).popPath()
	want := "/api/v1/pop/queue/a%20b/partition/p%2F1?batch=5&wait=false&timeout=2000&consumerGroup=g&autoAck=true&subscriptionMode=new&subscriptionFrom=now&partitions=3&conflation=true"
	if got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
	if got := c.Queue("q").Partition("Default").popPath(); got != "/api/v1/pop/queue/q?batch=1&wait=true&timeout=30000" {
		t.Fatal(got)
	}
	if got := c.Namespace("ns", "t").Group("g").popPath(); got != "/api/v1/pop?batch=1&wait=true&timeout=30000&consumerGroup=g&namespace=ns&task=t" {
		t.Fatal(got)
	}
	if a := c.Queue("q").Group("g").affinity(); a != "q:*:g" {
		t.Fatal(a)
	}
	if a := c.Queue("q").Partition("p").affinity(); a != "q:p:__QUEUE_MODE__" {
		t.Fatal(a)
	}
}

func TestMessageDecoding(t *testing.T) {
	var m Message
	raw := `{"id":"i1","partitionId":"p1","leaseId":"l","data":{"a":1},"traceId":null,"consumerGroup":"__QUEUE_MODE__","extra":true}`
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	if m.TransactionID != "i1" || m.Partition != "Default" || string(m.Data) != `{"a":1}` || string(m.Raw) != raw || m.group() != nil {
		t.Fatalf("%+v", m)
	}
}

// capture answers every request with answer and keeps the last request's body.
func capture(t *testing.T, answer string) (*Client, *string) {
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body = r.Method + " " + r.URL.RequestURI() + " " + string(b)
		w.Write([]byte(answer))
	}))
	t.Cleanup(srv.Close)
	c, _ := New(fast(srv.URL))
	return c, &body
}

func TestPushBody(t *testing.T) {
	c, body := capture(t, `[{"status":"queued"},{"status":"queued","transaction_id":"t2"}]`)
	rs, err := c.Queue("q").Partition("p").Push(context.Background(),
		Item{Data: json.RawMessage(`{"x":1}`), TraceID: "not-a-uuid"},
		Item{Data: 2, TransactionID: "t2", Partition: "other", TraceID: "0190c2d4-0000-4000-8000-000000000001"})
	if err != nil {
		t.Fatal(err)
	}
	var sent struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(*body, " ", 3)[2]), &sent); err != nil {
		t.Fatal(err)
	}
	a, b := sent.Items[0], sent.Items[1]
	if a["partition"] != "p" || a["traceId"] != nil || a["transactionId"] == "" || rs[0].TransactionID != a["transactionId"] {
		t.Fatalf("item 0: %v (result %+v)", a, rs[0])
	}
	if b["partition"] != "other" || b["traceId"] != "0190c2d4-0000-4000-8000-000000000001" || b["transactionId"] != "t2" {
		t.Fatalf("item 1: %v", b)
	}
}

func TestAckAndRenewBodies(t *testing.T) {
	c, body := capture(t, `[{"success":true}]`)
	m := Message{TransactionID: "t", PartitionID: "p", LeaseID: "l", ConsumerGroup: "g"}
	if ok, err := c.Ack(context.Background(), m, StatusFailed, "boom"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	var sent map[string]any
	json.Unmarshal([]byte(strings.SplitN(*body, " ", 3)[2]), &sent)
	if sent["status"] != "failed" || sent["error"] != "boom" || sent["consumerGroup"] != "g" || sent["leaseId"] != "l" {
		t.Fatalf("%v", sent)
	}
	m.ConsumerGroup = QueueMode
	c.Ack(context.Background(), m, StatusCompleted, "")
	json.Unmarshal([]byte(strings.SplitN(*body, " ", 3)[2]), &sent)
	if v, ok := sent["consumerGroup"]; !ok || v != nil || sent["error"] != nil {
		t.Fatalf("queue mode ack: %v", sent)
	}
	if ok, _ := c.Renew(context.Background(), "l/1"); !ok || *body != "POST /api/v1/lease/l%2F1/extend " {
		t.Fatalf("renew: %v %q", ok, *body)
	}
}

func TestKVOpRules(t *testing.T) {
	b, err := json.Marshal(KVPut("ns", "k", 1, 1500*time.Millisecond).Expect(3).Required())
	if err != nil || string(b) != `{"expect":3,"key":"k","ns":"ns","op":"put","required":true,"ttlSeconds":2,"value":1}` {
		t.Fatalf("%s %v", b, err)
	}
	if b, _ = json.Marshal(KVIncr("ns", "k", -2, Forever).Min(0)); string(b) != `{"delta":-2,"forever":true,"key":"k","min":0,"ns":"ns","op":"incr"}` {
		t.Fatal(string(b))
	}
	for _, o := range []KVOp{KVPut("n", "k", 1, 0), KVIncr("n", "k", 1, Forever).Expect(1), KVPutIfAbsent("n", "k", 1, Forever).Expect(0), KVGetPrefix("n", ""), KVGetMany("n"), KVCheck("n", "k", -1)} {
		if o.Err() == nil {
			t.Fatalf("accepted: %v", o.m)
		}
	}
	// a refused op is never sent
	c, body := capture(t, `{}`)
	if _, err := c.KV().Batch(context.Background(), KVGet("n", "k"), KVPut("n", "k", 1, 0)); ErrorCode(err) != "kv_expiry_not_specified" || *body != "" {
		t.Fatalf("%v %q", err, *body)
	}
}

func TestTimerOpBody(t *testing.T) {
	b, _ := json.Marshal(TimerSchedule("q", "a/b", map[string]int{"x": 1}, 1500*time.Millisecond).Partition("p").Txn("t"))
	var m map[string]any
	json.Unmarshal(b, &m)
	p, _ := base64.StdEncoding.DecodeString(m["payload"].(string))
	if string(p) != `{"x":1}` || m["delayMs"] != 1500.0 || m["txn"] != "t" || m["partition"] != "p" || m["op"] != "schedule" {
		t.Fatalf("%s", b)
	}
	if got := escKey("a b/c//d"); got != "a%20b/c//d" {
		t.Fatal(got)
	}
}

func TestTransactionBody(t *testing.T) {
	c, body := capture(t, `{"success":true,"results":[]}`)
	m1 := Message{TransactionID: "t1", PartitionID: "p1", LeaseID: "L", ConsumerGroup: "g"}
	m2 := Message{TransactionID: "t2", PartitionID: "p1", LeaseID: "L"}
	_, err := c.Transaction().Ack(StatusCompleted, m1, m2).Push(c.Queue("out"), Item{Data: 1, TransactionID: "x"}).
		Timers(TimerCancel("q", "k")).Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var sent map[string]json.RawMessage
	json.Unmarshal([]byte(strings.SplitN(*body, " ", 3)[2]), &sent)
	if string(sent["requiredLeases"]) != `["L"]` || sent["kv"] != nil || string(sent["timers"]) != `[{"op":"cancel","queue":"q","timerKey":"k"}]` {
		t.Fatalf("%s", *body)
	}
	if !strings.Contains(string(sent["operations"]), `"consumerGroup":"g"`) || strings.Count(string(sent["operations"]), `"type":"ack"`) != 2 {
		t.Fatalf("%s", sent["operations"])
	}
}

func TestQPB1Encoding(t *testing.T) {
	b := encodeQPB1([]pushItem{
		{Queue: "q", Partition: "p", Payload: json.RawMessage(`1`), TransactionID: "a"},
		{Queue: "q", Partition: "p", Payload: "x", TransactionID: "b"},
		{Queue: "q", Partition: "r", Payload: nil, TransactionID: ""},
	})
	want := "QPB1\x04" + "\x02\x00\x00\x00" +
		"\x01\x00q\x01\x00p\x02\x00\x00\x00" + "\x01\x00a\x01\x00\x00\x001" + "\x01\x00b\x03\x00\x00\x00\"x\"" +
		"\x01\x00q\x01\x00r\x01\x00\x00\x00" + "\x00\x00\x04\x00\x00\x00null"
	if string(b) != want {
		t.Fatalf("\n got %q\nwant %q", b, want)
	}
	if encodeQPB1([]pushItem{{Queue: "q", Partition: "p", TraceID: "0190c2d4-0000-4000-8000-000000000001"}}) != nil {
		t.Fatal("an item with a traceId went binary")
	}
}

func TestBinaryPushIsSentBinary(t *testing.T) {
	var ctype string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ctype = r.Header.Get("Content-Type") + " " + string(b[:4])
		w.Write([]byte(`[{"status":"queued"}]`))
	}))
	defer srv.Close()
	o := fast(srv.URL)
	o.BinaryPush = true
	c, _ := New(o)
	if _, err := c.Queue("q").PushData(context.Background(), 1); err != nil || ctype != "application/x-queen-push QPB1" {
		t.Fatalf("%q %v", ctype, err)
	}
	if _, err := c.Queue("q").Push(context.Background(), Item{Data: 1, TraceID: "0190c2d4-0000-4000-8000-000000000001"}); err != nil || ctype != `application/json {"it` {
		t.Fatalf("with a traceId: %q %v", ctype, err)
	}
}

func TestConsumeErrorsAndTerminal(t *testing.T) {
	var calls int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := atomic.AddInt32(&calls, 1)
		switch {
		case n <= 2: // survived: reported to OnError, retried after ErrorPause
			w.WriteHeader(400)
			w.Write([]byte(`{"error":"bad","code":"invalid_request"}`))
		default: // a 403 ends the consumer
			w.WriteHeader(403)
			w.Write([]byte(`{"error":"suspended","code":"cluster_suspended"}`))
		}
	}))
	defer srv.Close()
	c, _ := New(fast(srv.URL))
	var reported []string
	n, err := c.Queue("q").Wait(false).Consume(context.Background(), ConsumeOptions{ErrorPause: time.Millisecond,
		OnError: func(err error, _ []Message) { reported = append(reported, ErrorCode(err)) }},
		func(context.Context, Message) error { return nil })
	if n != 0 || ErrorCode(err) != "cluster_suspended" || !IsStatus(err, 403) || strings.Join(reported, ",") != "invalid_request,invalid_request" {
		t.Fatalf("n=%d err=%v reported=%v", n, err, reported)
	}
}
