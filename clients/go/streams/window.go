package streams

// The pure part of a cycle: placing events in windows, folding them, deciding what closes.
// No I/O here, so every rule is unit-tested with deterministic times.
//
// State rows are the 2.x SDK's, so a query can move between runtimes: key
// "<operatorTag>\x1f<windowStartISO>\x1f<userKey>", value {acc, windowStart, windowEnd};
// open sessions "sess:<gap>\x1fopen\x1f<userKey>" → {acc, sessionStart, lastEventTime}; the
// partition's watermark row "__wm__" → {eventTimeMs, lastStampUs}.

import (
	"math"
	"sort"
	"strings"
)

const (
	sep          = "\x1f"
	watermarkKey = "__wm__"
	weekOffsetMs = 4 * 86_400_000 // 1970-01-01 was a Thursday: weeks start Monday
)

func everyMs(every string) (int64, bool) {
	switch every {
	case "second":
		return 1000, true
	case "minute":
		return 60_000, true
	case "hour":
		return 3_600_000, true
	case "day":
		return 86_400_000, true
	case "week":
		return 7 * 86_400_000, true
	}
	return 0, false
}

type span struct{ start, end int64 }

// windowsFor is the windows [start, end) an event at ts belongs to (session windows: none).
func windowsFor(w *windowSpec, ts int64) []span {
	switch w.kind {
	case kindTumbling:
		n := w.seconds * 1000
		s := floorDiv(ts, n) * n
		return []span{{s, s + n}}
	case kindSliding:
		size, slide := w.size*1000, w.slide*1000
		latest := floorDiv(ts, slide) * slide
		var out []span
		for i := int64(0); i < size/slide; i++ {
			s := latest - i*slide
			if ts >= s && ts < s+size {
				out = append(out, span{s, s + size})
			}
		}
		return out
	case kindCron:
		n, _ := everyMs(w.every)
		var s int64
		if w.every == "week" {
			s = floorDiv(ts-weekOffsetMs, n)*n + weekOffsetMs
		} else {
			s = floorDiv(ts, n) * n
		}
		return []span{{s, s + n}}
	}
	return nil
}

// env is one value after the pre-window operators: its key, its time, its source message.
type env struct {
	key   string
	value any
	ts    int64
	src   int // index of the source message in the batch; -1 for none
}

// emit is a closed window (or session), or a value of a chain without reducer.
type emit struct {
	key         string
	windowStart int64
	windowEnd   int64
	windowKey   string
	value       any
	hasWindow   bool
}

func stateKey(tag, windowKey, userKey string) string {
	return tag + sep + windowKey + sep + userKey
}

func sessionKey(tag, userKey string) string { return tag + sep + "open" + sep + userKey }

// eventTs is the event time of one value: the extractor's, else the message's createdAt.
func eventTs(w *windowSpec, value any, createdMs int64, hasCreated bool) (int64, bool) {
	if w.eventTime != nil {
		return eventTimeMs(w.eventTime(value))
	}
	return createdMs, hasCreated
}

// deepCopy copies decoded JSON (maps and slices), so a reducer or gate that mutates its
// accumulator in place never touches a shared one.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = deepCopy(e)
		}
		return a
	}
	return v
}

// avgKeys are the hidden running fields of an average (the Python SDK's names for "avg").
func avgKeys(name string) (string, string) {
	if name == "avg" {
		return "__avg_sum", "__avg_count"
	}
	return "__" + name + "_sum", "__" + name + "_count"
}

// initialAcc is the reducer's starting accumulator.
func initialAcc(r *op) any {
	switch r.kind {
	case opReduce:
		return deepCopy(r.initial)
	case opAggregate:
		m := map[string]any{}
		for _, f := range r.fields {
			switch f.Kind {
			case AggMin, AggMax:
				m[f.Name] = nil
			case AggAvg:
				s, c := avgKeys(f.Name)
				m[s] = 0.0
				m[c] = 0.0
				m[f.Name] = 0.0
			default:
				m[f.Name] = 0.0
			}
		}
		return m
	}
	return nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// step folds one value into an accumulator.
func step(r *op, acc any, value any) any {
	switch r.kind {
	case opReduce:
		return r.reduce(acc, value)
	case opAggregate:
		m, ok := acc.(map[string]any)
		if !ok {
			m = map[string]any{}
		}
		for _, f := range r.fields {
			var x float64
			if f.Extract != nil {
				x = f.Extract(value)
			}
			cur, has := toFloat(m[f.Name])
			switch f.Kind {
			case AggCount:
				m[f.Name] = cur + 1
			case AggSum:
				if !finite(x) {
					x = 0
				}
				m[f.Name] = cur + x
			case AggMin, AggMax:
				if finite(x) {
					n := x
					if has {
						if f.Kind == AggMin {
							n = math.Min(cur, x)
						} else {
							n = math.Max(cur, x)
						}
					}
					m[f.Name] = n
				}
			case AggAvg:
				if finite(x) {
					sk, ck := avgKeys(f.Name)
					s, _ := toFloat(m[sk])
					c, _ := toFloat(m[ck])
					s += x
					c++
					m[sk], m[ck], m[f.Name] = s, c, s/c
				}
			}
		}
		return m
	}
	return acc
}

// finish is what an accumulator emits: an aggregate without its internal "__" fields (the
// earlier SDK leaked __avg_sum/__avg_count into the sink).
func finish(r *op, acc any) any {
	if r.kind == opAggregate {
		if m, ok := acc.(map[string]any); ok {
			out := make(map[string]any, len(m))
			for k, v := range m {
				if !strings.HasPrefix(k, "__") {
					out[k] = v
				}
			}
			return out
		}
	}
	return acc
}

func int64Of(x any) (int64, bool) {
	f, ok := toFloat(x)
	if !ok || !finite(f) {
		return 0, false
	}
	return int64(f), true
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

type winAcc struct {
	stateKey  string
	key       string
	start     int64
	end       int64
	windowKey string
	acc       any
	touched   bool
	seeded    bool
}

// stateOp is one state write of a cycle: an upsert (value) or a delete.
type stateOp struct {
	Type    string `json:"type"`
	Key     string `json:"key"`
	Value   any    `json:"value,omitempty"`
	Version *int64 `json:"version,omitempty"`
}

// reduceWindows folds a batch into the loaded windows of w and closes those with
// windowEnd + grace ≤ streamTime. It returns the state ops and the emits in (start, key)
// order.
func reduceWindows(w *windowSpec, r *op, envs []env, loaded map[string]any, streamTime int64) ([]stateOp, []emit) {
	tag := w.tag()
	var accs []*winAcc
	index := map[string]*winAcc{}
	for _, sk := range sortedKeys(loaded) {
		parts := strings.Split(sk, sep)
		if len(parts) != 3 || parts[0] != tag {
			continue
		}
		row, _ := loaded[sk].(map[string]any)
		ws, ok := int64Of(row["windowStart"])
		if !ok {
			ws, _ = parseISOMs(parts[1])
		}
		we, ok := int64Of(row["windowEnd"])
		if !ok {
			we = ws
		}
		acc := row["acc"]
		if acc == nil {
			acc = initialAcc(r)
		}
		a := &winAcc{stateKey: sk, key: parts[2], start: ws, end: we, windowKey: parts[1], acc: acc, seeded: true}
		index[sk] = a
		accs = append(accs, a)
	}
	for _, e := range envs {
		for _, sp := range windowsFor(w, e.ts) {
			wk := isoMs(sp.start)
			sk := stateKey(tag, wk, e.key)
			a := index[sk]
			if a == nil {
				a = &winAcc{stateKey: sk, key: e.key, start: sp.start, end: sp.end, windowKey: wk, acc: initialAcc(r)}
				index[sk] = a
				accs = append(accs, a)
			}
			a.acc = step(r, a.acc, e.value)
			a.touched = true
		}
	}
	var ops []stateOp
	var emits []emit
	for _, a := range accs {
		if a.end+w.graceMs() <= streamTime {
			if a.seeded {
				ops = append(ops, stateOp{Type: "delete", Key: a.stateKey})
			}
			emits = append(emits, emit{key: a.key, windowStart: a.start, windowEnd: a.end, windowKey: a.windowKey, value: finish(r, a.acc), hasWindow: true})
		} else if a.touched {
			ops = append(ops, stateOp{Type: "upsert", Key: a.stateKey, Value: map[string]any{"acc": a.acc, "windowStart": a.start, "windowEnd": a.end}})
		}
	}
	sort.SliceStable(emits, func(i, j int) bool {
		if emits[i].windowStart != emits[j].windowStart {
			return emits[i].windowStart < emits[j].windowStart
		}
		return emits[i].key < emits[j].key
	})
	return ops, emits
}

type session struct {
	user   string
	acc    any
	start  int64
	last   int64
	dirty  bool
	seeded bool
	closed bool
}

// runSession extends a key's session while its events come within gap and closes it when
// lastEventTime + gap + grace ≤ now (or when an event comes after the gap: a split).
func runSession(w *windowSpec, r *op, envs []env, loaded map[string]any, now int64) ([]stateOp, []emit) {
	gap := w.gap * 1000
	tag := w.tag()
	prefix := tag + sep + "open" + sep
	var sessions []*session
	byUser := map[string]*session{}
	for _, sk := range sortedKeys(loaded) {
		if !strings.HasPrefix(sk, prefix) {
			continue
		}
		row, _ := loaded[sk].(map[string]any)
		start, ok1 := int64Of(row["sessionStart"])
		last, ok2 := int64Of(row["lastEventTime"])
		if !ok1 || !ok2 {
			continue
		}
		acc := row["acc"]
		if acc == nil {
			acc = initialAcc(r)
		}
		s := &session{user: strings.TrimPrefix(sk, prefix), acc: acc, start: start, last: last, seeded: true}
		sessions = append(sessions, s)
		byUser[s.user] = s
	}
	mk := func(s *session) emit {
		return emit{key: s.user, windowStart: s.start, windowEnd: s.last + gap, windowKey: isoMs(s.start), value: finish(r, deepCopy(s.acc)), hasWindow: true}
	}
	var emits []emit
	for _, e := range envs {
		s := byUser[e.key]
		switch {
		case s != nil && s.last+gap >= e.ts:
			if e.ts > s.last {
				s.last = e.ts
			}
			if e.ts < s.start {
				s.start = e.ts
			}
			s.dirty = true
		case s != nil:
			emits = append(emits, mk(s))
			s.acc, s.start, s.last, s.dirty, s.closed = initialAcc(r), e.ts, e.ts, true, false // keeps seeded: its delete/upsert is sent
		default:
			s = &session{user: e.key, acc: initialAcc(r), start: e.ts, last: e.ts, dirty: true}
			sessions = append(sessions, s)
			byUser[e.key] = s
		}
		s.acc = step(r, s.acc, e.value)
	}
	var ops []stateOp
	for _, s := range sessions {
		if s.last+gap+w.graceMs() <= now {
			emits = append(emits, mk(s))
			s.closed = true
		}
		sk := sessionKey(tag, s.user)
		if s.closed {
			if s.seeded {
				ops = append(ops, stateOp{Type: "delete", Key: sk})
			}
		} else if s.dirty {
			ops = append(ops, stateOp{Type: "upsert", Key: sk, Value: map[string]any{"acc": s.acc, "sessionStart": s.start, "lastEventTime": s.last}})
		}
	}
	return ops, emits
}

// flushClock is the idle flush's clock for one partition (ms), or false when it must not
// flush (runner.go): safeUs = the broker's safeTime, lastWriteUs = the partition's
// lastWriteAt, lastSeenUs = the createdAt of the last message the runner's cycles acked on it.
func flushClock(eventTime bool, watermarkMs int64, hasWatermark bool, safeUs, lastWriteUs, lastSeenUs int64) (int64, bool) {
	if lastWriteUs > lastSeenUs {
		return 0, false // a backlog: the pop loop's cycles close its windows
	}
	if !eventTime {
		return floorDiv(safeUs, 1000), true
	}
	if !hasWatermark {
		return 0, false
	}
	quiet := safeUs - lastWriteUs
	if quiet < 0 {
		quiet = 0
	}
	return watermarkMs + quiet/1000, true
}
