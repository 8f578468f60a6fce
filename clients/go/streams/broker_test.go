package streams_test

// The stream runtime against the real broker (QUEEN_URL): every window type with
// deterministic event times, late data, the idle flush of a quiet partition, the gate's
// partial ack and order on redelivery, killed and stopped runners (each window once), lease
// takeover between two runners, 409 and reset.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	queen "github.com/queen-mq/queen/clients/go"
	"github.com/queen-mq/queen/clients/go/streams"
)

func opts(query string) streams.RunOptions {
	return streams.RunOptions{QueryID: query, Reset: true, BatchSize: 100, MaxWait: 200 * time.Millisecond}
}

func ts(v any) any { return streams.Number(v, "ts") }

func run(t *testing.T, c *queen.Client, s *streams.Stream, o streams.RunOptions) *streams.Handle {
	t.Helper()
	h, err := s.Run(context.Background(), c, o)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func stop(t *testing.T, h *streams.Handle) streams.Stats {
	t.Helper()
	st, err := h.Stop()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func same(t *testing.T, got []map[string]any, want string, ctx any) {
	t.Helper()
	if s := fmt.Sprint(got); s != want {
		t.Fatalf("got  %s\nwant %s\n(%+v)", s, want, ctx)
	}
}

func TestSpecExampleResultsOnTheSinkQueue(t *testing.T) {
	c := client(t)
	src, sink := uniq("spec-src"), uniq("spec-sink")
	var ps []any
	for i := 1; i <= 6; i++ {
		ps = append(ps, map[string]any{"order": i, "amount": i})
	}
	push(t, c, src, "Default", ps...)
	h := run(t, c, streams.From(src).WindowTumbling(2).IdleFlushMs(500).
		Aggregate(streams.Count("count"), streams.Sum("sum", streams.Field("amount"))).To(sink), opts(uniq("spec")))
	var count, sum int64
	deadline := time.Now().Add(30 * time.Second)
	for count < 6 && time.Now().Before(deadline) {
		for _, m := range drain(t, c, sink, "r", 1, 2*time.Second) {
			count += num(m, "count")
			sum += num(m, "sum")
			for k := range m {
				if strings.HasPrefix(k, "__") || (k != "count" && k != "sum") {
					t.Fatalf("a field leaked into the sink: %v", m)
				}
			}
		}
	}
	st := stop(t, h)
	if count != 6 || sum != 21 || st.Errors != 0 || st.FlushCycles < 1 {
		t.Fatalf("count=%d sum=%d %+v", count, sum, st)
	}
}

func TestTumblingEventTimeClosesOnTheWatermarkAndTheLastWindowByIdleFlush(t *testing.T) {
	c := client(t)
	src, sink := uniq("tumb-src"), uniq("tumb-sink")
	pushTs(t, c, src, "p", 1_000, 2_000, 11_000, 12_000, 28_500)
	h := run(t, c, streams.From(src).WindowTumbling(10).EventTime(ts).IdleFlushMs(300).
		Aggregate(streams.Count("count"), streams.Min("first", streams.Field("ts"))).To(sink), opts(uniq("tumb")))
	// [0,10) and [10,20) close on the watermark (28.5 s); [20,30) only when the partition has
	// been quiet 1.5 s by the broker's clock (watermark + quiet ≥ 30 s): the idle flush
	got := drainExact(t, c, sink, "r", 3, 20*time.Second, 1500*time.Millisecond)
	st := stop(t, h)
	same(t, sortedBy(got, "first"), "[map[count:2 first:1000] map[count:2 first:11000] map[count:1 first:28500]]", st)
	if st.FlushCycles < 1 || st.Errors != 0 {
		t.Fatalf("%+v", st)
	}
}

func TestSlidingSessionAndCronWindows(t *testing.T) {
	c := client(t)
	// sliding 10/5: events at 6 s and 12 s; 100 s moves the watermark past all three windows
	src, sink := uniq("slide-src"), uniq("slide-sink")
	pushTs(t, c, src, "p", 6_000, 12_000, 100_000)
	h1 := run(t, c, streams.From(src).WindowSliding(10, 5).EventTime(ts).IdleFlushMs(0).
		Aggregate(streams.Count("count"), streams.Min("first", streams.Field("ts")), streams.Max("last", streams.Field("ts"))).
		To(sink), opts(uniq("slide")))
	// sessions with a 5 s gap keyed by user: a = {0, 3 s} then 20 s; b = {1 s}
	ssrc, ssink := uniq("sess-src"), uniq("sess-sink")
	evt := func(user string, ts int64) any { return map[string]any{"user": user, "ts": ts} }
	push(t, c, ssrc, "p", evt("a", 0), evt("b", 1_000), evt("a", 3_000), evt("a", 20_000))
	h2 := run(t, c, streams.From(ssrc).KeyBy(func(v any) string { s, _ := v.(map[string]any)["user"].(string); return s }).
		WindowSession(5).EventTime(ts).IdleFlushMs(0).
		Reduce(map[string]any{"n": 0.0}, func(acc, v any) any {
			return map[string]any{"n": streams.Number(acc, "n") + 1, "user": v.(map[string]any)["user"]}
		}).To(ssink), opts(uniq("sess")))
	// cron minute: 00:00:10, 00:00:50 | 00:01:05 | 00:03:00 (the watermark)
	csrc, csink := uniq("cron-src"), uniq("cron-sink")
	pushTs(t, c, csrc, "p", 10_000, 50_000, 65_000, 180_000)
	h3 := run(t, c, streams.From(csrc).WindowCron("minute").EventTime(ts).IdleFlushMs(0).
		Aggregate(streams.Count("count"), streams.Sum("sum", streams.Field("ts"))).To(csink), opts(uniq("cron")))

	sliding := drainExact(t, c, sink, "r", 3, 20*time.Second, 800*time.Millisecond)
	sessions := drainExact(t, c, ssink, "r", 2, 20*time.Second, 800*time.Millisecond)
	cron := drainExact(t, c, csink, "r", 2, 20*time.Second, 800*time.Millisecond)
	for _, h := range []*streams.Handle{h1, h2, h3} {
		if st := stop(t, h); st.Errors != 0 {
			t.Fatalf("%+v", st)
		}
	}
	// windows [0,10) {6}, [5,15) {6,12}, [10,20) {12}
	same(t, sortedBy(sortedBy(sliding, "last"), "first"), "[map[count:1 first:6000 last:6000] map[count:2 first:6000 last:12000] map[count:1 first:12000 last:12000]]", nil)
	// a's first session closed by the 20 s event (gap 5 s), b's by the clock (a's 20 s)
	same(t, sortedBy(sessions, "n"), "[map[n:1 user:b] map[n:2 user:a]]", nil)
	same(t, sortedBy(cron, "count"), "[map[count:1 sum:65000] map[count:2 sum:60000]]", nil)
}

func lateRun(t *testing.T, p streams.OnLatePolicy) ([]map[string]any, uint64) {
	c := client(t)
	src, sink := uniq("late-src"), uniq("late-sink")
	h := run(t, c, streams.From(src).WindowTumbling(10).EventTime(ts).IdleFlushMs(0).OnLate(p).
		Aggregate(streams.Count("count"), streams.Min("first", streams.Field("ts"))).To(sink), opts(uniq("late")))
	pushTs(t, c, src, "p", 1_000, 15_000)
	got := drain(t, c, sink, "r", 1, 20*time.Second) // [0,10) closed, watermark 15 s
	pushTs(t, c, src, "p", 2_000)                    // late: below the watermark
	time.Sleep(1500 * time.Millisecond)
	pushTs(t, c, src, "p", 40_000) // closes [10,20)
	want := 1
	if p == streams.OnLateInclude {
		want = 2
	}
	got = append(got, drainExact(t, c, sink, "r", want, 20*time.Second, 800*time.Millisecond)...)
	st := stop(t, h)
	if st.Errors != 0 {
		t.Fatalf("%+v", st)
	}
	return sortedBy(got, "first"), st.LateEvents
}

func TestLateDataIsDroppedOrIncluded(t *testing.T) {
	dropped, n := lateRun(t, streams.OnLateDrop)
	same(t, dropped, "[map[count:1 first:1000] map[count:1 first:15000]]", n)
	if n != 1 {
		t.Fatal(n)
	}
	// Include folds it into the closed window: a second, partial result for [0,10)
	included, n := lateRun(t, streams.OnLateInclude)
	same(t, included, "[map[count:1 first:1000] map[count:1 first:2000] map[count:1 first:15000]]", n)
	if n != 0 {
		t.Fatal(n)
	}
}

func TestAllowedLatenessHoldsTheWatermarkBack(t *testing.T) {
	c := client(t)
	src, sink := uniq("lat-src"), uniq("lat-sink")
	h := run(t, c, streams.From(src).WindowTumbling(10).EventTime(ts).AllowedLateness(10).IdleFlushMs(0).
		Aggregate(streams.Count("count")).To(sink), opts(uniq("lat")))
	pushTs(t, c, src, "p", 1_000, 15_000) // watermark 5 s: [0,10) stays open
	time.Sleep(1200 * time.Millisecond)
	pushTs(t, c, src, "p", 6_000) // above the watermark (5 s): folded into [0,10)
	time.Sleep(1200 * time.Millisecond)
	pushTs(t, c, src, "p", 25_000) // watermark 15 s: [0,10) closes with 2
	got := drainExact(t, c, sink, "r", 1, 20*time.Second, 800*time.Millisecond)
	stop(t, h)
	same(t, got, "[map[count:2]]", nil)
}

func partitionID(t *testing.T, c *queen.Client, queue, name string) string {
	t.Helper()
	var out struct {
		Entries []struct {
			Partitions []struct {
				Name string `json:"name"`
				ID   string `json:"id"`
			} `json:"partitions"`
		} `json:"entries"`
	}
	if err := c.Do(context.Background(), "POST", "/api/v1/partitions/changed", map[string]any{"entries": []any{map[string]any{"queue": queue, "limit": 1000}}}, &out); err != nil {
		t.Fatal(err)
	}
	for _, e := range out.Entries {
		for _, p := range e.Partitions {
			if p.Name == name {
				return p.ID
			}
		}
	}
	t.Fatalf("no partition %s on %s: %+v", name, queue, out)
	return ""
}

func stateRows(t *testing.T, c *queen.Client, serverID, pid string) map[string]any {
	t.Helper()
	var out struct {
		Rows []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"rows"`
	}
	if err := c.Do(context.Background(), "POST", "/streams/v1/state/get", map[string]any{"query_id": serverID, "partition_id": pid, "keys": []string{}}, &out); err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	for _, r := range out.Rows {
		m[r.Key] = r.Value
	}
	return m
}

func TestGateDeniesInPlaceWithAPartialAckAndRedeliveryKeepsPartitionOrder(t *testing.T) {
	c := client(t)
	src, sink := uniq("gate-src"), uniq("gate-sink")
	configure(t, c, src, map[string]any{"leaseTime": 2})
	var ps []any
	for i := 1; i <= 8; i++ {
		ps = append(ps, map[string]any{"seq": i})
	}
	push(t, c, src, "p", ps...)
	// deny seq 1 once (a first-message deny: no cycle at all) and seq 5 once (a partial ack of
	// 1..4 with the lease kept); the gate counts what it allowed in ctx.State
	var denied1, denied5 atomic.Bool
	o := opts(uniq("gate"))
	o.BatchSize = 50
	h := run(t, c, streams.From(src).Gate(func(v any, ctx *streams.GateCtx) bool {
		seq := streams.Number(v, "seq")
		if (seq == 1 && !denied1.Swap(true)) || (seq == 5 && !denied5.Swap(true)) {
			ctx.State["poisoned"] = true // discarded with the deny
			return false
		}
		ctx.State["allowed"] = streams.Number(ctx.State, "allowed") + 1
		return true
	}).To(sink), o)
	got := drainExact(t, c, sink, "r", 8, 40*time.Second, time.Second)
	st := stop(t, h)
	var seqs []int64
	for _, m := range got {
		seqs = append(seqs, num(m, "seq"))
	}
	if !reflect.DeepEqual(seqs, []int64{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("each once, in partition order: %v %+v", seqs, st)
	}
	if st.GateDenied < 2 {
		t.Fatalf("%+v", st)
	}
	// the state row: 8 allowed, the denied mutations never committed
	rows := stateRows(t, c, h.ServerQueryID, partitionID(t, c, src, "p"))
	pid := partitionID(t, c, src, "p")
	if fmt.Sprint(rows[pid]) != "map[allowed:8]" {
		t.Fatalf("the row keyed by the partition id: %v", rows)
	}
}

func TestTokenBucketGateAdmitsCapacityThenPaces(t *testing.T) {
	c := client(t)
	src, sink := uniq("tb-src"), uniq("tb-sink")
	configure(t, c, src, map[string]any{"leaseTime": 1})
	var ps []any
	for i := 1; i <= 5; i++ {
		ps = append(ps, map[string]any{"seq": i})
	}
	push(t, c, src, "p", ps...)
	h := run(t, c, streams.From(src).Gate(streams.TokenBucketGate(3, 2, nil)).To(sink), opts(uniq("tb")))
	first := drain(t, c, sink, "r", 3, 10*time.Second)
	rest := drainExact(t, c, sink, "r", 2, 20*time.Second, 500*time.Millisecond)
	stop(t, h)
	var seqs []int64
	for _, m := range append(first, rest...) {
		seqs = append(seqs, num(m, "seq"))
	}
	if !reflect.DeepEqual(seqs, []int64{1, 2, 3, 4, 5}) {
		t.Fatal(seqs)
	}
}

func TestGateAcksSourceMessagesNotValues(t *testing.T) {
	c := client(t)
	src, sink := uniq("gv-src"), uniq("gv-sink")
	configure(t, c, src, map[string]any{"leaseTime": 2})
	var ps []any
	for i := 1; i <= 6; i++ {
		ps = append(ps, map[string]any{"seq": i, "skip": i > 4})
	}
	push(t, c, src, "p", ps...)
	// each message becomes two values; the second value of message 3 is denied once: nothing
	// of message 3 may be emitted or acked in that cycle, and the all-filtered tail (5, 6) is
	// acked, not redelivered forever
	var denied atomic.Bool
	h := run(t, c, streams.From(src).
		Filter(func(v any) bool { return v.(map[string]any)["skip"] != true }).
		FlatMap(func(v any) []any {
			s := v.(map[string]any)["seq"]
			return []any{map[string]any{"seq": s, "copy": 0}, map[string]any{"seq": s, "copy": 1}}
		}).
		Gate(func(v any, ctx *streams.GateCtx) bool {
			if streams.Number(v, "seq") == 3 && streams.Number(v, "copy") == 1 && !denied.Swap(true) {
				return false
			}
			ctx.State["n"] = streams.Number(ctx.State, "n") + 1
			return true
		}).To(sink), opts(uniq("gv")))
	got := drainExact(t, c, sink, "r", 8, 30*time.Second, 3*time.Second)
	st := stop(t, h)
	var pairs []string
	for _, m := range got {
		pairs = append(pairs, fmt.Sprintf("%d.%d", num(m, "seq"), num(m, "copy")))
	}
	if strings.Join(pairs, " ") != "1.0 1.1 2.0 2.1 3.0 3.1 4.0 4.1" {
		t.Fatalf("%v %+v", pairs, st)
	}
	if st.Messages != 6+4 {
		t.Fatalf("the first pop (6) and the redelivery of 3..6 (4), nothing more: %+v", st)
	}
}

func TestAnOperatorThatPanicsCommitsNothingAndTheBatchComesBack(t *testing.T) {
	c := client(t)
	src, sink := uniq("pn-src"), uniq("pn-sink")
	configure(t, c, src, map[string]any{"leaseTime": 2})
	push(t, c, src, "p", map[string]any{"seq": 1}, map[string]any{"seq": 2}, map[string]any{"seq": 3})
	var once atomic.Bool
	h := run(t, c, streams.From(src).Map(func(v any) any {
		if streams.Number(v, "seq") == 2 && !once.Swap(true) {
			panic("deliberate operator panic (test)")
		}
		return v
	}).To(sink), opts(uniq("pn")))
	got := drainExact(t, c, sink, "r", 3, 20*time.Second, time.Second)
	st := stop(t, h)
	same(t, got, "[map[seq:1] map[seq:2] map[seq:3]]", st)
	if st.Errors < 1 || !strings.Contains(st.LastError, "panicked") {
		t.Fatalf("%+v", st)
	}
}

func restartChain(src, sink string) *streams.Stream {
	return streams.From(src).WindowTumbling(10).EventTime(ts).IdleFlushMs(0).
		Aggregate(streams.Count("count"), streams.Min("first", streams.Field("ts"))).To(sink)
}

func TestAKilledAndRestartedRunnerEmitsEachWindowOnce(t *testing.T) {
	c := client(t)
	src, sink := uniq("rs-src"), uniq("rs-sink")
	configure(t, c, src, map[string]any{"leaseTime": 2})
	query := uniq("restart")
	o := streams.RunOptions{QueryID: query, BatchSize: 2, MaxWait: 200 * time.Millisecond}
	// run 1 folds [0,10) partly and is killed; its batches in flight come back with the lease
	pushTs(t, c, src, "p", 1_000, 2_000, 3_000, 12_000)
	o.Reset = true
	h := run(t, c, restartChain(src, sink), o)
	time.Sleep(300 * time.Millisecond)
	h.Abort()
	o.Reset = false
	pushTs(t, c, src, "p", 13_000, 25_000, 31_000, 45_000)
	// run 2 is killed again after a while, run 3 is stopped cleanly mid-way, run 4 runs to the end
	h = run(t, c, restartChain(src, sink), o)
	time.Sleep(700 * time.Millisecond)
	h.Abort()
	h = run(t, c, restartChain(src, sink), o)
	time.Sleep(400 * time.Millisecond)
	stop(t, h)
	h = run(t, c, restartChain(src, sink), o)
	got := drainExact(t, c, sink, "r", 4, 30*time.Second, 2500*time.Millisecond)
	st := stop(t, h)
	same(t, sortedBy(got, "first"), "[map[count:3 first:1000] map[count:2 first:12000] map[count:1 first:25000] map[count:1 first:31000]]", st)
}

func TestTwoRunnersOfOneQueryShareThePartitionsAndEmitEachWindowOnce(t *testing.T) {
	c := client(t)
	src, sink := uniq("lt-src"), uniq("lt-sink")
	configure(t, c, src, map[string]any{"leaseTime": 2})
	query := uniq("takeover")
	parts := []string{"a", "b", "c", "d"}
	for _, p := range parts {
		pushTs(t, c, src, p, 1_000, 2_000, 3_000, 12_000, 13_000, 25_000)
	}
	o := streams.RunOptions{QueryID: query, Reset: true, BatchSize: 2, MaxPartitions: 1, MaxWait: 200 * time.Millisecond}
	h1 := run(t, c, restartChain(src, sink), o)
	o.Reset = false
	h2 := run(t, c, restartChain(src, sink), o)
	// runner 1 is killed while it holds leases: runner 2 takes its partitions over when they
	// expire, and continues the state runner 1 committed
	time.Sleep(500 * time.Millisecond)
	h1.Abort()
	for _, p := range parts {
		pushTs(t, c, src, p, 40_000)
	}
	got, msgs := drainMsgs(t, c, sink, "r", 12, 30*time.Second)
	more := drain(t, c, sink, "r", 1<<30, 2500*time.Millisecond)
	st := stop(t, h2)
	if len(more) != 0 {
		t.Fatalf("more than one result per window: %v", more)
	}
	per := map[string][]map[string]any{}
	for i, m := range got {
		per[msgs[i].Partition] = append(per[msgs[i].Partition], m)
	}
	for _, p := range parts {
		same(t, sortedBy(per[p], "first"), "[map[count:3 first:1000] map[count:2 first:12000] map[count:1 first:25000]]", st)
	}
}

func TestAChangedChainIsRefusedUntilReset(t *testing.T) {
	c := client(t)
	src, sink := uniq("h-src"), uniq("h-sink")
	query := uniq("hash")
	stop(t, run(t, c, streams.From(src).WindowTumbling(2).Aggregate(streams.Count("count")).To(sink), opts(query)))
	changed := func() *streams.Stream {
		return streams.From(src).WindowTumbling(3).Aggregate(streams.Count("count")).To(sink)
	}
	_, err := changed().Run(context.Background(), c, streams.RunOptions{QueryID: query})
	var cm *streams.ConfigMismatchError
	if !errors.As(err, &cm) || !queen.IsStatus(err, 409) {
		t.Fatalf("want a 409 ConfigMismatchError, got %v", err)
	}
	stop(t, run(t, c, changed(), streams.RunOptions{QueryID: query, Reset: true}))
	// a broken chain is refused before anything is sent
	_, err = streams.From(src).Gate(func(any, *streams.GateCtx) bool { return true }).WindowTumbling(1).Run(context.Background(), c, opts(query))
	var ce *streams.ChainError
	if !errors.As(err, &ce) {
		t.Fatal(err)
	}
}

func TestProcessingTimeIdleFlushClosesOnTheBrokersSafeTime(t *testing.T) {
	c := client(t)
	src, sink := uniq("pt-src"), uniq("pt-sink")
	h := run(t, c, streams.From(src).WindowTumbling(1).IdleFlushMs(200).Aggregate(streams.Count("count")).To(sink), opts(uniq("pt")))
	push(t, c, src, "a", map[string]any{"i": 0}, map[string]any{"i": 1}, map[string]any{"i": 2})
	push(t, c, src, "b", map[string]any{"i": 0}, map[string]any{"i": 1})
	// no later message arrives: only the flush can close these windows
	got, msgs := drainMsgs(t, c, sink, "r", 2, 15*time.Second)
	more := drain(t, c, sink, "r", 1<<30, 1500*time.Millisecond)
	st := stop(t, h)
	var total int64
	for _, m := range append(got, more...) {
		total += num(m, "count")
	}
	if total != 5 || st.FlushCycles < 2 {
		t.Fatalf("%v %v %+v", got, more, st)
	}
	// each sink message is on its source partition's name
	names := map[string]bool{}
	for _, m := range msgs {
		names[m.Partition] = true
	}
	if !names["a"] || !names["b"] || len(names) != 2 {
		t.Fatal(names)
	}
}

func TestARestartedRunnerFlushesTheOpenWindowOfAQuietPartition(t *testing.T) {
	c := client(t)
	src, sink := uniq("rf-src"), uniq("rf-sink")
	query := uniq("rf")
	chain := func() *streams.Stream {
		return streams.From(src).WindowTumbling(4).EventTime(ts).IdleFlushMs(300).Aggregate(streams.Count("count")).To(sink)
	}
	pushTs(t, c, src, "p", 1_000, 2_000)
	h := run(t, c, chain(), opts(query))
	// run 1 folds both (the window [0,4) needs 2 s of quiet), then stops before that
	t0 := time.Now()
	for h.Stats().Messages < 2 && time.Since(t0) < 10*time.Second {
		time.Sleep(20 * time.Millisecond)
	}
	st1 := stop(t, h)
	if st1.Messages != 2 || st1.FlushCycles != 0 {
		t.Fatalf("%+v", st1)
	}
	// run 2 pops nothing: it knows the partition from the broker (touched_within_ms) and its
	// acked stamp from __wm__, and the idle flush closes the window
	h = run(t, c, chain(), streams.RunOptions{QueryID: query, MaxWait: 200 * time.Millisecond})
	got := drainExact(t, c, sink, "r", 1, 15*time.Second, time.Second)
	st2 := stop(t, h)
	same(t, got, "[map[count:2]]", st2)
	if st2.FlushCycles < 1 || st2.Messages != 0 {
		t.Fatalf("%+v", st2)
	}
}

func TestForeachSeesTheWindow(t *testing.T) {
	c := client(t)
	src := uniq("fe-src")
	pushTs(t, c, src, "p", 1_000, 2_000, 12_000)
	var mu sync.Mutex
	var seen []string
	h := run(t, c, streams.From(src).WindowTumbling(10).EventTime(ts).IdleFlushMs(0).Aggregate(streams.Count("n")).
		Foreach(func(v any, ctx streams.EmitCtx) {
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%s %s %d-%d %v", ctx.Partition, ctx.WindowKey, ctx.WindowStart, ctx.WindowEnd, v))
			mu.Unlock()
		}), opts(uniq("fe")))
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n >= 1 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop(t, h)
	if fmt.Sprint(seen) != "[p 1970-01-01T00:00:00.000Z 0-10000 map[n:2]]" {
		t.Fatal(seen)
	}
}

func TestSessionIdleFlushClosesTheLastSessionOfAQuietPartition(t *testing.T) {
	c := client(t)
	src, sink := uniq("sf-src"), uniq("sf-sink")
	// one session per user with a 2 s gap; nothing comes after the last events, so only the
	// idle flush (watermark + certified quiet time) can close them
	push(t, c, src, "p", map[string]any{"user": "a", "ts": 1_000}, map[string]any{"user": "b", "ts": 1_500}, map[string]any{"user": "a", "ts": 2_500})
	h := run(t, c, streams.From(src).KeyBy(func(v any) string { s, _ := v.(map[string]any)["user"].(string); return s }).
		WindowSession(2).EventTime(ts).IdleFlushMs(300).
		Aggregate(streams.Count("n"), streams.Max("last", streams.Field("ts"))).To(sink), opts(uniq("sf")))
	got := drainExact(t, c, sink, "r", 2, 20*time.Second, 1500*time.Millisecond)
	st := stop(t, h)
	same(t, sortedBy(got, "last"), "[map[last:1500 n:1] map[last:2500 n:2]]", st)
	if st.FlushCycles < 1 || st.Errors != 0 {
		t.Fatalf("%+v", st)
	}
}

func TestPostStagesPartitionedSinkAndValuesWithoutTime(t *testing.T) {
	c := client(t)
	src, sink := uniq("ps-src"), uniq("ps-sink")
	push(t, c, src, "p", map[string]any{"ts": 1_000, "k": "x"}, map[string]any{"k": "x"}, map[string]any{"ts": 2_000, "k": "y"},
		map[string]any{"ts": "1970-01-01T00:00:03.000Z", "k": "y"}, map[string]any{"ts": 30_000, "k": "x"})
	var errs atomic.Int64
	o := opts(uniq("ps"))
	o.OnError = func(error) { errs.Add(1) }
	h := run(t, c, streams.From(src).KeyBy(func(v any) string { return v.(map[string]any)["k"].(string) }).
		WindowTumbling(10).EventTime(func(v any) any { return v.(map[string]any)["ts"] }).IdleFlushMs(0).
		Aggregate(streams.Count("n")).
		Map(func(v any) any { return streams.Number(v, "n") * 10 }). // not an object: pushed as {"value": v}
		ToPartitioned(sink, func(v any) string { return fmt.Sprintf("tens-%v", v) }), o)
	// [0,10) closes on the 30 s event: x has 1 (the value without a time is reported, skipped
	// and acked), y has 2 (epoch ms and an ISO string)
	got, msgs := drainMsgs(t, c, sink, "r", 2, 20*time.Second)
	more := drain(t, c, sink, "r", 1<<30, 800*time.Millisecond)
	st := stop(t, h)
	same(t, sortedBy(append(got, more...), "value"), "[map[value:10] map[value:20]]", st)
	parts := map[string]bool{}
	for _, m := range msgs {
		parts[m.Partition] = true
	}
	if !parts["tens-10"] || !parts["tens-20"] {
		t.Fatal(parts)
	}
	if st.Errors != 1 || errs.Load() != 1 || !strings.Contains(st.LastError, "no time") || st.Messages != 5 {
		t.Fatalf("%+v (OnError %d)", st, errs.Load())
	}
}

func TestTheIdleFlushWaitsForTheRestOfAPushThatSharesItsStamp(t *testing.T) {
	c := client(t)
	src, sink := uniq("st-src"), uniq("st-sink")
	configure(t, c, src, map[string]any{"leaseTime": 3})
	// one push: its records share one createdAt stamp. Batches of 2: the first cycle acks 1-2
	// (the partition's lastWriteAt equals the stamp acked), the second batch (3-4) fails once
	// and stays leased. The flush must not take the partition for drained on the stamp alone:
	// that would close the window with 1-2 and give 3-4 a second result for it.
	push(t, c, src, "p", map[string]any{"seq": 1}, map[string]any{"seq": 2}, map[string]any{"seq": 3}, map[string]any{"seq": 4})
	var once atomic.Bool
	o := opts(uniq("st"))
	o.BatchSize = 2
	o.MaxPartitions = 1
	h := run(t, c, streams.From(src).Map(func(v any) any {
		if streams.Number(v, "seq") == 3 && !once.Swap(true) {
			panic("deliberate operator panic (test)")
		}
		return v
	}).WindowTumbling(1).IdleFlushMs(200).Aggregate(streams.Count("count")).To(sink), o)
	got := drainExact(t, c, sink, "r", 1, 20*time.Second, 2500*time.Millisecond)
	st := stop(t, h)
	same(t, got, "[map[count:4]]", st)
}

func TestCancellingRunsContextAbortsTheRunnerAndWaitReturns(t *testing.T) {
	c := client(t)
	src, sink := uniq("cx-src"), uniq("cx-sink")
	ctx, cancel := context.WithCancel(context.Background())
	h, err := streams.From(src).To(sink).Run(ctx, c, opts(uniq("cx")))
	if err != nil {
		t.Fatal(err)
	}
	push(t, c, src, "p", map[string]any{"seq": 1})
	same(t, drain(t, c, sink, "r", 1, 10*time.Second), "[map[seq:1]]", nil)
	done := make(chan error, 1)
	go func() { done <- h.Wait() }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after the context was cancelled")
	}
	// a stopped handle stops again without harm
	if _, err := h.Stop(); err != nil {
		t.Fatal(err)
	}
}
