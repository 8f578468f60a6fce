package queen

// Dead letters, message inspection, traces, queue depth and the subscription admin call: thin
// calls whose answers keep the broker's shape (docs/http-api.md) apart from the few fields the
// types name.

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
)

// DeadLetter is one dead letter of GET /api/v1/dlq.
type DeadLetter struct {
	ID            string          `json:"id"`
	DLQID         int64           `json:"dlqId"`
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	Queue         string          `json:"queue"`
	Partition     string          `json:"partition"`
	Offset        int64           `json:"offset"`
	ConsumerGroup string          `json:"consumerGroup"`
	ErrorMessage  string          `json:"errorMessage"`
	RetryCount    int             `json:"retryCount"`
	Data          json.RawMessage `json:"data"`
	CreatedAt     string          `json:"createdAt"`
	FailedAt      string          `json:"failedAt"`
	RequeuedAt    *string         `json:"requeuedAt"`
}

// DLQOptions filters a dead-letter listing; zero values are "any" (Limit: the broker's 100).
type DLQOptions struct {
	ConsumerGroup, Partition string
	From, To                 string // ISO-8601 bounds on failedAt
	Limit, Offset            int
}

// DLQPage is one page of dead letters, newest failure first; Total counts every match.
type DLQPage struct {
	Messages []DeadLetter `json:"messages"`
	Total    int          `json:"total"`
}

// DLQ lists a queue's dead letters.
func (c *Client) DLQ(ctx context.Context, queue string, o DLQOptions) (DLQPage, error) {
	v := url.Values{"queue": {queue}}
	for k, s := range map[string]string{"consumerGroup": o.ConsumerGroup, "partition": o.Partition, "from": o.From, "to": o.To} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if o.Limit > 0 {
		v.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Offset > 0 {
		v.Set("offset", strconv.Itoa(o.Offset))
	}
	var p DLQPage
	err := c.Do(ctx, "GET", "/api/v1/dlq?"+v.Encode(), nil, &p)
	return p, err
}

// RequeueDeadLetter appends a dead letter's record again at the end of its partition (a fresh
// transactionId unless keepTransactionID). The answer is the broker's.
func (c *Client) RequeueDeadLetter(ctx context.Context, dlqID int64, keepTransactionID bool) (json.RawMessage, error) {
	var body any
	if keepTransactionID {
		body = map[string]bool{"keepTransactionId": true}
	}
	var out json.RawMessage
	err := c.Do(ctx, "POST", "/api/v1/dlq/"+strconv.FormatInt(dlqID, 10)+"/requeue", body, &out)
	return out, err
}

// DeleteDeadLetter deletes one dead letter.
func (c *Client) DeleteDeadLetter(ctx context.Context, dlqID int64) error {
	return c.Do(ctx, "DELETE", "/api/v1/dlq/"+strconv.FormatInt(dlqID, 10), nil, nil)
}

// GetMessage reads one record (by transactionId or message id) with its state: status,
// consumer groups, dead letters, as GET /api/v1/messages/<partitionId>/<txn> answers.
func (c *Client) GetMessage(ctx context.Context, partitionID, transactionID string) (json.RawMessage, error) {
	var out json.RawMessage
	err := c.Do(ctx, "GET", "/api/v1/messages/"+esc(partitionID)+"/"+esc(transactionID), nil, &out)
	return out, err
}

// DeleteMessage deletes one record (a gap in the offsets).
func (c *Client) DeleteMessage(ctx context.Context, partitionID, transactionID string) error {
	return c.Do(ctx, "DELETE", "/api/v1/messages/"+esc(partitionID)+"/"+esc(transactionID), nil, nil)
}

// RetryMessage requeues the record's newest dead letter, keeping its transactionId (404
// no_failed_message when there is none).
func (c *Client) RetryMessage(ctx context.Context, partitionID, transactionID string) (json.RawMessage, error) {
	var out json.RawMessage
	err := c.Do(ctx, "POST", "/api/v1/messages/"+esc(partitionID)+"/"+esc(transactionID)+"/retry", nil, &out)
	return out, err
}

// Trace records a trace against a message (POST /api/v1/traces): data is any JSON value but
// null; eventType "" = "info"; names are the trace names it can be found by. It returns the
// trace's id.
func (c *Client) Trace(ctx context.Context, m Message, eventType string, data any, names ...string) (string, error) {
	body := map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "data": data,
		"consumerGroup": orDefault(m.ConsumerGroup, QueueMode)}
	if eventType != "" {
		body["eventType"] = eventType
	}
	if len(names) > 0 {
		body["traceNames"] = names
	}
	var out struct {
		TraceID string `json:"traceId"`
	}
	err := c.Do(ctx, "POST", "/api/v1/traces", body, &out)
	return out.TraceID, err
}

// Traces reads a record's traces, oldest first ({"traces": [...]}).
func (c *Client) Traces(ctx context.Context, partitionID, transactionID string) (json.RawMessage, error) {
	var out json.RawMessage
	err := c.Do(ctx, "GET", "/api/v1/traces/"+esc(partitionID)+"/"+esc(transactionID), nil, &out)
	return out, err
}

// QueueDepth is the cheap depth of a queue (offsets only), for a group or the worst cursor.
type QueueDepth struct {
	Queue             string `json:"queue"`
	Pending           int64  `json:"pending"`
	PartitionsPending int64  `json:"partitionsPending"`
	Conflation        bool   `json:"conflation"`
	EffectivePending  int64  `json:"effectivePending"`
	Partitions        []struct {
		Partition string `json:"partition"`
		Pending   int64  `json:"pending"`
	} `json:"partitions"`
}

// Depth reads the queue's depth (group "" = the least advanced reader of each partition).
func (q Queue) Depth(ctx context.Context, group string) (QueueDepth, error) {
	p := "/api/v1/resources/queues/" + esc(q.name) + "/depth"
	if group != "" {
		p += "?group=" + url.QueryEscape(group)
	}
	var d QueueDepth
	err := q.c.Do(ctx, "GET", p, nil, &d)
	return d, err
}
