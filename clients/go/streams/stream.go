// Package streams is the stream runtime of the queen Go SDK: an operator chain that runs in this
// process, its state in the broker's PostgreSQL (shared/spec/streams.txt).
//
//	From(queue) → Map / Filter / FlatMap / KeyBy → one window (WindowTumbling, WindowSliding,
//	WindowSession, WindowCron) with its event-time and idle-flush knobs → a reducer (Aggregate,
//	Reduce) → To(queue) or Foreach; or, instead of window + reducer, one Gate.
//
// Run(ctx, client, RunOptions) registers the query (POST /streams/v1/queries) and starts the
// runner (runner.go: the cycle and the idle-flush rule). The chain rules are checked as the
// chain is built; the first broken one is returned by Build and Run as a *ChainError.
//
// Values flowing down the chain are decoded JSON (map[string]any, []any, float64, string,
// bool, nil). Operators must be safe to call from several goroutines: the partitions of one
// pop are processed concurrently.
package streams

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ChainError is a broken chain rule, found when the chain was built.
type ChainError struct{ Msg string }

func (e *ChainError) Error() string { return "streams: chain: " + e.Msg }

// OnLatePolicy is what happens to an event older than the partition's watermark.
type OnLatePolicy int

const (
	// OnLateDrop drops a late event (counted in Stats.LateEvents).
	OnLateDrop OnLatePolicy = iota
	// OnLateInclude folds it as any other: into a window that already closed, a second,
	// partial result for that window.
	OnLateInclude
)

func (p OnLatePolicy) String() string {
	if p == OnLateInclude {
		return "include"
	}
	return "drop"
}

// GateCtx is the context of one gate decision. State is this key's state row: kept when the
// value is allowed, discarded when it is denied. StreamTimeMs is the cycle's clock.
type GateCtx struct {
	State        map[string]any
	StreamTimeMs int64
	PartitionID  string
	Partition    string
	Key          string
}

// GateFunc allows (true) or denies (false) one value.
type GateFunc func(v any, ctx *GateCtx) bool

// EmitCtx says where an emitted value came from (Foreach).
type EmitCtx struct {
	Partition   string
	PartitionID string
	Key         string
	// WindowKey, WindowStart and WindowEnd (epoch ms) are set for a window's result.
	WindowKey   string
	WindowStart int64
	WindowEnd   int64
	HasWindow   bool
}

// Number reads v[field] as a number (a numeric string counts); 0 when absent or not a number.
func Number(v any, field string) float64 {
	f, _ := OptNumber(v, field)
	return f
}

// OptNumber is Number with a flag: false when v[field] is absent or not a number.
func OptNumber(v any, field string) (float64, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return 0, false
	}
	return toFloat(m[field])
}

func toFloat(x any) (float64, bool) {
	switch n := x.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case uint64:
		return float64(n), true
	case interface{ Float64() (float64, error) }: // json.Number
		f, err := n.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
		return f, err == nil
	}
	return 0, false
}

// Field returns an extractor of v[name] as a number (Number), for Sum, Min, Max and Avg.
func Field(name string) func(v any) float64 {
	return func(v any) float64 { return Number(v, name) }
}

type windowKind int

const (
	kindTumbling windowKind = iota
	kindSliding
	kindSession
	kindCron
)

type windowSpec struct {
	kind        windowKind
	seconds     int64 // tumbling
	size, slide int64 // sliding
	gap         int64 // session
	every       string
	grace       int64 // seconds
	idleFlushMs int64
	eventTime   func(v any) any
	lateness    int64 // seconds
	onLate      OnLatePolicy
}

func (w *windowSpec) tag() string {
	switch w.kind {
	case kindTumbling:
		return fmt.Sprintf("tumb:%d", w.seconds)
	case kindSliding:
		return fmt.Sprintf("slide:%d:%d", w.size, w.slide)
	case kindSession:
		return fmt.Sprintf("sess:%d", w.gap)
	default:
		return "cron:" + w.every
	}
}

func (w *windowSpec) graceMs() int64    { return w.grace * 1000 }
func (w *windowSpec) latenessMs() int64 { return w.lateness * 1000 }
func (w *windowSpec) isSession() bool   { return w.kind == kindSession }
func (w *windowSpec) hasEventTime() bool {
	return w.eventTime != nil
}

// AggKind is one aggregate of Aggregate.
type AggKind int

const (
	AggCount AggKind = iota
	AggSum
	AggMin
	AggMax
	AggAvg
)

// AggField is one named field of Aggregate: Count, Sum, Min, Max, Avg.
type AggField struct {
	Name    string
	Kind    AggKind
	Extract func(v any) float64
}

// Count is the number of values in the window.
func Count(name string) AggField { return AggField{Name: name, Kind: AggCount} }

// Sum of f(v) (a non-finite value counts 0).
func Sum(name string, f func(v any) float64) AggField {
	return AggField{Name: name, Kind: AggSum, Extract: f}
}

// Min of f(v) (null until a finite value came).
func Min(name string, f func(v any) float64) AggField {
	return AggField{Name: name, Kind: AggMin, Extract: f}
}

// Max of f(v) (null until a finite value came).
func Max(name string, f func(v any) float64) AggField {
	return AggField{Name: name, Kind: AggMax, Extract: f}
}

// Avg is the mean of f(v); its running sum and count stay in state and are never emitted.
func Avg(name string, f func(v any) float64) AggField {
	return AggField{Name: name, Kind: AggAvg, Extract: f}
}

type opKind int

const (
	opMap opKind = iota
	opFilter
	opFlatMap
	opKeyBy
	opWindow
	opReduce
	opAggregate
	opGate
	opSink
	opForeach
)

type op struct {
	kind       opKind
	mapf       func(any) any
	filter     func(any) bool
	flat       func(any) []any
	key        func(any) string
	win        *windowSpec
	reduce     func(acc, v any) any
	initial    any
	hasInitial bool
	fields     []AggField
	gate       GateFunc
	queue      string
	partition  func(any) string
	foreach    func(any, EmitCtx)
}

func (o *op) isReducer() bool { return o.kind == opReduce || o.kind == opAggregate }

// Stream is an operator chain over a source queue. Its methods add to the chain in place and
// return it, so a chain is written as one expression; the first broken rule is kept and
// returned by Build and Run.
type Stream struct {
	source string
	ops    []op
	err    error
}

// From starts a chain over the source queue. The runner pops it as consumer group
// streams.<QueryID> (RunOptions.ConsumerGroup changes it).
func From(queue string) *Stream { return &Stream{source: queue} }

// Source is the source queue's name.
func (s *Stream) Source() string { return s.source }

func (s *Stream) fail(format string, a ...any) *Stream {
	if s.err == nil {
		s.err = &ChainError{Msg: fmt.Sprintf(format, a...)}
	}
	return s
}

func (s *Stream) has(f func(o *op) bool) bool {
	for i := range s.ops {
		if f(&s.ops[i]) {
			return true
		}
	}
	return false
}

func (s *Stream) terminal() bool {
	return s.has(func(o *op) bool { return o.kind == opSink || o.kind == opForeach })
}

func (s *Stream) push(o op) *Stream {
	if s.err != nil {
		return s
	}
	if s.terminal() {
		return s.fail("nothing may follow .To() or .Foreach()")
	}
	s.ops = append(s.ops, o)
	return s
}

// Map replaces each value by f(value).
func (s *Stream) Map(f func(v any) any) *Stream { return s.push(op{kind: opMap, mapf: f}) }

// Filter keeps the values for which f is true.
func (s *Stream) Filter(f func(v any) bool) *Stream { return s.push(op{kind: opFilter, filter: f}) }

// FlatMap replaces each value by the values f returns (none drops it).
func (s *Stream) FlatMap(f func(v any) []any) *Stream { return s.push(op{kind: opFlatMap, flat: f}) }

// KeyBy changes the state key (default: the source partition id). It must come before the
// window, the reducer and the gate.
func (s *Stream) KeyBy(f func(v any) string) *Stream {
	if s.has(func(o *op) bool { return o.kind == opKeyBy }) {
		return s.fail("only one .KeyBy() per stream")
	}
	if s.has(func(o *op) bool { return o.kind == opWindow || o.isReducer() || o.kind == opGate }) {
		return s.fail(".KeyBy() must come before the window, the reducer and .Gate()")
	}
	return s.push(op{kind: opKeyBy, key: f})
}

func (s *Stream) window(w windowSpec) *Stream {
	if s.has(func(o *op) bool { return o.kind == opWindow }) {
		return s.fail("only one window operator per stream")
	}
	if s.has(func(o *op) bool { return o.kind == opGate }) {
		return s.fail("a window and .Gate() are mutually exclusive in one stream (chain two streams)")
	}
	if s.has(func(o *op) bool { return o.isReducer() }) {
		return s.fail("the window must come before .Reduce()/.Aggregate()")
	}
	return s.push(op{kind: opWindow, win: &w})
}

// WindowTumbling buckets values in fixed, non-overlapping windows of seconds (idle flush
// 5000 ms by default).
func (s *Stream) WindowTumbling(seconds int) *Stream {
	if seconds <= 0 {
		return s.fail("WindowTumbling requires seconds > 0")
	}
	return s.window(windowSpec{kind: kindTumbling, seconds: int64(seconds), idleFlushMs: 5000})
}

// WindowSliding makes windows of size seconds starting every slide seconds; size must be a
// multiple of slide (idle flush 5000 ms by default).
func (s *Stream) WindowSliding(size, slide int) *Stream {
	if size <= 0 || slide <= 0 {
		return s.fail("WindowSliding requires size > 0 and slide > 0")
	}
	if size%slide != 0 {
		return s.fail("WindowSliding: size (%d) must be an integer multiple of slide (%d)", size, slide)
	}
	return s.window(windowSpec{kind: kindSliding, size: int64(size), slide: int64(slide), idleFlushMs: 5000})
}

// WindowSession keeps one window per key, extended while its events come within gap seconds
// (idle flush 1000 ms by default). It needs a reducer.
func (s *Stream) WindowSession(gap int) *Stream {
	if gap <= 0 {
		return s.fail("WindowSession requires gap > 0")
	}
	return s.window(windowSpec{kind: kindSession, gap: int64(gap), idleFlushMs: 1000})
}

// WindowCron makes wall-clock aligned buckets: "second", "minute", "hour", "day" or "week"
// (weeks start on Monday 00:00 UTC); idle flush 30000 ms by default.
func (s *Stream) WindowCron(every string) *Stream {
	if _, ok := everyMs(every); !ok {
		return s.fail("WindowCron: every must be second|minute|hour|day|week (got %q)", every)
	}
	return s.window(windowSpec{kind: kindCron, every: every, idleFlushMs: 30000})
}

func (s *Stream) withWindow(what string, f func(w *windowSpec)) *Stream {
	if s.err != nil {
		return s
	}
	if n := len(s.ops); n > 0 && s.ops[n-1].kind == opWindow {
		f(s.ops[n-1].win)
		return s
	}
	return s.fail(".%s() must follow a window operator", what)
}

// IdleFlushMs sets the idle-flush interval of the window just added; 0 disables it.
func (s *Stream) IdleFlushMs(ms int) *Stream {
	if ms < 0 {
		return s.fail("IdleFlushMs must be >= 0")
	}
	return s.withWindow("IdleFlushMs", func(w *windowSpec) { w.idleFlushMs = int64(ms) })
}

// GracePeriod keeps a window open seconds after its end (on the stream clock).
func (s *Stream) GracePeriod(seconds int) *Stream {
	if seconds < 0 {
		return s.fail("GracePeriod must be >= 0")
	}
	return s.withWindow("GracePeriod", func(w *windowSpec) { w.grace = int64(seconds) })
}

// EventTime buckets on the extractor's time instead of the broker's createdAt. f reads the
// value and returns a time.Time, epoch milliseconds (an integer or float) or an ISO-8601
// string; nil means the value has no time (it is reported and skipped).
func (s *Stream) EventTime(f func(v any) any) *Stream {
	if f == nil {
		return s.fail("EventTime needs an extractor")
	}
	return s.withWindow("EventTime", func(w *windowSpec) { w.eventTime = f })
}

// AllowedLateness makes the watermark trail the newest event time by seconds.
func (s *Stream) AllowedLateness(seconds int) *Stream {
	if seconds < 0 {
		return s.fail("AllowedLateness must be >= 0")
	}
	return s.withWindow("AllowedLateness", func(w *windowSpec) { w.lateness = int64(seconds) })
}

// OnLate sets the policy for events below the watermark (default OnLateDrop).
func (s *Stream) OnLate(p OnLatePolicy) *Stream {
	return s.withWindow("OnLate", func(w *windowSpec) { w.onLate = p })
}

func (s *Stream) reducerCheck() string {
	if s.has(func(o *op) bool { return o.kind == opGate }) {
		return "a reducer and .Gate() are mutually exclusive in one stream"
	}
	if !s.has(func(o *op) bool { return o.kind == opWindow }) {
		return ".Reduce()/.Aggregate() requires a preceding window operator"
	}
	return ""
}

// Reduce folds each window: acc = f(acc, value), starting from initial (nil: no initial).
func (s *Stream) Reduce(initial any, f func(acc, v any) any) *Stream {
	if e := s.reducerCheck(); e != "" {
		return s.fail("%s", e)
	}
	if s.has(func(o *op) bool { return o.isReducer() }) {
		return s.fail("only one .Reduce()/.Aggregate() per stream")
	}
	if f == nil {
		return s.fail("Reduce needs a function")
	}
	return s.push(op{kind: opReduce, reduce: f, initial: initial, hasInitial: initial != nil})
}

// Aggregate folds each window into named fields: Count, Sum, Min, Max, Avg. Consecutive
// Aggregate calls make one aggregate.
func (s *Stream) Aggregate(fields ...AggField) *Stream {
	if e := s.reducerCheck(); e != "" {
		return s.fail("%s", e)
	}
	if len(fields) == 0 {
		return s.fail("Aggregate needs at least one field")
	}
	if s.err != nil {
		return s
	}
	n := len(s.ops)
	merging := n > 0 && s.ops[n-1].kind == opAggregate
	if !merging && s.has(func(o *op) bool { return o.isReducer() }) {
		return s.fail("only one .Reduce()/.Aggregate() per stream")
	}
	var cur []AggField
	if merging {
		cur = s.ops[n-1].fields
	}
	for _, f := range fields {
		if f.Name == "" || strings.HasPrefix(f.Name, "__") {
			return s.fail("aggregate field name %q is empty or reserved (\"__\")", f.Name)
		}
		if f.Kind != AggCount && f.Extract == nil {
			return s.fail("aggregate field %q needs an extractor", f.Name)
		}
		for _, c := range cur {
			if c.Name == f.Name {
				return s.fail("aggregate field %q given twice", f.Name)
			}
		}
		cur = append(cur, f)
	}
	if merging {
		s.ops[n-1].fields = cur
		return s
	}
	return s.push(op{kind: opAggregate, fields: cur})
}

// Gate allows or denies each value in source order. A deny stops the batch: the allowed
// prefix is committed with release_lease false and the rest stays leased and comes back in
// order; a first-message deny commits nothing.
func (s *Stream) Gate(f GateFunc) *Stream {
	if s.has(func(o *op) bool { return o.kind == opGate }) {
		return s.fail("at most one .Gate() per stream (chain two streams for two decisions)")
	}
	if s.has(func(o *op) bool { return o.kind == opWindow || o.isReducer() }) {
		return s.fail(".Gate() and a window plus reducer are mutually exclusive in one stream")
	}
	if f == nil {
		return s.fail("Gate needs a function")
	}
	return s.push(op{kind: opGate, gate: f})
}

// To pushes what leaves the chain onto queue, on the source message's partition name. A
// value that is not a JSON object is pushed as {"value": v}.
func (s *Stream) To(queue string) *Stream {
	if queue == "" {
		return s.fail("To needs a queue name")
	}
	return s.push(op{kind: opSink, queue: queue})
}

// ToPartitioned is To with the sink partition chosen by f(value).
func (s *Stream) ToPartitioned(queue string, f func(v any) string) *Stream {
	if queue == "" || f == nil {
		return s.fail("ToPartitioned needs a queue name and a function")
	}
	return s.push(op{kind: opSink, queue: queue, partition: f})
}

// Foreach calls f for each value leaving the chain, then acks (an effect outside PostgreSQL
// is at-least-once: a replayed cycle calls it again).
func (s *Stream) Foreach(f func(v any, ctx EmitCtx)) *Stream {
	if f == nil {
		return s.fail("Foreach needs a function")
	}
	return s.push(op{kind: opForeach, foreach: f})
}

// stages is the chain split into what the runner executes.
type stages struct {
	pre     []op
	window  *windowSpec
	reducer *op
	gate    GateFunc
	post    []op
	sink    *op
}

// Build checks the chain rules; nil when the chain can run.
func (s *Stream) Build() error {
	_, err := s.stages()
	return err
}

func (s *Stream) stages() (*stages, error) {
	if s.err != nil {
		return nil, s.err
	}
	st := &stages{}
	afterCore := false
	for i := range s.ops {
		o := s.ops[i]
		switch {
		case o.kind == opWindow:
			st.window = o.win
		case o.isReducer():
			oc := o
			st.reducer = &oc
			afterCore = true
		case o.kind == opGate:
			st.gate = o.gate
			afterCore = true
		case o.kind == opSink || o.kind == opForeach:
			oc := o
			st.sink = &oc
		case o.kind == opKeyBy:
			st.pre = append(st.pre, o)
		case afterCore:
			st.post = append(st.post, o)
		case st.window != nil:
			return nil, &ChainError{Msg: "Map/Filter/FlatMap between the window and its reducer are not supported: move them before the window"}
		default:
			st.pre = append(st.pre, o)
		}
	}
	if st.window != nil && st.window.isSession() && st.reducer == nil {
		return nil, &ChainError{Msg: "WindowSession requires a downstream .Reduce() or .Aggregate()"}
	}
	return st, nil
}

// CanonicalConfig is the canonical JSON of the chain: the input of ConfigHash, the 2.x Python
// SDK's recipe (clients/vectors/config_hash.json).
func (s *Stream) CanonicalConfig() string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range s.ops {
		if i > 0 {
			b.WriteByte(',')
		}
		s.ops[i].canonical(&b)
	}
	b.WriteByte(']')
	return b.String()
}

// ConfigHash is SHA-256 of CanonicalConfig, lowercase hex: the 2.x Python SDK's hash (and the
// JS and Rust SDKs').
func (s *Stream) ConfigHash() string {
	sum := sha256.Sum256([]byte(s.CanonicalConfig()))
	return hex.EncodeToString(sum[:])
}

func (o *op) canonical(b *strings.Builder) {
	kv := func(k string, v string) { // v: already-encoded JSON
		b.WriteByte(',')
		writeJSONString(b, k)
		b.WriteByte(':')
		b.WriteString(v)
	}
	kind := func(k string) {
		b.WriteString(`{"kind":`)
		writeJSONString(b, k)
	}
	num := func(n int64) string { return strconv.FormatInt(n, 10) }
	str := func(s string) string {
		var t strings.Builder
		writeJSONString(&t, s)
		return t.String()
	}
	switch o.kind {
	case opMap:
		kind("map")
	case opFilter:
		kind("filter")
	case opFlatMap:
		kind("flatMap")
	case opKeyBy:
		kind("keyBy")
	case opGate:
		kind("gate")
	case opForeach:
		kind("foreach")
	case opSink:
		kind("sink")
		kv("queue", str(o.queue))
	case opReduce:
		kind("reduce")
		kv("hasInitial", strconv.FormatBool(o.hasInitial))
	case opAggregate:
		kind("aggregate")
		var t strings.Builder
		t.WriteByte('[')
		for i, f := range o.fields {
			if i > 0 {
				t.WriteByte(',')
			}
			writeJSONString(&t, f.Name)
		}
		t.WriteByte(']')
		kv("fields", t.String())
	case opWindow:
		w := o.win
		switch w.kind {
		case kindTumbling:
			kind("window-tumbling")
			kv("seconds", num(w.seconds))
		case kindSliding:
			kind("window-sliding")
			kv("size", num(w.size))
			kv("slide", num(w.slide))
		case kindSession:
			kind("window-session")
			kv("gap", num(w.gap))
		case kindCron:
			kind("window-cron")
			kv("every", str(w.every))
		}
		kv("gracePeriod", num(w.grace))
		kv("idleFlushMs", num(w.idleFlushMs))
		kv("eventTime", strconv.FormatBool(w.eventTime != nil))
		kv("allowedLateness", num(w.lateness))
		kv("onLate", str(w.onLate.String()))
	}
	b.WriteByte('}')
}

// writeJSONString writes s as Python's json.dumps(ensure_ascii=False) does: only '"', '\\'
// and control characters are escaped (encoding/json would also escape <, >, & and U+2028).
func writeJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else if r == utf8.RuneError {
				b.WriteString(`\ufffd`)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// TokenBucketGate is a ready-made rate limiter: capacity tokens, refilled at refillPerSec;
// each value costs cost(v) tokens (1 for a non-finite or negative cost; cost nil = 1). The
// bucket lives in ctx.State (tokens, lastRefillAt, allowedTotal, consumedTotal: the Python
// helper's fields), so it is committed only with allowed values. Sustainable rate per
// partition: min(refillPerSec, capacity / lease seconds). It panics on a non-positive
// capacity or refill rate.
func TokenBucketGate(capacity, refillPerSec float64, cost func(v any) float64) GateFunc {
	if !(capacity > 0) || math.IsInf(capacity, 0) {
		panic("streams.TokenBucketGate: capacity must be a positive number")
	}
	if !(refillPerSec > 0) || math.IsInf(refillPerSec, 0) {
		panic("streams.TokenBucketGate: refillPerSec must be a positive number")
	}
	return func(v any, ctx *GateCtx) bool {
		now := float64(ctx.StreamTimeMs)
		num := func(k string, def float64) float64 {
			if f, ok := toFloat(ctx.State[k]); ok {
				return f
			}
			return def
		}
		tokens := num("tokens", capacity)
		last := num("lastRefillAt", now)
		elapsed := math.Max((now-last)/1000, 0)
		tokens = math.Min(tokens+elapsed*refillPerSec, capacity)
		ctx.State["lastRefillAt"] = int64(now)
		c := 1.0
		if cost != nil {
			c = cost(v)
		}
		if math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
			c = 1
		}
		allowed := false
		switch {
		case c == 0:
			allowed = true
		case tokens >= c:
			tokens -= c
			ctx.State["allowedTotal"] = int64(num("allowedTotal", 0)) + 1
			ctx.State["consumedTotal"] = num("consumedTotal", 0) + c
			allowed = true
		}
		ctx.State["tokens"] = tokens
		return allowed
	}
}
