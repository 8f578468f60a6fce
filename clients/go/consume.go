package queen

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"
)

// ConsumeOptions configures Queue.Consume and Queue.ConsumeBatch.
type ConsumeOptions struct {
	// RenewEvery renews the batch's leases this often while the handler runs (0: never).
	RenewEvery time.Duration
	// Limit stops the loop after this many messages (0: until the context ends).
	Limit int
	// IdleSleep is the pause after an empty non-waiting pop (default 100 ms).
	IdleSleep time.Duration
	// ErrorPause is the pause after a failed pop before the next (default 500 ms).
	ErrorPause time.Duration
	// OnError, when set, hears the errors the loop survives: failed pops, handler errors
	// (with their messages), failed acks.
	OnError func(err error, ms []Message)
}

// Consume pops and hands each message to handler until ctx ends, Limit messages were
// handled, or a terminal error: a nil return acks the message completed, an error acks it
// failed with the error's text (the broker retries it, then dead-letters it by the queue's
// policy); with AutoAck nothing is acked. It returns the number of messages handled. A
// cancelled ctx ends the loop with a nil error: the message in hand is finished and acked, the
// rest of its batch stays leased and comes back when the lease ends.
//
// Terminal errors (returned): a 403 (the 2.x rule), ErrConflationUnsupported and the conflation
// refusals (400 conflation_*). Other pop failures are retried after ErrorPause.
func (q Queue) Consume(ctx context.Context, opts ConsumeOptions, handler func(ctx context.Context, m Message) error) (int, error) {
	return q.consume(ctx, opts, func(ctx context.Context, ms []Message) (int, error) {
		n := 0
		for _, m := range ms {
			if ctx.Err() != nil {
				break
			}
			herr := handler(ctx, m)
			n++
			if q.autoAck {
				if herr != nil && opts.OnError != nil {
					opts.OnError(herr, []Message{m})
				}
				continue
			}
			actx, cancel := ackContext(ctx)
			var aerr error
			if herr == nil {
				_, aerr = q.c.Ack(actx, m, StatusCompleted, "")
			} else {
				if opts.OnError != nil {
					opts.OnError(herr, []Message{m})
				}
				_, aerr = q.c.Ack(actx, m, StatusFailed, herr.Error())
			}
			cancel()
			if aerr != nil && opts.OnError != nil {
				opts.OnError(aerr, []Message{m})
			}
		}
		return n, nil
	})
}

// ConsumeBatch is Consume with a handler of the whole batch (Queue.Batch sets its size): a
// nil return acks every message completed, an error acks every one failed (one ack/batch call).
func (q Queue) ConsumeBatch(ctx context.Context, opts ConsumeOptions, handler func(ctx context.Context, ms []Message) error) (int, error) {
	return q.consume(ctx, opts, func(ctx context.Context, ms []Message) (int, error) {
		herr := handler(ctx, ms)
		if q.autoAck {
			if herr != nil && opts.OnError != nil {
				opts.OnError(herr, ms)
			}
			return len(ms), nil
		}
		actx, cancel := ackContext(ctx)
		defer cancel()
		var aerr error
		if herr == nil {
			_, aerr = q.c.AckBatch(actx, ms, StatusCompleted, "")
		} else {
			if opts.OnError != nil {
				opts.OnError(herr, ms)
			}
			_, aerr = q.c.AckBatch(actx, ms, StatusFailed, herr.Error())
		}
		if aerr != nil && opts.OnError != nil {
			opts.OnError(aerr, ms)
		}
		return len(ms), nil
	})
}

// ackContext outlives a cancelled consume context: the message in hand is still acked.
func ackContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
}

// terminal reports whether a pop error ends a consume loop.
func terminal(err error) bool {
	if errors.Is(err, ErrConflationUnsupported) {
		return true
	}
	var ae *APIError
	if errors.As(err, &ae) {
		if ae.Status == http.StatusForbidden {
			return true
		}
		if ae.Status == http.StatusBadRequest && strings.HasPrefix(ae.Code, "conflation_") {
			return true
		}
	}
	return false
}

func (q Queue) consume(ctx context.Context, opts ConsumeOptions, run func(ctx context.Context, ms []Message) (int, error)) (int, error) {
	if opts.IdleSleep <= 0 {
		opts.IdleSleep = 100 * time.Millisecond
	}
	if opts.ErrorPause <= 0 {
		opts.ErrorPause = 500 * time.Millisecond
	}
	handled := 0
	for ctx.Err() == nil && (opts.Limit <= 0 || handled < opts.Limit) {
		pq := q
		if opts.Limit > 0 && pq.batch > opts.Limit-handled {
			pq.batch = opts.Limit - handled // never lease more than the loop will handle
		}
		ms, err := pq.Pop(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if terminal(err) {
				return handled, err
			}
			if opts.OnError != nil {
				opts.OnError(err, nil)
			}
			_ = sleepCtx(ctx, opts.ErrorPause)
			continue
		}
		if len(ms) == 0 {
			if q.noWait {
				_ = sleepCtx(ctx, opts.IdleSleep)
			}
			continue
		}
		if opts.Limit > 0 && len(ms) > opts.Limit-handled {
			ms = ms[:opts.Limit-handled]
		}
		stopRenew := q.renewer(ctx, opts, ms)
		n, _ := run(ctx, ms)
		stopRenew()
		handled += n
	}
	return handled, nil
}

// renewer renews the batch's leases every opts.RenewEvery until the returned func is called.
func (q Queue) renewer(ctx context.Context, opts ConsumeOptions, ms []Message) func() {
	if opts.RenewEvery <= 0 || q.autoAck {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(opts.RenewEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				rctx, cancel := ackContext(ctx)
				ok, err := q.c.RenewMessages(rctx, ms)
				cancel()
				if err != nil && opts.OnError != nil {
					opts.OnError(err, ms)
				}
				if err == nil && !ok {
					return // the lease is gone: nothing left to renew
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
