// The Go example of the streams spec (shared/spec/streams.txt), as printed there, around a
// producer and a reader so it shows its result: six orders (amounts 1..6) go to src, the chain
// folds them into 2-second windows, the idle flush (500 ms) closes the last one, and the
// windows arrive on sink as ordinary messages. The same chain as
// clients/rust/examples/spec_streams.rs.
//
//	QUEEN_URL=http://localhost:6632 go run ./examples/spec_streams
//
// Prints one line per window and then "total count=6 sum=21" (what make sdk-go checks).
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	queen "github.com/queen-mq/queen/clients/go"
	"github.com/queen-mq/queen/clients/go/streams"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "spec_streams:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	q, err := queen.New(queen.Options{}) // QUEEN_URL, else http://localhost:6632
	if err != nil {
		return err
	}
	tag := time.Now().UnixMilli()
	src := fmt.Sprintf("spec-go-orders-%d", tag)
	sink := fmt.Sprintf("spec-go-orders-per-2s-%d", tag)
	query := fmt.Sprintf("spec-go-%d", tag)

	var orders []any
	for i := 1; i <= 6; i++ {
		orders = append(orders, map[string]any{"order": i, "amount": i})
	}
	if _, err := q.Queue(src).PushData(ctx, orders...); err != nil {
		return err
	}

	handle, err := streams.From(src).
		WindowTumbling(2).
		IdleFlushMs(500).
		Aggregate(streams.Count("count"), streams.Sum("sum", streams.Field("amount"))).
		To(sink).
		Run(ctx, q, streams.RunOptions{QueryID: query, Reset: true, BatchSize: 50, MaxWait: 300 * time.Millisecond})
	if err != nil {
		return err
	}

	reader := q.Queue(sink).Group("spec-reader").Batch(100).Timeout(500 * time.Millisecond)
	var count, sum int64
	deadline := time.Now().Add(30 * time.Second)
	for count < 6 && time.Now().Before(deadline) {
		msgs, err := reader.Pop(ctx)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			fmt.Printf("window on %s: %s\n", m.Partition, m.Data)
			var w struct{ Count, Sum int64 }
			if err := m.Decode(&w); err != nil {
				return err
			}
			count += w.Count
			sum += w.Sum
			if _, err := q.Ack(ctx, m, queen.StatusCompleted, ""); err != nil {
				return err
			}
		}
	}
	stats, err := handle.Stop()
	if err != nil {
		return err
	}
	fmt.Printf("cycles=%d flush_cycles=%d errors=%d\n", stats.Cycles, stats.FlushCycles, stats.Errors)
	if stats.LastError != "" {
		fmt.Println("last error:", stats.LastError)
	}
	fmt.Printf("total count=%d sum=%d\n", count, sum)
	if count != 6 || sum != 21 {
		return fmt.Errorf("expected count=6 sum=21 on %s", sink)
	}
	return nil
}
