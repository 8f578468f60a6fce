package queen

// Keyed timers on the 2.x wire: POST /api/v1/timers {operations}, the standalone cancel, peek
// and list. A timer is a push scheduled for later under (queue, timerKey).

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// TimerOp is one timer operation (TimerSchedule, TimerReschedule, TimerCancel).
type TimerOp struct {
	m   map[string]any
	err error
}

// MarshalJSON sends the op's fields.
func (o TimerOp) MarshalJSON() ([]byte, error) {
	if o.err != nil {
		return nil, o.err
	}
	return json.Marshal(o.m)
}

func timerWithPayload(op, queue, key string, payload any, delay time.Duration) TimerOp {
	o := TimerOp{m: map[string]any{"op": op, "queue": queue, "timerKey": key, "delayMs": delay.Milliseconds(), "txn": NewUUIDv7()}}
	var text []byte
	switch p := payload.(type) {
	case json.RawMessage:
		text = p
	default:
		var err error
		if text, err = json.Marshal(payload); err != nil {
			o.err = &InvalidError{Code: "timer_invalid_payload", Message: err.Error()}
			return o
		}
	}
	o.m["payload"] = base64.StdEncoding.EncodeToString(text)
	return o
}

// TimerSchedule schedules (or replaces) the timer (queue, key): after delay, payload (any
// JSON value) is pushed to queue. The txn (the message's transactionId) is minted.
func TimerSchedule(queue, key string, payload any, delay time.Duration) TimerOp {
	return timerWithPayload("schedule", queue, key, payload, delay)
}

// TimerReschedule is the same upsert as TimerSchedule; it resets the timer's attempts.
func TimerReschedule(queue, key string, payload any, delay time.Duration) TimerOp {
	return timerWithPayload("reschedule", queue, key, payload, delay)
}

// TimerCancel cancels the pending timer (queue, key).
func TimerCancel(queue, key string) TimerOp {
	return TimerOp{m: map[string]any{"op": "cancel", "queue": queue, "timerKey": key}}
}

func (o TimerOp) with(k string, v any) TimerOp {
	m := make(map[string]any, len(o.m)+1)
	for a, b := range o.m {
		m[a] = b
	}
	m[k] = v
	return TimerOp{m: m, err: o.err}
}

// Txn sets the transactionId of the message the timer becomes.
func (o TimerOp) Txn(txn string) TimerOp { return o.with("txn", txn) }

// Partition sets the partition the timer pushes to (default Default).
func (o TimerOp) Partition(p string) TimerOp { return o.with("partition", p) }

// TimerResult is one op's verdict. Status: scheduled, rescheduled, cancelled, absent, too_late.
type TimerResult struct {
	OK        bool            `json:"ok"`
	Status    string          `json:"status"`
	Queue     string          `json:"queue"`
	TimerKey  string          `json:"timerKey"`
	Txn       string          `json:"txn"`
	DeliverAt string          `json:"deliverAt"`
	Raw       json.RawMessage `json:"-"`
}

// TimerInfo is a pending timer as stored (peek and list).
type TimerInfo struct {
	Found     bool   `json:"found"`
	Queue     string `json:"queue"`
	TimerKey  string `json:"timerKey"`
	Partition string `json:"partition"`
	Txn       string `json:"txn"`
	DeliverAt string `json:"deliverAt"`
	Attempts  int    `json:"attempts"`
	CreatedAt string `json:"createdAt"`
	// Payload is the bytes as stored: the JSON text (sealed when Encrypted).
	Payload   []byte `json:"payload"`
	Encrypted bool   `json:"encrypted"`
}

// TimerPage is one page of List.
type TimerPage struct {
	Rows      []TimerInfo `json:"rows"`
	Truncated bool        `json:"truncated"`
	NextAfter *string     `json:"nextAfter"`
}

// Timers is the timer API (Client.Timers).
type Timers struct{ c *Client }

// Timers returns the timer API.
func (c *Client) Timers() Timers { return Timers{c} }

// Batch applies ops in one transaction; one result per op.
func (t Timers) Batch(ctx context.Context, ops ...TimerOp) ([]TimerResult, error) {
	for _, o := range ops {
		if o.err != nil {
			return nil, o.err
		}
	}
	var a struct {
		Results []json.RawMessage `json:"results"`
	}
	if err := t.c.Do(ctx, "POST", "/api/v1/timers", map[string]any{"operations": ops}, &a); err != nil {
		return nil, err
	}
	if len(a.Results) != len(ops) {
		return nil, fmt.Errorf("queen: timers: %d results for %d ops", len(a.Results), len(ops))
	}
	out := make([]TimerResult, len(ops))
	for i, r := range a.Results {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			return nil, fmt.Errorf("queen: timers: result %d: %w", i, err)
		}
		out[i].Raw = r
	}
	return out, nil
}

// Schedule schedules one timer.
func (t Timers) Schedule(ctx context.Context, queue, key string, payload any, delay time.Duration) (TimerResult, error) {
	rs, err := t.Batch(ctx, TimerSchedule(queue, key, payload, delay))
	if err != nil {
		return TimerResult{}, err
	}
	return rs[0], nil
}

// Cancel is the standalone cancel route (DELETE /api/v1/timers/<queue>/<key>), never
// blockable by a quota.
func (t Timers) Cancel(ctx context.Context, queue, key string) (TimerResult, error) {
	var r TimerResult
	err := t.c.Do(ctx, "DELETE", "/api/v1/timers/"+esc(queue)+"/"+escKey(key), nil, &r)
	return r, err
}

// Peek returns the pending timer, Found false when there is none.
func (t Timers) Peek(ctx context.Context, queue, key string) (TimerInfo, error) {
	var r TimerInfo
	err := t.c.Do(ctx, "GET", "/api/v1/timers/"+esc(queue)+"/"+escKey(key), nil, &r)
	return r, err
}

// List returns one page of the queue's pending timers, in key order after after ("" = from
// the first; limit 0 = the broker's default).
func (t Timers) List(ctx context.Context, queue, after string, limit int) (TimerPage, error) {
	v := url.Values{}
	if after != "" {
		v.Set("after", after)
	}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	p := "/api/v1/timers/" + esc(queue)
	if len(v) > 0 {
		p += "?" + v.Encode()
	}
	var r TimerPage
	err := t.c.Do(ctx, "GET", p, nil, &r)
	for i := range r.Rows {
		r.Rows[i].Found = true
	}
	return r, err
}
