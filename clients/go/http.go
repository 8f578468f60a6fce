package queen

// The HTTP core: several broker URLs with failover, a bearer token, JSON bodies and the 2.x
// client's retry policy (../shared/reference/queen-2.6-wire.md, as the JS and Rust SDKs do it):
//
//   - 4xx is never retried, except 429: retried in place up to Options.RateLimitRetries times
//     (10; without a bound for a long-poll pop), waiting Retry-After when the broker sends it,
//     else RateLimitBase·2^n (500 ms, capped at 30 s, ±20 % jitter).
//   - network errors, 502, 503 and 504: retried Options.Retries times (3) with RetryBase·2^n
//     back-off (1 s, capped at 30 s, ±20 %; a Retry-After on a 503 is honoured). With several
//     URLs the next healthy one is tried at once and the failed one is marked unhealthy for
//     Options.UnhealthyFor (5 s); the back-off is waited once every URL has been tried.
//   - an affinity key (queue:partition:group) picks the first URL on a consistent-hash ring,
//     128 virtual nodes per URL, so one consumer's requests keep landing on one node.
//   - the context cancels everything, the waits between attempts included.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options configures a Client. The zero value of every field means its default.
type Options struct {
	// URLs are the broker nodes (e.g. "http://localhost:6632"). Empty: the comma-separated
	// QUEEN_URL environment variable, else http://localhost:6632.
	URLs []string
	// Token is sent as "Authorization: Bearer <Token>" when not empty.
	Token string
	// Timeout bounds one HTTP attempt (default 30 s). A long-poll pop uses its wait + 5 s.
	Timeout time.Duration
	// Retries is how many more attempts a network error or a 502/503/504 gets (default 3;
	// negative: none).
	Retries int
	// Headers are added to every request.
	Headers http.Header
	// RetryBase is the first back-off after a server failure (default 1 s).
	RetryBase time.Duration
	// RateLimitBase is the first wait after a 429 without Retry-After (default 500 ms).
	RateLimitBase time.Duration
	// RateLimitRetries is how many more attempts a 429 gets (default 10; negative: none).
	RateLimitRetries int
	// UnhealthyFor is how long a failed URL is tried last (default 5 s).
	UnhealthyFor time.Duration
	// HTTPClient is the transport (default: a client of its own, without a global timeout).
	HTTPClient *http.Client
	// BinaryPush sends pushes in the 2.x binary body (QPB1, every item with its
	// transactionId) instead of JSON; a push with a traceId goes as JSON. The answer is the
	// same.
	BinaryPush bool
}

// APIError is a non-2xx answer of the broker. Callers branch on Status and Code, never on
// Message.
type APIError struct {
	Status int
	// Code is body.code, else body.error when that is a short identifier (the KV/timer/lock
	// envelope puts the code there).
	Code string
	// Message is body.error (prose), else "HTTP <status>".
	Message string
	// Body is the answer's body as it came.
	Body []byte
	// Reason is body.reason (the finer stable id of the KV/timer/lock family), if any.
	Reason string
	// RetryAfter is the answer's Retry-After (a 429's), zero when absent.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	if e.Code != "" && e.Code != e.Message {
		return fmt.Sprintf("queen: HTTP %d %s: %s", e.Status, e.Code, e.Message)
	}
	return fmt.Sprintf("queen: HTTP %d: %s", e.Status, e.Message)
}

// NetworkError is returned when no broker answered after the retries.
type NetworkError struct {
	Method, Path string
	Err          error
}

func (e *NetworkError) Error() string {
	return fmt.Sprintf("queen: %s %s: %v", e.Method, e.Path, e.Err)
}
func (e *NetworkError) Unwrap() error { return e.Err }

// Client talks to one queen cluster. It is safe for concurrent use.
type Client struct {
	opts      Options
	urls      []string
	hc        *http.Client
	ring      []ringNode
	mu        sync.Mutex
	unhealthy []time.Time
	rr        int
}

type ringNode struct {
	hash uint32
	url  int
}

// New builds a Client. It sends nothing.
func New(opts Options) (*Client, error) {
	urls := opts.URLs
	if len(urls) == 0 {
		if env := os.Getenv("QUEEN_URL"); env != "" {
			for _, u := range strings.Split(env, ",") {
				if u = strings.TrimSpace(u); u != "" {
					urls = append(urls, u)
				}
			}
		}
	}
	if len(urls) == 0 {
		urls = []string{"http://localhost:6632"}
	}
	c := &Client{opts: opts, hc: opts.HTTPClient}
	for _, u := range urls {
		u = strings.TrimRight(strings.TrimSpace(u), "/")
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return nil, fmt.Errorf("queen: broker URL %q: want http:// or https://", u)
		}
		c.urls = append(c.urls, u)
	}
	if c.opts.Timeout <= 0 {
		c.opts.Timeout = 30 * time.Second
	}
	if c.opts.Retries == 0 {
		c.opts.Retries = 3
	} else if c.opts.Retries < 0 {
		c.opts.Retries = 0
	}
	if c.opts.RateLimitRetries == 0 {
		c.opts.RateLimitRetries = 10
	} else if c.opts.RateLimitRetries < 0 {
		c.opts.RateLimitRetries = 0
	}
	if c.opts.RetryBase <= 0 {
		c.opts.RetryBase = time.Second
	}
	if c.opts.RateLimitBase <= 0 {
		c.opts.RateLimitBase = 500 * time.Millisecond
	}
	if c.opts.UnhealthyFor <= 0 {
		c.opts.UnhealthyFor = 5 * time.Second
	}
	if c.hc == nil {
		// keep-alive for concurrent consumers: the default keeps 2 idle connections per host
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		c.hc = &http.Client{Transport: tr}
	}
	c.unhealthy = make([]time.Time, len(c.urls))
	if len(c.urls) > 1 {
		for i, u := range c.urls {
			for v := 0; v < 128; v++ {
				c.ring = append(c.ring, ringNode{ringHash(fmt.Sprintf("%s#vnode%d", u, v)), i})
			}
		}
		sort.Slice(c.ring, func(a, b int) bool { return c.ring[a].hash < c.ring[b].hash })
	}
	return c, nil
}

// URLs returns the broker URLs the client uses, without trailing slashes.
func (c *Client) URLs() []string { return append([]string(nil), c.urls...) }

// ringHash is the 2.x client's affinity hash (FNV-1a-like, 32 bit).
func ringHash(s string) uint32 {
	h := uint32(2166136261)
	for _, ch := range s {
		h ^= uint32(ch)
		h += (h << 1) + (h << 4) + (h << 7) + (h << 8) + (h << 24)
	}
	return h
}

func jitter(d time.Duration, frac float64) time.Duration {
	f := 1 + (rand.Float64()*2-1)*frac
	return time.Duration(float64(d) * f)
}

func backoff(base time.Duration, n int, maxShift int) time.Duration {
	if n > maxShift {
		n = maxShift
	}
	d := base << uint(n)
	if d > 30*time.Second || d <= 0 {
		d = 30 * time.Second
	}
	return jitter(d, 0.2)
}

// order lists the URL indexes in the order one call tries them: the affinity owner (or the
// next in round robin) first, unhealthy ones last.
func (c *Client) order(affinity string) []int {
	n := len(c.urls)
	c.mu.Lock()
	defer c.mu.Unlock()
	first := 0
	if n > 1 {
		if affinity != "" {
			h := ringHash(affinity)
			pos := sort.Search(len(c.ring), func(i int) bool { return c.ring[i].hash >= h })
			first = c.ring[pos%len(c.ring)].url
		} else {
			c.rr = (c.rr + 1) % n
			first = c.rr
		}
	}
	now := time.Now()
	var good, bad []int
	for k := 0; k < n; k++ {
		i := (first + k) % n
		if c.unhealthy[i].After(now) {
			bad = append(bad, i)
		} else {
			good = append(good, i)
		}
	}
	return append(good, bad...)
}

func (c *Client) markUnhealthy(i int) {
	if len(c.urls) > 1 {
		c.mu.Lock()
		c.unhealthy[i] = time.Now().Add(c.opts.UnhealthyFor)
		c.mu.Unlock()
	}
}

// callOpts are one call's knobs beyond the defaults.
type callOpts struct {
	affinity string
	// longPoll > 0: a long poll of that wait; 429 retried without a bound, the attempt's
	// deadline is longPoll + 5 s.
	longPoll time.Duration
	ctype    string
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// parseRetryAfter reads a Retry-After header: seconds (a float, as the broker and the proxy
// send it) or an HTTP date. ok is false when absent or unreadable.
func parseRetryAfter(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || s != s || s > 3600 {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := time.Until(t)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

// DoRaw sends one request with the retry policy and returns the broker's last answer,
// whatever its status: err is non-nil only when no answer came (network errors after the
// retries, a cancelled context), never for a non-2xx status (use Status / NewAPIError).
// hdr may be nil; body nil means no body (a JSON body gets its Content-Type from hdr, else
// application/json is set when body is not nil).
func (c *Client) DoRaw(ctx context.Context, method, path string, hdr http.Header, body []byte) (int, http.Header, []byte, error) {
	return c.doRaw(ctx, method, path, hdr, body, callOpts{})
}

func (c *Client) doRaw(ctx context.Context, method, path string, hdr http.Header, body []byte, co callOpts) (int, http.Header, []byte, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	serverFailures, rateLimited, idx := 0, 0, 0
	order := c.order(co.affinity)
	for {
		if err := ctx.Err(); err != nil {
			return 0, nil, nil, err
		}
		ui := order[idx%len(order)]
		status, rh, rb, err := c.attempt(ctx, method, c.urls[ui]+path, hdr, body, co)
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return 0, nil, nil, ctx.Err()
			}
			c.markUnhealthy(ui)
			serverFailures++
			if serverFailures > c.opts.Retries {
				return 0, nil, nil, &NetworkError{method, path, err}
			}
			idx++
			if idx%len(order) != 0 {
				continue // the next URL at once
			}
			wait = backoff(c.opts.RetryBase, serverFailures-1, 5)
		case status == http.StatusTooManyRequests:
			rateLimited++
			if co.longPoll <= 0 && rateLimited > c.opts.RateLimitRetries {
				return status, rh, rb, nil
			}
			if ra, ok := parseRetryAfter(rh.Get("Retry-After")); ok {
				wait = ra
			} else {
				wait = backoff(c.opts.RateLimitBase, rateLimited-1, 6)
			}
		case status == http.StatusBadGateway || status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout:
			c.markUnhealthy(ui)
			serverFailures++
			if serverFailures > c.opts.Retries {
				return status, rh, rb, nil
			}
			idx++
			ra, hasRA := parseRetryAfter(rh.Get("Retry-After"))
			if idx%len(order) != 0 && !hasRA {
				continue
			}
			if hasRA {
				wait = ra
			} else {
				wait = backoff(c.opts.RetryBase, serverFailures-1, 5)
			}
		default:
			return status, rh, rb, nil
		}
		if err := sleepCtx(ctx, wait); err != nil {
			return 0, nil, nil, err
		}
		if idx%len(order) == 0 {
			order = c.order(co.affinity)
		}
	}
}

func (c *Client) attempt(ctx context.Context, method, url string, hdr http.Header, body []byte, co callOpts) (int, http.Header, []byte, error) {
	limit := c.opts.Timeout
	if co.longPoll > 0 {
		limit = co.longPoll + 5*time.Second
	}
	actx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(actx, method, url, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	for k, vs := range c.opts.Headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	for k, vs := range hdr {
		req.Header.Del(k)
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		ct := co.ctype
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if c.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.Token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, nil, err
	}
	return resp.StatusCode, resp.Header, rb, nil
}

// NewAPIError builds the error of a non-2xx answer from its status, headers and body.
func NewAPIError(status int, hdr http.Header, body []byte) *APIError {
	e := &APIError{Status: status, Body: body}
	var m map[string]any
	if json.Unmarshal(body, &m) == nil {
		errField, _ := m["error"].(string)
		if code, ok := m["code"].(string); ok && code != "" {
			e.Code = code
		} else if isIdent(errField) {
			e.Code = errField
		}
		e.Reason, _ = m["reason"].(string)
		e.Message = errField
		if e.Message == "" {
			if d, ok := m["detail"].(string); ok {
				e.Message = d
			}
		}
	} else if len(body) > 0 && len(body) <= 200 {
		e.Message = strings.TrimSpace(string(body))
	}
	if e.Message == "" {
		e.Message = fmt.Sprintf("HTTP %d", status)
	}
	if hdr != nil {
		e.RetryAfter, _ = parseRetryAfter(hdr.Get("Retry-After"))
	}
	return e
}

func isIdent(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Do sends a JSON request and decodes a JSON answer into out (which may be nil). body nil
// means no body; a []byte or json.RawMessage body is sent as it is. A non-2xx answer returns
// *APIError; no answer returns *NetworkError (or the context's error). A 204 or an empty body
// leaves out untouched.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	return c.do(ctx, method, path, body, out, callOpts{})
}

func (c *Client) do(ctx context.Context, method, path string, body, out any, co callOpts) error {
	_, err := c.doStatus(ctx, method, path, body, out, co)
	return err
}

// doStatus is do that also returns the answer's status (0 when none came).
func (c *Client) doStatus(ctx context.Context, method, path string, body, out any, co callOpts) (int, error) {
	var raw []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		raw = b
	case json.RawMessage:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return 0, fmt.Errorf("queen: %s %s: encoding the body: %w", method, path, err)
		}
	}
	status, rh, rb, err := c.doRaw(ctx, method, path, nil, raw, co)
	if err != nil {
		return 0, err
	}
	if status < 200 || status > 299 {
		return status, NewAPIError(status, rh, rb)
	}
	if out == nil || status == http.StatusNoContent || len(bytes.TrimSpace(rb)) == 0 {
		return status, nil
	}
	if err := json.Unmarshal(rb, out); err != nil {
		return status, fmt.Errorf("queen: %s %s: reading the answer: %w", method, path, err)
	}
	return status, nil
}

// IsStatus reports whether err is an *APIError of that status.
func IsStatus(err error, status int) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == status
}

// ErrorCode returns the Code of an *APIError (or *InvalidError) in err's chain, "" otherwise.
func ErrorCode(err error) string {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Code
	}
	var ie *InvalidError
	if errors.As(err, &ie) {
		return ie.Code
	}
	return ""
}
