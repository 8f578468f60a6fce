package queen

// The 2.x binary push body (QPB1, flag 4: every item carries its transactionId), sent when
// Options.BinaryPush is set. Consecutive items of one (queue, partition) share a group; order
// on the wire is item order. Little-endian.

import (
	"encoding/binary"
	"encoding/json"
)

// encodeQPB1 returns the body, or nil when an item cannot go in it (a traceId, a name or id
// over 65535 bytes, a payload encoding/json refuses): the push then goes as JSON.
func encodeQPB1(items []pushItem) []byte {
	type group struct {
		queue, partition string
		txns             []string
		payloads         [][]byte
	}
	var groups []*group
	for _, it := range items {
		if it.TraceID != "" || len(it.Queue) > 65535 || len(it.Partition) > 65535 || len(it.TransactionID) > 65535 {
			return nil
		}
		var p []byte
		if raw, ok := it.Payload.(json.RawMessage); ok {
			p = raw
		} else {
			var err error
			if p, err = json.Marshal(it.Payload); err != nil {
				return nil
			}
		}
		if len(groups) == 0 || groups[len(groups)-1].queue != it.Queue || groups[len(groups)-1].partition != it.Partition {
			groups = append(groups, &group{queue: it.Queue, partition: it.Partition})
		}
		g := groups[len(groups)-1]
		g.txns = append(g.txns, it.TransactionID)
		g.payloads = append(g.payloads, p)
	}
	b := make([]byte, 0, 64+len(items)*64)
	b = append(b, 'Q', 'P', 'B', '1', 4)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(groups)))
	for _, g := range groups {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(g.queue)))
		b = append(b, g.queue...)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(g.partition)))
		b = append(b, g.partition...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(g.txns)))
		for i, t := range g.txns {
			b = binary.LittleEndian.AppendUint16(b, uint16(len(t)))
			b = append(b, t...)
			b = binary.LittleEndian.AppendUint32(b, uint32(len(g.payloads[i])))
			b = append(b, g.payloads[i]...)
		}
	}
	return b
}
