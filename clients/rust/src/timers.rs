//! Keyed timers on the 2.x wire: `POST /api/v1/timers {operations}`, peek, list, cancel.
use serde_json::{json, Map, Value};

use crate::client::Queen;
use crate::error::{Error, Result};
use crate::util::{base64_encode, url_encode, uuid_v7};

/// One timer op. The payload is JSON, sent base64 of its text; the txn is minted when absent.
#[derive(Clone, Debug)]
pub struct TimerOp(Map<String, Value>);

impl TimerOp {
    fn base(op: &str, queue: &str, key: &str) -> TimerOp {
        let mut m = Map::new();
        m.insert("op".into(), json!(op));
        m.insert("queue".into(), json!(queue));
        m.insert("timerKey".into(), json!(key));
        TimerOp(m)
    }
    pub fn schedule(queue: &str, key: &str, payload: &Value, delay_ms: u64) -> TimerOp {
        TimerOp::with_payload("schedule", queue, key, payload, delay_ms)
    }
    pub fn reschedule(queue: &str, key: &str, payload: &Value, delay_ms: u64) -> TimerOp {
        TimerOp::with_payload("reschedule", queue, key, payload, delay_ms)
    }
    fn with_payload(op: &str, queue: &str, key: &str, payload: &Value, delay_ms: u64) -> TimerOp {
        let mut t = TimerOp::base(op, queue, key);
        t.0.insert("payload".into(), json!(base64_encode(serde_json::to_string(payload).unwrap_or_default().as_bytes())));
        t.0.insert("delayMs".into(), json!(delay_ms));
        t.0.insert("txn".into(), json!(uuid_v7()));
        t
    }
    pub fn cancel(queue: &str, key: &str) -> TimerOp {
        TimerOp::base("cancel", queue, key)
    }
    pub fn txn(mut self, txn: &str) -> TimerOp {
        self.0.insert("txn".into(), json!(txn));
        self
    }
    pub fn partition(mut self, p: &str) -> TimerOp {
        self.0.insert("partition".into(), json!(p));
        self
    }
    pub fn into_json(self) -> Value {
        Value::Object(self.0)
    }
}

/// `queen.timers()`.
#[derive(Clone)]
pub struct Timers {
    pub(crate) queen: Queen,
}

impl Timers {
    /// One result per op: `{ok, status (scheduled|rescheduled|cancelled|absent|too_late), ...}`.
    pub async fn batch(&self, ops: Vec<TimerOp>) -> Result<Vec<Value>> {
        let n = ops.len();
        let v = self.queen.http.post("/api/v1/timers", &json!({"operations": ops.into_iter().map(TimerOp::into_json).collect::<Vec<_>>()})).await?.unwrap_or(Value::Null);
        let rs = v.get("results").and_then(Value::as_array).cloned().ok_or_else(|| Error::Protocol(format!("timers: no results in {v}")))?;
        if rs.len() != n {
            return Err(Error::Protocol(format!("timers: {} results for {n} ops", rs.len())));
        }
        Ok(rs)
    }
    pub async fn schedule(&self, queue: &str, key: &str, payload: &Value, delay_ms: u64) -> Result<Value> {
        Ok(self.batch(vec![TimerOp::schedule(queue, key, payload, delay_ms)]).await?.remove(0))
    }
    /// The standalone cancel route (never blockable by quota).
    pub async fn cancel(&self, queue: &str, key: &str) -> Result<Value> {
        Ok(self.queen.http.delete(&format!("/api/v1/timers/{}/{}", url_encode(queue), key.split('/').map(url_encode).collect::<Vec<_>>().join("/"))).await?.unwrap_or(Value::Null))
    }
    /// The timer as stored, or `{found: false}`.
    pub async fn peek(&self, queue: &str, key: &str) -> Result<Value> {
        Ok(self.queen.http.get(&format!("/api/v1/timers/{}/{}", url_encode(queue), key.split('/').map(url_encode).collect::<Vec<_>>().join("/"))).await?.unwrap_or(Value::Null))
    }
    /// One keyset page `{rows, truncated, nextAfter}`.
    pub async fn list(&self, queue: &str, after: Option<&str>, limit: Option<u32>) -> Result<Value> {
        let mut p = format!("/api/v1/timers/{}", url_encode(queue));
        let mut q = vec![];
        if let Some(a) = after {
            q.push(format!("after={}", url_encode(a)));
        }
        if let Some(l) = limit {
            q.push(format!("limit={l}"));
        }
        if !q.is_empty() {
            p = format!("{p}?{}", q.join("&"));
        }
        Ok(self.queen.http.get(&p).await?.unwrap_or(Value::Null))
    }
}
