package streams

// The runner: pop → group by partition → operators → one cycle commit per partition group;
// and the idle-flush timer. The same design as the JS and Rust runtimes (clients/js,
// clients/rust: "When a window closes", "The gate").
//
// A cycle. Pop a batch under a lease (group streams.<QueryID>), read the partition's state
// rows (POST /streams/v1/state/get, with versions), run the chain, commit POST
// /streams/v1/cycle carrying the state upserts/deletes (each with the version of the row as
// read), the sink pushes and the ack of the batch (the transactionId of the last message,
// count = messages in the batch) in one transaction. A gate acks the allowed prefix with
// release_lease false; a first-message deny commits nothing.
//
// Stream time. Processing time (no extractor): the newest createdAt of the batch. Event time:
// the partition's watermark, max(previous, newest event time − allowed lateness), persisted in
// the __wm__ row ({eventTimeMs, lastStampUs}) with every cycle. An event below the watermark
// is late: dropped (counted) or, with OnLateInclude, folded as any other.
//
// The idle-flush rule (the broker's clock, not the client's). Every IdleFlushMs the runner
// asks POST /api/v1/partitions/changed for the source queue and reads safeTime S (no record
// will be stamped at or below it after the answer) and each partition's lastWriteAt L. A
// partition this runner touched in the last five minutes is drained when L ≤ the createdAt of
// the last message its committed cycles acked (kept in memory and in __wm__.lastStampUs, so a
// restarted runner knows it too). Only a drained partition is flushed; its clock is S in
// processing time and watermark + (S − L) in event time. Windows with windowEnd + grace ≤
// clock are emitted and deleted in a cycle with ack null; in event time the watermark moves
// to the clock in the same commit.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"time"

	queen "github.com/queen-mq/queen/clients/go"
)

const recentMs = 5 * 60 * 1000

// RunOptions configures Run. QueryID is required; the zero value of the others means their
// default.
type RunOptions struct {
	// QueryID names the query (its registration, its state, its consumer group).
	QueryID string
	// BatchSize is the pop's batch (default 200).
	BatchSize int
	// MaxPartitions is how many partitions one pop may claim (default 4).
	MaxPartitions int
	// MaxWait is the long-poll limit of a source pop (default 1 s).
	MaxWait time.Duration
	// Reset wipes the query's state and replaces its config_hash (the answer to a
	// *ConfigMismatchError).
	Reset bool
	// ConsumerGroup defaults to streams.<QueryID>.
	ConsumerGroup    string
	SubscriptionMode string
	SubscriptionFrom string
	// OnError is called with every error the runner reports (also counted in Stats).
	OnError func(error)
}

// Stats are the counters of a running query.
type Stats struct {
	Cycles      uint64
	FlushCycles uint64
	Messages    uint64
	PushItems   uint64
	StateOps    uint64
	LateEvents  uint64
	GateAllowed uint64
	GateDenied  uint64
	Errors      uint64
	LastError   string
}

// ConfigMismatchError is the broker's 409: the query is registered with another chain
// (another config_hash). Run again with RunOptions.Reset to replace it.
type ConfigMismatchError struct {
	Message string
	Err     error
}

func (e *ConfigMismatchError) Error() string {
	return "streams: config_hash mismatch (run with Reset to replace the query): " + e.Message
}
func (e *ConfigMismatchError) Unwrap() error { return e.Err }

// Handle is a running query.
type Handle struct {
	// QueryID is RunOptions.QueryID; ServerQueryID the broker's id; ConfigHash the chain's.
	QueryID       string
	ServerQueryID string
	ConfigHash    string

	r      *runner
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// Stats returns the counters so far.
func (h *Handle) Stats() Stats {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	return h.r.stats
}

// Stop finishes the cycle in hand (a pop in flight ends within MaxWait), ends the runner and
// returns its counters.
func (h *Handle) Stop() (Stats, error) {
	h.r.stop()
	<-h.done
	h.cancel()
	return h.Stats(), nil
}

// Abort kills the runner where it is (a crash): in-flight requests are cancelled, nothing is
// finished. What it had leased comes back when the lease expires.
func (h *Handle) Abort() {
	h.r.stop()
	h.cancel()
	<-h.done
}

// Wait blocks until the runner ends (Stop, Abort, or Run's context cancelled, which is an
// Abort) and returns the context's error, if that ended it.
func (h *Handle) Wait() error {
	<-h.done
	if err := h.r.parent.Err(); err != nil {
		return err
	}
	return nil
}

type touched struct {
	name        string
	at          int64
	lastStampUs int64
	hasStamp    bool
	lastTxn     string // the transactionId of the last message its cycles acked
}

type runner struct {
	c       *queen.Client
	st      *stages
	source  string
	qid     any
	group   string
	opts    RunOptions
	parent  context.Context
	ctx     context.Context
	stopped chan struct{}
	stopMu  sync.Once

	mu      sync.Mutex // stats, locks, touched, reads
	stats   Stats
	locks   map[string]*sync.Mutex
	touched map[string]*touched
	// partition → the row versions its last state read saw (every row: a key it did not
	// return was absent). The commit sends each op's version, so the broker applies it only
	// to the row as it was read (docs/streams.md, "Row versions"); reads and commits of one
	// partition are serialised by its lock.
	reads map[string]map[string]int64
}

func (r *runner) stop() { r.stopMu.Do(func() { close(r.stopped) }) }

func (r *runner) isStopped() bool {
	select {
	case <-r.stopped:
		return true
	case <-r.ctx.Done():
		return true
	default:
		return false
	}
}

// pause waits d, or less when the runner is stopped.
func (r *runner) pause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.stopped:
	case <-r.ctx.Done():
	}
}

// Run checks the chain, registers the query (POST /streams/v1/queries) and starts the runner.
// A chain registered under QueryID with another config_hash is a *ConfigMismatchError until
// RunOptions.Reset. Cancelling ctx aborts the runner (see Handle.Abort).
func (s *Stream) Run(ctx context.Context, c *queen.Client, opts RunOptions) (*Handle, error) {
	st, err := s.stages()
	if err != nil {
		return nil, err
	}
	if opts.QueryID == "" {
		return nil, errors.New("streams: RunOptions.QueryID is required")
	}
	if c == nil {
		return nil, errors.New("streams: Run needs a *queen.Client")
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 200
	}
	if opts.MaxPartitions <= 0 {
		opts.MaxPartitions = 4
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = time.Second
	}
	if opts.ConsumerGroup == "" {
		opts.ConsumerGroup = "streams." + opts.QueryID
	}
	hash := s.ConfigHash()
	body := map[string]any{"name": opts.QueryID, "source_queue": s.source, "config_hash": hash, "reset": opts.Reset}
	if st.sink != nil && st.sink.kind == opSink {
		body["sink_queue"] = st.sink.queue
	}
	var reg map[string]any
	if err := c.Do(ctx, "POST", "/streams/v1/queries", body, &reg); err != nil {
		var ae *queen.APIError
		if errors.As(err, &ae) && ae.Status == 409 {
			return nil, &ConfigMismatchError{Message: ae.Message, Err: err}
		}
		return nil, fmt.Errorf("streams: registering %s: %w", opts.QueryID, err)
	}
	if reg["success"] == false {
		return nil, fmt.Errorf("streams: registering %s: %v", opts.QueryID, reg["error"])
	}
	qid := reg["query_id"]
	if qid == nil {
		return nil, fmt.Errorf("streams: registering %s: no query_id in the answer", opts.QueryID)
	}
	rctx, cancel := context.WithCancel(ctx)
	r := &runner{
		c: c, st: st, source: s.source, qid: qid, group: opts.ConsumerGroup, opts: opts,
		parent: ctx, ctx: rctx, stopped: make(chan struct{}),
		locks: map[string]*sync.Mutex{}, touched: map[string]*touched{}, reads: map[string]map[string]int64{},
	}
	h := &Handle{QueryID: opts.QueryID, ConfigHash: hash, r: r, cancel: cancel, done: make(chan struct{})}
	if sq, ok := qid.(string); ok {
		h.ServerQueryID = sq
	} else {
		h.ServerQueryID = fmt.Sprint(qid)
	}
	var wg sync.WaitGroup
	if idle := st.idleFlushMs(); idle > 0 {
		// the partitions an earlier run committed cycles on in the last five minutes may hold
		// open windows: the flush sweeps them too (their acked stamp is in __wm__)
		var seen struct {
			Partitions []struct {
				PartitionID any    `json:"partition_id"`
				Partition   string `json:"partition"`
			} `json:"partitions"`
		}
		if err := c.Do(rctx, "POST", "/streams/v1/state/get", map[string]any{"query_id": qid, "touched_within_ms": recentMs}, &seen); err == nil {
			now := nowMs()
			for _, p := range seen.Partitions {
				if id, ok := p.PartitionID.(string); ok && p.Partition != "" {
					r.touched[id] = &touched{name: p.Partition, at: now}
				}
			}
		} else {
			r.report(fmt.Errorf("streams: reading the partitions the query touched: %w", err))
		}
		wg.Add(1)
		go func() { defer wg.Done(); r.flushLoop(time.Duration(idle) * time.Millisecond) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); r.popLoop() }()
	go func() { wg.Wait(); close(h.done) }()
	return h, nil
}

func (st *stages) idleFlushMs() int64 {
	if st.window == nil || st.reducer == nil {
		return 0
	}
	return st.window.idleFlushMs
}

func (r *runner) report(err error) {
	r.mu.Lock()
	r.stats.Errors++
	r.stats.LastError = err.Error()
	r.mu.Unlock()
	if r.opts.OnError != nil {
		r.opts.OnError(err)
	}
}

func (r *runner) lockOf(pid string) *sync.Mutex {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.locks[pid]
	if l == nil {
		l = &sync.Mutex{}
		r.locks[pid] = l
	}
	return l
}

// message is one popped source message.
type message struct {
	ID            string `json:"id"`
	TransactionID string `json:"transactionId"`
	PartitionID   string `json:"partitionId"`
	Partition     string `json:"partition"`
	LeaseID       string `json:"leaseId"`
	CreatedAt     string `json:"createdAt"`
	Data          any    `json:"data"`
	createdUs     int64
	hasCreated    bool
}

func (m *message) createdMs() (int64, bool) { return floorDiv(m.createdUs, 1000), m.hasCreated }

func (r *runner) popPath() string {
	q := url.Values{}
	q.Set("batch", strconv.Itoa(r.opts.BatchSize))
	q.Set("wait", "true")
	q.Set("timeout", strconv.FormatInt(r.opts.MaxWait.Milliseconds(), 10))
	q.Set("consumerGroup", r.group)
	if r.opts.SubscriptionMode != "" {
		q.Set("subscriptionMode", r.opts.SubscriptionMode)
	}
	if r.opts.SubscriptionFrom != "" {
		q.Set("subscriptionFrom", r.opts.SubscriptionFrom)
	}
	if r.opts.MaxPartitions > 1 {
		q.Set("partitions", strconv.Itoa(r.opts.MaxPartitions))
	}
	return "/api/v1/pop/queue/" + url.PathEscape(r.source) + "?" + q.Encode()
}

func (r *runner) pop() ([]*message, error) {
	var out struct {
		Success  *bool      `json:"success"`
		Code     string     `json:"code"`
		Error    any        `json:"error"`
		Messages []*message `json:"messages"`
	}
	if err := r.c.Do(r.ctx, "GET", r.popPath(), nil, &out); err != nil {
		return nil, fmt.Errorf("streams: pop %s: %w", r.source, err)
	}
	if out.Success != nil && !*out.Success && out.Code != "" {
		return nil, fmt.Errorf("streams: pop %s: %s %v", r.source, out.Code, out.Error)
	}
	msgs := out.Messages[:0]
	for _, m := range out.Messages {
		if m == nil || m.PartitionID == "" {
			continue
		}
		if m.TransactionID == "" {
			m.TransactionID = m.ID
		}
		if m.Partition == "" {
			m.Partition = "Default"
		}
		m.createdUs, m.hasCreated = parseISOUs(m.CreatedAt)
		msgs = append(msgs, m)
	}
	return msgs, nil
}

func (r *runner) renew(lease string) {
	var out any
	_ = r.c.Do(r.ctx, "POST", "/api/v1/lease/"+url.PathEscape(lease)+"/extend", map[string]any{}, &out)
}

func (r *runner) popLoop() {
	for !r.isStopped() {
		msgs, err := r.pop()
		if err != nil {
			if r.ctx.Err() != nil {
				return
			}
			r.report(err)
			r.pause(500 * time.Millisecond)
			continue
		}
		if len(msgs) == 0 {
			r.pause(50 * time.Millisecond)
			continue
		}
		// slow operators must not lose the lease mid-batch (the earlier SDK never renewed):
		// renew every 5 s until the batch's cycles are committed
		leases := map[string]bool{}
		for _, m := range msgs {
			if m.LeaseID != "" {
				leases[m.LeaseID] = true
			}
		}
		renewDone := make(chan struct{})
		go func() {
			t := time.NewTicker(5 * time.Second)
			defer t.Stop()
			for {
				select {
				case <-renewDone:
					return
				case <-r.ctx.Done():
					return
				case <-t.C:
					for l := range leases {
						r.renew(l)
					}
				}
			}
		}()
		var order []string
		groups := map[string][]*message{}
		for _, m := range msgs {
			if _, ok := groups[m.PartitionID]; !ok {
				order = append(order, m.PartitionID)
			}
			groups[m.PartitionID] = append(groups[m.PartitionID], m)
		}
		// the partitions of one pop are independent shards: their cycles run concurrently,
		// each under its partition's lock, so a flush never interleaves with one
		var wg sync.WaitGroup
		for _, pid := range order {
			g := groups[pid]
			sort.SliceStable(g, func(i, j int) bool {
				if g[i].createdUs != g[j].createdUs {
					return g[i].createdUs < g[j].createdUs
				}
				return g[i].ID < g[j].ID
			})
			now := nowMs()
			r.mu.Lock()
			t := r.touched[pid]
			if t == nil {
				t = &touched{name: g[0].Partition}
				r.touched[pid] = t
			}
			t.at = now
			for k, v := range r.touched {
				if v.at < now-recentMs {
					delete(r.touched, k)
				}
			}
			r.mu.Unlock()
			wg.Add(1)
			go func(pid string, g []*message) {
				defer wg.Done()
				l := r.lockOf(pid)
				l.Lock()
				defer l.Unlock()
				r.mu.Lock()
				delete(r.reads, pid)
				r.mu.Unlock()
				if err := r.guard(func() error { return r.cycle(pid, g) }); err != nil {
					if r.ctx.Err() == nil {
						r.report(err)
					}
					return
				}
				r.mu.Lock()
				r.stats.Cycles++
				r.stats.Messages += uint64(len(g))
				r.mu.Unlock()
			}(pid, g)
		}
		wg.Wait()
		close(renewDone)
	}
}

// guard runs f; an operator that panics commits nothing: the batch comes back with the lease.
func (r *runner) guard(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("streams: an operator panicked; the batch was not committed and comes back with the lease: %v", p)
		}
	}()
	return f()
}

type stateRow struct {
	Key     string `json:"key"`
	Value   any    `json:"value"`
	Version *int64 `json:"version"`
}

func (r *runner) stateGet(pid string) (map[string]any, error) {
	var out struct {
		Success *bool      `json:"success"`
		Error   any        `json:"error"`
		Rows    []stateRow `json:"rows"`
	}
	body := map[string]any{"query_id": r.qid, "partition_id": pid, "keys": []string{}, "versions": true}
	if err := r.c.Do(r.ctx, "POST", "/streams/v1/state/get", body, &out); err != nil {
		return nil, fmt.Errorf("streams: state/get: %w", err)
	}
	if out.Success != nil && !*out.Success {
		return nil, fmt.Errorf("streams: state/get: %v", out.Error)
	}
	rows := make(map[string]any, len(out.Rows))
	versions := make(map[string]int64, len(out.Rows))
	for _, row := range out.Rows {
		rows[row.Key] = row.Value
		if row.Version != nil {
			versions[row.Key] = *row.Version
		}
	}
	r.mu.Lock()
	r.reads[pid] = versions
	r.mu.Unlock()
	return rows, nil
}

type ackBody struct {
	TransactionID string `json:"transactionId"`
	LeaseID       string `json:"leaseId,omitempty"`
	Status        string `json:"status"`
	Count         int    `json:"count"`
}

func (r *runner) commit(pid string, ops []stateOp, items []map[string]any, ack *ackBody, releaseLease bool) error {
	// the version of the row as read, on the first op of each key (a later op of the same key
	// applies to this cycle's own write)
	r.mu.Lock()
	read, ok := r.reads[pid]
	delete(r.reads, pid)
	r.mu.Unlock()
	if ok {
		seen := map[string]bool{}
		for i := range ops {
			if seen[ops[i].Key] {
				continue
			}
			seen[ops[i].Key] = true
			v := read[ops[i].Key]
			ops[i].Version = &v
		}
	}
	if ops == nil {
		ops = []stateOp{}
	}
	if items == nil {
		items = []map[string]any{}
	}
	body := map[string]any{"query_id": r.qid, "partition_id": pid, "consumer_group": r.group, "state_ops": ops,
		"push_items": items, "ack": ack, "release_lease": releaseLease}
	var out map[string]any
	if err := r.c.Do(r.ctx, "POST", "/streams/v1/cycle", body, &out); err != nil {
		return fmt.Errorf("streams: cycle: %w", err)
	}
	if out["success"] != true {
		e := out["error"]
		if e == nil {
			e = out
		}
		return fmt.Errorf("streams: cycle: %v", e)
	}
	r.mu.Lock()
	r.stats.StateOps += uint64(len(ops))
	r.stats.PushItems += uint64(len(items))
	r.mu.Unlock()
	return nil
}

// applyOps runs the stateless operators (and KeyBy) over envs.
func applyOps(ops []op, envs []env) []env {
	cur := envs
	for i := range ops {
		o := &ops[i]
		next := make([]env, 0, len(cur))
		for _, e := range cur {
			switch o.kind {
			case opMap:
				e.value = o.mapf(e.value)
				next = append(next, e)
			case opFilter:
				if o.filter(e.value) {
					next = append(next, e)
				}
			case opFlatMap:
				for _, v := range o.flat(e.value) {
					next = append(next, env{key: e.key, value: v, ts: e.ts, src: e.src})
				}
			case opKeyBy:
				e.key = o.key(e.value)
				next = append(next, e)
			default:
				next = append(next, e)
			}
		}
		cur = next
	}
	return cur
}

func isObject(v any) bool {
	if _, ok := v.(map[string]any); ok {
		return true
	}
	if v == nil {
		return false
	}
	b, err := json.Marshal(v)
	return err == nil && len(b) > 0 && b[0] == '{'
}

// deliver runs the post stages, then builds the sink's push items (or calls Foreach).
func (r *runner) deliver(emits []emit, pid, pname string) []map[string]any {
	envs := make([]env, len(emits))
	for i, e := range emits {
		envs[i] = env{key: e.key, value: e.value, src: i}
	}
	out := applyOps(r.st.post, envs)
	var items []map[string]any
	for _, e := range out {
		sink := r.st.sink
		if sink == nil {
			continue
		}
		switch sink.kind {
		case opSink:
			part := pname
			if sink.partition != nil {
				part = sink.partition(e.value)
			}
			payload := e.value
			if !isObject(payload) {
				payload = map[string]any{"value": payload}
			}
			items = append(items, map[string]any{"queue": sink.queue, "partition": part, "payload": payload})
		case opForeach:
			ctx := EmitCtx{Partition: pname, PartitionID: pid, Key: e.key}
			if e.src >= 0 && e.src < len(emits) && emits[e.src].hasWindow {
				em := emits[e.src]
				ctx.WindowKey, ctx.WindowStart, ctx.WindowEnd, ctx.HasWindow = em.windowKey, em.windowStart, em.windowEnd, true
			}
			sink.foreach(e.value, ctx)
		}
	}
	return items
}

func (r *runner) cycle(pid string, msgs []*message) error {
	pname := msgs[0].Partition
	last := msgs[len(msgs)-1]
	envs := make([]env, len(msgs))
	for i, m := range msgs {
		ms, _ := m.createdMs()
		envs[i] = env{key: m.PartitionID, value: m.Data, ts: ms, src: i}
	}
	envs = applyOps(r.st.pre, envs)
	if r.st.gate != nil {
		return r.gateCycle(pid, pname, msgs, envs)
	}
	var ops []stateOp
	var emits []emit
	if w := r.st.window; w != nil {
		red := r.st.reducer
		loaded := map[string]any{}
		if red != nil || w.hasEventTime() {
			var err error
			if loaded, err = r.stateGet(pid); err != nil {
				return err
			}
		}
		wmRow, _ := loaded[watermarkKey].(map[string]any)
		wmPrev, hasWm := int64Of(wmRow["eventTimeMs"])
		var placed []env
		var late uint64
		var maxTs int64
		hasMax := false
		for _, e := range envs {
			var created int64
			hasCreated := false
			if e.src >= 0 {
				created, hasCreated = msgs[e.src].createdMs()
			}
			ts, ok := eventTs(w, e.value, created, hasCreated)
			if !ok {
				r.report(fmt.Errorf("streams: the window could not place a message of partition %s: no time", pname))
				continue
			}
			e.ts = ts
			if w.hasEventTime() {
				if !hasMax || ts > maxTs {
					maxTs, hasMax = ts, true
				}
				if hasWm && ts < wmPrev && w.onLate == OnLateDrop {
					late++
					continue
				}
			}
			placed = append(placed, e)
		}
		if late > 0 {
			r.mu.Lock()
			r.stats.LateEvents += late
			r.mu.Unlock()
		}
		var clock int64
		hasClock := false
		if w.hasEventTime() {
			clock, hasClock = wmPrev, hasWm
			if hasMax && (!hasClock || maxTs-w.latenessMs() > clock) {
				clock, hasClock = maxTs-w.latenessMs(), true
			}
		} else {
			for _, m := range msgs {
				if ms, ok := m.createdMs(); ok && (!hasClock || ms > clock) {
					clock, hasClock = ms, true
				}
			}
		}
		if !hasClock {
			clock = -1 << 62
		}
		if red == nil {
			for _, e := range placed {
				emits = append(emits, emit{key: e.key, value: e.value})
			}
		} else {
			if w.isSession() {
				ops, emits = runSession(w, red, placed, loaded, clock)
			} else {
				ops, emits = reduceWindows(w, red, placed, loaded, clock)
			}
			wm := map[string]any{}
			if w.hasEventTime() && hasClock {
				wm["eventTimeMs"] = clock
			}
			// lastStampUs is the Rust runtime's spelling, sourceAt/sourceTxn the JS one's: both
			// are written, either is read (a query moves between the runtimes)
			if last.hasCreated {
				wm["lastStampUs"] = last.createdUs
				wm["sourceAt"] = last.CreatedAt
			}
			wm["sourceTxn"] = last.TransactionID
			ops = append(ops, stateOp{Type: "upsert", Key: watermarkKey, Value: wm})
		}
	} else {
		for _, e := range envs {
			emits = append(emits, emit{key: e.key, value: e.value})
		}
	}
	items := r.deliver(emits, pid, pname)
	ack := &ackBody{TransactionID: last.TransactionID, LeaseID: last.LeaseID, Status: "completed", Count: len(msgs)}
	if err := r.commit(pid, ops, items, ack, true); err != nil {
		return err
	}
	if last.hasCreated {
		r.mu.Lock()
		if t := r.touched[pid]; t != nil {
			t.lastStampUs, t.hasStamp, t.lastTxn = last.createdUs, true, last.TransactionID
		}
		r.mu.Unlock()
	}
	return nil
}

func copyState(m map[string]map[string]any) map[string]map[string]any {
	out := make(map[string]map[string]any, len(m))
	for k, v := range m {
		out[k] = v // the rows themselves are replaced, never mutated, once in live
	}
	return out
}

// gateCycle takes decisions per value and acks per source message: a message is acked only
// when every value it became (FlatMap) was allowed. A deny rolls back to the start of its
// source message (state, emits), so no value of it is emitted now and none is lost: the whole
// message comes back with the lease. Messages filtered out before the last fully allowed one
// are acked with it; a batch filtered out whole is acked whole.
func (r *runner) gateCycle(pid, pname string, msgs []*message, envs []env) error {
	loaded, err := r.stateGet(pid)
	if err != nil {
		return err
	}
	live := map[string]map[string]any{}
	var touchedKeys []string
	now := nowMs()
	var allowed []emit
	denied := false
	total := len(envs)
	currentSrc, lastCompleteSrc := -1, -1
	type checkpoint struct {
		live    map[string]map[string]any
		touched []string
		n       int
	}
	cp := checkpoint{live: copyState(live), n: 0}
	for _, e := range envs {
		if e.src != currentSrc {
			if currentSrc >= 0 {
				lastCompleteSrc = currentSrc
			}
			cp = checkpoint{live: copyState(live), touched: append([]string(nil), touchedKeys...), n: len(allowed)}
			currentSrc = e.src
		}
		state, ok := live[e.key]
		if !ok {
			state, _ = loaded[e.key].(map[string]any)
			if state == nil {
				state = map[string]any{}
			}
		}
		ctx := &GateCtx{State: deepCopy(state).(map[string]any), StreamTimeMs: now, PartitionID: pid, Partition: pname, Key: e.key}
		if r.st.gate(e.value, ctx) {
			if ctx.State == nil {
				ctx.State = map[string]any{}
			}
			live[e.key] = ctx.State
			found := false
			for _, k := range touchedKeys {
				if k == e.key {
					found = true
					break
				}
			}
			if !found {
				touchedKeys = append(touchedKeys, e.key)
			}
			allowed = append(allowed, emit{key: e.key, value: e.value})
		} else {
			denied = true
			live, touchedKeys, allowed = cp.live, cp.touched, allowed[:cp.n]
			break
		}
	}
	if !denied && currentSrc >= 0 {
		lastCompleteSrc = currentSrc
	}
	r.mu.Lock()
	r.stats.GateAllowed += uint64(len(allowed))
	r.stats.GateDenied += uint64(total - len(allowed))
	r.mu.Unlock()
	ackUpto := len(msgs) - 1
	if denied {
		if lastCompleteSrc < 0 {
			return nil // a first-message deny: no cycle at all, the lease times out
		}
		ackUpto = lastCompleteSrc
	}
	var ops []stateOp
	for _, k := range touchedKeys {
		ops = append(ops, stateOp{Type: "upsert", Key: k, Value: live[k]})
	}
	items := r.deliver(allowed, pid, pname)
	m := msgs[ackUpto]
	ack := &ackBody{TransactionID: m.TransactionID, LeaseID: m.LeaseID, Status: "completed", Count: ackUpto + 1}
	return r.commit(pid, ops, items, ack, !denied)
}

func (r *runner) flushLoop(every time.Duration) {
	for !r.isStopped() {
		r.pause(every)
		if r.isStopped() {
			return
		}
		if err := r.flushAll(); err != nil && r.ctx.Err() == nil {
			r.report(err)
		}
	}
}

type changedPartition struct {
	Name        string `json:"name"`
	ID          any    `json:"id"`
	LastOffset  *int64 `json:"lastOffset"`
	LastWriteAt string `json:"lastWriteAt"`
}

// changedSince is POST /api/v1/partitions/changed for the source queue, every page: the
// smallest safeTime of the pages and each partition's lastWriteAt.
func (r *runner) changedSince(sinceUs int64, hasSince bool) (safeTime string, parts map[string]changedPartition, err error) {
	parts = map[string]changedPartition{}
	var after any
	for {
		e := map[string]any{"queue": r.source, "limit": 1000}
		if hasSince {
			e["since"] = isoUs(sinceUs)
		}
		if after != nil {
			e["after"] = after
		}
		var out struct {
			SafeTime string `json:"safeTime"`
			Entries  []struct {
				Error      string             `json:"error"`
				Partitions []changedPartition `json:"partitions"`
				Next       any                `json:"next"`
			} `json:"entries"`
		}
		if err := r.c.Do(r.ctx, "POST", "/api/v1/partitions/changed", map[string]any{"entries": []any{e}}, &out); err != nil {
			return "", nil, fmt.Errorf("streams: partitions/changed: %w", err)
		}
		if out.SafeTime != "" && (safeTime == "" || out.SafeTime < safeTime) {
			safeTime = out.SafeTime
		}
		if len(out.Entries) == 0 {
			return "", nil, errors.New("streams: partitions/changed: no entry")
		}
		en := out.Entries[0]
		switch en.Error {
		case "":
		case "UNKNOWN_TOPIC_OR_PARTITION":
			return safeTime, parts, nil
		default:
			return "", nil, fmt.Errorf("streams: partitions/changed: %s", en.Error)
		}
		for _, p := range en.Partitions {
			id, ok := p.ID.(string)
			if !ok {
				id = fmt.Sprint(p.ID)
			}
			parts[id] = p
		}
		if en.Next == nil {
			return safeTime, parts, nil
		}
		after = en.Next
	}
}

func (r *runner) flushAll() error {
	type item struct {
		pid string
		t   touched
	}
	var list []item
	now := nowMs()
	r.mu.Lock()
	for k, v := range r.touched {
		if v.at < now-recentMs {
			delete(r.touched, k)
			continue
		}
		list = append(list, item{k, *v})
	}
	r.mu.Unlock()
	if len(list) == 0 {
		return nil
	}
	sort.Slice(list, func(i, j int) bool { return list[i].pid < list[j].pid })
	// every touched partition's last write is at or after its own last acked stamp, so
	// since = the smallest of them lists them all; a partition seeded at start (no stamp in
	// memory yet) needs the whole list
	var since int64
	hasSince := true
	for i, it := range list {
		if !it.t.hasStamp {
			hasSince = false
			break
		}
		if i == 0 || it.t.lastStampUs < since {
			since = it.t.lastStampUs
		}
	}
	safe, parts, err := r.changedSince(since, hasSince)
	if err != nil {
		return err
	}
	safeUs, ok := parseISOUs(safe)
	if !ok {
		return nil
	}
	for _, it := range list {
		if r.isStopped() {
			return nil
		}
		p, listed := parts[it.pid]
		lastWrite, hasLW := int64(0), false
		if listed {
			lastWrite, hasLW = parseISOUs(p.LastWriteAt)
		}
		err := func() error {
			l := r.lockOf(it.pid)
			l.Lock()
			defer l.Unlock()
			r.mu.Lock()
			delete(r.reads, it.pid)
			t := it.t
			if cur := r.touched[it.pid]; cur != nil { // the stamp may have moved while waiting
				t = *cur
			}
			r.mu.Unlock()
			// not listed under a since: no write at or after it, and since ≤ this partition's
			// last acked stamp, so it is drained; not listed without one: gone
			if !hasLW {
				if hasSince && t.hasStamp {
					lastWrite, hasLW = t.lastStampUs, true
				} else {
					return nil
				}
			}
			var lastOffset int64 = -1
			if listed && p.LastOffset != nil {
				lastOffset = *p.LastOffset
			}
			return r.guard(func() error { return r.flushPartition(it.pid, t, safeUs, lastWrite, lastOffset) })
		}()
		if err != nil && r.ctx.Err() == nil {
			r.report(err)
		}
	}
	return nil
}

// lastTxnAt is the transactionId of the record at offset of the source partition (POST
// /api/v1/fetch, one record), "" when there is none.
func (r *runner) lastTxnAt(partition string, offset int64) (string, error) {
	body := map[string]any{"entries": []any{map[string]any{"queue": r.source, "partition": partition, "offset": offset, "maxBytes": 1}}, "maxBytes": 1}
	var out struct {
		Entries []struct {
			Error   string `json:"error"`
			Records []struct {
				Offset        *int64 `json:"offset"`
				TransactionID string `json:"transactionId"`
			} `json:"records"`
		} `json:"entries"`
	}
	if err := r.c.Do(r.ctx, "POST", "/api/v1/fetch", body, &out); err != nil {
		return "", fmt.Errorf("streams: fetch: %w", err)
	}
	if len(out.Entries) != 1 || out.Entries[0].Error != "" || len(out.Entries[0].Records) == 0 {
		return "", nil
	}
	rec := out.Entries[0].Records[0]
	if rec.Offset != nil && *rec.Offset != offset {
		return "", nil
	}
	return rec.TransactionID, nil
}

func (r *runner) flushPartition(pid string, t touched, safeUs, lastWrite, lastOffset int64) error {
	w, red := r.st.window, r.st.reducer
	if w == nil || red == nil {
		return nil
	}
	rows, err := r.stateGet(pid)
	if err != nil {
		return err
	}
	wmRow, _ := rows[watermarkKey].(map[string]any)
	lastSeen, hasSeen := t.lastStampUs, t.hasStamp
	if !hasSeen {
		lastSeen, hasSeen = int64Of(wmRow["lastStampUs"])
	}
	if !hasSeen {
		if at, ok := wmRow["sourceAt"].(string); ok {
			lastSeen, hasSeen = parseISOUs(at)
		}
	}
	if !hasSeen {
		return nil
	}
	if lastWrite == lastSeen && lastOffset >= 0 {
		// the records of one push share their stamp, and a batch may have ended inside such
		// a push: drained only if the partition's last record is the last one acked
		txn := t.lastTxn
		if txn == "" {
			txn, _ = wmRow["sourceTxn"].(string)
		}
		if txn == "" {
			return nil
		}
		at, err := r.lastTxnAt(t.name, lastOffset)
		if err != nil {
			return err
		}
		if at != txn {
			return nil
		}
	}
	wm, hasWm := int64Of(wmRow["eventTimeMs"])
	clock, ok := flushClock(w.hasEventTime(), wm, hasWm, safeUs, lastWrite, lastSeen)
	if !ok {
		return nil
	}
	var ops []stateOp
	var emits []emit
	if w.isSession() {
		ops, emits = runSession(w, red, nil, rows, clock)
	} else {
		ops, emits = reduceWindows(w, red, nil, rows, clock)
	}
	if len(emits) == 0 {
		return nil
	}
	if w.hasEventTime() {
		wm := map[string]any{}
		for k, v := range wmRow {
			wm[k] = v
		}
		wm["eventTimeMs"], wm["lastStampUs"] = clock, lastSeen
		ops = append(ops, stateOp{Type: "upsert", Key: watermarkKey, Value: wm})
	}
	items := r.deliver(emits, pid, t.name)
	if err := r.commit(pid, ops, items, nil, true); err != nil {
		return err
	}
	r.mu.Lock()
	r.stats.FlushCycles++
	r.mu.Unlock()
	return nil
}
