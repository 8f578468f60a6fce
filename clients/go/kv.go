package queen

// The KV store on the 2.x wire: every op through POST /api/v1/kv {operations}, one batch one
// transaction, verdicts per op at 200 (Applied for writes, Found for reads). Refusals are
// *APIError with the 2.x envelope's Code (kv_*) and Reason.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Forever is the expiry of a key (or a lock-free KV write) that never expires. Every put,
// putIfAbsent and incr carries exactly one expiry: a positive TTL or Forever; 0 is refused
// client-side (kv_expiry_not_specified), never a silent "forever".
const Forever time.Duration = -1

// InvalidError is a request the client refuses before sending it. Code is the broker's code
// for the same refusal when it has one.
type InvalidError struct {
	Code    string
	Message string
}

func (e *InvalidError) Error() string {
	if e.Code != "" {
		return "queen: " + e.Code + ": " + e.Message
	}
	return "queen: " + e.Message
}

// KVOp is one KV operation; build it with the KV* functions and its setters.
type KVOp struct {
	m   map[string]any
	err error
}

// MarshalJSON sends the op's fields.
func (o KVOp) MarshalJSON() ([]byte, error) {
	if o.err != nil {
		return nil, o.err
	}
	return json.Marshal(o.m)
}

// Err is the op's client-side refusal, if any.
func (o KVOp) Err() error { return o.err }

func kvBase(op, ns, key string) KVOp {
	return KVOp{m: map[string]any{"op": op, "ns": ns, "key": key}}
}

func (o KVOp) with(k string, v any) KVOp {
	m := make(map[string]any, len(o.m)+1)
	for a, b := range o.m {
		m[a] = b
	}
	m[k] = v
	return KVOp{m: m, err: o.err}
}

func (o KVOp) fail(code, msg string) KVOp {
	if o.err == nil {
		o.err = &InvalidError{Code: code, Message: msg}
	}
	return o
}

func (o KVOp) expiry(ttl time.Duration) KVOp {
	switch {
	case ttl == Forever:
		return o.with("forever", true)
	case ttl > 0:
		s := int64((ttl + time.Second - 1) / time.Second)
		return o.with("ttlSeconds", s)
	default:
		return o.fail("kv_expiry_not_specified", "give a positive TTL or queen.Forever")
	}
}

// KVGet reads one key: {found, key, value, version, expiresAt, updatedAt}.
func KVGet(ns, key string) KVOp { return kvBase("get", ns, key) }

// KVGetMany reads several keys: {rows, missing, truncated}.
func KVGetMany(ns string, keys ...string) KVOp {
	o := KVOp{m: map[string]any{"op": "getMany", "ns": ns, "keys": keys}}
	if len(keys) == 0 {
		return o.fail("kv_invalid_name", "getMany needs at least one key")
	}
	return o
}

// KVGetPrefix lists live keys starting with prefix (non-empty): {rows, truncated, nextAfter}.
// Refused inside a transaction.
func KVGetPrefix(ns, prefix string) KVOp {
	o := KVOp{m: map[string]any{"op": "getPrefix", "ns": ns, "prefix": prefix}}
	if prefix == "" {
		return o.fail("kv_prefix_required", "getPrefix needs a non-empty prefix")
	}
	return o
}

// KVPut writes value with its expiry (a TTL, or Forever).
func KVPut(ns, key string, value any, ttl time.Duration) KVOp {
	return kvBase("put", ns, key).with("value", value).expiry(ttl)
}

// KVPutIfAbsent writes value only when the key is not live.
func KVPutIfAbsent(ns, key string, value any, ttl time.Duration) KVOp {
	return kvBase("putIfAbsent", ns, key).with("value", value).expiry(ttl)
}

// KVDelete deletes a key; an absent one is {applied: false, reason: "absent"}.
func KVDelete(ns, key string) KVOp { return kvBase("delete", ns, key) }

// KVIncr adds delta to an integer value (created at delta; its TTL is create-only).
func KVIncr(ns, key string, delta int64, ttl time.Duration) KVOp {
	return kvBase("incr", ns, key).with("delta", delta).expiry(ttl)
}

// KVCheck writes nothing and applies only while the key is at version expect (0: absent).
func KVCheck(ns, key string, expect int64) KVOp { return kvBase("check", ns, key).Expect(expect) }

// Expect fences a put, delete or check: 0 = the key must not be live, N = it must be live at
// version N.
func (o KVOp) Expect(version int64) KVOp {
	switch o.m["op"] {
	case "incr", "putIfAbsent":
		return o.fail("kv_invalid_expect", fmt.Sprintf("%v takes no expect", o.m["op"]))
	}
	if version < 0 {
		return o.fail("kv_invalid_expect", "expect must be >= 0")
	}
	return o.with("expect", version)
}

// Required: when this op does not apply, the whole batch (or transaction) is rolled back.
func (o KVOp) Required() KVOp { return o.with("required", true) }

// Min bounds an incr from below (a decrease past it is refused, not saturated).
func (o KVOp) Min(v int64) KVOp { return o.with("min", v) }

// Max bounds an incr from above (an increase past it is refused: Applied is the admission).
func (o KVOp) Max(v int64) KVOp { return o.with("max", v) }

// After continues a getPrefix after that key.
func (o KVOp) After(key string) KVOp { return o.with("after", key) }

// Limit bounds a getPrefix page (the broker clamps it).
func (o KVOp) Limit(n int) KVOp { return o.with("limit", n) }

// KeysOnly makes a getPrefix answer keys without values.
func (o KVOp) KeysOnly() KVOp { return o.with("keysOnly", true) }

// KVRow is one key of getMany or getPrefix.
type KVRow struct {
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	Version   int64           `json:"version"`
	ExpiresAt *string         `json:"expiresAt"`
	UpdatedAt *string         `json:"updatedAt"`
}

// KVResult is one op's result. Reads set Found, writes and checks Applied; a write that did
// not apply has Reason (exists, absent, version, max_exceeded, ...) and the key as the op saw
// it (Value, Version: advisory).
type KVResult struct {
	Found     bool            `json:"found"`
	Applied   bool            `json:"applied"`
	Created   bool            `json:"created"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	Version   int64           `json:"version"`
	ExpiresAt *string         `json:"expiresAt"`
	UpdatedAt *string         `json:"updatedAt"`
	Reason    string          `json:"reason"`
	Rows      []KVRow         `json:"rows"`
	Missing   []string        `json:"missing"`
	Truncated bool            `json:"truncated"`
	NextAfter *string         `json:"nextAfter"`
	Raw       json.RawMessage `json:"-"`
}

// Decode unmarshals the value into v.
func (r KVResult) Decode(v any) error { return json.Unmarshal(r.Value, v) }

// KVBatch is the answer of one batch.
type KVBatch struct {
	Results []KVResult
	// RolledBack: a Required op did not apply (at FailedIndex); nothing was written.
	RolledBack  bool
	FailedIndex int // -1 when none
}

// KV is the KV store (Client.KV).
type KV struct{ c *Client }

// KV returns the KV store.
func (c *Client) KV() KV { return KV{c} }

func opsErr(ops []KVOp) error {
	for _, o := range ops {
		if o.err != nil {
			return o.err
		}
	}
	return nil
}

// Batch runs ops as one transaction, in order; one result per op.
func (k KV) Batch(ctx context.Context, ops ...KVOp) (KVBatch, error) {
	if err := opsErr(ops); err != nil {
		return KVBatch{}, err
	}
	var a struct {
		Results     []json.RawMessage `json:"results"`
		RolledBack  bool              `json:"rolledBack"`
		FailedIndex *int              `json:"failedIndex"`
	}
	if err := k.c.Do(ctx, "POST", "/api/v1/kv", map[string]any{"operations": ops}, &a); err != nil {
		return KVBatch{}, err
	}
	if len(a.Results) != len(ops) {
		return KVBatch{}, fmt.Errorf("queen: kv: %d results for %d ops", len(a.Results), len(ops))
	}
	out := KVBatch{Results: make([]KVResult, len(ops)), RolledBack: a.RolledBack, FailedIndex: -1}
	if a.FailedIndex != nil {
		out.FailedIndex = *a.FailedIndex
	}
	for i, r := range a.Results {
		if err := json.Unmarshal(r, &out.Results[i]); err != nil {
			return KVBatch{}, fmt.Errorf("queen: kv: result %d: %w", i, err)
		}
		out.Results[i].Raw = r
	}
	return out, nil
}

func (k KV) one(ctx context.Context, op KVOp) (KVResult, error) {
	b, err := k.Batch(ctx, op)
	if err != nil {
		return KVResult{}, err
	}
	return b.Results[0], nil
}

func (k KV) Get(ctx context.Context, ns, key string) (KVResult, error) {
	return k.one(ctx, KVGet(ns, key))
}
func (k KV) GetMany(ctx context.Context, ns string, keys ...string) (KVResult, error) {
	return k.one(ctx, KVGetMany(ns, keys...))
}

// GetPrefix reads one page (after: "" = from the first key; limit 0 = the broker's default).
func (k KV) GetPrefix(ctx context.Context, ns, prefix, after string, limit int) (KVResult, error) {
	op := KVGetPrefix(ns, prefix)
	if after != "" {
		op = op.After(after)
	}
	if limit > 0 {
		op = op.Limit(limit)
	}
	return k.one(ctx, op)
}
func (k KV) Put(ctx context.Context, ns, key string, value any, ttl time.Duration) (KVResult, error) {
	return k.one(ctx, KVPut(ns, key, value, ttl))
}
func (k KV) PutIfAbsent(ctx context.Context, ns, key string, value any, ttl time.Duration) (KVResult, error) {
	return k.one(ctx, KVPutIfAbsent(ns, key, value, ttl))
}
func (k KV) Delete(ctx context.Context, ns, key string) (KVResult, error) {
	return k.one(ctx, KVDelete(ns, key))
}
func (k KV) Incr(ctx context.Context, ns, key string, delta int64, ttl time.Duration) (KVResult, error) {
	return k.one(ctx, KVIncr(ns, key, delta, ttl))
}
func (k KV) Check(ctx context.Context, ns, key string, expect int64) (KVResult, error) {
	return k.one(ctx, KVCheck(ns, key, expect))
}
