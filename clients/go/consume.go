package queen

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"
)

// ErrAckRefused is what OnError hears when the broker answered an ack of the loop with
// success false: the lease was gone (expired, or the message was settled elsewhere).
var ErrAckRefused = errors.New("queen: the broker refused the ack (the lease is gone)")

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
	// Concurrency runs this many pop loops at once (default 1), sharing Limit: the handler
	// and OnError are then called from that many goroutines.
	Concurrency int
	// OnError, when set, hears the errors the loop survives: failed pops, handler errors
	// (with their messages), failed or refused acks (ErrAckRefused).
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
			var ok bool
			if herr == nil {
				ok, aerr = q.c.Ack(actx, m, StatusCompleted, "")
			} else {
				if opts.OnError != nil {
					opts.OnError(herr, []Message{m})
				}
				ok, aerr = q.c.Ack(actx, m, StatusFailed, herr.Error())
			}
			cancel()
			if aerr == nil && !ok {
				aerr = ErrAckRefused
			}
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
		var oks []bool
		if herr == nil {
			oks, aerr = q.c.AckBatch(actx, ms, StatusCompleted, "")
		} else {
			if opts.OnError != nil {
				opts.OnError(herr, ms)
			}
			oks, aerr = q.c.AckBatch(actx, ms, StatusFailed, herr.Error())
		}
		for _, ok := range oks {
			if aerr == nil && !ok {
				aerr = ErrAckRefused
			}
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
	workers := opts.Concurrency
	if workers < 1 {
		workers = 1
	}
	st := &consumeState{limit: opts.Limit}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var once sync.Once
	var fatal error
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := q.worker(wctx, opts, st, run); err != nil {
				once.Do(func() { fatal = err; cancel() })
			}
		}()
	}
	wg.Wait()
	return st.handledCount(), fatal
}

// consumeState is the workers' shared count: a worker reserves its pop's budget first, so
// that together they never lease more than Limit.
type consumeState struct {
	mu       sync.Mutex
	limit    int
	handled  int
	reserved int
}

func (s *consumeState) handledCount() int { s.mu.Lock(); defer s.mu.Unlock(); return s.handled }

// reserve returns how many messages the next pop may take (batch when there is no limit), 0
// when the limit is reached.
func (s *consumeState) reserve(batch int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limit <= 0 {
		return batch
	}
	left := s.limit - s.handled - s.reserved
	if left <= 0 {
		return 0
	}
	if batch > left {
		batch = left
	}
	s.reserved += batch
	return batch
}

func (s *consumeState) settle(reserved, handled int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limit > 0 {
		s.reserved -= reserved
	}
	s.handled += handled
}

func (q Queue) worker(ctx context.Context, opts ConsumeOptions, st *consumeState, run func(ctx context.Context, ms []Message) (int, error)) error {
	batch := q.batch
	if batch <= 0 {
		batch = 1
	}
	for ctx.Err() == nil {
		want := st.reserve(batch)
		if want == 0 {
			return nil
		}
		ms, err := q.Batch(want).Pop(ctx)
		if err != nil {
			st.settle(want, 0)
			if ctx.Err() != nil {
				return nil
			}
			if terminal(err) {
				return err
			}
			if opts.OnError != nil {
				opts.OnError(err, nil)
			}
			_ = sleepCtx(ctx, opts.ErrorPause)
			continue
		}
		if len(ms) == 0 {
			st.settle(want, 0)
			if q.noWait {
				_ = sleepCtx(ctx, opts.IdleSleep)
			}
			continue
		}
		if len(ms) > want {
			ms = ms[:want] // the rest stays leased and comes back when the lease ends
		}
		stopRenew := q.renewer(ctx, opts, ms)
		n, _ := run(ctx, ms)
		stopRenew()
		st.settle(want, n)
	}
	return nil
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
