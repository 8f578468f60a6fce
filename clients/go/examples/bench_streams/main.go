// The Go streams bench: the spec example's chain (tumbling 2 s, idle flush 500 ms, count +
// sum, to a sink) over a backlog spread on 16 partitions, once with batch 50 and once with
// batch 500 (as clients/rust/examples/bench_streams.rs). Figure: source records/s = records /
// time until the runner has committed cycles for all of them (the sink writes and the acks are
// in those cycles).
//
//	QUEEN_URL=... BENCH_RECORDS=40000 go run ./examples/bench_streams
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	queen "github.com/queen-mq/queen/clients/go"
	"github.com/queen-mq/queen/clients/go/streams"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench_streams:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	n := 40_000
	if v, err := strconv.Atoi(os.Getenv("BENCH_RECORDS")); err == nil && v > 0 {
		n = v
	}
	q, err := queen.New(queen.Options{})
	if err != nil {
		return err
	}
	for _, batch := range []int{50, 500} {
		tag := time.Now().UnixMilli()
		src := fmt.Sprintf("bench-go-src-%d-%d", batch, tag)
		sink := fmt.Sprintf("bench-go-sink-%d-%d", batch, tag)
		query := fmt.Sprintf("bench-go-%d-%d", batch, tag)
		t0 := time.Now()
		var items []queen.Item
		for i := 0; i < n; i++ {
			items = append(items, queen.Item{Data: map[string]any{"i": i, "amount": i % 10}, Partition: fmt.Sprintf("p%02d", i%16)})
			if len(items) == 1000 || i == n-1 {
				if _, err := q.Queue(src).Push(ctx, items...); err != nil {
					return err
				}
				items = items[:0]
			}
		}
		pushS := time.Since(t0).Seconds()
		t1 := time.Now()
		h, err := streams.From(src).WindowTumbling(2).IdleFlushMs(500).
			Aggregate(streams.Count("count"), streams.Sum("sum", streams.Field("amount"))).To(sink).
			Run(ctx, q, streams.RunOptions{QueryID: query, Reset: true, BatchSize: batch, MaxPartitions: 16, MaxWait: 300 * time.Millisecond})
		if err != nil {
			return err
		}
		deadline := time.Now().Add(600 * time.Second)
		for int(h.Stats().Messages) < n && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		secs := time.Since(t1).Seconds()
		st, _ := h.Stop()
		if int(st.Messages) < n {
			return fmt.Errorf("batch %d: only %d of %d records consumed in 600 s", batch, st.Messages, n)
		}
		fmt.Printf("go streams bench: 16 partitions, batch %d: %d source records in %.2f s = %.0f records/s (%d cycles, %d sink pushes, %d errors; backlog pushed at %.0f records/s)\n",
			batch, n, secs, float64(n)/secs, st.Cycles, st.PushItems, st.Errors, float64(n)/pushS)
	}
	return nil
}
