package queen

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// FetchedRecord is one record of a lease-free read.
type FetchedRecord struct {
	Offset        int64           `json:"offset"`
	TransactionID string          `json:"transactionId"`
	Payload       json.RawMessage `json:"payload"`
	TS            string          `json:"ts"` // the push's stamp, ISO 8601, µs, Z
	TraceID       *string         `json:"traceId"`
}

// FetchResult is one partition read from an offset to the high watermark seen first.
type FetchResult struct {
	Records        []FetchedRecord
	HighWatermark  int64 // the offset the partition's next record will get
	LogStartOffset int64 // the first offset still stored
	NextOffset     int64 // where the next read starts
	// Unknown: no such queue or partition.
	Unknown bool
}

const fetchMaxBytes = 8 << 20

// Fetch reads one partition lease-free (POST /api/v1/fetch): from offset to the high
// watermark of its first answer, following the broker's pages; an offset below the log start
// restarts there. It takes no lease and moves no cursor.
func (c *Client) Fetch(ctx context.Context, queue, partition string, offset int64) (FetchResult, error) {
	if partition == "" {
		partition = "Default"
	}
	out := FetchResult{NextOffset: offset}
	next := offset
	first := true
	var hw int64
	co := callOpts{affinity: queue + ":*:__READ__"}
	for {
		body := map[string]any{"entries": []map[string]any{{"queue": queue, "partition": partition, "offset": next, "maxBytes": fetchMaxBytes}}, "maxBytes": fetchMaxBytes}
		var a struct {
			Entries []struct {
				Records        []FetchedRecord `json:"records"`
				HighWatermark  int64           `json:"highWatermark"`
				LogStartOffset int64           `json:"logStartOffset"`
				Error          string          `json:"error"`
			} `json:"entries"`
		}
		if err := c.do(ctx, "POST", "/api/v1/fetch", body, &a, co); err != nil {
			return out, err
		}
		if len(a.Entries) != 1 {
			return out, fmt.Errorf("queen: fetch: %d entries answered for 1 asked", len(a.Entries))
		}
		e := a.Entries[0]
		out.HighWatermark, out.LogStartOffset = e.HighWatermark, e.LogStartOffset
		switch e.Error {
		case "":
		case "UNKNOWN_TOPIC_OR_PARTITION":
			out.Unknown = true
			return out, nil
		case "OFFSET_OUT_OF_RANGE":
			if next < e.LogStartOffset {
				next = e.LogStartOffset
				out.NextOffset = next
				continue
			}
			return out, nil
		default:
			return out, fmt.Errorf("queen: fetch: %s", e.Error)
		}
		if first {
			hw, first = e.HighWatermark, false
		}
		if len(e.Records) == 0 {
			out.NextOffset = next
			return out, nil
		}
		for _, r := range e.Records {
			out.Records = append(out.Records, r)
			next = r.Offset + 1
		}
		out.NextOffset = next
		if next >= hw {
			return out, nil
		}
	}
}

// Fetch reads this queue's partition (the builder's, else Default) from offset.
func (q Queue) Fetch(ctx context.Context, offset int64) (FetchResult, error) {
	return q.c.Fetch(ctx, q.name, q.partition, offset)
}

// ChangedPartition is one partition of a partitions/changed answer.
type ChangedPartition struct {
	Name        string `json:"name"`
	ID          string `json:"id"`
	LastOffset  int64  `json:"lastOffset"` // -1: empty
	LogStart    int64  `json:"logStart"`
	LastWriteAt string `json:"lastWriteAt"`
}

// Changed is the answer of partitions/changed, every page followed.
type Changed struct {
	// SafeTime: every record of the queue that commits after this answer is stamped above it
	// (the smallest of the pages'); "" when the queue does not exist.
	SafeTime   string
	Partitions []ChangedPartition
}

// ChangedSince lists the partitions of queue written at or after since (the zero time: every
// partition), POST /api/v1/partitions/changed with every page followed.
func (c *Client) ChangedSince(ctx context.Context, queue string, since time.Time) (Changed, error) {
	var out Changed
	var after json.RawMessage
	co := callOpts{affinity: queue + ":*:__READ__"}
	for {
		e := map[string]any{"queue": queue, "limit": 1000}
		if !since.IsZero() {
			e["since"] = ISOTime(since)
		}
		if after != nil {
			e["after"] = after
		}
		var a struct {
			SafeTime *string `json:"safeTime"`
			Entries  []struct {
				Partitions []ChangedPartition `json:"partitions"`
				Next       json.RawMessage    `json:"next"`
				Error      string             `json:"error"`
			} `json:"entries"`
		}
		if err := c.do(ctx, "POST", "/api/v1/partitions/changed", map[string]any{"entries": []any{e}}, &a, co); err != nil {
			return out, err
		}
		if a.SafeTime != nil && (out.SafeTime == "" || *a.SafeTime < out.SafeTime) {
			out.SafeTime = *a.SafeTime
		}
		if len(a.Entries) != 1 {
			return out, fmt.Errorf("queen: partitions/changed: %d entries answered for 1 asked", len(a.Entries))
		}
		en := a.Entries[0]
		switch en.Error {
		case "":
		case "UNKNOWN_TOPIC_OR_PARTITION":
			return out, nil
		default:
			return out, fmt.Errorf("queen: partitions/changed: %s", en.Error)
		}
		out.Partitions = append(out.Partitions, en.Partitions...)
		if len(en.Next) == 0 || string(en.Next) == "null" {
			return out, nil
		}
		after = en.Next
	}
}

// ChangedSince is Client.ChangedSince for this queue.
func (q Queue) ChangedSince(ctx context.Context, since time.Time) (Changed, error) {
	return q.c.ChangedSince(ctx, q.name, since)
}
