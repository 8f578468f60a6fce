//! The broker client: queues (push, pop, consume, fetch, changed), ack/nack, lease renewal,
//! consumer groups, transactions. KV, timers and locks are in their own modules.
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::http::{CallOpts, HttpClient, HttpConfig};
use crate::kv::{Kv, KvOp};
use crate::locks::Locks;
use crate::timers::{TimerOp, Timers};
use crate::util::{iso_us, url_encode, uuid_v7};

pub const QUEUE_MODE: &str = "__QUEUE_MODE__";

/// A connection to one broker or several (failover). Cheap to clone.
#[derive(Clone)]
pub struct Queen {
    pub(crate) http: HttpClient,
    pub(crate) binary_push: bool,
}

/// Builder for [`Queen`]: several URLs, a bearer token, extra headers, retry knobs.
#[derive(Clone, Debug, Default)]
pub struct QueenBuilder {
    cfg: HttpConfig,
    urls: Vec<String>,
    binary_push: bool,
}

impl QueenBuilder {
    pub fn url(mut self, u: impl Into<String>) -> Self {
        self.urls.push(u.into());
        self
    }
    pub fn urls<I: IntoIterator<Item = S>, S: Into<String>>(mut self, us: I) -> Self {
        self.urls.extend(us.into_iter().map(Into::into));
        self
    }
    pub fn bearer_token(mut self, t: impl Into<String>) -> Self {
        self.cfg.bearer_token = Some(t.into());
        self
    }
    pub fn header(mut self, k: impl Into<String>, v: impl Into<String>) -> Self {
        self.cfg.headers.push((k.into(), v.into()));
        self
    }
    /// 5xx/network retries per call (default 3).
    pub fn retry_attempts(mut self, n: u32) -> Self {
        self.cfg.retry_attempts = n;
        self
    }
    /// Push in the 2.x binary body (QPB1, flag 4: every item with its transactionId) instead
    /// of JSON; an item with a traceId, or a name over 65535 bytes, goes as JSON.
    pub fn binary_push(mut self, on: bool) -> Self {
        self.binary_push = on;
        self
    }
    /// First back-off of a 5xx/network retry (default 1 s, doubled each time).
    pub fn retry_base(mut self, d: Duration) -> Self {
        self.cfg.retry_base = d;
        self
    }
    /// First back-off of a 429 without Retry-After (default 500 ms, doubled each time).
    pub fn rate_limit_base(mut self, d: Duration) -> Self {
        self.cfg.rate_limit_base = d;
        self
    }
    pub fn request_timeout(mut self, d: Duration) -> Self {
        self.cfg.request_timeout = d;
        self
    }
    pub fn build(mut self) -> Result<Queen> {
        if !self.urls.is_empty() {
            self.cfg.urls = self.urls;
        }
        Ok(Queen { http: HttpClient::new(self.cfg)?, binary_push: self.binary_push })
    }
}

/// One message as a pop delivers it. `raw` keeps every key the broker sent.
#[derive(Clone, Debug)]
pub struct Message {
    pub id: String,
    pub transaction_id: String,
    pub partition_id: String,
    pub partition: String,
    pub lease_id: Option<String>,
    pub consumer_group: Option<String>,
    pub created_at: String,
    pub data: Value,
    pub queue: Option<String>,
    pub raw: Value,
}

impl Message {
    pub fn from_value(v: Value) -> Option<Message> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        Some(Message {
            id: s("id").unwrap_or_default(),
            transaction_id: s("transactionId").or_else(|| s("id"))?,
            partition_id: s("partitionId")?,
            partition: s("partition").unwrap_or_else(|| "Default".into()),
            lease_id: s("leaseId"),
            consumer_group: s("consumerGroup"),
            created_at: s("createdAt").unwrap_or_default(),
            data: v.get("data").cloned().unwrap_or(Value::Null),
            queue: s("queue"),
            raw: v,
        })
    }
    pub fn created_at_ms(&self) -> Option<i64> {
        crate::util::parse_iso_ms(&self.created_at)
    }
    pub fn created_at_us(&self) -> Option<i64> {
        crate::util::parse_iso_us(&self.created_at)
    }
}

/// What to push: a payload, with the caller's transactionId (else one is minted, UUIDv7, so a
/// retried push is deduplicated by the broker) and an optional partition.
#[derive(Clone, Debug)]
pub struct PushItem {
    pub payload: Value,
    pub transaction_id: Option<String>,
    pub partition: Option<String>,
    pub trace_id: Option<String>,
}

impl PushItem {
    pub fn new(payload: Value) -> Self {
        PushItem { payload, transaction_id: None, partition: None, trace_id: None }
    }
    pub fn transaction_id(mut self, t: impl Into<String>) -> Self {
        self.transaction_id = Some(t.into());
        self
    }
    pub fn partition(mut self, p: impl Into<String>) -> Self {
        self.partition = Some(p.into());
        self
    }
    pub fn trace_id(mut self, t: impl Into<String>) -> Self {
        self.trace_id = Some(t.into());
        self
    }
}

impl From<Value> for PushItem {
    fn from(v: Value) -> Self {
        PushItem::new(v)
    }
}

/// The verdict for one pushed item.
#[derive(Clone, Debug)]
pub struct PushResult {
    pub status: String,
    pub transaction_id: String,
    pub error: Option<String>,
    pub raw: Value,
}

impl PushResult {
    pub fn is_queued(&self) -> bool {
        self.status == "queued"
    }
    pub fn is_duplicate(&self) -> bool {
        self.status == "duplicate"
    }
}

/// Set by the first `conflationConflict: true` answer (the one-time warning went to stderr).
static CONFLICT_WARNED: AtomicBool = AtomicBool::new(false);

/// Whether this process has seen (and warned about) a conflation conflict: a pop declared a
/// policy that differs from the group's stored one, and the stored one was applied.
pub fn conflation_conflict_warned() -> bool {
    CONFLICT_WARNED.load(Ordering::SeqCst)
}

/// A queue, with the knobs of its next pop/consume/push (a builder: every setter returns a copy).
#[derive(Clone)]
pub struct QueueRef {
    pub(crate) queen: Queen,
    pub(crate) name: String,
    pub(crate) partition: Option<String>,
    pub(crate) group: Option<String>,
    pub(crate) batch: Option<u32>,
    pub(crate) partitions: Option<u32>,
    pub(crate) wait: bool,
    pub(crate) timeout_ms: u64,
    pub(crate) auto_ack: bool,
    pub(crate) subscription_mode: Option<String>,
    pub(crate) subscription_from: Option<String>,
    pub(crate) conflation: bool,
}

impl Queen {
    /// `Queen::new("http://localhost:6632")`, or several URLs separated by commas.
    pub fn new(url: &str) -> Result<Queen> {
        QueenBuilder::default().urls(url.split(',').map(str::trim).filter(|s| !s.is_empty())).build()
    }
    pub fn builder() -> QueenBuilder {
        QueenBuilder::default()
    }
    pub fn http(&self) -> &HttpClient {
        &self.http
    }
    pub fn queue(&self, name: &str) -> QueueRef {
        QueueRef {
            queen: self.clone(),
            name: name.to_string(),
            partition: None,
            group: None,
            batch: None,
            partitions: None,
            wait: true,
            timeout_ms: 30_000,
            auto_ack: false,
            subscription_mode: None,
            subscription_from: None,
            conflation: false,
        }
    }
    pub fn kv(&self) -> Kv {
        Kv { queen: self.clone() }
    }
    pub fn timers(&self) -> Timers {
        Timers { queen: self.clone() }
    }
    pub fn locks(&self) -> Locks {
        Locks { queen: self.clone() }
    }
    pub fn transaction(&self) -> Transaction {
        Transaction { queen: self.clone(), operations: vec![], leases: vec![], kv: vec![], timers: vec![], refused: None }
    }

    /// Acknowledge one message: `completed`, `failed` (retry/dead-letter by the queue's policy),
    /// or another status the broker knows (`retry`, `dlq`).
    pub async fn ack(&self, m: &Message, status: &str, error: Option<&str>) -> Result<bool> {
        let body = json!({
            "transactionId": m.transaction_id,
            "partitionId": m.partition_id,
            "status": status,
            "error": error,
            "consumerGroup": m.consumer_group.as_deref().filter(|g| *g != QUEUE_MODE),
            "leaseId": m.lease_id,
        });
        let v = self.http.post("/api/v1/ack", &body).await?;
        read_ack(v)
    }

    /// Acknowledge many messages in one call; one verdict per message, in order.
    pub async fn ack_batch(&self, ms: &[Message], status: &str, error: Option<&str>) -> Result<Vec<bool>> {
        if ms.is_empty() {
            return Ok(vec![]);
        }
        let acks: Vec<Value> = ms
            .iter()
            .map(|m| json!({"transactionId": m.transaction_id, "partitionId": m.partition_id, "status": status, "error": error, "leaseId": m.lease_id}))
            .collect();
        let group = ms[0].consumer_group.as_deref().filter(|g| *g != QUEUE_MODE);
        let v = self.http.post("/api/v1/ack/batch", &json!({"acknowledgments": acks, "consumerGroup": group})).await?;
        match v {
            Some(Value::Array(a)) => Ok(a.iter().map(|x| x.get("success").and_then(Value::as_bool).unwrap_or(false) && x.get("error").map(Value::is_null).unwrap_or(true)).collect()),
            Some(o) if o.get("error").is_some() => Err(Error::Protocol(o["error"].to_string())),
            other => Err(Error::Protocol(format!("ack/batch answer {other:?}"))),
        }
    }

    /// Extend a lease (no body: the broker's default extension). Ok(false) = the lease is gone.
    pub async fn renew(&self, lease_id: &str) -> Result<bool> {
        let v = self.http.post(&format!("/api/v1/lease/{}/extend", url_encode(lease_id)), &json!({})).await?;
        let o = match v {
            Some(Value::Array(mut a)) if !a.is_empty() => a.swap_remove(0),
            Some(o) => o,
            None => return Ok(false),
        };
        Ok(match o.get("success").and_then(Value::as_bool) {
            Some(b) => b,
            None => ["newExpiresAt", "expiresAt", "lease_expires_at"].iter().any(|k| o.get(*k).map(|x| !x.is_null()).unwrap_or(false)),
        })
    }

    /// `POST /api/v1/partitions/changed` for one queue, every page followed.
    pub async fn changed_since(&self, queue: &str, since_us: Option<i64>) -> Result<Changed> {
        let mut after: Option<Value> = None;
        let mut out = Changed { safe_time: None, partitions: vec![] };
        loop {
            let mut e = Map::new();
            e.insert("queue".into(), json!(queue));
            e.insert("limit".into(), json!(1000));
            if let Some(s) = since_us {
                e.insert("since".into(), json!(iso_us(s)));
            }
            if let Some(a) = &after {
                e.insert("after".into(), a.clone());
            }
            let v = self.http.request(Method::POST, "/api/v1/partitions/changed", Some(&json!({"entries": [Value::Object(e)]})), &CallOpts { affinity: Some(format!("{queue}:*:__READ__")), long_poll: None }).await?.1.unwrap_or(Value::Null);
            if let Some(st) = v.get("safeTime").and_then(Value::as_str) {
                if out.safe_time.as_deref().map(|cur| st < cur).unwrap_or(true) {
                    out.safe_time = Some(st.to_string());
                }
            }
            let entry = v.get("entries").and_then(|e| e.get(0)).cloned().ok_or_else(|| Error::Protocol("partitions/changed: no entry".into()))?;
            match entry.get("error").and_then(Value::as_str) {
                None => {}
                Some("UNKNOWN_TOPIC_OR_PARTITION") => return Ok(out),
                Some(e) => return Err(Error::Protocol(format!("partitions/changed: {e}"))),
            }
            for p in entry.get("partitions").and_then(Value::as_array).into_iter().flatten() {
                out.partitions.push(ChangedPartition {
                    name: p.get("name").and_then(Value::as_str).unwrap_or_default().to_string(),
                    id: p.get("id").map(|x| x.as_str().map(str::to_string).unwrap_or_else(|| x.to_string())).unwrap_or_default(),
                    last_offset: p.get("lastOffset").and_then(Value::as_i64).unwrap_or(-1),
                    log_start: p.get("logStart").and_then(Value::as_i64).unwrap_or(0),
                    last_write_at: p.get("lastWriteAt").and_then(Value::as_str).map(str::to_string),
                });
            }
            match entry.get("next") {
                Some(n) if !n.is_null() => after = Some(n.clone()),
                _ => return Ok(out),
            }
        }
    }

    /// `POST /api/v1/fetch`: one partition read from `offset` to the high watermark seen first.
    pub async fn fetch(&self, queue: &str, partition: &str, offset: u64) -> Result<FetchResult> {
        let mut next = offset;
        let mut out = FetchResult { records: vec![], high_watermark: 0, log_start_offset: 0, next_offset: offset };
        let mut first_hw: Option<u64> = None;
        loop {
            let body = json!({"entries": [{"queue": queue, "partition": partition, "offset": next, "maxBytes": 8 << 20}], "maxBytes": 8 << 20});
            let v = self.http.request(Method::POST, "/api/v1/fetch", Some(&body), &CallOpts { affinity: Some(format!("{queue}:*:__READ__")), long_poll: None }).await?.1.unwrap_or(Value::Null);
            let e = v.get("entries").and_then(Value::as_array).filter(|a| a.len() == 1).map(|a| a[0].clone()).ok_or_else(|| Error::Protocol("fetch: not one entry per entry asked".into()))?;
            out.high_watermark = e.get("highWatermark").and_then(Value::as_u64).unwrap_or(0);
            out.log_start_offset = e.get("logStartOffset").and_then(Value::as_u64).unwrap_or(0);
            match e.get("error").and_then(Value::as_str) {
                None => {}
                Some("UNKNOWN_TOPIC_OR_PARTITION") => return Ok(out),
                Some("OFFSET_OUT_OF_RANGE") if next < out.log_start_offset => {
                    next = out.log_start_offset;
                    continue;
                }
                Some("OFFSET_OUT_OF_RANGE") => return Ok(out),
                Some(x) => return Err(Error::Protocol(format!("fetch: {x}"))),
            }
            let hw = *first_hw.get_or_insert(out.high_watermark);
            let recs = e.get("records").and_then(Value::as_array).cloned().unwrap_or_default();
            if recs.is_empty() {
                out.next_offset = next;
                return Ok(out);
            }
            for r in recs {
                let off = r.get("offset").and_then(Value::as_u64).unwrap_or(next);
                next = off + 1;
                out.records.push(FetchedRecord {
                    offset: off,
                    transaction_id: r.get("transactionId").and_then(Value::as_str).unwrap_or_default().to_string(),
                    payload: r.get("payload").cloned().unwrap_or(Value::Null),
                    ts: r.get("ts").and_then(Value::as_str).unwrap_or_default().to_string(),
                });
            }
            out.next_offset = next;
            if next >= hw {
                return Ok(out);
            }
        }
    }

    /// `DELETE /api/v1/consumer-groups/<g>[?deleteMetadata=]`
    pub async fn delete_consumer_group(&self, group: &str, delete_metadata: bool) -> Result<Option<Value>> {
        self.http.delete(&format!("/api/v1/consumer-groups/{}?deleteMetadata={}", url_encode(group), delete_metadata)).await
    }
    /// `POST /api/v1/consumer-groups/<g>/queues/<q>/seek` with e.g. `{"toEnd": true}`.
    pub async fn seek(&self, group: &str, queue: &str, options: Value) -> Result<Option<Value>> {
        self.http.post(&format!("/api/v1/consumer-groups/{}/queues/{}/seek", url_encode(group), url_encode(queue)), &options).await
    }
    pub async fn consumer_groups(&self) -> Result<Option<Value>> {
        self.http.get("/api/v1/consumer-groups").await
    }
}

fn read_ack(v: Option<Value>) -> Result<bool> {
    match v {
        Some(Value::Array(a)) => Ok(a.first().and_then(|x| x.get("success")).and_then(Value::as_bool).unwrap_or(false)),
        Some(o) => {
            if let Some(e) = o.get("error").filter(|e| !e.is_null()) {
                return Err(Error::Protocol(format!("ack: {e}")));
            }
            Ok(o.get("success").and_then(Value::as_bool).unwrap_or(true))
        }
        None => Ok(true),
    }
}

#[derive(Clone, Debug)]
pub struct ChangedPartition {
    pub name: String,
    pub id: String,
    pub last_offset: i64,
    pub log_start: i64,
    pub last_write_at: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Changed {
    /// Every record of the queue that commits after this answer is stamped above it.
    pub safe_time: Option<String>,
    pub partitions: Vec<ChangedPartition>,
}

#[derive(Clone, Debug)]
pub struct FetchedRecord {
    pub offset: u64,
    pub transaction_id: String,
    pub payload: Value,
    pub ts: String,
}

#[derive(Clone, Debug)]
pub struct FetchResult {
    pub records: Vec<FetchedRecord>,
    pub high_watermark: u64,
    pub log_start_offset: u64,
    pub next_offset: u64,
}

/// Options of [`QueueRef::consume`].
#[derive(Clone, Debug)]
pub struct ConsumeOptions {
    /// Renew the lease of a batch every this often while the handler runs (None = never).
    pub renew_every: Option<Duration>,
    /// Stop after this many messages (None = until stopped).
    pub limit: Option<u64>,
    /// Handle each message alone (true) or the whole batch at once is up to the caller: here
    /// the handler is called per message, and its verdict acks it.
    pub idle_sleep: Duration,
}

impl Default for ConsumeOptions {
    fn default() -> Self {
        ConsumeOptions { renew_every: None, limit: None, idle_sleep: Duration::from_millis(100) }
    }
}

/// A running consume loop.
pub struct ConsumerHandle {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Result<u64>>,
}

impl ConsumerHandle {
    /// Ask the loop to stop after the message in hand, and wait for it; the messages handled.
    pub async fn stop(self) -> Result<u64> {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await.map_err(|e| Error::Protocol(format!("consumer task: {e}")))?
    }
    /// Wait for the loop to end by itself (a `limit`, a 403, an error).
    pub async fn join(self) -> Result<u64> {
        self.task.await.map_err(|e| Error::Protocol(format!("consumer task: {e}")))?
    }
    pub fn stopper(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }
}

impl QueueRef {
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn partition(mut self, p: &str) -> Self {
        self.partition = Some(p.to_string());
        self
    }
    pub fn group(mut self, g: &str) -> Self {
        self.group = Some(g.to_string());
        self
    }
    pub fn batch(mut self, n: u32) -> Self {
        self.batch = Some(n);
        self
    }
    /// Partitions one pop may claim (one shared leaseId).
    pub fn partitions(mut self, n: u32) -> Self {
        self.partitions = Some(n);
        self
    }
    pub fn wait(mut self, w: bool) -> Self {
        self.wait = w;
        self
    }
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout_ms = d.as_millis() as u64;
        self
    }
    /// At-most-once: the cursor moves at delivery, no lease, no ack.
    pub fn auto_ack(mut self, a: bool) -> Self {
        self.auto_ack = a;
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
    /// Last-value delivery for the group (the 2.x client's `conflation()`): each claimed
    /// partition gives its newest record, the ones behind it are retired for the group. Needs
    /// `group`; refused with `auto_ack` (the broker's 400s `conflation_needs_group` and
    /// `conflation_with_auto_ack`). Every answer must echo the policy, else the pop fails with
    /// [`Error::ConflationUnsupported`]; a conflict echo warns once per process.
    pub fn conflation(mut self, on: bool) -> Self {
        self.conflation = on;
        self
    }

    /// `POST /api/v1/configure` with the 2.x defaults under the caller's options (camelCase).
    pub async fn configure(&self, options: Value) -> Result<Value> {
        let mut opts = json!({"leaseTime": 300, "retryLimit": 3, "priority": 0, "delayedProcessing": 0, "windowBuffer": 0,
            "maxSize": 0, "retentionSeconds": 0, "completedRetentionSeconds": 0, "encryptionEnabled": false});
        if let (Some(o), Some(extra)) = (opts.as_object_mut(), options.as_object()) {
            for (k, v) in extra {
                o.insert(k.clone(), v.clone());
            }
        }
        let v = self.queen.http.post("/api/v1/configure", &json!({"queue": self.name, "namespace": null, "task": null, "options": opts})).await?.unwrap_or(Value::Null);
        if let Some(e) = v.get("error") {
            return Err(Error::Protocol(format!("configure: {e}")));
        }
        Ok(v)
    }

    pub async fn delete(&self) -> Result<Option<Value>> {
        self.queen.http.delete(&format!("/api/v1/resources/queues/{}", url_encode(&self.name))).await
    }

    /// Push payloads (or [`PushItem`]s); one verdict per item, in order.
    pub async fn push<I, T>(&self, items: I) -> Result<Vec<PushResult>>
    where
        I: IntoIterator<Item = T>,
        T: Into<PushItem>,
    {
        let items: Vec<Value> = items.into_iter().map(|t| self.push_item_json(t.into())).collect();
        push_items(&self.queen, items).await
    }

    pub(crate) fn push_item_json(&self, it: PushItem) -> Value {
        let mut o = Map::new();
        o.insert("queue".into(), json!(self.name));
        o.insert("partition".into(), json!(it.partition.or_else(|| self.partition.clone()).unwrap_or_else(|| "Default".into())));
        o.insert("payload".into(), it.payload);
        o.insert("transactionId".into(), json!(it.transaction_id.unwrap_or_else(uuid_v7)));
        if let Some(t) = it.trace_id.filter(|t| is_uuid_v4(t)) {
            o.insert("traceId".into(), json!(t));
        }
        Value::Object(o)
    }

    fn pop_path(&self) -> String {
        let mut p = format!("/api/v1/pop/queue/{}", url_encode(&self.name));
        if let Some(part) = self.partition.as_deref().filter(|p| *p != "Default") {
            p.push_str(&format!("/partition/{}", url_encode(part)));
        }
        let mut q: Vec<String> = vec![];
        q.push(format!("batch={}", self.batch.unwrap_or(1)));
        q.push(format!("wait={}", self.wait));
        q.push(format!("timeout={}", self.timeout_ms));
        if let Some(g) = &self.group {
            q.push(format!("consumerGroup={}", url_encode(g)));
        }
        if self.auto_ack {
            q.push("autoAck=true".into());
        }
        if let Some(m) = &self.subscription_mode {
            q.push(format!("subscriptionMode={}", url_encode(m)));
        }
        if let Some(f) = &self.subscription_from {
            q.push(format!("subscriptionFrom={}", url_encode(f)));
        }
        if let Some(n) = self.partitions.filter(|n| *n > 1) {
            q.push(format!("partitions={n}"));
        }
        if self.conflation {
            q.push("conflation=true".into());
        }
        format!("{p}?{}", q.join("&"))
    }

    /// One pop. Errors are returned (not swallowed); a 204 is an empty list.
    pub async fn pop(&self) -> Result<Vec<Message>> {
        let affinity = format!("{}:{}:{}", self.name, self.partition.as_deref().unwrap_or("*"), self.group.as_deref().unwrap_or(QUEUE_MODE));
        let opts = CallOpts { affinity: Some(affinity), long_poll: if self.wait { Some(Duration::from_millis(self.timeout_ms)) } else { None } };
        let (status, v) = self.queen.http.request(Method::GET, &self.pop_path(), None, &opts).await?;
        if self.conflation {
            // every answer to a conflating pop carries the echo, an empty one included (200, not 204)
            let echo = |k: &str| v.as_ref().and_then(|v| v.get(k)).and_then(Value::as_bool) == Some(true);
            if !echo("conflation") && !echo("conflationConflict") {
                return Err(Error::ConflationUnsupported { status });
            }
            if echo("conflationConflict") && !CONFLICT_WARNED.swap(true, Ordering::SeqCst) {
                eprintln!(
                    "queen-mq: warning: the pop of queue {} for group {} declared a conflation policy that differs from the group's stored one; the stored policy applies (warned once per process)",
                    self.name,
                    self.group.as_deref().unwrap_or(QUEUE_MODE)
                );
            }
        }
        let v = match v {
            None => return Ok(vec![]),
            Some(v) => v,
        };
        if v.get("success").and_then(Value::as_bool) == Some(false) && v.get("code").is_some() {
            return Err(Error::from_response(200, v, None));
        }
        Ok(v.get("messages").and_then(Value::as_array).into_iter().flatten().filter(|m| !m.is_null()).filter_map(|m| Message::from_value(m.clone())).collect())
    }

    /// Consume until stopped: each message goes to `handler`; Ok acks it `completed`, Err acks
    /// it `failed` with the error's text (the broker retries it, then dead-letters it by the
    /// queue's policy). With `renew_every` the batch's lease is renewed while the handler runs.
    /// A 403 stops the loop (the 2.x rule); other errors are retried after a pause.
    pub fn consume<F, Fut, E>(&self, opts: ConsumeOptions, handler: F) -> ConsumerHandle
    where
        F: Fn(Message) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<(), E>> + Send,
        E: std::fmt::Display + Send,
    {
        let stop = Arc::new(AtomicBool::new(false));
        let me = self.clone();
        let stop2 = stop.clone();
        let task = tokio::spawn(async move {
            let mut handled: u64 = 0;
            while !stop2.load(Ordering::SeqCst) {
                let batch = match me.pop().await {
                    Ok(b) => b,
                    Err(e) if e.status() == Some(403) => return Err(e),
                    // terminal: a broker that ignores conflation, and the conflation refusals
                    // (400 conflation_needs_group / conflation_with_auto_ack), which no retry changes
                    Err(e @ Error::ConflationUnsupported { .. }) => return Err(e),
                    Err(e) if e.status() == Some(400) && e.code().is_some_and(|c| c.starts_with("conflation_")) => return Err(e),
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        continue;
                    }
                };
                if batch.is_empty() {
                    if !me.wait {
                        tokio::time::sleep(opts.idle_sleep).await;
                    }
                    continue;
                }
                let renewer = match (opts.renew_every, batch[0].lease_id.clone()) {
                    (Some(every), Some(lease)) if !me.auto_ack => {
                        let q = me.queen.clone();
                        Some(tokio::spawn(async move {
                            loop {
                                tokio::time::sleep(every).await;
                                if !q.renew(&lease).await.unwrap_or(false) {
                                    return;
                                }
                            }
                        }))
                    }
                    _ => None,
                };
                for m in batch {
                    if opts.limit.map(|l| handled >= l).unwrap_or(false) {
                        break; // the rest of the batch stays leased and comes back after the lease
                    }
                    let r = handler(m.clone()).await;
                    if !me.auto_ack {
                        let _ = match r {
                            Ok(()) => me.queen.ack(&m, "completed", None).await,
                            Err(e) => me.queen.ack(&m, "failed", Some(&e.to_string())).await,
                        };
                    }
                    handled += 1;
                    if opts.limit.map(|l| handled >= l).unwrap_or(false) {
                        stop2.store(true, Ordering::SeqCst);
                    }
                }
                if let Some(r) = renewer {
                    r.abort();
                }
            }
            Ok(handled)
        });
        ConsumerHandle { stop, task }
    }

    /// Lease-free read of one partition (of this builder's partition, else `Default`).
    pub async fn fetch(&self, offset: u64) -> Result<FetchResult> {
        self.queen.fetch(&self.name, self.partition.as_deref().unwrap_or("Default"), offset).await
    }

    pub async fn changed_since(&self, since_us: Option<i64>) -> Result<Changed> {
        self.queen.changed_since(&self.name, since_us).await
    }
}

fn is_uuid_v4(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| if [8, 13, 18, 23].contains(&i) { *c == b'-' } else { c.is_ascii_hexdigit() })
        && b[14] == b'4'
        && matches!(b[19].to_ascii_lowercase(), b'8' | b'9' | b'a' | b'b')
}

/// The QPB1 body (flag 4) of push items, consecutive items of one (queue, partition) in one
/// group; None when an item cannot go in it (a traceId, a name or id over 65535 bytes).
pub fn encode_qpb1(items: &[Value]) -> Option<Vec<u8>> {
    let mut groups: Vec<(&str, &str, Vec<(&str, Vec<u8>)>)> = vec![];
    for it in items {
        if it.get("traceId").is_some() {
            return None;
        }
        let (q, p, t) = (it["queue"].as_str()?, it["partition"].as_str()?, it["transactionId"].as_str()?);
        if q.len() > 65535 || p.len() > 65535 || t.len() > 65535 {
            return None;
        }
        let payload = serde_json::to_vec(it.get("payload").unwrap_or(&Value::Null)).ok()?;
        match groups.last_mut() {
            Some((gq, gp, msgs)) if *gq == q && *gp == p => msgs.push((t, payload)),
            _ => groups.push((q, p, vec![(t, payload)])),
        }
    }
    let mut b = Vec::with_capacity(64 + items.len() * 64);
    b.extend_from_slice(b"QPB1");
    b.push(4);
    b.extend_from_slice(&(groups.len() as u32).to_le_bytes());
    for (q, p, msgs) in &groups {
        b.extend_from_slice(&(q.len() as u16).to_le_bytes());
        b.extend_from_slice(q.as_bytes());
        b.extend_from_slice(&(p.len() as u16).to_le_bytes());
        b.extend_from_slice(p.as_bytes());
        b.extend_from_slice(&(msgs.len() as u32).to_le_bytes());
        for (t, payload) in msgs {
            b.extend_from_slice(&(t.len() as u16).to_le_bytes());
            b.extend_from_slice(t.as_bytes());
            b.extend_from_slice(&(payload.len() as u32).to_le_bytes());
            b.extend_from_slice(payload);
        }
    }
    Some(b)
}

pub(crate) async fn push_items(queen: &Queen, items: Vec<Value>) -> Result<Vec<PushResult>> {
    if items.is_empty() {
        return Ok(vec![]);
    }
    let txns: Vec<String> = items.iter().map(|i| i["transactionId"].as_str().unwrap_or_default().to_string()).collect();
    let v = match queen.binary_push.then(|| encode_qpb1(&items)).flatten() {
        Some(bytes) => queen.http.request_raw(Method::POST, "/api/v1/push", Some(("application/x-queen-push", bytes)), &CallOpts::default()).await?.1,
        None => queen.http.post("/api/v1/push", &json!({"items": items})).await?,
    };
    let arr = match v {
        Some(Value::Array(a)) => a,
        Some(o) if o.get("error").is_some() => return Err(Error::Protocol(format!("push: {}", o["error"]))),
        other => return Err(Error::Protocol(format!("push answer {other:?}"))),
    };
    Ok(arr
        .into_iter()
        .enumerate()
        .map(|(i, r)| PushResult {
            status: r.get("status").and_then(Value::as_str).unwrap_or("failed").to_string(),
            transaction_id: r.get("transaction_id").or_else(|| r.get("transactionId")).and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| txns.get(i).cloned().unwrap_or_default()),
            error: r.get("error").and_then(Value::as_str).map(str::to_string),
            raw: r,
        })
        .collect())
}

/// Acks and pushes committed together (`POST /api/v1/transaction`), with the KV and timer
/// riders (`tx.kv()`, `tx.timers()`) applied in the same transaction.
pub struct Transaction {
    queen: Queen,
    operations: Vec<Value>,
    leases: Vec<String>,
    kv: Vec<Value>,
    timers: Vec<Value>,
    refused: Option<String>,
}

/// The KV rider of a transaction (`tx.kv()`): the ops of [`KvOp`], committed with the bundle.
pub struct TxKv<'a> {
    tx: &'a mut Transaction,
}

impl TxKv<'_> {
    /// Add a KV op to the bundle. `getPrefix` is refused (unbounded inside a transaction): the
    /// commit then fails with `Error::Invalid`.
    pub fn op(self, op: KvOp) -> Self {
        let v = op.into_json();
        if v.get("op").and_then(Value::as_str) == Some("getPrefix") {
            self.tx.refused.get_or_insert_with(|| "tx.kv(): getPrefix is refused inside a transaction (unbounded cost)".into());
        } else {
            self.tx.kv.push(v);
        }
        self
    }
}

/// The timer rider of a transaction (`tx.timers()`).
pub struct TxTimers<'a> {
    tx: &'a mut Transaction,
}

impl TxTimers<'_> {
    pub fn op(self, op: TimerOp) -> Self {
        self.tx.timers.push(op.into_json());
        self
    }
}

/// The answer of a committed bundle.
#[derive(Clone, Debug)]
pub struct TxResult {
    pub success: bool,
    /// `kv_precondition` when a `required` KV op lost (nothing applied).
    pub reason: Option<String>,
    pub failed_index: Option<i64>,
    pub results: Vec<Value>,
    pub raw: Value,
}

impl Transaction {
    pub fn ack(mut self, m: &Message, status: &str) -> Self {
        let mut o = json!({"type": "ack", "transactionId": m.transaction_id, "partitionId": m.partition_id, "status": status});
        if let Some(g) = m.consumer_group.as_deref().filter(|g| *g != QUEUE_MODE) {
            o["consumerGroup"] = json!(g);
        }
        if let Some(l) = &m.lease_id {
            o["leaseId"] = json!(l);
            if !self.leases.contains(l) {
                self.leases.push(l.clone());
            }
        }
        self.operations.push(o);
        self
    }
    pub fn push<T: Into<PushItem>>(mut self, q: &QueueRef, items: Vec<T>) -> Self {
        let items: Vec<Value> = items.into_iter().map(|t| q.push_item_json(t.into())).collect();
        self.operations.push(json!({"type": "push", "items": items}));
        self
    }
    pub fn kv(&mut self) -> TxKv<'_> {
        TxKv { tx: self }
    }
    pub fn timers(&mut self) -> TxTimers<'_> {
        TxTimers { tx: self }
    }
    /// The dedup gate: a `putIfAbsent` with `required: true` (the whole bundle rolls back when
    /// the key exists).
    pub fn once(mut self, ns: &str, key: &str, ttl_seconds: Option<u64>) -> Self {
        self.kv.push(KvOp::put_if_absent(ns, key, json!(true), ttl_seconds).required().into_json());
        self
    }
    /// Commit only while `permit` is still held: its `guard` (a `check` of the lock's row at the
    /// current token, `required`) goes first in the KV rider.
    pub fn guard(mut self, permit: &crate::locks::LockPermit) -> Self {
        match &permit.guard {
            Some(g) => self.kv.insert(0, g.clone()),
            None => {
                self.refused.get_or_insert_with(|| format!("lock {:?} has no guard (not held)", permit.name));
            }
        }
        self
    }
    pub async fn commit(self) -> Result<TxResult> {
        if let Some(r) = self.refused {
            return Err(Error::Invalid(r));
        }
        if self.operations.is_empty() && self.kv.is_empty() && self.timers.is_empty() {
            return Err(Error::Invalid("a transaction needs at least one operation".into()));
        }
        let mut body = json!({"operations": self.operations, "requiredLeases": self.leases});
        if !self.kv.is_empty() {
            body["kv"] = json!(self.kv);
        }
        if !self.timers.is_empty() {
            body["timers"] = json!(self.timers);
        }
        let v = self.queen.http.post("/api/v1/transaction", &body).await?.unwrap_or(Value::Null);
        let success = v.get("success").and_then(Value::as_bool).unwrap_or(false);
        let reason = v.get("reason").and_then(Value::as_str).map(str::to_string);
        if !success && reason.as_deref() != Some("kv_precondition") {
            return Err(Error::Protocol(format!("transaction: {}", v.get("error").cloned().unwrap_or(v.clone()))));
        }
        Ok(TxResult {
            success,
            reason,
            failed_index: v.get("failedIndex").and_then(Value::as_i64),
            results: v.get("results").and_then(Value::as_array).cloned().unwrap_or_default(),
            raw: v,
        })
    }
}
