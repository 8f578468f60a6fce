// Package queen is the Go client of the queen message broker (a C broker on PostgreSQL that
// speaks the queen-mq 2.x wire): push, pop and consume with leases, acks, consumer groups and
// conflation, transactions with KV and timer riders, lease-free fetch, KV, timers and locks.
//
// It uses the standard library only. The stream runtime is the sibling package
// github.com/queen-mq/queen/clients/go/streams.
//
//	c, err := queen.New(queen.Options{URLs: []string{"http://localhost:6632"}})
//	_, err = c.Queue("orders").Push(ctx, queen.Item{Data: map[string]any{"id": 1}})
package queen
