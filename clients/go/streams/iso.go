package streams

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// parseISOUs reads an RFC 3339 / ISO-8601 time ("2026-12-02T13:45:12.345678Z", an offset, or
// a space for the T) as epoch microseconds.
func parseISOUs(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if len(s) < 19 {
		return 0, false
	}
	if s[10] == ' ' || s[10] == 't' {
		s = s[:10] + "T" + s[11:]
	}
	if strings.HasSuffix(s, "z") {
		s = s[:len(s)-1] + "Z"
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05.999999999Z0700", "2006-01-02T15:04:05.999999999-07"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMicro(), true
		}
	}
	return 0, false
}

func parseISOMs(s string) (int64, bool) {
	us, ok := parseISOUs(s)
	if !ok {
		return 0, false
	}
	return floorDiv(us, 1000), true
}

// isoMs is JavaScript's toISOString(): YYYY-MM-DDTHH:MM:SS.mmmZ, the window keys' spelling.
func isoMs(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// isoUs has six fraction digits, the broker's own spelling (partitions/changed's since).
func isoUs(us int64) string {
	return time.UnixMicro(us).UTC().Format("2006-01-02T15:04:05.000000Z")
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func nowMs() int64 { return time.Now().UnixMilli() }

// eventTimeMs converts what an EventTime extractor returned to epoch milliseconds:
// time.Time, an integer or float (epoch ms), an ISO-8601 string, a json.Number;
// nil (or anything else) = no time.
func eventTimeMs(x any) (int64, bool) {
	switch v := x.(type) {
	case nil:
		return 0, false
	case time.Time:
		if v.IsZero() {
			return 0, false
		}
		return v.UnixMilli(), true
	case *time.Time:
		if v == nil || v.IsZero() {
			return 0, false
		}
		return v.UnixMilli(), true
	case int:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	case uint32:
		return int64(v), true
	case uint64:
		return int64(v), true
	case uint:
		return int64(v), true
	case float32:
		return floatMs(float64(v))
	case float64:
		return floatMs(v)
	case interface{ Int64() (int64, error) }: // json.Number
		if n, err := v.Int64(); err == nil {
			return n, true
		}
		if f, err := strconv.ParseFloat(fmt.Sprint(v), 64); err == nil {
			return floatMs(f)
		}
		return 0, false
	case string:
		return parseISOMs(v)
	}
	return 0, false
}

func floatMs(f float64) (int64, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return int64(f), true
}
