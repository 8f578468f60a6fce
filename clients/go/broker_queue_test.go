package queen

// Broker tests (QUEEN_URL; helpers in broker_test.go).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestBrokerPushPopAck(t *testing.T) {
	c, ctx := broker(t)
	q := c.Queue(uniq("ppa"))
	rs := mustPush(t, ctx, q.Partition("p1"), n(1), n(2), Item{Data: map[string]int{"n": 3}, TransactionID: "tx-3"})
	if rs[2].TransactionID != "tx-3" || rs[0].TransactionID == "" || rs[0].MessageID == "" {
		t.Fatalf("results: %+v", rs)
	}
	ms, err := q.Batch(10).Wait(false).Pop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := payloads(t, ms); fmt.Sprint(got) != "[1 2 3]" {
		t.Fatalf("popped %v", got)
	}
	m := ms[2]
	if m.TransactionID != "tx-3" || m.Partition != "p1" || m.LeaseID == "" || m.PartitionID == "" || m.CreatedAt == "" {
		t.Fatalf("message: %+v", m)
	}
	if _, err := m.CreatedAtTime(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(m.Raw), `"partitionId"`) {
		t.Fatalf("raw: %s", m.Raw)
	}
	ok, err := c.Ack(ctx, ms[0], StatusCompleted, "")
	if err != nil || !ok {
		t.Fatalf("ack: %v %v", ok, err)
	}
	oks, err := c.AckBatch(ctx, ms[1:], StatusCompleted, "")
	if err != nil || len(oks) != 2 || !oks[0] || !oks[1] {
		t.Fatalf("ack batch: %v %v", oks, err)
	}
	// acked twice: the broker says no (the lease is gone), not an error
	if ok, err := c.Ack(ctx, ms[0], StatusCompleted, ""); err != nil || ok {
		t.Fatalf("second ack: %v %v", ok, err)
	}
	ms, err = q.Batch(10).Wait(false).Pop(ctx)
	if err != nil || len(ms) != 0 {
		t.Fatalf("after acks: %d %v", len(ms), err)
	}
}

func TestBrokerPushDuplicate(t *testing.T) {
	c, ctx := broker(t)
	q := c.Queue(uniq("dup"))
	mustPush(t, ctx, q, Item{Data: "a", TransactionID: "same"})
	rs, err := q.Push(ctx, Item{Data: "b", TransactionID: "same"}, Item{Data: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if !rs[0].IsDuplicate() || !rs[1].IsQueued() {
		t.Fatalf("results: %+v", rs)
	}
	ms, err := q.Batch(10).Wait(false).Pop(ctx)
	if err != nil || len(ms) != 2 || string(ms[0].Data) != `"a"` || string(ms[1].Data) != `"c"` {
		t.Fatalf("popped %d %v", len(ms), err)
	}
}

func TestBrokerPopLongPollWakes(t *testing.T) {
	c, ctx := broker(t)
	q := c.Queue(uniq("lp"))
	if _, err := q.Configure(ctx, nil); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, _ = q.PushData(context.Background(), map[string]int{"n": 7})
	}()
	t0 := time.Now()
	ms, err := q.Timeout(10 * time.Second).Pop(ctx)
	if err != nil || len(ms) != 1 {
		t.Fatalf("%d %v", len(ms), err)
	}
	if d := time.Since(t0); d > 8*time.Second {
		t.Fatalf("the long poll took %v", d)
	}
	// an empty long poll ends at its timeout with nothing
	t0 = time.Now()
	ms, err = c.Queue(q.Name()).Group("other-empty").SubscriptionMode("new").Timeout(300 * time.Millisecond).Pop(ctx)
	if err != nil || len(ms) != 0 || time.Since(t0) < 250*time.Millisecond {
		t.Fatalf("empty long poll: %d %v after %v", len(ms), err, time.Since(t0))
	}
}

func TestBrokerConsumeAckAndNack(t *testing.T) {
	c, ctx := broker(t)
	q := c.Queue(uniq("cons"))
	if _, err := q.Configure(ctx, map[string]any{"retryLimit": 5}); err != nil {
		t.Fatal(err)
	}
	mustPush(t, ctx, q, n(1), n(2), n(3))
	seen := map[int]int{}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	handled, err := q.Wait(false).Consume(cctx, ConsumeOptions{Limit: 4, IdleSleep: 20 * time.Millisecond}, func(_ context.Context, m Message) error {
		var v struct{ N int }
		_ = m.Decode(&v)
		seen[v.N]++
		if v.N == 2 && seen[2] == 1 {
			return errors.New("first try fails")
		}
		return nil
	})
	if err != nil || handled != 4 {
		t.Fatalf("consume: %d %v", handled, err)
	}
	if seen[1] != 1 || seen[2] != 2 || seen[3] != 1 {
		t.Fatalf("seen %v (2 must come back once after its failed ack)", seen)
	}
	ms, err := q.Batch(10).Wait(false).Pop(ctx)
	if err != nil || len(ms) != 0 {
		t.Fatalf("left: %d %v", len(ms), err)
	}
}

func TestBrokerConsumeStopsOnContext(t *testing.T) {
	c, ctx := broker(t)
	q := c.Queue(uniq("stop"))
	if _, err := q.Configure(ctx, nil); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	var got int32
	go func() {
		_, err := q.Timeout(5*time.Second).Consume(cctx, ConsumeOptions{}, func(context.Context, Message) error {
			atomic.AddInt32(&got, 1)
			return nil
		})
		done <- err
	}()
	mustPush(t, ctx, q, n(1))
	deadline := time.Now().Add(10 * time.Second)
	for atomic.LoadInt32(&got) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel() // the consumer is parked in a long poll now
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("consume ended with %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("cancelling the context did not end the long-polling consumer")
	}
	if atomic.LoadInt32(&got) != 1 {
		t.Fatalf("handled %d", got)
	}
}

func TestBrokerConsumeBatchAndGroups(t *testing.T) {
	c, ctx := broker(t)
	q := c.Queue(uniq("grp"))
	for i := 0; i < 3; i++ {
		mustPush(t, ctx, q.Partition(fmt.Sprintf("p%d", i)), n(10*i), n(10*i+1))
	}
	for _, g := range []string{"g1", "g2"} {
		total := 0
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		handled, err := q.Group(g).Batch(10).Partitions(3).Wait(false).ConsumeBatch(cctx, ConsumeOptions{Limit: 6, IdleSleep: 20 * time.Millisecond}, func(_ context.Context, ms []Message) error {
			total += len(ms)
			for _, m := range ms {
				if m.ConsumerGroup != g {
					return fmt.Errorf("consumerGroup %q in group %s", m.ConsumerGroup, g)
				}
			}
			return nil
		})
		cancel()
		if err != nil || handled != 6 || total != 6 {
			t.Fatalf("group %s: handled %d total %d err %v", g, handled, total, err)
		}
		ms, err := q.Group(g).Batch(10).Partitions(3).Wait(false).Pop(ctx)
		if err != nil || len(ms) != 0 {
			t.Fatalf("group %s left %d %v", g, len(ms), err)
		}
	}
	// a new group subscribed "new" sees only what is pushed after its first pop
	ms, err := q.Group("late").SubscriptionMode("new").Wait(false).Pop(ctx)
	if err != nil || len(ms) != 0 {
		t.Fatalf("late group: %d %v", len(ms), err)
	}
	mustPush(t, ctx, q, n(99))
	ms, err = q.Group("late").SubscriptionMode("new").Batch(10).Partitions(4).Wait(false).Pop(ctx)
	if err != nil || fmt.Sprint(payloads(t, ms)) != "[99]" {
		t.Fatalf("late group after a push: %v %v", payloads(t, ms), err)
	}
	if err := c.DeleteConsumerGroup(ctx, "late", true); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Seek(ctx, "g1", q.Name(), map[string]any{"toStart": true}); err != nil {
		t.Fatal(err)
	}
	ms, err = q.Group("g1").Batch(10).Partitions(4).Wait(false).Pop(ctx)
	if err != nil || len(ms) != 7 {
		t.Fatalf("g1 after seek toStart: %d %v", len(ms), err)
	}
	if groups, err := c.ConsumerGroups(ctx); err != nil || !strings.Contains(string(groups), "g1") {
		t.Fatalf("consumer groups: %s %v", groups, err)
	}
}

func TestBrokerLeaseRenewal(t *testing.T) {
	c, ctx := broker(t)
	q := c.Queue(uniq("lease"))
	if _, err := q.Configure(ctx, map[string]any{"leaseTime": 1}); err != nil {
		t.Fatal(err)
	}
	mustPush(t, ctx, q, n(1))
	var redelivered int32
	handled, err := q.Wait(false).Consume(ctx, ConsumeOptions{Limit: 1, RenewEvery: 300 * time.Millisecond}, func(ctx context.Context, m Message) error {
		// the lease is 1 s: without the renewals another consumer would get the message
		time.Sleep(2500 * time.Millisecond)
		other, err := q.Wait(false).Pop(ctx)
		if err != nil {
			return err
		}
		atomic.AddInt32(&redelivered, int32(len(other)))
		return nil
	})
	if err != nil || handled != 1 {
		t.Fatalf("%d %v", handled, err)
	}
	if redelivered != 0 {
		t.Fatal("the renewed lease expired: the message was delivered to another consumer")
	}
	// a lease that is gone renews false
	if ok, err := c.Renew(ctx, "00000000-0000-7000-8000-000000000000"); err != nil || ok {
		t.Fatalf("renew of an unknown lease: %v %v", ok, err)
	}
	// without renewals, the 1 s lease ends and the message comes back
	mustPush(t, ctx, q, n(2))
	ms, err := q.Wait(false).Pop(ctx)
	if err != nil || len(ms) != 1 {
		t.Fatalf("%d %v", len(ms), err)
	}
	time.Sleep(1500 * time.Millisecond)
	again, err := q.Timeout(5 * time.Second).Pop(ctx)
	if err != nil || len(again) != 1 || again[0].TransactionID != ms[0].TransactionID {
		t.Fatalf("expired lease: %d %v", len(again), err)
	}
}

func TestBrokerAutoAck(t *testing.T) {
	c, ctx := broker(t)
	q := c.Queue(uniq("auto"))
	mustPush(t, ctx, q, n(1), n(2))
	ms, err := q.Group("g").AutoAck(true).Batch(10).Wait(false).Pop(ctx)
	if err != nil || len(ms) != 2 {
		t.Fatalf("%d %v", len(ms), err)
	}
	ms, err = q.Group("g").Batch(10).Wait(false).Pop(ctx)
	if err != nil || len(ms) != 0 {
		t.Fatalf("autoAck did not commit: %d %v", len(ms), err)
	}
}

func TestBrokerConflation(t *testing.T) {
	c, ctx := broker(t)
	q := c.Queue(uniq("confl"))
	mustPush(t, ctx, q.Partition("entity-1"), n(1), n(2), n(3))
	mustPush(t, ctx, q.Partition("entity-2"), n(4), n(5))
	ms, err := q.Group("g").Conflation(true).Batch(10).Partitions(2).Wait(false).Pop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := payloads(t, ms)
	if len(got) != 2 || got[0]+got[1] != 8 { // the newest of each partition: 3 and 5
		t.Fatalf("conflated pop gave %v", got)
	}
	if _, err := c.AckBatch(ctx, ms, StatusCompleted, ""); err != nil {
		t.Fatal(err)
	}
	// an empty conflating pop still carries the echo (no ErrConflationUnsupported)
	ms, err = q.Group("g").Conflation(true).Wait(false).Pop(ctx)
	if err != nil || len(ms) != 0 {
		t.Fatalf("empty conflating pop: %d %v", len(ms), err)
	}
	// without a group: the broker's refusal, terminal for a consumer
	_, err = q.Conflation(true).Wait(false).Consume(ctx, ConsumeOptions{}, func(context.Context, Message) error { return nil })
	if ErrorCode(err) != "conflation_needs_group" {
		t.Fatalf("consume without a group: %v", err)
	}
}

func TestConflationUnsupportedIsTerminal(t *testing.T) {
	// a broker that ignores the flag: 204, no echo
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	defer srv.Close()
	c, _ := New(fast(srv.URL))
	_, err := c.Queue("q").Group("g").Conflation(true).Wait(false).Consume(context.Background(), ConsumeOptions{}, func(context.Context, Message) error { return nil })
	if !errors.Is(err, ErrConflationUnsupported) || ErrorCode(err) != "" {
		t.Fatalf("err = %v", err)
	}
}

func TestBrokerFailoverAndErrors(t *testing.T) {
	c, ctx := broker(t)
	dead := httptest.NewServer(nil)
	deadURL := dead.URL
	dead.Close()
	o := Options{URLs: []string{deadURL, c.URLs()[0]}, RetryBase: 10 * time.Millisecond}
	fc, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	q := fc.Queue(uniq("fail"))
	for i := 0; i < 4; i++ {
		if _, err := q.PushData(ctx, i); err != nil {
			t.Fatalf("push %d through a cluster with a dead node: %v", i, err)
		}
	}
	if err := fc.Health(ctx); err != nil {
		t.Fatal(err)
	}
	// the broker's 4xx come back as *APIError with their stable code
	st, _, body, err := c.DoRaw(ctx, "POST", "/api/v1/push", nil, []byte(`{"items":[{"queue":""}]}`))
	if err != nil || st != 400 {
		t.Fatalf("raw: %d %s %v", st, body, err)
	}
	err = c.Do(ctx, "POST", "/api/v1/push", json.RawMessage(`{"nope":1}`), nil)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 400 || ae.Message == "" {
		t.Fatalf("do: %v", err)
	}
	if err := c.Do(ctx, "GET", "/api/v1/no/such/route", nil, nil); !IsStatus(err, 404) {
		t.Fatalf("404: %v", err)
	}
}

func TestBrokerNamesInPathsAndNamespacePop(t *testing.T) {
	c, ctx := broker(t)
	q := c.Queue(uniq("names"))
	odd := "cust/1 é+?"
	mustPush(t, ctx, q.Partition(odd), n(1))
	ms, err := q.Partition(odd).Wait(false).Pop(ctx)
	if err != nil || len(ms) != 1 || ms[0].Partition != odd {
		t.Fatalf("pop of partition %q: %+v %v", odd, ms, err)
	}
	f, err := q.Partition(odd).Fetch(ctx, 0)
	if err != nil || len(f.Records) != 1 {
		t.Fatalf("fetch: %+v %v", f, err)
	}
	// a namespace pop: any queue of namespace ns (queue names a.b derive namespace a)
	ns := uniq("nsp")
	nq := c.Queue(ns + ".jobs")
	nsq := c.Namespace(ns, "")
	if _, err := nsq.Group("w").Wait(false).Pop(ctx); err != nil {
		t.Fatal(err)
	}
	mustPush(t, ctx, nq, n(5))
	ms, err = nsq.Group("w").Timeout(5 * time.Second).Pop(ctx)
	if err != nil || fmt.Sprint(payloads(t, ms)) != "[5]" {
		t.Fatalf("namespace pop: %v %v", payloads(t, ms), err)
	}
	// a configured queue is in the namespace Configure names (and task)
	cq := c.Queue(uniq("cfg")).InNamespace(ns, "billing")
	if _, err := cq.Configure(ctx, map[string]any{"leaseTime": 60}); err != nil {
		t.Fatal(err)
	}
	mustPush(t, ctx, cq, n(6))
	ms, err = c.Namespace(ns, "billing").Group("w2").Timeout(5 * time.Second).Pop(ctx)
	if err != nil || fmt.Sprint(payloads(t, ms)) != "[6]" {
		t.Fatalf("namespace+task pop: %v %v", payloads(t, ms), err)
	}
	if _, err := cq.Configure(ctx, map[string]any{"noSuchOption": 1}); !IsStatus(err, 400) {
		t.Fatalf("an unknown option: %v", err)
	}
}

func TestBrokerConsumeConcurrency(t *testing.T) {
	c, ctx := broker(t)
	q := c.Queue(uniq("conc"))
	for i := 0; i < 6; i++ {
		mustPush(t, ctx, q.Partition(fmt.Sprintf("p%d", i)), n(i))
	}
	var inFlight, maxInFlight, total int32
	t0 := time.Now()
	handled, err := q.Wait(false).Consume(ctx, ConsumeOptions{Limit: 5, Concurrency: 3, IdleSleep: 10 * time.Millisecond}, func(context.Context, Message) error {
		now := atomic.AddInt32(&inFlight, 1)
		for {
			m := atomic.LoadInt32(&maxInFlight)
			if now <= m || atomic.CompareAndSwapInt32(&maxInFlight, m, now) {
				break
			}
		}
		time.Sleep(300 * time.Millisecond)
		atomic.AddInt32(&inFlight, -1)
		atomic.AddInt32(&total, 1)
		return nil
	})
	if err != nil || handled != 5 || total != 5 {
		t.Fatalf("handled %d (total %d) %v: the limit is shared by the workers", handled, total, err)
	}
	if maxInFlight < 2 || time.Since(t0) > 1500*time.Millisecond {
		t.Fatalf("max in flight %d, took %v: the workers did not run at once", maxInFlight, time.Since(t0))
	}
	ms, err := q.Batch(10).Partitions(10).Wait(false).Pop(ctx)
	if err != nil || len(ms) != 1 {
		t.Fatalf("left %d %v: the limit leased more than it handled", len(ms), err)
	}
}

func TestBrokerBinaryPush(t *testing.T) {
	c, ctx := broker(t)
	bc, err := New(Options{BinaryPush: true})
	if err != nil {
		t.Fatal(err)
	}
	q := bc.Queue(uniq("bin"))
	rs, err := q.Push(ctx,
		Item{Data: map[string]any{"n": 1, "s": "é"}, TransactionID: "b1", Partition: "a"},
		Item{Data: json.RawMessage(`{"n": 2}`), Partition: "a"},
		Item{Data: map[string]int{"n": 3}, Partition: "b"})
	if err != nil || len(rs) != 3 || !rs[0].IsQueued() || !rs[2].IsQueued() || rs[0].TransactionID != "b1" {
		t.Fatalf("binary push: %+v %v", rs, err)
	}
	rs, err = q.Push(ctx, Item{Data: 9, TransactionID: "b1", Partition: "a"})
	if err != nil || !rs[0].IsDuplicate() {
		t.Fatalf("binary duplicate: %+v %v", rs, err)
	}
	ms, err := c.Queue(q.Name()).Batch(10).Partitions(2).Wait(false).Pop(ctx)
	if err != nil || len(ms) != 3 {
		t.Fatalf("pop: %d %v", len(ms), err)
	}
	got := map[string]string{}
	for _, m := range ms {
		got[m.Partition+"/"+string(m.Data)] = m.TransactionID
	}
	if got[`a/{"n":1,"s":"é"}`] != "b1" || got[`a/{"n": 2}`] == "" || got[`b/{"n":3}`] == "" {
		t.Fatalf("popped %v (payloads byte for byte)", got)
	}
}

func TestBrokerConsumeReportsRefusedAck(t *testing.T) {
	c, ctx := broker(t)
	q := c.Queue(uniq("refused"))
	if _, err := q.Configure(ctx, map[string]any{"leaseTime": 1}); err != nil {
		t.Fatal(err)
	}
	mustPush(t, ctx, q, n(1))
	var reported []error
	handled, err := q.Wait(false).Consume(ctx, ConsumeOptions{Limit: 1, OnError: func(err error, _ []Message) { reported = append(reported, err) }},
		func(context.Context, Message) error {
			time.Sleep(1800 * time.Millisecond) // past the 1 s lease, not renewed
			return nil
		})
	if err != nil || handled != 1 {
		t.Fatalf("%d %v", handled, err)
	}
	if len(reported) != 1 || !errors.Is(reported[0], ErrAckRefused) {
		t.Fatalf("reported %v, want ErrAckRefused", reported)
	}
	ms, err := q.Timeout(5 * time.Second).Pop(ctx)
	if err != nil || len(ms) != 1 {
		t.Fatalf("the message whose ack was refused: %d %v", len(ms), err)
	}
}
