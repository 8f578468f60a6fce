package queen

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fast is the retry timing of these tests: the policy, not the default waits.
func fast(urls ...string) Options {
	return Options{URLs: urls, RetryBase: time.Millisecond, RateLimitBase: time.Millisecond, Timeout: 2 * time.Second}
}

func TestDoJSONAndToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			t.Errorf("authorization = %q", r.Header.Get("Authorization"))
		}
		if r.Header.Get("X-Extra") != "1" {
			t.Errorf("x-extra = %q", r.Header.Get("X-Extra"))
		}
		if r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("content-type = %q", r.Header.Get("Content-Type"))
		}
		b, _ := io.ReadAll(r.Body)
		if string(b) != `{"a":1}` {
			t.Errorf("body = %s", b)
		}
		w.Write([]byte(`{"ok":true,"path":"` + r.URL.Path + `"}`))
	}))
	defer srv.Close()
	o := fast(srv.URL + "/")
	o.Token = "tok"
	o.Headers = http.Header{"X-Extra": {"1"}}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		OK   bool
		Path string
	}
	if err := c.Do(context.Background(), "POST", "/api/v1/x", map[string]int{"a": 1}, &out); err != nil {
		t.Fatal(err)
	}
	if !out.OK || out.Path != "/api/v1/x" {
		t.Fatalf("out = %+v", out)
	}
}

func TestNoBodyAnd204(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if len(b) != 0 || r.Header.Get("Content-Type") != "" {
			t.Errorf("a nil body was sent: %q (%q)", b, r.Header.Get("Content-Type"))
		}
		w.WriteHeader(204)
	}))
	defer srv.Close()
	c, _ := New(fast(srv.URL))
	out := map[string]any{"kept": true}
	if err := c.Do(context.Background(), "POST", "/x", nil, &out); err != nil {
		t.Fatal(err)
	}
	if out["kept"] != true {
		t.Fatal("a 204 touched out")
	}
}

func TestRetryOn503ThenSuccess(t *testing.T) {
	var n int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if atomic.AddInt32(&n, 1) <= 2 {
			w.WriteHeader(503)
			return
		}
		w.Write([]byte(`{"v":7}`))
	}))
	defer srv.Close()
	c, _ := New(fast(srv.URL))
	var out struct{ V int }
	if err := c.Do(context.Background(), "GET", "/x", nil, &out); err != nil {
		t.Fatal(err)
	}
	if out.V != 7 || atomic.LoadInt32(&n) != 3 {
		t.Fatalf("v=%d attempts=%d", out.V, n)
	}
}

func TestRetriesExhausted(t *testing.T) {
	var n int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atomic.AddInt32(&n, 1)
		w.WriteHeader(502)
		w.Write([]byte(`{"error":"bad gateway","code":"upstream"}`))
	}))
	defer srv.Close()
	o := fast(srv.URL)
	o.Retries = 2
	c, _ := New(o)
	err := c.Do(context.Background(), "GET", "/x", nil, nil)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 502 || ae.Code != "upstream" {
		t.Fatalf("err = %v", err)
	}
	if atomic.LoadInt32(&n) != 3 {
		t.Fatalf("attempts = %d, want 3", n)
	}
}

func TestNo4xxRetryAndNo500Retry(t *testing.T) {
	for _, st := range []int{400, 404, 409, 500} {
		var n int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			atomic.AddInt32(&n, 1)
			w.WriteHeader(st)
		}))
		c, _ := New(fast(srv.URL))
		err := c.Do(context.Background(), "GET", "/x", nil, nil)
		srv.Close()
		if !IsStatus(err, st) || atomic.LoadInt32(&n) != 1 {
			t.Fatalf("status %d: err=%v attempts=%d", st, err, n)
		}
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	var n int32
	var first time.Time
	var gap time.Duration
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if atomic.AddInt32(&n, 1) == 1 {
			first = time.Now()
			w.Header().Set("Retry-After", "0.3")
			w.WriteHeader(429)
			w.Write([]byte(`{"error":"slow down","code":"rate_limited"}`))
			return
		}
		gap = time.Since(first)
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	c, _ := New(fast(srv.URL))
	if err := c.Do(context.Background(), "GET", "/x", nil, nil); err != nil {
		t.Fatal(err)
	}
	if gap < 280*time.Millisecond {
		t.Fatalf("retried after %v, Retry-After said 300 ms", gap)
	}
}

func TestRateLimitExhausted(t *testing.T) {
	var n int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atomic.AddInt32(&n, 1)
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(429)
		w.Write([]byte(`{"error":"quota","code":"quota_exceeded"}`))
	}))
	defer srv.Close()
	o := fast(srv.URL)
	o.RateLimitRetries = 4
	c, _ := New(o)
	err := c.Do(context.Background(), "GET", "/x", nil, nil)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 429 || ae.Code != "quota_exceeded" || ae.Message != "quota" {
		t.Fatalf("err = %v", err)
	}
	if atomic.LoadInt32(&n) != 5 {
		t.Fatalf("attempts = %d, want 5", n)
	}
}

func TestFailoverToSecondURL(t *testing.T) {
	var downHits int32
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atomic.AddInt32(&downHits, 1)
		w.WriteHeader(503)
	}))
	defer down.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"node":"up"}`))
	}))
	defer up.Close()
	// a closed port: a network error
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	o := fast(deadURL, down.URL, up.URL)
	o.Retries = 2
	o.RetryBase = time.Hour // failover must not wait: every URL is tried before a back-off
	c, _ := New(o)
	for i := 0; i < 6; i++ {
		var out struct{ Node string }
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := c.Do(ctx, "GET", "/x", nil, &out)
		cancel()
		if err != nil || out.Node != "up" {
			t.Fatalf("call %d: %v %+v", i, err, out)
		}
	}
	// the failed nodes are marked unhealthy: later calls go to the healthy one first
	if h := atomic.LoadInt32(&downHits); h > 1 {
		t.Fatalf("the unhealthy node was tried %d times", h)
	}
}

func TestNetworkErrorAfterRetries(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	u := dead.URL
	dead.Close()
	c, _ := New(fast(u))
	err := c.Do(context.Background(), "GET", "/x", nil, nil)
	var ne *NetworkError
	if !errors.As(err, &ne) {
		t.Fatalf("err = %T %v", err, err)
	}
}

func TestContextCancelsBackoff(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(429)
	}))
	defer srv.Close()
	c, _ := New(fast(srv.URL))
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	err := c.Do(ctx, "GET", "/x", nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if time.Since(t0) > 2*time.Second {
		t.Fatalf("cancel took %v", time.Since(t0))
	}
}

func TestContextCancelsRequest(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c, _ := New(fast(srv.URL))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	err := c.Do(ctx, "GET", "/x", nil, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestErrorDecoding(t *testing.T) {
	cases := []struct {
		body                  string
		code, reason, message string
	}{
		{`{"error":"queue not found","code":"not_found"}`, "not_found", "", "queue not found"},
		{`{"error":"kv_precondition","reason":"version","detail":"fence lost"}`, "kv_precondition", "version", "kv_precondition"},
		{`{"error":"Invalid JSON"}`, "", "", "Invalid JSON"},
		{`not json`, "", "", "not json"},
		{``, "", "", "HTTP 418"},
	}
	for _, tc := range cases {
		e := NewAPIError(418, nil, []byte(tc.body))
		if e.Code != tc.code || e.Reason != tc.reason || e.Message != tc.message || string(e.Body) != tc.body {
			t.Errorf("%s: %+v", tc.body, e)
		}
		if !strings.Contains(e.Error(), "418") {
			t.Errorf("Error() = %q", e.Error())
		}
	}
}

func TestDoRawReturnsStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") != "application/x-test" {
			t.Errorf("content-type = %q", r.Header.Get("Content-Type"))
		}
		w.Header().Set("X-Answer", "1")
		w.WriteHeader(409)
		w.Write([]byte(`{"error":"mismatch"}`))
	}))
	defer srv.Close()
	c, _ := New(fast(srv.URL))
	st, h, b, err := c.DoRaw(context.Background(), "POST", "/x", http.Header{"Content-Type": {"application/x-test"}}, []byte("abc"))
	if err != nil || st != 409 || h.Get("X-Answer") != "1" || string(b) != `{"error":"mismatch"}` {
		t.Fatalf("%d %v %s %v", st, h, b, err)
	}
}

func TestQueenURLEnv(t *testing.T) {
	t.Setenv("QUEEN_URL", "http://a:1/, http://b:2")
	c, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if u := c.URLs(); len(u) != 2 || u[0] != "http://a:1" || u[1] != "http://b:2" {
		t.Fatalf("urls = %v", u)
	}
	if _, err := New(Options{URLs: []string{"localhost:1"}}); err == nil {
		t.Fatal("a URL without a scheme was accepted")
	}
}

func TestAffinityIsStable(t *testing.T) {
	c, _ := New(Options{URLs: []string{"http://a:1", "http://b:2", "http://c:3"}})
	a := c.order("q:*:g")
	for i := 0; i < 5; i++ {
		b := c.order("q:*:g")
		if b[0] != a[0] || len(b) != 3 {
			t.Fatalf("%v vs %v", a, b)
		}
	}
	// the ring hash matches the JS and Rust clients' (h of "" is the FNV offset basis)
	if ringHash("") != 2166136261 {
		t.Fatal("ring hash basis")
	}
	// values computed by clients/js/src/http.js ringHash
	if ringHash("orders:*:g1") != 614783462 || ringHash("http://a:1#vnode7") != 1377682167 {
		t.Fatalf("ring hash differs from the JS client's: %d %d", ringHash("orders:*:g1"), ringHash("http://a:1#vnode7"))
	}
}

func TestRetryAfterOn503AndBackoff(t *testing.T) {
	var n int32
	var stamps []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stamps = append(stamps, time.Now())
		switch atomic.AddInt32(&n, 1) {
		case 1:
			w.Header().Set("Retry-After", "0.2")
			w.WriteHeader(503)
		case 2:
			w.WriteHeader(504) // no Retry-After: RetryBase · 2^1 = 200 ms (±20 %)
		default:
			w.Write([]byte(`{}`))
		}
	}))
	defer srv.Close()
	o := fast(srv.URL)
	o.RetryBase = 100 * time.Millisecond
	c, _ := New(o)
	if err := c.Do(context.Background(), "GET", "/x", nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(stamps) != 3 {
		t.Fatalf("%d attempts", len(stamps))
	}
	if d := stamps[1].Sub(stamps[0]); d < 190*time.Millisecond {
		t.Fatalf("a 503's Retry-After of 200 ms was not honoured: %v", d)
	}
	if d := stamps[2].Sub(stamps[1]); d < 150*time.Millisecond || d > 2*time.Second {
		t.Fatalf("the second back-off was %v, want about 200 ms", d)
	}
}

func TestAttemptTimeoutIsRetried(t *testing.T) {
	var n int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if atomic.AddInt32(&n, 1) == 1 {
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
			return
		}
		w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	o := fast(srv.URL)
	o.Timeout = 100 * time.Millisecond
	c, _ := New(o)
	var out struct{ OK bool }
	if err := c.Do(context.Background(), "GET", "/x", nil, &out); err != nil || !out.OK || atomic.LoadInt32(&n) != 2 {
		t.Fatalf("%v %+v attempts %d", err, out, n)
	}
}

func TestRetryAfterParsing(t *testing.T) {
	if d, ok := parseRetryAfter("1.5"); !ok || d != 1500*time.Millisecond {
		t.Fatal(d, ok)
	}
	if d, ok := parseRetryAfter(time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)); !ok || d <= time.Second || d > 3*time.Second {
		t.Fatal(d, ok)
	}
	for _, v := range []string{"", "soon", "-1", "NaN", "99999"} {
		if _, ok := parseRetryAfter(v); ok {
			t.Fatalf("%q accepted", v)
		}
	}
}
