package streams

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every shared vector of clients/vectors/config_hash.json (made from the real 2.x Python SDK)
// rebuilt as a Go chain: the canonical text and the hash must be the Python SDK's.
func buildVector(t *testing.T, steps []map[string]any) *Stream {
	s := From("src")
	for _, st := range steps {
		a, _ := st["args"].(map[string]any)
		u := func(k string) (int, bool) {
			f, ok := a[k].(float64)
			return int(f), ok
		}
		must := func(k string) int {
			n, ok := u(k)
			if !ok {
				t.Fatalf("vector step %v: no %s", st, k)
			}
			return n
		}
		windowOpts := func(s *Stream) *Stream {
			if g, ok := u("gracePeriod"); ok {
				s = s.GracePeriod(g)
			}
			if i, ok := u("idleFlushMs"); ok {
				s = s.IdleFlushMs(i)
			}
			if a["eventTime"] == true {
				s = s.EventTime(func(v any) any { return Number(v, "ts") })
			}
			if l, ok := u("allowedLateness"); ok {
				s = s.AllowedLateness(l)
			}
			switch a["onLate"] {
			case "include":
				s = s.OnLate(OnLateInclude)
			case "drop":
				s = s.OnLate(OnLateDrop)
			}
			return s
		}
		switch st["op"] {
		case "map":
			s = s.Map(func(v any) any { return v })
		case "filter":
			s = s.Filter(func(any) bool { return true })
		case "flatMap":
			s = s.FlatMap(func(v any) []any { return []any{v} })
		case "keyBy":
			s = s.KeyBy(func(any) string { return "k" })
		case "gate":
			s = s.Gate(func(any, *GateCtx) bool { return true })
		case "foreach":
			s = s.Foreach(func(any, EmitCtx) {})
		case "to":
			s = s.To(a["queue"].(string))
		case "windowTumbling":
			s = windowOpts(s.WindowTumbling(must("seconds")))
		case "windowSliding":
			s = windowOpts(s.WindowSliding(must("size"), must("slide")))
		case "windowSession":
			s = windowOpts(s.WindowSession(must("gap")))
		case "windowCron":
			s = windowOpts(s.WindowCron(a["every"].(string)))
		case "reduce":
			s = s.Reduce(a["initial"], func(acc, _ any) any { return acc })
		case "aggregate":
			for _, f := range a["fields"].([]any) {
				name := f.(string)
				switch name {
				case "count":
					s = s.Aggregate(Count(name))
				case "min":
					s = s.Aggregate(Min(name, Field("x")))
				case "max":
					s = s.Aggregate(Max(name, Field("x")))
				case "avg":
					s = s.Aggregate(Avg(name, Field("x")))
				default:
					s = s.Aggregate(Sum(name, Field("x")))
				}
			}
		default:
			t.Fatalf("vector step %v unknown to this test", st["op"])
		}
	}
	return s
}

func TestEverySharedVectorMatchesThePythonSDK(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "..", "vectors", "config_hash.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Vectors []struct {
			Steps      []map[string]any `json:"steps"`
			Canonical  string           `json:"canonical"`
			ConfigHash string           `json:"config_hash"`
		} `json:"vectors"`
	}
	if err := json.Unmarshal(text, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Vectors) < 9 {
		t.Fatalf("the vectors file lost entries: %d", len(doc.Vectors))
	}
	for _, v := range doc.Vectors {
		s := buildVector(t, v.Steps)
		if s.err != nil {
			t.Fatalf("%v: %v", v.Steps, s.err)
		}
		if got := s.CanonicalConfig(); got != v.Canonical {
			t.Errorf("canonical of %v:\n got %s\nwant %s", v.Steps, got, v.Canonical)
		}
		if got := s.ConfigHash(); got != v.ConfigHash {
			t.Errorf("hash of %v: got %s want %s", v.Steps, got, v.ConfigHash)
		}
	}
}

func TestTheWorkedExampleOfTheReference(t *testing.T) {
	s := From("src").WindowTumbling(2).Aggregate(Count("count"), Sum("sum", Field("amount"))).To("sink")
	if h := s.ConfigHash(); h != "d5996a8234f7f9b8b6c9aabe1c2c2d3a1b37fd688933dfe3efe3aa9a01da8822" {
		t.Fatal(h)
	}
	// consecutive Aggregate calls make one aggregate: the same hash
	s2 := From("src").WindowTumbling(2).Aggregate(Count("count")).Aggregate(Sum("sum", Field("amount"))).To("sink")
	if s2.ConfigHash() != s.ConfigHash() {
		t.Fatal(s2.CanonicalConfig())
	}
}

func TestCanonicalStringsArePythonsEnsureAsciiFalse(t *testing.T) {
	var b strings.Builder
	writeJSONString(&b, "a<b>&\"\\\n\x01ü\u2028")
	if got, want := b.String(), "\"a<b>&\\\"\\\\\\n\\u0001ü\u2028\""; got != want {
		t.Fatalf("got %s want %s", got, want)
	}
}

func TestChainRulesAreCheckedWhenBuilt(t *testing.T) {
	src := func() *Stream { return From("src") }
	yes := func(any, *GateCtx) bool { return true }
	cases := []struct {
		s    *Stream
		want string
	}{
		{src().Gate(yes).Gate(yes), "at most one .Gate()"},
		{src().WindowTumbling(1).Aggregate(Count("n")).Gate(yes), "mutually exclusive"},
		{src().Gate(yes).WindowTumbling(1), "mutually exclusive"},
		{src().Gate(yes).KeyBy(func(any) string { return "k" }), "before"},
		{src().WindowTumbling(1).KeyBy(func(any) string { return "k" }), "before"},
		{src().Aggregate(Count("n")), "requires a preceding window"},
		{src().Reduce(0, func(a, _ any) any { return a }), "requires a preceding window"},
		{src().WindowTumbling(1).WindowSliding(2, 1), "only one window"},
		{src().IdleFlushMs(10), "must follow a window"},
		{src().WindowTumbling(1).Aggregate(Count("n")).GracePeriod(1), "must follow a window"},
		{src().WindowSliding(10, 3), "multiple"},
		{src().WindowTumbling(0), "seconds > 0"},
		{src().WindowCron("fortnight"), "every must be"},
		{src().WindowSession(5).To("x"), "requires a downstream"},
		{src().To("x").Map(func(v any) any { return v }), "nothing may follow"},
		{src().WindowTumbling(1).Aggregate(Count("__x")), "reserved"},
		{src().WindowTumbling(1).Aggregate(Count("n"), Count("n")), "given twice"},
		{src().WindowTumbling(1).Aggregate(Count("n")).Map(func(v any) any { return v }).Aggregate(Count("m")), "only one"},
		{src().WindowTumbling(1).Reduce(0, func(a, _ any) any { return a }).Aggregate(Count("m")), "only one"},
		{src().WindowTumbling(1).Map(func(v any) any { return v }).Aggregate(Count("m")), "between the window and its reducer"},
	}
	for i, c := range cases {
		err := c.s.Build()
		var ce *ChainError
		if err == nil || !asChain(err, &ce) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: got %v, want a ChainError with %q", i, err, c.want)
		}
	}
	if err := src().KeyBy(func(any) string { return "k" }).Gate(yes).To("x").Build(); err != nil {
		t.Fatal(err)
	}
	if err := src().WindowTumbling(2).IdleFlushMs(500).Aggregate(Count("count")).Map(func(v any) any { return v }).To("x").Build(); err != nil {
		t.Fatal(err)
	}
}

func asChain(err error, out **ChainError) bool {
	c, ok := err.(*ChainError)
	*out = c
	return ok
}
