package queen

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"time"
)

// QueueMode is the consumer group of a pop without one (queue mode).
const QueueMode = "__QUEUE_MODE__"

// NewUUIDv7 returns a UUIDv7 (48-bit Unix milliseconds, then random bits): the transactionId
// the client mints for an item without one, so that a retried push is a duplicate.
func NewUUIDv7() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	ms := uint64(time.Now().UnixMilli())
	b[0], b[1], b[2], b[3], b[4], b[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	return formatUUID(b)
}

func formatUUID(b [16]byte) string {
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// isUUIDv4 is the 2.x client's test for a traceId it sends (anything else is dropped).
func isUUIDv4(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
			continue
		}
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	v := s[19] | 0x20
	return s[14] == '4' && (v == '8' || v == '9' || v == 'a' || v == 'b')
}

// esc escapes one path segment.
func esc(s string) string { return url.PathEscape(s) }

// escKey escapes a timer key segment by segment, keeping its '/' (the broker reads the rest of
// the path as the key).
func escKey(k string) string {
	parts := strings.Split(k, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// ISOTime formats t as the broker spells its times: UTC, six fraction digits, Z.
func ISOTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000Z")
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
