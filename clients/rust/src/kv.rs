//! The KV store on the 2.x wire: everything through `POST /api/v1/kv {operations}`, one batch
//! one transaction, verdicts per op at 200 (`applied` for writes, `found` for reads).
//!
//! Named `kv`, never `state`: inside a stream, `ctx.state` is the row the cycle owns and commits
//! atomically with the ack; a KV call made from an operator is an ordinary call with the
//! guarantees of the standalone KV and none in addition.
use serde_json::{json, Map, Value};

use crate::client::Queen;
use crate::error::{Error, Result};

/// One KV operation. Writes carry exactly one expiry: `ttl_seconds` (Some) or forever (None).
#[derive(Clone, Debug)]
pub struct KvOp(Map<String, Value>);

impl KvOp {
    fn base(op: &str, ns: &str, key: &str) -> KvOp {
        let mut m = Map::new();
        m.insert("op".into(), json!(op));
        m.insert("ns".into(), json!(ns));
        m.insert("key".into(), json!(key));
        KvOp(m)
    }
    fn expiry(mut self, ttl_seconds: Option<u64>) -> KvOp {
        match ttl_seconds {
            Some(t) => self.0.insert("ttlSeconds".into(), json!(t)),
            None => self.0.insert("forever".into(), json!(true)),
        };
        self
    }
    pub fn get(ns: &str, key: &str) -> KvOp {
        KvOp::base("get", ns, key)
    }
    pub fn get_many(ns: &str, keys: &[&str]) -> KvOp {
        let mut m = Map::new();
        m.insert("op".into(), json!("getMany"));
        m.insert("ns".into(), json!(ns));
        m.insert("keys".into(), json!(keys));
        KvOp(m)
    }
    pub fn get_prefix(ns: &str, prefix: &str, after: Option<&str>, limit: Option<u32>) -> KvOp {
        let mut m = Map::new();
        m.insert("op".into(), json!("getPrefix"));
        m.insert("ns".into(), json!(ns));
        m.insert("prefix".into(), json!(prefix));
        if let Some(a) = after {
            m.insert("after".into(), json!(a));
        }
        if let Some(l) = limit {
            m.insert("limit".into(), json!(l));
        }
        KvOp(m)
    }
    pub fn put(ns: &str, key: &str, value: Value, ttl_seconds: Option<u64>) -> KvOp {
        let mut o = KvOp::base("put", ns, key);
        o.0.insert("value".into(), value);
        o.expiry(ttl_seconds)
    }
    pub fn put_if_absent(ns: &str, key: &str, value: Value, ttl_seconds: Option<u64>) -> KvOp {
        let mut o = KvOp::base("putIfAbsent", ns, key);
        o.0.insert("value".into(), value);
        o.expiry(ttl_seconds)
    }
    pub fn delete(ns: &str, key: &str) -> KvOp {
        KvOp::base("delete", ns, key)
    }
    pub fn incr(ns: &str, key: &str, delta: i64, ttl_seconds: Option<u64>) -> KvOp {
        let mut o = KvOp::base("incr", ns, key);
        o.0.insert("delta".into(), json!(delta));
        o.expiry(ttl_seconds)
    }
    pub fn check(ns: &str, key: &str, expect: u64) -> KvOp {
        KvOp::base("check", ns, key).expect(expect)
    }
    /// The fence: 0 = must not exist, N = must be at version N.
    pub fn expect(mut self, version: u64) -> KvOp {
        self.0.insert("expect".into(), json!(version));
        self
    }
    pub fn min(mut self, v: i64) -> KvOp {
        self.0.insert("min".into(), json!(v));
        self
    }
    pub fn max(mut self, v: i64) -> KvOp {
        self.0.insert("max".into(), json!(v));
        self
    }
    /// A lost precondition rolls back the whole batch (or transaction).
    pub fn required(mut self) -> KvOp {
        self.0.insert("required".into(), json!(true));
        self
    }
    pub fn into_json(self) -> Value {
        Value::Object(self.0)
    }
}

/// `queen.kv()`.
#[derive(Clone)]
pub struct Kv {
    pub(crate) queen: Queen,
}

impl Kv {
    /// Run a batch; one result per op, in order.
    pub async fn batch(&self, ops: Vec<KvOp>) -> Result<Vec<Value>> {
        let n = ops.len();
        let body = json!({"operations": ops.into_iter().map(KvOp::into_json).collect::<Vec<_>>()});
        let v = self.queen.http.post("/api/v1/kv", &body).await?.unwrap_or(Value::Null);
        let rs = v.get("results").and_then(Value::as_array).cloned().ok_or_else(|| Error::Protocol(format!("kv: no results in {v}")))?;
        if rs.len() != n {
            return Err(Error::Protocol(format!("kv: {} results for {n} ops", rs.len())));
        }
        Ok(rs)
    }
    async fn one(&self, op: KvOp) -> Result<Value> {
        Ok(self.batch(vec![op]).await?.remove(0))
    }
    pub async fn get(&self, ns: &str, key: &str) -> Result<Value> {
        self.one(KvOp::get(ns, key)).await
    }
    pub async fn put(&self, ns: &str, key: &str, value: Value, ttl_seconds: Option<u64>) -> Result<Value> {
        self.one(KvOp::put(ns, key, value, ttl_seconds)).await
    }
    pub async fn put_if_absent(&self, ns: &str, key: &str, value: Value, ttl_seconds: Option<u64>) -> Result<Value> {
        self.one(KvOp::put_if_absent(ns, key, value, ttl_seconds)).await
    }
    pub async fn delete(&self, ns: &str, key: &str) -> Result<Value> {
        self.one(KvOp::delete(ns, key)).await
    }
    pub async fn incr(&self, ns: &str, key: &str, delta: i64, ttl_seconds: Option<u64>) -> Result<Value> {
        self.one(KvOp::incr(ns, key, delta, ttl_seconds)).await
    }
}
