package streams

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func specOf(t *testing.T, s *Stream) (*windowSpec, *op) {
	t.Helper()
	st, err := s.stages()
	if err != nil {
		t.Fatal(err)
	}
	return st.window, st.reducer
}

func ev(key string, ts int64, amount float64) env {
	return env{key: key, value: map[string]any{"amount": amount}, ts: ts, src: -1}
}

// asJSON compares values the way they go over the wire.
func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTumblingClosesOnStreamTimeAndSeedsFromState(t *testing.T) {
	w, r := specOf(t, From("s").WindowTumbling(2).Aggregate(Count("count"), Sum("sum", Field("amount"))))
	ops, emits := reduceWindows(w, r, []env{ev("p", 0, 1), ev("p", 1500, 2), ev("p", 2100, 4)}, map[string]any{}, 2100)
	if len(emits) != 1 || asJSON(t, emits[0].value) != `{"count":2,"sum":3}` || emits[0].windowKey != "1970-01-01T00:00:00.000Z" {
		t.Fatalf("%+v", emits)
	}
	// the open [2,4) window, upserted; the closed one was never stored
	if len(ops) != 1 || ops[0].Type != "upsert" || ops[0].Key != "tumb:2\x1f1970-01-01T00:00:02.000Z\x1fp" {
		t.Fatalf("%+v", ops)
	}
	// next batch: the stored row (as it comes back from the broker) is seeded, extended, then
	// closed and deleted
	var row any
	if err := json.Unmarshal([]byte(asJSON(t, ops[0].Value)), &row); err != nil {
		t.Fatal(err)
	}
	ops2, emits2 := reduceWindows(w, r, []env{ev("p", 3000, 10)}, map[string]any{ops[0].Key: row}, 4000)
	if len(emits2) != 1 || asJSON(t, emits2[0].value) != `{"count":2,"sum":14}` {
		t.Fatalf("%+v", emits2)
	}
	if len(ops2) != 1 || ops2[0].Type != "delete" || ops2[0].Key != ops[0].Key {
		t.Fatalf("%+v", ops2)
	}
}

func TestGraceHoldsAWindowOpen(t *testing.T) {
	w, r := specOf(t, From("s").WindowTumbling(2).GracePeriod(1).Aggregate(Count("n")))
	if _, e := reduceWindows(w, r, []env{ev("p", 100, 0)}, nil, 2500); len(e) != 0 {
		t.Fatal(e)
	}
	if _, e := reduceWindows(w, r, []env{ev("p", 100, 0)}, nil, 3000); len(e) != 1 {
		t.Fatal(e)
	}
}

func TestSlidingPlacesEachEventInSizeOverSlideWindows(t *testing.T) {
	w, r := specOf(t, From("s").WindowSliding(10, 5).Aggregate(Sum("sum", Field("amount"))))
	if got := windowsFor(w, 12_000); !reflect.DeepEqual(got, []span{{10_000, 20_000}, {5_000, 15_000}}) {
		t.Fatal(got)
	}
	_, e := reduceWindows(w, r, []env{ev("k", 6_000, 1), ev("k", 12_000, 2)}, nil, 30_000)
	var got [][2]any
	for _, x := range e {
		got = append(got, [2]any{x.windowStart, x.value.(map[string]any)["sum"]})
	}
	if want := [][2]any{{int64(0), 1.0}, {int64(5_000), 3.0}, {int64(10_000), 2.0}}; !reflect.DeepEqual(got, want) {
		t.Fatal(got)
	}
}

func TestCronBucketsAlignToTheWallClock(t *testing.T) {
	ts, _ := parseISOMs("2026-12-02T13:45:12.345Z") // a Wednesday
	for every, want := range map[string]string{
		"second": "2026-12-02T13:45:12.000Z", "minute": "2026-12-02T13:45:00.000Z", "hour": "2026-12-02T13:00:00.000Z",
		"day": "2026-12-02T00:00:00.000Z", "week": "2026-11-30T00:00:00.000Z", // Monday
	} {
		w, _ := specOf(t, From("s").WindowCron(every).Aggregate(Count("n")))
		if got := isoMs(windowsFor(w, ts)[0].start); got != want {
			t.Errorf("%s: %s want %s", every, got, want)
		}
	}
}

func TestSessionExtendsWithinGapAndSplitsAfter(t *testing.T) {
	w, r := specOf(t, From("s").WindowSession(5).Aggregate(Count("n")))
	ops, e := runSession(w, r, []env{ev("a", 0, 0), ev("a", 4_000, 0), ev("a", 20_000, 0), ev("b", 1_000, 0)}, nil, 21_000)
	// a's first session [0, 9000) closed by the split, b's [1000, 6000) by the clock
	if len(e) != 2 || e[0].key != "a" || e[0].windowStart != 0 || e[0].windowEnd != 9_000 || asJSON(t, e[0].value) != `{"n":2}` {
		t.Fatalf("%+v", e)
	}
	if e[1].key != "b" || e[1].windowEnd != 6_000 {
		t.Fatalf("%+v", e)
	}
	// a's second session stays open
	if len(ops) != 1 || ops[0].Value.(map[string]any)["sessionStart"] != int64(20_000) {
		t.Fatalf("%+v", ops)
	}
	// a split of a stored session keeps its row: the new session is upserted over it, and a
	// close of it sends the delete (the earlier SDK's double emit, B13)
	loaded := map[string]any{sessionKey(w.tag(), "a"): map[string]any{"acc": map[string]any{"n": 1.0}, "sessionStart": 0.0, "lastEventTime": 0.0}}
	ops, e = runSession(w, r, []env{ev("a", 10_000, 0)}, loaded, 30_000)
	if len(e) != 2 || asJSON(t, e[0].value) != `{"n":1}` || asJSON(t, e[1].value) != `{"n":1}` || len(ops) != 1 || ops[0].Type != "delete" {
		t.Fatalf("%+v %+v", e, ops)
	}
}

func TestAggregateEmitsNoInternalFields(t *testing.T) {
	w, r := specOf(t, From("s").WindowTumbling(1).Aggregate(Avg("avg", Field("amount")), Min("min", Field("amount")), Max("max", Field("amount"))))
	ops, e := reduceWindows(w, r, []env{ev("p", 0, 1), ev("p", 10, 4)}, nil, 500)
	if len(e) != 0 || len(ops) != 1 {
		t.Fatal(e, ops)
	}
	// the state row keeps the running sum and count (the Python SDK's names)
	acc := ops[0].Value.(map[string]any)["acc"].(map[string]any)
	if acc["__avg_sum"] != 5.0 || acc["__avg_count"] != 2.0 {
		t.Fatal(acc)
	}
	_, e = reduceWindows(w, r, []env{ev("p", 0, 1), ev("p", 10, 4)}, nil, 5000)
	if asJSON(t, e[0].value) != `{"avg":2.5,"max":4,"min":1}` {
		t.Fatal(asJSON(t, e[0].value))
	}
}

func TestReduceWithInitialIsCopiedPerWindow(t *testing.T) {
	w, r := specOf(t, From("s").WindowTumbling(1).Reduce(map[string]any{"n": 0.0}, func(acc, v any) any {
		m := acc.(map[string]any)
		m["n"] = m["n"].(float64) + Number(v, "amount") // mutates in place
		return m
	}))
	_, e := reduceWindows(w, r, []env{ev("p", 0, 1.5), ev("p", 10, 4), ev("p", 1000, 1)}, nil, 5000)
	if len(e) != 2 || asJSON(t, e[0].value) != `{"n":5.5}` || asJSON(t, e[1].value) != `{"n":1}` {
		t.Fatalf("%+v", e)
	}
}

func TestIdleRule(t *testing.T) {
	type c struct {
		et        bool
		wm        int64
		hasWm     bool
		safe, lw  int64
		seen      int64
		want      int64
		wantFlush bool
	}
	for i, x := range []c{
		{false, 0, false, 10_500_000, 9_000_000, 9_000_000, 10_500, true},  // processing time: safeTime once drained
		{false, 0, false, 10_500_000, 9_500_000, 9_000_000, 0, false},      // a backlog
		{true, 3_500, true, 10_500_000, 9_000_000, 9_000_000, 5_000, true}, // watermark + certified quiet time
		{true, 0, false, 10_500_000, 9_000_000, 9_000_000, 0, false},
		{true, 3_500, true, 8_000_000, 9_000_000, 9_000_000, 3_500, true}, // skew never moves it back
	} {
		got, ok := flushClock(x.et, x.wm, x.hasWm, x.safe, x.lw, x.seen)
		if ok != x.wantFlush || got != x.want {
			t.Errorf("case %d: %d %v", i, got, ok)
		}
	}
}

func TestEventTimeExtractors(t *testing.T) {
	tm := time.Date(2026, 12, 2, 10, 0, 0, 5e6, time.UTC)
	for _, x := range []any{tm, tm.UnixMilli(), float64(tm.UnixMilli()), int(tm.UnixMilli()), "2026-12-02T10:00:00.005Z", "2026-12-02T11:00:00.005+01:00", json.Number("1796205600005")} {
		if ms, ok := eventTimeMs(x); !ok || ms != tm.UnixMilli() {
			t.Errorf("%T %v: %d %v", x, x, ms, ok)
		}
	}
	for _, x := range []any{nil, "soon", map[string]any{}, time.Time{}} {
		if _, ok := eventTimeMs(x); ok {
			t.Errorf("%v placed", x)
		}
	}
	if us, ok := parseISOUs("2026-12-02 10:00:00.123456Z"); !ok || isoUs(us) != "2026-12-02T10:00:00.123456Z" {
		t.Fatal(us, ok)
	}
}

func TestTokenBucketGate(t *testing.T) {
	g := TokenBucketGate(2, 1, nil)
	ctx := &GateCtx{State: map[string]any{}, StreamTimeMs: 1000}
	res := []bool{g(nil, ctx), g(nil, ctx), g(nil, ctx)}
	if !reflect.DeepEqual(res, []bool{true, true, false}) || ctx.State["allowedTotal"] != int64(2) {
		t.Fatal(res, ctx.State)
	}
	ctx.StreamTimeMs = 2000 // one second refills one token
	if !g(nil, ctx) || g(nil, ctx) {
		t.Fatal(ctx.State)
	}
}
