//! The runner: pop → group by partition → operators → one cycle commit per partition group;
//! and the idle-flush timer.
//!
//! # A cycle
//! Pop a batch under a lease (group `streams.<queryId>`), read the partition's state rows
//! (`POST /streams/v1/state/get`), run the chain, commit `POST /streams/v1/cycle` carrying the
//! state upserts/deletes, the sink pushes and the ack of the batch (`transactionId` of the last
//! message, `count` = messages in the batch) in one transaction. A gate acks the allowed prefix
//! with `release_lease: false`; a first-message deny commits nothing.
//!
//! # Stream time
//! Processing time (no extractor): the newest `createdAt` of the batch. Event time: the
//! partition's watermark, `max(previous, newest event time − allowed_lateness)`, persisted in the
//! `__wm__` row (`{eventTimeMs, lastStampUs}`) with every cycle. An event below the watermark is
//! late: dropped (counted) or, with `OnLate::Include`, folded as any other.
//!
//! # The idle-flush rule (broker clock, not the client's)
//! Every `idle_flush_ms` the runner asks `POST /api/v1/partitions/changed` for the source queue
//! and reads `safeTime` S (no record will be stamped at or below it after the answer) and each
//! partition's `lastWriteAt` L. A partition this runner touched in the last five minutes is
//! *drained* when L ≤ the `createdAt` of the last message its committed cycles acked (kept in
//! memory and in `__wm__.lastStampUs`, so a restarted runner knows it too): every record of the
//! partition has been folded. Only a drained partition is flushed — one with a backlog is the
//! pop loop's, whose own cycles close its windows. Its flush clock is
//! - processing time: S (a record stamped later cannot fall in a window that ends at or before S);
//! - event time: `watermark + (S − L)`: the watermark moves on by the time the broker certifies
//!   the partition has been quiet. A partition that stays quiet therefore closes its last
//!   window once `windowEnd + grace ≤ watermark + quiet time` (the earlier SDK used the stored
//!   watermark alone, which never moves without a message, so the last window never closed).
//!
//! Windows with `windowEnd + grace ≤ clock` are emitted and deleted in a cycle with `ack: null`;
//! for event time the watermark is advanced to the clock in the same commit, so an event that
//! would fall in a flushed window afterwards is late rather than a second result.
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::sync::Notify;

use super::window::{self, Emit, Env, WATERMARK_KEY};
use super::{EmitCtx, GateCtx, Op, Stages, Stream};
use crate::client::{Message, Queen, QueueRef};
use crate::error::{Error, Result};
use crate::util::{now_ms, parse_iso_us};

const RECENT_MS: i64 = 5 * 60 * 1000;

/// `RunOptions::new(query_id)` and its knobs.
#[derive(Clone)]
pub struct RunOptions {
    pub query_id: String,
    pub batch_size: u32,
    pub max_partitions: u32,
    pub max_wait: Duration,
    pub reset: bool,
    pub consumer_group: Option<String>,
    pub subscription_mode: Option<String>,
    pub subscription_from: Option<String>,
    on_error: Option<Arc<dyn Fn(&Error) + Send + Sync>>,
}

impl RunOptions {
    pub fn new(query_id: impl AsRef<str>) -> RunOptions {
        RunOptions {
            query_id: query_id.as_ref().to_string(),
            batch_size: 200,
            max_partitions: 4,
            max_wait: Duration::from_millis(1000),
            reset: false,
            consumer_group: None,
            subscription_mode: None,
            subscription_from: None,
            on_error: None,
        }
    }
    /// Wipe this query's state and start over (also the answer to a 409 config_hash mismatch).
    pub fn reset(mut self, r: bool) -> Self {
        self.reset = r;
        self
    }
    pub fn batch_size(mut self, n: u32) -> Self {
        self.batch_size = n.max(1);
        self
    }
    /// Partitions one pop may claim (default 4).
    pub fn max_partitions(mut self, n: u32) -> Self {
        self.max_partitions = n.max(1);
        self
    }
    /// The long-poll limit of a source pop (default 1 s).
    pub fn max_wait(mut self, d: Duration) -> Self {
        self.max_wait = d;
        self
    }
    /// Default `streams.<queryId>`.
    pub fn consumer_group(mut self, g: &str) -> Self {
        self.consumer_group = Some(g.to_string());
        self
    }
    pub fn subscription_mode(mut self, m: &str) -> Self {
        self.subscription_mode = Some(m.to_string());
        self
    }
    pub fn subscription_from(mut self, f: &str) -> Self {
        self.subscription_from = Some(f.to_string());
        self
    }
    pub fn on_error<F: Fn(&Error) + Send + Sync + 'static>(mut self, f: F) -> Self {
        self.on_error = Some(Arc::new(f));
        self
    }
}

/// Counters of a running query.
#[derive(Clone, Debug, Default)]
pub struct StreamStats {
    pub cycles: u64,
    pub flush_cycles: u64,
    pub messages: u64,
    pub push_items: u64,
    pub state_ops: u64,
    pub late_events: u64,
    pub gate_allowed: u64,
    pub gate_denied: u64,
    pub errors: u64,
    pub last_error: Option<String>,
}

/// A running query. `stop()` finishes the cycle in hand and returns the counters.
pub struct StreamHandle {
    rt: Arc<Rt>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    pub query_id: String,
    pub server_query_id: String,
    pub config_hash: String,
}

impl StreamHandle {
    pub fn stats(&self) -> StreamStats {
        self.rt.stats.lock().unwrap().clone()
    }
    /// Kill the runner where it is (a crash): in-flight requests are dropped, nothing is
    /// finished. What it had leased comes back when the lease expires.
    pub fn abort(self) {
        self.rt.stopped.store(true, Ordering::SeqCst);
        for t in &self.tasks {
            t.abort();
        }
    }
    pub async fn stop(self) -> Result<StreamStats> {
        self.rt.stopped.store(true, Ordering::SeqCst);
        self.rt.wake.notify_waiters();
        let rt = self.rt.clone();
        for t in self.tasks {
            let _ = t.await;
        }
        let s = rt.stats.lock().unwrap().clone();
        Ok(s)
    }
}

#[derive(Clone, Debug)]
struct Touched {
    name: String,
    at: i64,
    last_stamp_us: Option<i64>,
}

struct Rt {
    queen: Queen,
    stages: Stages,
    source: QueueRef,
    qid: Value,
    group: String,
    stopped: AtomicBool,
    wake: Notify,
    stats: Mutex<StreamStats>,
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    touched: Mutex<HashMap<String, Touched>>,
    /// partition -> the row versions its last state read saw (every row: a key it did not
    /// return was absent). The commit sends each op's version, so the broker applies it only
    /// to the row as it was read (docs/streams.md, "Row versions"); reads and commits of one
    /// partition are serialised by its lock.
    reads: Mutex<HashMap<String, HashMap<String, i64>>>,
    on_error: Option<Arc<dyn Fn(&Error) + Send + Sync>>,
}

pub(crate) async fn start(stream: Stream, queen: Queen, opts: RunOptions) -> Result<StreamHandle> {
    let stages = stream.stages()?;
    if opts.query_id.is_empty() {
        return Err(Error::Invalid("RunOptions needs a query id".into()));
    }
    let hash = stream.config_hash();
    let sink_queue = match &stages.sink {
        Some(Op::Sink { queue, .. }) => Some(queue.clone()),
        _ => None,
    };
    let mut body = json!({"name": opts.query_id, "source_queue": stream.source.name, "config_hash": hash, "reset": opts.reset});
    if let Some(s) = &sink_queue {
        body["sink_queue"] = json!(s);
    }
    let reg = match queen.http.post("/streams/v1/queries", &body).await {
        Ok(v) => v.unwrap_or(Value::Null),
        Err(e) if e.status() == Some(409) => {
            let msg = match &e {
                Error::Http { message, .. } => message.clone(),
                _ => e.to_string(),
            };
            return Err(Error::ConfigMismatch(msg));
        }
        Err(e) => return Err(e),
    };
    if reg.get("success").and_then(Value::as_bool) == Some(false) {
        return Err(Error::Protocol(format!("register: {}", reg.get("error").cloned().unwrap_or(Value::Null))));
    }
    let qid = reg.get("query_id").cloned().filter(|v| !v.is_null()).ok_or_else(|| Error::Protocol(format!("register: no query_id in {reg}")))?;
    let group = opts.consumer_group.clone().unwrap_or_else(|| format!("streams.{}", opts.query_id));
    let mut source = stream.source.clone().group(&group).batch(opts.batch_size).partitions(opts.max_partitions).wait(true).timeout(opts.max_wait);
    source.partition = None;
    if let Some(m) = &opts.subscription_mode {
        source = source.subscription_mode(m);
    }
    if let Some(f) = &opts.subscription_from {
        source = source.subscription_from(f);
    }
    let rt = Arc::new(Rt {
        queen,
        stages,
        source,
        qid: qid.clone(),
        group,
        stopped: AtomicBool::new(false),
        wake: Notify::new(),
        stats: Mutex::new(StreamStats::default()),
        locks: Mutex::new(HashMap::new()),
        touched: Mutex::new(HashMap::new()),
        reads: Mutex::new(HashMap::new()),
        on_error: opts.on_error.clone(),
    });
    let mut tasks = vec![];
    let idle = rt.stages.window.as_ref().map(|w| w.idle_flush_ms).unwrap_or(0);
    if idle > 0 {
        // the partitions an earlier run committed cycles on in the last five minutes may hold
        // open windows: the flush sweeps them too (their acked stamp is in `__wm__`)
        let seen = rt.queen.http.post("/streams/v1/state/get", &json!({"query_id": rt.qid, "touched_within_ms": RECENT_MS})).await;
        if let Ok(Some(v)) = seen {
            let mut t = rt.touched.lock().unwrap();
            for p in v.get("partitions").and_then(Value::as_array).into_iter().flatten() {
                if let (Some(id), Some(name)) = (p.get("partition_id").and_then(Value::as_str), p.get("partition").and_then(Value::as_str)) {
                    t.entry(id.to_string()).or_insert(Touched { name: name.to_string(), at: now_ms(), last_stamp_us: None });
                }
            }
        }
        let r = rt.clone();
        tasks.push(tokio::spawn(async move { r.flush_loop(Duration::from_millis(idle)).await }));
    }
    let r = rt.clone();
    tasks.push(tokio::spawn(async move { r.pop_loop().await }));
    Ok(StreamHandle { rt, tasks, query_id: opts.query_id, server_query_id: qid.as_str().map(str::to_string).unwrap_or_else(|| qid.to_string()), config_hash: hash })
}

fn apply_ops(ops: &[Op], envs: Vec<(Env, Option<usize>)>) -> Vec<(Env, Option<usize>)> {
    let mut cur = envs;
    for op in ops {
        let mut next = Vec::with_capacity(cur.len());
        for (mut e, src) in cur {
            match op {
                Op::Map(f) => {
                    e.value = f(e.value);
                    next.push((e, src));
                }
                Op::Filter(f) => {
                    if f(&e.value) {
                        next.push((e, src));
                    }
                }
                Op::FlatMap(f) => {
                    for v in f(e.value.clone()) {
                        next.push((Env { key: e.key.clone(), value: v, ts: e.ts }, src));
                    }
                }
                Op::KeyBy(f) => {
                    e.key = f(&e.value);
                    next.push((e, src));
                }
                _ => next.push((e, src)),
            }
        }
        cur = next;
    }
    cur
}

impl Rt {
    fn report(&self, e: &Error) {
        let mut s = self.stats.lock().unwrap();
        s.errors += 1;
        s.last_error = Some(e.to_string());
        drop(s);
        if let Some(f) = &self.on_error {
            f(e);
        }
    }

    fn lock_of(&self, pid: &str) -> Arc<tokio::sync::Mutex<()>> {
        self.locks.lock().unwrap().entry(pid.to_string()).or_default().clone()
    }

    async fn pop_loop(self: Arc<Self>) {
        while !self.stopped.load(Ordering::SeqCst) {
            let msgs = match self.source.pop().await {
                Ok(m) => m,
                Err(e) => {
                    self.report(&e);
                    self.pause(Duration::from_millis(500)).await;
                    continue;
                }
            };
            if msgs.is_empty() {
                self.pause(Duration::from_millis(50)).await;
                continue;
            }
            // slow operators must not lose the lease mid-batch (the earlier SDK never renewed):
            // renew every 5 s until the batch's cycles are committed
            let mut leases: Vec<String> = msgs.iter().filter_map(|m| m.lease_id.clone()).collect();
            leases.dedup();
            let renewer = {
                let q = self.queen.clone();
                tokio::spawn(async move {
                    loop {
                        tokio::time::sleep(Duration::from_secs(5)).await;
                        for l in &leases {
                            let _ = q.renew(l).await;
                        }
                    }
                })
            };
            let mut groups: Vec<(String, Vec<Message>)> = vec![];
            for m in msgs {
                match groups.iter_mut().find(|(p, _)| *p == m.partition_id) {
                    Some((_, g)) => g.push(m),
                    None => groups.push((m.partition_id.clone(), vec![m])),
                }
            }
            // the partitions of one pop are independent shards: their cycles run concurrently
            // (each under its partition's lock, so a flush never interleaves with one)
            let mut cycles = tokio::task::JoinSet::new();
            for (pid, mut g) in groups {
                g.sort_by(|a, b| (a.created_at_us().unwrap_or(0), &a.id).cmp(&(b.created_at_us().unwrap_or(0), &b.id)));
                {
                    let mut t = self.touched.lock().unwrap();
                    let now = now_ms();
                    let e = t.entry(pid.clone()).or_insert(Touched { name: g[0].partition.clone(), at: now, last_stamp_us: None });
                    e.at = now;
                    t.retain(|_, v| v.at >= now - RECENT_MS);
                }
                let me = self.clone();
                cycles.spawn(async move {
                    let lock = me.lock_of(&pid);
                    let _guard = lock.lock().await;
                    me.reads.lock().unwrap().remove(&pid);
                    let n = g.len() as u64;
                    match me.cycle(&pid, &g).await {
                        Ok(()) => {
                            let mut s = me.stats.lock().unwrap();
                            s.cycles += 1;
                            s.messages += n;
                        }
                        Err(e) => me.report(&e),
                    }
                });
            }
            while let Some(r) = cycles.join_next().await {
                // an operator that panics commits nothing: the batch comes back with the lease
                if let Err(e) = r {
                    if e.is_panic() {
                        self.report(&Error::Invalid(format!("an operator panicked; the batch was not committed and comes back with the lease: {e}")));
                    }
                }
            }
            renewer.abort();
        }
    }

    async fn pause(&self, d: Duration) {
        tokio::select! {
            _ = tokio::time::sleep(d) => {}
            _ = self.wake.notified() => {}
        }
    }

    async fn state_get(&self, pid: &str) -> Result<Map<String, Value>> {
        let v = self
            .queen
            .http
            .post("/streams/v1/state/get", &json!({"query_id": self.qid, "partition_id": pid, "keys": [], "versions": true}))
            .await?
            .unwrap_or(Value::Null);
        if v.get("success").and_then(Value::as_bool) == Some(false) {
            return Err(Error::Protocol(format!("state/get: {}", v.get("error").cloned().unwrap_or(Value::Null))));
        }
        let mut out = Map::new();
        let mut versions = HashMap::new();
        for r in v.get("rows").and_then(Value::as_array).into_iter().flatten() {
            if let Some(k) = r.get("key").and_then(Value::as_str) {
                out.insert(k.to_string(), r.get("value").cloned().unwrap_or(Value::Null));
                if let Some(ver) = r.get("version").and_then(Value::as_i64) {
                    versions.insert(k.to_string(), ver);
                }
            }
        }
        self.reads.lock().unwrap().insert(pid.to_string(), versions);
        Ok(out)
    }

    async fn commit(&self, pid: &str, mut state_ops: Vec<Value>, push_items: Vec<Value>, ack: Value, release_lease: bool) -> Result<()> {
        let (nso, npi) = (state_ops.len() as u64, push_items.len() as u64);
        // the version of the row as read, on the first op of each key (a later op of the same
        // key applies to this cycle's own write)
        if let Some(read) = self.reads.lock().unwrap().remove(pid) {
            let mut seen = std::collections::HashSet::new();
            for op in state_ops.iter_mut() {
                let Some(k) = op.get("key").and_then(Value::as_str).map(str::to_string) else { continue };
                if seen.insert(k.clone()) {
                    op["version"] = json!(read.get(&k).copied().unwrap_or(0));
                }
            }
        }
        let body = json!({"query_id": self.qid, "partition_id": pid, "consumer_group": self.group, "state_ops": state_ops,
            "push_items": push_items, "ack": ack, "release_lease": release_lease});
        let v = self.queen.http.post("/streams/v1/cycle", &body).await?.unwrap_or(Value::Null);
        if v.get("success").and_then(Value::as_bool) != Some(true) {
            return Err(Error::Protocol(format!("cycle: {}", v.get("error").cloned().unwrap_or(v.clone()))));
        }
        let mut s = self.stats.lock().unwrap();
        s.state_ops += nso;
        s.push_items += npi;
        Ok(())
    }

    /// Post stages, then the sink's push items (or the foreach effects).
    fn deliver(&self, emits: Vec<Emit>, pid: &str, pname: &str) -> Vec<Value> {
        let envs: Vec<(Env, Option<usize>)> = emits.iter().enumerate().map(|(i, e)| (Env { key: e.key.clone(), value: e.value.clone(), ts: 0 }, Some(i))).collect();
        let out = apply_ops(&self.stages.post, envs);
        let mut items = vec![];
        for (e, src) in out {
            let em = src.and_then(|i| emits.get(i));
            match &self.stages.sink {
                Some(Op::Sink { queue, partition }) => {
                    let part = match partition {
                        Some(f) => f(&e.value),
                        None => pname.to_string(),
                    };
                    let payload = if e.value.is_object() { e.value } else { json!({"value": e.value}) };
                    items.push(json!({"queue": queue, "partition": part, "payload": payload}));
                }
                Some(Op::Foreach(f)) => {
                    let ctx = EmitCtx {
                        partition: pname.to_string(),
                        partition_id: pid.to_string(),
                        key: e.key.clone(),
                        window_key: em.map(|x| x.window_key.clone()).filter(|k| !k.is_empty()),
                        window_start: em.map(|x| x.window_start).filter(|_| self.stages.window.is_some()),
                        window_end: em.map(|x| x.window_end).filter(|_| self.stages.window.is_some()),
                    };
                    f(e.value, &ctx);
                }
                _ => {}
            }
        }
        items
    }

    async fn cycle(&self, pid: &str, msgs: &[Message]) -> Result<()> {
        let pname = msgs[0].partition.clone();
        let last = msgs.last().unwrap();
        let last_stamp = last.created_at_us();
        let envs: Vec<(Env, Option<usize>)> = msgs
            .iter()
            .enumerate()
            .map(|(i, m)| (Env { key: m.partition_id.clone(), value: m.data.clone(), ts: m.created_at_ms().unwrap_or(0) }, Some(i)))
            .collect();
        let envs = apply_ops(&self.stages.pre, envs);
        if let Some(gate) = self.stages.gate.clone() {
            return self.gate_cycle(pid, &pname, msgs, envs, gate).await;
        }
        let mut state_ops = vec![];
        let emits: Vec<Emit> = match (&self.stages.window, &self.stages.reducer) {
            (Some(w), reducer) => {
                let loaded = if reducer.is_some() || w.has_event_time() { self.state_get(pid).await? } else { Map::new() };
                let wm_prev = loaded.get(WATERMARK_KEY).and_then(|v| v.get("eventTimeMs")).and_then(Value::as_i64);
                let mut placed = vec![];
                let mut late = 0u64;
                let mut max_ts: Option<i64> = None;
                for (mut e, src) in envs {
                    let created = src.and_then(|i| msgs[i].created_at_ms());
                    let Some(ts) = window::event_ts(w, &e.value, created) else {
                        self.report(&Error::Invalid(format!("the window could not place a message of partition {pname}: no time")));
                        continue;
                    };
                    e.ts = ts;
                    if w.has_event_time() {
                        max_ts = Some(max_ts.map_or(ts, |m| m.max(ts)));
                        if let Some(wm) = wm_prev {
                            if ts < wm && w.on_late == super::OnLate::Drop {
                                late += 1;
                                continue;
                            }
                        }
                    }
                    placed.push(e);
                }
                if late > 0 {
                    self.stats.lock().unwrap().late_events += late;
                }
                let clock = if w.has_event_time() {
                    let cand = max_ts.map(|m| m - w.lateness_ms());
                    match (wm_prev, cand) {
                        (Some(a), Some(b)) => a.max(b),
                        (a, b) => a.or(b).unwrap_or(i64::MIN),
                    }
                } else {
                    msgs.iter().filter_map(Message::created_at_ms).max().unwrap_or(i64::MIN)
                };
                let emits = match reducer {
                    None => placed.into_iter().map(|e| Emit { key: e.key, window_start: 0, window_end: 0, window_key: String::new(), value: e.value }).collect(),
                    Some(r) => {
                        let (ops, emits) = if w.is_session() { window::run_session(w, r, &placed, &loaded, clock) } else { window::reduce_windows(w, r, &placed, &loaded, clock) };
                        state_ops = ops;
                        emits
                    }
                };
                if reducer.is_some() {
                    let mut wm = json!({});
                    if w.has_event_time() && clock > i64::MIN {
                        wm["eventTimeMs"] = json!(clock);
                    }
                    if let Some(s) = last_stamp {
                        wm["lastStampUs"] = json!(s);
                    }
                    state_ops.push(json!({"type": "upsert", "key": WATERMARK_KEY, "value": wm}));
                }
                emits
            }
            (None, _) => envs.into_iter().map(|(e, _)| Emit { key: e.key, window_start: 0, window_end: 0, window_key: String::new(), value: e.value }).collect(),
        };
        let items = self.deliver(emits, pid, &pname);
        let ack = json!({"transactionId": last.transaction_id, "leaseId": last.lease_id, "status": "completed", "count": msgs.len()});
        self.commit(pid, state_ops, items, ack, true).await?;
        if let Some(t) = self.touched.lock().unwrap().get_mut(pid) {
            t.last_stamp_us = last_stamp.or(t.last_stamp_us);
        }
        Ok(())
    }

    async fn gate_cycle(&self, pid: &str, pname: &str, msgs: &[Message], envs: Vec<(Env, Option<usize>)>, gate: super::GateFn) -> Result<()> {
        let loaded = self.state_get(pid).await?;
        let mut live: HashMap<String, Map<String, Value>> = HashMap::new();
        let mut touched: Vec<String> = vec![];
        let now = now_ms();
        let mut allowed: Vec<Emit> = vec![];
        // Decisions are taken per value, acks per source message: a message is acked only when
        // every value it became (flat_map) was allowed. A deny rolls back to the start of its
        // source message (state, emits), so no value of it is emitted now and none is lost: the
        // whole message comes back with the lease. Messages filtered out before the last fully
        // allowed one are acked with it; a batch filtered out whole is acked whole.
        let mut denied = false;
        let total = envs.len();
        let mut current_src: Option<usize> = None;
        let mut last_complete_src: Option<usize> = None;
        let mut checkpoint = (live.clone(), touched.clone(), 0usize);
        for (e, src) in envs {
            if src != current_src {
                if current_src.is_some() {
                    last_complete_src = current_src;
                }
                checkpoint = (live.clone(), touched.clone(), allowed.len());
                current_src = src;
            }
            let state = live.entry(e.key.clone()).or_insert_with(|| loaded.get(&e.key).and_then(Value::as_object).cloned().unwrap_or_default());
            let mut ctx = GateCtx { state: state.clone(), stream_time_ms: now, partition_id: pid.to_string(), partition: pname.to_string(), key: e.key.clone() };
            if gate(&e.value, &mut ctx) {
                *state = ctx.state;
                if !touched.contains(&e.key) {
                    touched.push(e.key.clone());
                }
                allowed.push(Emit { key: e.key, window_start: 0, window_end: 0, window_key: String::new(), value: e.value });
            } else {
                denied = true;
                let (l, t, n) = checkpoint;
                live = l;
                touched = t;
                allowed.truncate(n);
                break;
            }
        }
        if !denied && current_src.is_some() {
            last_complete_src = current_src;
        }
        {
            let mut s = self.stats.lock().unwrap();
            s.gate_allowed += allowed.len() as u64;
            s.gate_denied += (total - allowed.len()) as u64;
        }
        let ack_upto = if denied {
            match last_complete_src {
                Some(i) => i,
                None => return Ok(()), // a first-message deny: no cycle at all, the lease times out
            }
        } else {
            msgs.len() - 1
        };
        let state_ops: Vec<Value> = touched.iter().map(|k| json!({"type": "upsert", "key": k, "value": Value::Object(live[k].clone())})).collect();
        let items = self.deliver(allowed, pid, pname);
        let m = &msgs[ack_upto];
        let ack = json!({"transactionId": m.transaction_id, "leaseId": m.lease_id, "status": "completed", "count": ack_upto + 1});
        self.commit(pid, state_ops, items, ack, !denied).await
    }

    async fn flush_loop(self: Arc<Self>, every: Duration) {
        while !self.stopped.load(Ordering::SeqCst) {
            self.pause(every).await;
            if self.stopped.load(Ordering::SeqCst) {
                break;
            }
            if let Err(e) = self.flush_all().await {
                self.report(&e);
            }
        }
    }

    async fn flush_all(&self) -> Result<()> {
        let touched: Vec<(String, Touched)> = {
            let mut t = self.touched.lock().unwrap();
            let now = now_ms();
            t.retain(|_, v| v.at >= now - RECENT_MS);
            t.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        if touched.is_empty() {
            return Ok(());
        }
        // every touched partition's last write is at or after its own last acked stamp, so
        // `since` = the smallest of them lists them all; a partition seeded at start (no stamp
        // in memory yet) needs the whole list
        let since = if touched.iter().all(|(_, t)| t.last_stamp_us.is_some()) { touched.iter().filter_map(|(_, t)| t.last_stamp_us).min() } else { None };
        let changed = self.queen.changed_since(&self.source.name, since).await?;
        let Some(safe_us) = changed.safe_time.as_deref().and_then(parse_iso_us) else { return Ok(()) };
        for (pid, t) in touched {
            if self.stopped.load(Ordering::SeqCst) {
                break;
            }
            let last_write = changed.partitions.iter().find(|p| p.id == pid).and_then(|p| p.last_write_at.as_deref()).and_then(parse_iso_us);
            let lock = self.lock_of(&pid);
            let _g = lock.lock().await;
            self.reads.lock().unwrap().remove(&pid);
            // the in-memory stamp may have moved while waiting for the lock
            let t_now = self.touched.lock().unwrap().get(&pid).cloned().unwrap_or(t);
            // not listed under a `since`: no write at or after it, and `since` ≤ this
            // partition's last acked stamp, so it is drained; not listed without one: gone
            let last_write = match (last_write, since, t_now.last_stamp_us) {
                (Some(l), _, _) => Some(l),
                (None, Some(_), Some(seen)) => Some(seen),
                _ => None,
            };
            let Some(last_write) = last_write else { continue };
            if let Err(e) = self.flush_partition(&pid, &t_now, safe_us, last_write).await {
                self.report(&e);
            }
        }
        Ok(())
    }

    async fn flush_partition(&self, pid: &str, t: &Touched, safe_us: i64, last_write: i64) -> Result<()> {
        let (Some(w), Some(r)) = (&self.stages.window, &self.stages.reducer) else { return Ok(()) };
        let rows = self.state_get(pid).await?;
        let wm_row = rows.get(WATERMARK_KEY).cloned().unwrap_or(Value::Null);
        let last_seen = t.last_stamp_us.or_else(|| wm_row.get("lastStampUs").and_then(Value::as_i64));
        let Some(last_seen) = last_seen else { return Ok(()) };
        if let Some(c) = flush_clock(w.has_event_time(), wm_row.get("eventTimeMs").and_then(Value::as_i64), safe_us, last_write, last_seen) {
            let (mut ops, emits) = if w.is_session() { window::run_session(w, r, &[], &rows, c) } else { window::ripe_rows(w, r, &rows, c) };
            if emits.is_empty() {
                return Ok(());
            }
            if w.has_event_time() {
                ops.push(json!({"type": "upsert", "key": WATERMARK_KEY, "value": {"eventTimeMs": c, "lastStampUs": last_seen}}));
            }
            let items = self.deliver(emits, pid, &t.name);
            self.commit(pid, ops, items, Value::Null, true).await?;
            self.stats.lock().unwrap().flush_cycles += 1;
        }
        Ok(())
    }
}

/// The idle flush's clock for one partition (ms), or None when it must not flush: see the
/// module doc. `safe_us` = safeTime, `last_write_us` = the partition's lastWriteAt,
/// `last_seen_us` = createdAt of the last message the runner's cycles acked on it.
pub fn flush_clock(event_time: bool, watermark_ms: Option<i64>, safe_us: i64, last_write_us: i64, last_seen_us: i64) -> Option<i64> {
    if last_write_us > last_seen_us {
        return None; // a backlog: the pop loop's cycles close its windows
    }
    if !event_time {
        return Some(safe_us.div_euclid(1000));
    }
    let quiet_ms = (safe_us - last_write_us).max(0) / 1000;
    watermark_ms.map(|wm| wm + quiet_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_rule() {
        // processing time: the broker's safeTime, once drained
        assert_eq!(flush_clock(false, None, 10_500_000, 9_000_000, 9_000_000), Some(10_500));
        assert_eq!(flush_clock(false, None, 10_500_000, 9_500_000, 9_000_000), None);
        // event time: the watermark plus the certified quiet time
        assert_eq!(flush_clock(true, Some(3_500), 10_500_000, 9_000_000, 9_000_000), Some(5_000));
        assert_eq!(flush_clock(true, None, 10_500_000, 9_000_000, 9_000_000), None);
        // a safeTime below the last write (clock skew between nodes) never moves it back
        assert_eq!(flush_clock(true, Some(3_500), 8_000_000, 9_000_000, 9_000_000), Some(3_500));
    }
}
