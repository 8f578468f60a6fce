//! Streams: an operator chain that runs in this process, its state in the broker's PostgreSQL.
//!
//! `Stream::from(queue)` → `map` / `filter` / `flat_map` / `key_by` → one window
//! (`window_tumbling`, `window_sliding`, `window_session`, `window_cron`) with its event-time and
//! idle-flush knobs → a reducer (`aggregate_*`, `reduce`) → `to(queue)` or `foreach`; or, instead
//! of window + reducer, one `gate`. `run(&queen, RunOptions)` registers the query and starts the
//! runner (see [`runner`] for the cycle and the idle-flush rule).
//!
//! The chain rules are checked as the chain is built; the first broken one is returned by
//! [`Stream::build`] and [`Stream::run`] as [`Error::Chain`].
use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::client::{Queen, QueueRef};
use crate::error::{Error, Result};

pub mod runner;
pub mod window;

pub use runner::{RunOptions, StreamHandle, StreamStats};

/// A read-only view of a message value (or of a value flowing down the chain).
#[derive(Clone, Copy, Debug)]
pub struct Record<'a>(pub &'a Value);

impl<'a> Record<'a> {
    /// The field as a number (a numeric string counts); 0 when absent or not a number.
    pub fn number(&self, field: &str) -> f64 {
        self.opt_number(field).unwrap_or(0.0)
    }
    pub fn opt_number(&self, field: &str) -> Option<f64> {
        match self.0.get(field)? {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }
    pub fn str(&self, field: &str) -> Option<&'a str> {
        self.0.get(field).and_then(Value::as_str)
    }
    pub fn get(&self, field: &str) -> Option<&'a Value> {
        self.0.get(field)
    }
    pub fn value(&self) -> &'a Value {
        self.0
    }
}

/// What an event-time extractor returns: epoch milliseconds, an ISO-8601 string, a
/// `SystemTime`, or nothing (the message then cannot be placed: it is reported and skipped).
#[derive(Clone, Debug, PartialEq)]
pub enum EventTime {
    Ms(i64),
    Iso(String),
    Time(SystemTime),
    None,
}

impl EventTime {
    pub fn to_ms(&self) -> Option<i64> {
        match self {
            EventTime::Ms(m) => Some(*m),
            EventTime::Iso(s) => crate::util::parse_iso_ms(s),
            EventTime::Time(t) => Some(match t.duration_since(SystemTime::UNIX_EPOCH) {
                Ok(d) => d.as_millis() as i64,
                Err(e) => -(e.duration().as_millis() as i64),
            }),
            EventTime::None => None,
        }
    }
}

impl From<i64> for EventTime {
    fn from(v: i64) -> Self {
        EventTime::Ms(v)
    }
}
impl From<u64> for EventTime {
    fn from(v: u64) -> Self {
        EventTime::Ms(v as i64)
    }
}
impl From<f64> for EventTime {
    fn from(v: f64) -> Self {
        if v.is_finite() { EventTime::Ms(v as i64) } else { EventTime::None }
    }
}
impl From<&str> for EventTime {
    fn from(v: &str) -> Self {
        EventTime::Iso(v.to_string())
    }
}
impl From<String> for EventTime {
    fn from(v: String) -> Self {
        EventTime::Iso(v)
    }
}
impl From<SystemTime> for EventTime {
    fn from(v: SystemTime) -> Self {
        EventTime::Time(v)
    }
}
impl<T: Into<EventTime>> From<Option<T>> for EventTime {
    fn from(v: Option<T>) -> Self {
        v.map(Into::into).unwrap_or(EventTime::None)
    }
}

/// What happens to an event older than the partition's watermark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnLate {
    Drop,
    Include,
}

impl OnLate {
    fn as_str(&self) -> &'static str {
        match self {
            OnLate::Drop => "drop",
            OnLate::Include => "include",
        }
    }
}

/// The context of a gate decision. `state` is this key's state row, mutable: kept when the
/// message is allowed, discarded when it is denied. `stream_time_ms` is the cycle's clock.
#[derive(Debug)]
pub struct GateCtx {
    pub state: Map<String, Value>,
    pub stream_time_ms: i64,
    pub partition_id: String,
    pub partition: String,
    pub key: String,
}

/// Where an emitted value came from (for `foreach` and sink partition resolvers).
#[derive(Clone, Debug)]
pub struct EmitCtx {
    pub partition: String,
    pub partition_id: String,
    pub key: String,
    pub window_key: Option<String>,
    pub window_start: Option<i64>,
    pub window_end: Option<i64>,
}

pub(crate) type MapFn = Arc<dyn Fn(Value) -> Value + Send + Sync>;
pub(crate) type FilterFn = Arc<dyn Fn(&Value) -> bool + Send + Sync>;
pub(crate) type FlatMapFn = Arc<dyn Fn(Value) -> Vec<Value> + Send + Sync>;
pub(crate) type KeyFn = Arc<dyn Fn(&Value) -> String + Send + Sync>;
pub(crate) type EventFn = Arc<dyn Fn(&Record) -> EventTime + Send + Sync>;
pub(crate) type ReduceFn = Arc<dyn Fn(Value, &Value) -> Value + Send + Sync>;
pub(crate) type ExtractFn = Arc<dyn Fn(&Record) -> f64 + Send + Sync>;
pub(crate) type GateFn = Arc<dyn Fn(&Value, &mut GateCtx) -> bool + Send + Sync>;
pub(crate) type ForeachFn = Arc<dyn Fn(Value, &EmitCtx) + Send + Sync>;
pub(crate) type PartitionFn = Arc<dyn Fn(&Value) -> String + Send + Sync>;

#[derive(Clone, Debug, PartialEq)]
pub enum WindowKind {
    Tumbling { seconds: u64 },
    Sliding { size: u64, slide: u64 },
    Session { gap: u64 },
    Cron { every: String },
}

#[derive(Clone)]
pub struct WindowSpec {
    pub kind: WindowKind,
    pub grace_period: u64,
    pub idle_flush_ms: u64,
    pub(crate) event_time: Option<EventFn>,
    pub allowed_lateness: u64,
    pub on_late: OnLate,
}

impl WindowSpec {
    pub fn operator_tag(&self) -> String {
        match &self.kind {
            WindowKind::Tumbling { seconds } => format!("tumb:{seconds}"),
            WindowKind::Sliding { size, slide } => format!("slide:{size}:{slide}"),
            WindowKind::Session { gap } => format!("sess:{gap}"),
            WindowKind::Cron { every } => format!("cron:{every}"),
        }
    }
    pub fn grace_ms(&self) -> i64 {
        self.grace_period as i64 * 1000
    }
    pub fn lateness_ms(&self) -> i64 {
        self.allowed_lateness as i64 * 1000
    }
    pub fn is_session(&self) -> bool {
        matches!(self.kind, WindowKind::Session { .. })
    }
    pub fn has_event_time(&self) -> bool {
        self.event_time.is_some()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggKind {
    Count,
    Sum,
    Min,
    Max,
    Avg,
}

#[derive(Clone)]
pub(crate) struct AggField {
    pub name: String,
    pub kind: AggKind,
    pub extract: Option<ExtractFn>,
}

#[derive(Clone)]
pub(crate) enum Op {
    Map(MapFn),
    Filter(FilterFn),
    FlatMap(FlatMapFn),
    KeyBy(KeyFn),
    Window(WindowSpec),
    Reduce { f: ReduceFn, initial: Option<Value> },
    Aggregate(Vec<AggField>),
    Gate(GateFn),
    Sink { queue: String, partition: Option<PartitionFn> },
    Foreach(ForeachFn),
}

impl Op {
    /// The operator's dict of the config_hash recipe (kind first, then its config in order).
    fn hash_entry(&self) -> Value {
        let mut m = Map::new();
        match self {
            Op::Map(_) => {
                m.insert("kind".into(), json!("map"));
            }
            Op::Filter(_) => {
                m.insert("kind".into(), json!("filter"));
            }
            Op::FlatMap(_) => {
                m.insert("kind".into(), json!("flatMap"));
            }
            Op::KeyBy(_) => {
                m.insert("kind".into(), json!("keyBy"));
            }
            Op::Gate(_) => {
                m.insert("kind".into(), json!("gate"));
            }
            Op::Reduce { initial, .. } => {
                m.insert("kind".into(), json!("reduce"));
                m.insert("hasInitial".into(), json!(initial.as_ref().map(|v| !v.is_null()).unwrap_or(false)));
            }
            Op::Aggregate(fields) => {
                m.insert("kind".into(), json!("aggregate"));
                m.insert("fields".into(), json!(fields.iter().map(|f| f.name.clone()).collect::<Vec<_>>()));
            }
            Op::Window(w) => {
                match &w.kind {
                    WindowKind::Tumbling { seconds } => {
                        m.insert("kind".into(), json!("window-tumbling"));
                        m.insert("seconds".into(), json!(seconds));
                    }
                    WindowKind::Sliding { size, slide } => {
                        m.insert("kind".into(), json!("window-sliding"));
                        m.insert("size".into(), json!(size));
                        m.insert("slide".into(), json!(slide));
                    }
                    WindowKind::Session { gap } => {
                        m.insert("kind".into(), json!("window-session"));
                        m.insert("gap".into(), json!(gap));
                    }
                    WindowKind::Cron { every } => {
                        m.insert("kind".into(), json!("window-cron"));
                        m.insert("every".into(), json!(every));
                    }
                }
                m.insert("gracePeriod".into(), json!(w.grace_period));
                m.insert("idleFlushMs".into(), json!(w.idle_flush_ms));
                m.insert("eventTime".into(), json!(w.event_time.is_some()));
                m.insert("allowedLateness".into(), json!(w.allowed_lateness));
                m.insert("onLate".into(), json!(w.on_late.as_str()));
            }
            Op::Sink { queue, .. } => {
                m.insert("kind".into(), json!("sink"));
                m.insert("queue".into(), json!(queue));
            }
            Op::Foreach(_) => {
                m.insert("kind".into(), json!("foreach"));
            }
        }
        Value::Object(m)
    }
}

/// An operator chain over a source queue.
#[derive(Clone)]
pub struct Stream {
    pub(crate) source: QueueRef,
    pub(crate) ops: Vec<Op>,
    pub(crate) error: Option<String>,
}

/// The chain split into its stages (what the runner executes).
#[derive(Clone)]
pub(crate) struct Stages {
    pub pre: Vec<Op>,
    pub window: Option<WindowSpec>,
    pub reducer: Option<Op>,
    pub gate: Option<GateFn>,
    pub post: Vec<Op>,
    pub sink: Option<Op>,
}

impl Stream {
    /// The source queue. Its builder's group and batch knobs are ignored: the runner pops as
    /// consumer group `streams.<queryId>` with `RunOptions`' batch size.
    #[allow(clippy::should_implement_trait)]
    pub fn from(source: QueueRef) -> Stream {
        Stream { source, ops: vec![], error: None }
    }

    fn fail(mut self, msg: impl Into<String>) -> Stream {
        if self.error.is_none() {
            self.error = Some(msg.into());
        }
        self
    }
    fn has(&self, f: impl Fn(&Op) -> bool) -> bool {
        self.ops.iter().any(f)
    }
    fn terminal(&self) -> bool {
        self.has(|o| matches!(o, Op::Sink { .. } | Op::Foreach(_)))
    }
    fn push(mut self, op: Op) -> Stream {
        if self.terminal() {
            return self.fail("nothing may follow .to() or .foreach()");
        }
        self.ops.push(op);
        self
    }
    fn is_window(o: &Op) -> bool {
        matches!(o, Op::Window(_))
    }
    fn is_reducer(o: &Op) -> bool {
        matches!(o, Op::Reduce { .. } | Op::Aggregate(_))
    }

    pub fn map<F: Fn(Value) -> Value + Send + Sync + 'static>(self, f: F) -> Stream {
        self.push(Op::Map(Arc::new(f)))
    }
    pub fn filter<F: Fn(&Value) -> bool + Send + Sync + 'static>(self, f: F) -> Stream {
        self.push(Op::Filter(Arc::new(f)))
    }
    pub fn flat_map<F: Fn(Value) -> Vec<Value> + Send + Sync + 'static>(self, f: F) -> Stream {
        self.push(Op::FlatMap(Arc::new(f)))
    }
    /// Change the state key (default: the source partition id). Must come before the window,
    /// the reducer and the gate.
    pub fn key_by<F: Fn(&Value) -> String + Send + Sync + 'static>(self, f: F) -> Stream {
        if self.has(|o| matches!(o, Op::KeyBy(_))) {
            return self.fail("only one .key_by() per stream");
        }
        if self.has(|o| Self::is_window(o) || Self::is_reducer(o) || matches!(o, Op::Gate(_))) {
            return self.fail(".key_by() must come before the window, the reducer and .gate()");
        }
        self.push(Op::KeyBy(Arc::new(f)))
    }

    fn window(self, kind: WindowKind, idle_flush_ms: u64) -> Stream {
        if self.has(Self::is_window) {
            return self.fail("only one window operator per stream");
        }
        if self.has(|o| matches!(o, Op::Gate(_))) {
            return self.fail("a window and .gate() are mutually exclusive in one stream (chain two streams)");
        }
        if self.has(Self::is_reducer) {
            return self.fail("the window must come before .reduce()/.aggregate()");
        }
        self.push(Op::Window(WindowSpec { kind, grace_period: 0, idle_flush_ms, event_time: None, allowed_lateness: 0, on_late: OnLate::Drop }))
    }
    /// Fixed, non-overlapping buckets of `seconds` (idle flush 5000 ms by default).
    pub fn window_tumbling(self, seconds: u64) -> Stream {
        if seconds == 0 {
            return self.fail("window_tumbling requires seconds > 0");
        }
        self.window(WindowKind::Tumbling { seconds }, 5000)
    }
    /// Windows of `size` seconds starting every `slide` seconds; size a multiple of slide.
    pub fn window_sliding(self, size: u64, slide: u64) -> Stream {
        if size == 0 || slide == 0 {
            return self.fail("window_sliding requires size > 0 and slide > 0");
        }
        if size % slide != 0 {
            return self.fail(format!("window_sliding: size ({size}) must be an integer multiple of slide ({slide})"));
        }
        self.window(WindowKind::Sliding { size, slide }, 5000)
    }
    /// One window per key, extended while its events arrive within `gap` seconds (idle flush
    /// 1000 ms by default).
    pub fn window_session(self, gap: u64) -> Stream {
        if gap == 0 {
            return self.fail("window_session requires gap > 0");
        }
        self.window(WindowKind::Session { gap }, 1000)
    }
    /// Wall-clock aligned buckets: `second`, `minute`, `hour`, `day` or `week` (weeks start on
    /// Monday 00:00 UTC); idle flush 30000 ms by default.
    pub fn window_cron(self, every: &str) -> Stream {
        if window::every_ms(every).is_none() {
            return self.fail(format!("window_cron: every must be second|minute|hour|day|week (got {every:?})"));
        }
        self.window(WindowKind::Cron { every: every.to_string() }, 30_000)
    }

    fn with_window(mut self, what: &str, f: impl FnOnce(&mut WindowSpec)) -> Stream {
        match self.ops.last_mut() {
            Some(Op::Window(w)) => {
                f(w);
                self
            }
            _ => self.fail(format!(".{what}() must follow a window operator")),
        }
    }
    /// The idle-flush interval of the window just added; 0 disables it.
    pub fn idle_flush_ms(self, ms: u64) -> Stream {
        self.with_window("idle_flush_ms", |w| w.idle_flush_ms = ms)
    }
    /// Seconds a window stays open after its end (on the stream clock).
    pub fn grace_period(self, seconds: u64) -> Stream {
        self.with_window("grace_period", |w| w.grace_period = seconds)
    }
    /// Bucket on the extractor's time instead of the broker's createdAt.
    pub fn event_time<F, T>(self, f: F) -> Stream
    where
        F: Fn(&Record) -> T + Send + Sync + 'static,
        T: Into<EventTime>,
    {
        self.with_window("event_time", move |w| w.event_time = Some(Arc::new(move |r: &Record| f(r).into())))
    }
    /// Seconds the watermark trails the newest event time seen on the partition.
    pub fn allowed_lateness(self, seconds: u64) -> Stream {
        self.with_window("allowed_lateness", |w| w.allowed_lateness = seconds)
    }
    pub fn on_late(self, policy: OnLate) -> Stream {
        self.with_window("on_late", |w| w.on_late = policy)
    }

    fn reducer_check(&self) -> Option<&'static str> {
        if self.has(|o| matches!(o, Op::Gate(_))) {
            return Some("a reducer and .gate() are mutually exclusive in one stream");
        }
        if !self.has(Self::is_window) {
            return Some(".reduce()/.aggregate() requires a preceding window operator");
        }
        None
    }
    /// Fold each window: `f(acc, value)`, starting from `initial`.
    pub fn reduce<F: Fn(Value, &Value) -> Value + Send + Sync + 'static>(self, initial: Value, f: F) -> Stream {
        if let Some(e) = self.reducer_check() {
            return self.fail(e);
        }
        if self.has(Self::is_reducer) {
            return self.fail("only one .reduce()/.aggregate() per stream");
        }
        let initial = if initial.is_null() { None } else { Some(initial) };
        self.push(Op::Reduce { f: Arc::new(f), initial })
    }
    fn aggregate_field(mut self, name: &str, kind: AggKind, extract: Option<ExtractFn>) -> Stream {
        if let Some(e) = self.reducer_check() {
            return self.fail(e);
        }
        if name.is_empty() || name.starts_with("__") {
            return self.fail(format!("aggregate field name {name:?} is empty or reserved (\"__\")"));
        }
        let field = AggField { name: name.to_string(), kind, extract };
        match self.ops.last_mut() {
            Some(Op::Aggregate(fields)) => {
                if fields.iter().any(|f| f.name == name) {
                    return self.fail(format!("aggregate field {name:?} given twice"));
                }
                fields.push(field);
                self
            }
            _ => {
                if self.has(Self::is_reducer) {
                    return self.fail("only one .reduce()/.aggregate() per stream (aggregate_* calls must be consecutive)");
                }
                self.push(Op::Aggregate(vec![field]))
            }
        }
    }
    /// `name` = the number of messages in the window.
    pub fn aggregate_count(self, name: &str) -> Stream {
        self.aggregate_field(name, AggKind::Count, None)
    }
    pub fn aggregate_sum<F: Fn(&Record) -> f64 + Send + Sync + 'static>(self, name: &str, f: F) -> Stream {
        self.aggregate_field(name, AggKind::Sum, Some(Arc::new(f)))
    }
    pub fn aggregate_min<F: Fn(&Record) -> f64 + Send + Sync + 'static>(self, name: &str, f: F) -> Stream {
        self.aggregate_field(name, AggKind::Min, Some(Arc::new(f)))
    }
    pub fn aggregate_max<F: Fn(&Record) -> f64 + Send + Sync + 'static>(self, name: &str, f: F) -> Stream {
        self.aggregate_field(name, AggKind::Max, Some(Arc::new(f)))
    }
    /// The mean; its running sum and count are kept in state, never emitted.
    pub fn aggregate_avg<F: Fn(&Record) -> f64 + Send + Sync + 'static>(self, name: &str, f: F) -> Stream {
        self.aggregate_field(name, AggKind::Avg, Some(Arc::new(f)))
    }

    /// Allow or deny each message in source order (see the crate README for the lease rules).
    pub fn gate<F: Fn(&Value, &mut GateCtx) -> bool + Send + Sync + 'static>(self, f: F) -> Stream {
        if self.has(|o| matches!(o, Op::Gate(_))) {
            return self.fail("at most one .gate() per stream (chain two streams for two decisions)");
        }
        if self.has(|o| Self::is_window(o) || Self::is_reducer(o)) {
            return self.fail(".gate() and a window plus reducer are mutually exclusive in one stream");
        }
        self.push(Op::Gate(Arc::new(f)))
    }

    /// Push what leaves the chain onto `queue`, on the source message's partition name.
    pub fn to(self, queue: QueueRef) -> Stream {
        let name = queue.name.clone();
        self.push(Op::Sink { queue: name, partition: None })
    }
    /// As [`Stream::to`], the sink partition chosen by `f(value)`.
    pub fn to_partitioned<F: Fn(&Value) -> String + Send + Sync + 'static>(self, queue: QueueRef, f: F) -> Stream {
        let name = queue.name.clone();
        self.push(Op::Sink { queue: name, partition: Some(Arc::new(f)) })
    }
    /// Call `f` for each value leaving the chain, then ack (an effect outside PostgreSQL is
    /// at-least-once).
    pub fn foreach<F: Fn(Value, &EmitCtx) + Send + Sync + 'static>(self, f: F) -> Stream {
        self.push(Op::Foreach(Arc::new(f)))
    }

    /// The canonical JSON of the chain (the config_hash's input).
    pub fn canonical_config(&self) -> String {
        let v: Vec<Value> = self.ops.iter().map(Op::hash_entry).collect();
        serde_json::to_string(&v).unwrap_or_default()
    }
    /// SHA-256 of [`Stream::canonical_config`], lowercase hex: the 2.x Python SDK's hash.
    pub fn config_hash(&self) -> String {
        config_hash(&self.canonical_config())
    }

    /// Check the chain rules; Ok(()) when the chain can run.
    pub fn build(&self) -> Result<()> {
        self.stages().map(|_| ())
    }

    pub(crate) fn stages(&self) -> Result<Stages> {
        if let Some(e) = &self.error {
            return Err(Error::Chain(e.clone()));
        }
        let mut st = Stages { pre: vec![], window: None, reducer: None, gate: None, post: vec![], sink: None };
        let mut after_core = false;
        for op in &self.ops {
            match op {
                Op::Window(w) => st.window = Some(w.clone()),
                Op::Reduce { .. } | Op::Aggregate(_) => {
                    st.reducer = Some(op.clone());
                    after_core = true;
                }
                Op::Gate(g) => {
                    st.gate = Some(g.clone());
                    after_core = true;
                }
                Op::Sink { .. } | Op::Foreach(_) => st.sink = Some(op.clone()),
                Op::KeyBy(_) => st.pre.push(op.clone()),
                _ if after_core => st.post.push(op.clone()),
                _ if st.window.is_some() => {
                    return Err(Error::Chain("map/filter/flat_map between the window and its reducer are not supported: move them before the window".into()))
                }
                _ => st.pre.push(op.clone()),
            }
        }
        if let Some(w) = &st.window {
            if w.is_session() && st.reducer.is_none() {
                return Err(Error::Chain("window_session requires a downstream .reduce() or .aggregate_*()".into()));
            }
        }
        Ok(st)
    }

    /// Register the query and start the runner.
    pub async fn run(self, queen: &Queen, opts: RunOptions) -> Result<StreamHandle> {
        runner::start(self, queen.clone(), opts).await
    }
}

/// SHA-256 of a canonical config, lowercase hex.
pub fn config_hash(canonical: &str) -> String {
    let d = Sha256::digest(canonical.as_bytes());
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// A token-bucket gate: `capacity` tokens, refilled at `refill_per_sec`; each message costs
/// `cost(value)` tokens (1 for a non-finite or negative cost). The bucket lives in `ctx.state`
/// (`tokens`, `lastRefillAt`, `allowedTotal`, `consumedTotal`, the Python helper's fields), so
/// it is committed only with allowed messages. Sustainable rate per partition:
/// `min(refill_per_sec, capacity / lease_seconds)`.
pub fn token_bucket_gate<C>(capacity: f64, refill_per_sec: f64, cost: C) -> impl Fn(&Value, &mut GateCtx) -> bool + Send + Sync + 'static
where
    C: Fn(&Value) -> f64 + Send + Sync + 'static,
{
    assert!(capacity.is_finite() && capacity > 0.0, "token_bucket_gate: capacity must be a positive number");
    assert!(refill_per_sec.is_finite() && refill_per_sec > 0.0, "token_bucket_gate: refill_per_sec must be a positive number");
    move |v: &Value, ctx: &mut GateCtx| {
        let now = ctx.stream_time_ms as f64;
        let tokens = ctx.state.get("tokens").and_then(Value::as_f64).unwrap_or(capacity);
        let last = ctx.state.get("lastRefillAt").and_then(Value::as_f64).unwrap_or(now);
        let elapsed = ((now - last) / 1000.0).max(0.0);
        let mut tokens = (tokens + elapsed * refill_per_sec).min(capacity);
        ctx.state.insert("lastRefillAt".into(), json!(now as i64));
        let mut c = cost(v);
        if !c.is_finite() || c < 0.0 {
            c = 1.0;
        }
        let allowed = if c == 0.0 {
            true
        } else if tokens >= c {
            tokens -= c;
            let a = ctx.state.get("allowedTotal").and_then(Value::as_i64).unwrap_or(0) + 1;
            let t = ctx.state.get("consumedTotal").and_then(Value::as_f64).unwrap_or(0.0) + c;
            ctx.state.insert("allowedTotal".into(), json!(a));
            ctx.state.insert("consumedTotal".into(), json!(t));
            true
        } else {
            false
        };
        ctx.state.insert("tokens".into(), json!(tokens));
        allowed
    }
}
