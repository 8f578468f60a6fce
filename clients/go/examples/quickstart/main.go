// The quick start of clients/go/README.md, as a program: push, pop and ack, a consume loop, a
// transaction with a dedup gate, and the KV store. make sdk-go runs it against a fresh broker
// and checks its last line ("quickstart: ok").
//
//	QUEEN_URL=http://localhost:6632 go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	queen "github.com/queen-mq/queen/clients/go"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// URLs empty: QUEEN_URL (comma-separated for several nodes), else http://localhost:6632
	c, err := queen.New(queen.Options{})
	if err != nil {
		log.Fatal(err)
	}
	orders := c.Queue(fmt.Sprintf("quickstart.orders.%d", time.Now().UnixNano()))

	// push: your transactionId (or a minted UUIDv7) makes a retried push a duplicate
	if _, err := orders.Partition("cust-1").Push(ctx,
		queen.Item{Data: map[string]any{"amount": 3}, TransactionID: "order-1"},
		queen.Item{Data: map[string]any{"amount": 4}, TransactionID: "order-2"}); err != nil {
		log.Fatal(err)
	}

	// pop and ack yourself ...
	ms, err := orders.Group("billing").Batch(10).Wait(false).Pop(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range ms {
		var o struct{ Amount int }
		if err := m.Decode(&o); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("billing got %s amount=%d\n", m.TransactionID, o.Amount)
		if _, err := c.Ack(ctx, m, queen.StatusCompleted, ""); err != nil {
			log.Fatal(err)
		}
	}

	// ... or consume: nil acks completed, an error acks failed (retried, then dead-lettered)
	handled, err := orders.Group("audit").Consume(ctx, queen.ConsumeOptions{Limit: 2, RenewEvery: 20 * time.Second},
		func(ctx context.Context, m queen.Message) error {
			fmt.Printf("audit got %s\n", m.Data)
			return nil
		})
	if err != nil || handled != 2 {
		log.Fatalf("consume: %d %v", handled, err)
	}

	// a transaction: ack one message and push its result, once per event (the KV gate)
	mustPush(ctx, orders.Partition("cust-1"), queen.Item{Data: map[string]any{"amount": 5}, TransactionID: "order-3"})
	ms, err = orders.Group("shipping").Batch(10).Wait(false).Pop(ctx)
	if err != nil || len(ms) != 3 {
		log.Fatalf("shipping pop: %d %v", len(ms), err)
	}
	shipped := c.Queue(orders.Name() + ".shipped")
	ns := "quickstart-" + orders.Name()
	for _, m := range ms {
		r, err := c.Transaction().
			Ack(queen.StatusCompleted, m).
			Push(shipped, queen.Item{Data: m.Data, TransactionID: "shipped-" + m.TransactionID}).
			Once(ns, "shipped:"+m.TransactionID, 24*time.Hour).
			Commit(ctx)
		if err != nil || !r.Success {
			log.Fatalf("commit: %+v %v", r, err)
		}
	}

	// the KV store: a counter
	for i := 0; i < 3; i++ {
		if _, err := c.KV().Incr(ctx, ns, "runs", 1, queen.Forever); err != nil {
			log.Fatal(err)
		}
	}
	runs, err := c.KV().Get(ctx, ns, "runs")
	if err != nil || !runs.Found {
		log.Fatalf("kv get: %+v %v", runs, err)
	}
	out, err := shipped.Fetch(ctx, 0) // a lease-free read
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("shipped=%d runs=%s\n", len(out.Records), runs.Value)
	if len(out.Records) != 3 || string(runs.Value) != "3" {
		log.Fatal("quickstart: unexpected counts")
	}
	fmt.Println("quickstart: ok")
}

func mustPush(ctx context.Context, q queen.Queue, items ...queen.Item) {
	if _, err := q.Push(ctx, items...); err != nil {
		log.Fatal(err)
	}
}
