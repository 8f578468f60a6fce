package queen

// The broker client on the 2.x wire (../shared/reference/queen-2.6-wire.md, docs/http-api.md):
// queues (configure, push, pop), acks, lease renewal and the admin calls of consumer groups.
// Consume is in consume.go, transactions in tx.go, fetch and partitions/changed in reads.go,
// KV, timers and locks in their own files.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Ack statuses the broker knows.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed" // retried by the queue's retryLimit, then dead-lettered
	StatusRetry     = "retry"
	StatusDLQ       = "dlq"
)

// Message is one message as a pop delivers it.
type Message struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	Partition     string          `json:"partition"`
	LeaseID       string          `json:"leaseId"`
	ConsumerGroup string          `json:"consumerGroup"`
	CreatedAt     string          `json:"createdAt"` // ISO 8601, µs, Z
	Queue         string          `json:"queue"`
	TraceID       string          `json:"traceId"`
	ProducerSub   string          `json:"producerSub"`
	Data          json.RawMessage `json:"data"` // the payload as pushed
	// Raw is the message object as the broker sent it (every key).
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON reads a message, keeping Raw; transactionId falls back to id (the 2.x rule).
func (m *Message) UnmarshalJSON(b []byte) error {
	type plain Message
	var p struct {
		plain
		TraceID     *string `json:"traceId"`
		ProducerSub *string `json:"producerSub"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*m = Message(p.plain)
	if p.TraceID != nil {
		m.TraceID = *p.TraceID
	}
	if p.ProducerSub != nil {
		m.ProducerSub = *p.ProducerSub
	}
	if m.TransactionID == "" {
		m.TransactionID = m.ID
	}
	if m.Partition == "" {
		m.Partition = "Default"
	}
	m.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// Decode unmarshals the payload into v.
func (m Message) Decode(v any) error { return json.Unmarshal(m.Data, v) }

// CreatedAtTime parses CreatedAt.
func (m Message) CreatedAtTime() (time.Time, error) { return time.Parse(time.RFC3339Nano, m.CreatedAt) }

// group is the consumer group an ack names: none in queue mode.
func (m Message) group() any {
	if m.ConsumerGroup == "" || m.ConsumerGroup == QueueMode {
		return nil
	}
	return m.ConsumerGroup
}

// Item is one message to push.
type Item struct {
	// Data is the payload: any value encoding/json takes (a json.RawMessage goes as it is).
	Data any
	// TransactionID deduplicates the push within the broker's window; "" = a minted UUIDv7,
	// so a push the client retries is still stored once.
	TransactionID string
	// Partition: "" = the queue builder's, else "Default".
	Partition string
	// TraceID is sent only when it is a UUID v4 (the 2.x rule); anything else is dropped.
	TraceID string
}

// PushResult is the broker's verdict on one pushed item.
type PushResult struct {
	Status        string          `json:"status"` // queued, duplicate, failed
	TransactionID string          `json:"transaction_id"`
	MessageID     string          `json:"message_id"`
	PartitionID   string          `json:"partition_id"`
	Error         string          `json:"error"`
	Raw           json.RawMessage `json:"-"`
}

func (r PushResult) IsQueued() bool    { return r.Status == "queued" }
func (r PushResult) IsDuplicate() bool { return r.Status == "duplicate" }

// ErrConflationUnsupported: a pop that asked for conflation got an answer without the
// conflation echo (the broker ignored the flag). Terminal for Consume.
var ErrConflationUnsupported = errors.New("queen: conflation_unsupported: the pop asked for conflation and the broker's answer carried no conflation echo")

var conflictWarned sync.Once

// Queue is a queue with the knobs of its next pop, consume or push. It is a value: every
// setter returns a changed copy.
type Queue struct {
	c          *Client
	name       string
	partition  string
	group      string
	batch      int
	partitions int
	noWait     bool
	timeout    time.Duration
	autoAck    bool
	subMode    string
	subFrom    string
	conflation bool
	namespace  string
	task       string
}

// Queue returns the builder of queue name.
func (c *Client) Queue(name string) Queue { return Queue{c: c, name: name, timeout: 30 * time.Second} }

// Namespace returns a builder whose pops take any queue of that namespace (and task, when
// not empty): GET /api/v1/pop?namespace=&task=.
func (c *Client) Namespace(namespace, task string) Queue {
	return Queue{c: c, namespace: namespace, task: task, timeout: 30 * time.Second}
}

func (q Queue) Name() string { return q.name }

// InNamespace sets the namespace and task Configure stores for the queue (configure is a full
// overwrite: without them they become ""; a queue created by a push of an "a.b" name derives
// them from it).
func (q Queue) InNamespace(namespace, task string) Queue {
	q.namespace, q.task = namespace, task
	return q
}

// Partition sets the partition of pushes and pops.
func (q Queue) Partition(p string) Queue { q.partition = p; return q }

// Group sets the consumer group (default: queue mode).
func (q Queue) Group(g string) Queue { q.group = g; return q }

// Batch sets the message budget of one pop (default 1).
func (q Queue) Batch(n int) Queue { q.batch = n; return q }

// Partitions sets how many partitions one pop may claim, under one shared leaseId.
func (q Queue) Partitions(n int) Queue { q.partitions = n; return q }

// Wait sets whether a pop long-polls (default true).
func (q Queue) Wait(w bool) Queue { q.noWait = !w; return q }

// Timeout sets the long-poll limit (default 30 s).
func (q Queue) Timeout(d time.Duration) Queue { q.timeout = d; return q }

// AutoAck: at most once, the cursor moves at delivery, no lease, no ack.
func (q Queue) AutoAck(a bool) Queue { q.autoAck = a; return q }

// SubscriptionMode sets a new group's start: "new" (or "new-only"), "all".
func (q Queue) SubscriptionMode(m string) Queue { q.subMode = m; return q }

// SubscriptionFrom sets a new group's start time: an ISO time or "now".
func (q Queue) SubscriptionFrom(f string) Queue { q.subFrom = f; return q }

// Conflation asks for last-value delivery for the group (the 2.x client's conflation()): each
// claimed partition gives its newest record, the ones behind it are retired for the group.
// Needs Group; refused with AutoAck (400 conflation_needs_group, conflation_with_auto_ack).
// Every answer must echo the policy, else the pop fails with ErrConflationUnsupported; a
// conflict echo (the group's stored policy differs and applies) warns once per process.
func (q Queue) Conflation(on bool) Queue { q.conflation = on; return q }

// Configure creates or updates the queue: POST /api/v1/configure with the 2.x defaults under
// options (camelCase keys: leaseTime, retryLimit, ...). The answer is returned as it came.
func (q Queue) Configure(ctx context.Context, options map[string]any) (json.RawMessage, error) {
	opts := map[string]any{"leaseTime": 300, "retryLimit": 3, "priority": 0, "delayedProcessing": 0, "windowBuffer": 0,
		"maxSize": 0, "retentionSeconds": 0, "completedRetentionSeconds": 0, "encryptionEnabled": false}
	for k, v := range options {
		opts[k] = v
	}
	var ns, task any
	if q.namespace != "" {
		ns = q.namespace
	}
	if q.task != "" {
		task = q.task
	}
	var out json.RawMessage
	err := q.c.Do(ctx, "POST", "/api/v1/configure", map[string]any{"queue": q.name, "namespace": ns, "task": task, "options": opts}, &out)
	return out, err
}

// Delete deletes the queue (DELETE /api/v1/resources/queues/<name>).
func (q Queue) Delete(ctx context.Context) error {
	return q.c.Do(ctx, "DELETE", "/api/v1/resources/queues/"+esc(q.name), nil, nil)
}

type pushItem struct {
	Queue         string `json:"queue"`
	Partition     string `json:"partition"`
	Payload       any    `json:"payload"`
	TransactionID string `json:"transactionId"`
	TraceID       string `json:"traceId,omitempty"`
}

func (q Queue) pushItem(it Item) pushItem {
	p := it.Partition
	if p == "" {
		p = q.partition
	}
	if p == "" {
		p = "Default"
	}
	t := it.TransactionID
	if t == "" {
		t = NewUUIDv7()
	}
	o := pushItem{Queue: q.name, Partition: p, Payload: it.Data, TransactionID: t}
	if isUUIDv4(it.TraceID) {
		o.TraceID = it.TraceID
	}
	return o
}

// Push pushes items; one verdict per item, in order.
func (q Queue) Push(ctx context.Context, items ...Item) ([]PushResult, error) {
	if len(items) == 0 {
		return nil, nil
	}
	body := make([]pushItem, len(items))
	for i, it := range items {
		body[i] = q.pushItem(it)
	}
	var raw []json.RawMessage
	var bin []byte
	if q.c.opts.BinaryPush {
		bin = encodeQPB1(body)
	}
	if bin != nil {
		if _, err := q.c.doStatus(ctx, "POST", "/api/v1/push", bin, &raw, callOpts{ctype: "application/x-queen-push"}); err != nil {
			return nil, err
		}
	} else if err := q.c.Do(ctx, "POST", "/api/v1/push", map[string]any{"items": body}, &raw); err != nil {
		return nil, err
	}
	out := make([]PushResult, len(raw))
	for i, r := range raw {
		var pr PushResult
		if err := json.Unmarshal(r, &pr); err != nil {
			return nil, fmt.Errorf("queen: push: reading result %d: %w", i, err)
		}
		if pr.TransactionID == "" && i < len(body) {
			pr.TransactionID = body[i].TransactionID
		}
		if pr.Status == "" {
			pr.Status = "failed"
		}
		pr.Raw = r
		out[i] = pr
	}
	if len(out) != len(items) {
		return out, fmt.Errorf("queen: push: %d results for %d items", len(out), len(items))
	}
	return out, nil
}

// PushData pushes payloads with minted transactionIds.
func (q Queue) PushData(ctx context.Context, data ...any) ([]PushResult, error) {
	items := make([]Item, len(data))
	for i, d := range data {
		items[i] = Item{Data: d}
	}
	return q.Push(ctx, items...)
}

func (q Queue) affinity() string {
	if q.name == "" {
		return fmt.Sprintf("%s:%s:%s", orStar(q.namespace), orStar(q.task), orDefault(q.group, QueueMode))
	}
	return fmt.Sprintf("%s:%s:%s", q.name, orStar(q.partition), orDefault(q.group, QueueMode))
}

func orStar(s string) string { return orDefault(s, "*") }
func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func (q Queue) popPath() string {
	var p string
	if q.name == "" {
		p = "/api/v1/pop"
	} else {
		p = "/api/v1/pop/queue/" + esc(q.name)
		if q.partition != "" && q.partition != "Default" {
			p += "/partition/" + esc(q.partition)
		}
	}
	parts := []string{}
	add := func(k, val string) { parts = append(parts, k+"="+url.QueryEscape(val)) }
	batch := q.batch
	if batch <= 0 {
		batch = 1
	}
	add("batch", strconv.Itoa(batch))
	add("wait", strconv.FormatBool(!q.noWait))
	add("timeout", strconv.FormatInt(q.timeout.Milliseconds(), 10))
	if q.group != "" {
		add("consumerGroup", q.group)
	}
	if q.name == "" && q.namespace != "" {
		add("namespace", q.namespace)
	}
	if q.name == "" && q.task != "" {
		add("task", q.task)
	}
	if q.autoAck {
		add("autoAck", "true")
	}
	if q.subMode != "" {
		add("subscriptionMode", q.subMode)
	}
	if q.subFrom != "" {
		add("subscriptionFrom", q.subFrom)
	}
	if q.partitions > 1 {
		add("partitions", strconv.Itoa(q.partitions))
	}
	if q.conflation {
		add("conflation", "true")
	}
	return p + "?" + strings.Join(parts, "&")
}

type popAnswer struct {
	Success            *bool             `json:"success"`
	Code               string            `json:"code"`
	Error              string            `json:"error"`
	Messages           []json.RawMessage `json:"messages"`
	Conflation         bool              `json:"conflation"`
	ConflationConflict bool              `json:"conflationConflict"`
	Autopilot          *struct {
		WaitMs int `json:"waitMs"`
	} `json:"autopilot"`
}

// Pop pops once. An empty answer (204) is an empty slice; errors are returned, not swallowed.
func (q Queue) Pop(ctx context.Context) ([]Message, error) {
	co := callOpts{affinity: q.affinity()}
	if !q.noWait {
		co.longPoll = q.timeout
		if co.longPoll <= 0 {
			co.longPoll = time.Millisecond
		}
	}
	var raw json.RawMessage
	status, err := q.c.doStatus(ctx, "GET", q.popPath(), nil, &raw, co)
	if err != nil {
		return nil, err
	}
	var a popAnswer
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, fmt.Errorf("queen: pop: reading the answer: %w", err)
		}
	}
	if q.conflation {
		// every answer to a conflating pop carries the echo, an empty one included (200, not 204)
		if !a.Conflation && !a.ConflationConflict {
			return nil, fmt.Errorf("%w (HTTP %d)", ErrConflationUnsupported, status)
		}
		if a.ConflationConflict {
			conflictWarned.Do(func() {
				fmt.Fprintf(os.Stderr, "queen: warning: the pop of queue %s for group %s declared a conflation policy that differs from the group's stored one; the stored policy applies (warned once per process)\n", q.name, orDefault(q.group, QueueMode))
			})
		}
	}
	if a.Success != nil && !*a.Success && a.Code != "" {
		return nil, NewAPIError(status, nil, raw)
	}
	out := make([]Message, 0, len(a.Messages))
	for _, raw := range a.Messages {
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		var m Message
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("queen: pop: reading a message: %w", err)
		}
		if m.PartitionID == "" || m.TransactionID == "" {
			continue // nothing an ack could name
		}
		out = append(out, m)
	}
	return out, nil
}

// Ack acknowledges one message with a status (StatusCompleted, StatusFailed, StatusRetry,
// StatusDLQ) and an error text for a failure ("" = none). It reports the broker's verdict.
func (c *Client) Ack(ctx context.Context, m Message, status, errText string) (bool, error) {
	body := map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "status": status,
		"error": nullable(errText), "consumerGroup": m.group()}
	if m.LeaseID != "" {
		body["leaseId"] = m.LeaseID
	}
	var raw json.RawMessage
	if err := c.Do(ctx, "POST", "/api/v1/ack", body, &raw); err != nil {
		return false, err
	}
	return readAck(raw)
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

type ackVerdict struct {
	Success *bool           `json:"success"`
	Error   json.RawMessage `json:"error"`
}

func (v ackVerdict) ok() bool {
	return v.Success != nil && *v.Success && (len(v.Error) == 0 || string(v.Error) == "null")
}

func readAck(raw json.RawMessage) (bool, error) {
	if len(raw) == 0 {
		return true, nil
	}
	if raw[0] == '[' {
		var vs []ackVerdict
		if err := json.Unmarshal(raw, &vs); err != nil {
			return false, fmt.Errorf("queen: ack: %w", err)
		}
		return len(vs) > 0 && vs[0].ok(), nil
	}
	var v ackVerdict
	if err := json.Unmarshal(raw, &v); err != nil {
		return false, fmt.Errorf("queen: ack: %w", err)
	}
	if len(v.Error) > 0 && string(v.Error) != "null" {
		return false, fmt.Errorf("queen: ack: %s", v.Error)
	}
	return v.Success == nil || *v.Success, nil
}

// AckBatch acknowledges many messages in one call (POST /api/v1/ack/batch); one verdict per
// message, in order.
func (c *Client) AckBatch(ctx context.Context, ms []Message, status, errText string) ([]bool, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	acks := make([]map[string]any, len(ms))
	for i, m := range ms {
		a := map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "status": status, "error": nullable(errText)}
		if m.LeaseID != "" {
			a["leaseId"] = m.LeaseID
		}
		acks[i] = a
	}
	var raw json.RawMessage
	if err := c.Do(ctx, "POST", "/api/v1/ack/batch", map[string]any{"acknowledgments": acks, "consumerGroup": ms[0].group()}, &raw); err != nil {
		return nil, err
	}
	var vs []ackVerdict
	if err := json.Unmarshal(raw, &vs); err != nil {
		return nil, fmt.Errorf("queen: ack/batch: answer %s", raw)
	}
	out := make([]bool, len(ms))
	for i := range out {
		out[i] = i < len(vs) && vs[i].ok()
	}
	return out, nil
}

// Renew extends a lease (POST /api/v1/lease/<id>/extend, no body). false: the lease is gone.
func (c *Client) Renew(ctx context.Context, leaseID string) (bool, error) {
	var raw json.RawMessage
	if err := c.Do(ctx, "POST", "/api/v1/lease/"+esc(leaseID)+"/extend", nil, &raw); err != nil {
		return false, err
	}
	if len(raw) == 0 {
		return false, nil
	}
	type verdict struct {
		Success *bool   `json:"success"`
		New     *string `json:"newExpiresAt"`
		Exp     *string `json:"expiresAt"`
		Old     *string `json:"lease_expires_at"`
	}
	var v verdict
	if raw[0] == '[' {
		var vs []verdict
		if err := json.Unmarshal(raw, &vs); err != nil || len(vs) == 0 {
			return false, err
		}
		v = vs[0]
	} else if err := json.Unmarshal(raw, &v); err != nil {
		return false, err
	}
	if v.Success != nil {
		return *v.Success, nil
	}
	return v.New != nil || v.Exp != nil || v.Old != nil, nil
}

// RenewMessages extends the distinct leases of messages (a multi-partition pop shares one);
// false when any is gone.
func (c *Client) RenewMessages(ctx context.Context, ms []Message) (bool, error) {
	seen := map[string]bool{}
	all := true
	for _, m := range ms {
		if m.LeaseID == "" || seen[m.LeaseID] {
			continue
		}
		seen[m.LeaseID] = true
		ok, err := c.Renew(ctx, m.LeaseID)
		if err != nil {
			return false, err
		}
		all = all && ok
	}
	return all, nil
}

// DeleteConsumerGroup deletes a group (deleteMetadata also drops its stored subscription and
// policy).
func (c *Client) DeleteConsumerGroup(ctx context.Context, group string, deleteMetadata bool) error {
	return c.Do(ctx, "DELETE", "/api/v1/consumer-groups/"+esc(group)+"?deleteMetadata="+strconv.FormatBool(deleteMetadata), nil, nil)
}

// Seek moves a group's cursor on a queue: options such as {"toEnd": true}, {"toStart": true},
// {"timestamp": "<ISO>"}.
func (c *Client) Seek(ctx context.Context, group, queue string, options map[string]any) (json.RawMessage, error) {
	var out json.RawMessage
	err := c.Do(ctx, "POST", "/api/v1/consumer-groups/"+esc(group)+"/queues/"+esc(queue)+"/seek", options, &out)
	return out, err
}

// ConsumerGroups lists the consumer groups (GET /api/v1/consumer-groups), as the broker
// answers.
func (c *Client) ConsumerGroups(ctx context.Context) (json.RawMessage, error) {
	var out json.RawMessage
	err := c.Do(ctx, "GET", "/api/v1/consumer-groups", nil, &out)
	return out, err
}

// Health calls GET /health; nil when the node answers 2xx.
func (c *Client) Health(ctx context.Context) error {
	st, rh, rb, err := c.DoRaw(ctx, "GET", "/health", nil, nil)
	if err != nil {
		return err
	}
	if st < 200 || st > 299 {
		return NewAPIError(st, rh, rb)
	}
	return nil
}
