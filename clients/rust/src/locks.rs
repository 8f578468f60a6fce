//! Locks and semaphores on the 2.x wire: `POST /api/v1/locks {operations}`; ops independent,
//! verdicts at 200. A held lock's token changes on every renew; `guard` is the KV `check` op a
//! transaction carries to commit only while the lock is still held.
use serde_json::{json, Value};

use crate::client::Queen;
use crate::error::{Error, Result};
use crate::util::hex12;

#[derive(Clone)]
pub struct Locks {
    pub(crate) queen: Queen,
}

/// A permit this process holds.
#[derive(Clone, Debug)]
pub struct LockPermit {
    pub name: String,
    pub slot: Option<i64>,
    pub token: Value,
    pub owner: String,
    pub guard: Option<Value>,
}

fn default_owner() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "host".into());
    format!("{host}:{}:{}", std::process::id(), hex12())
}

impl Locks {
    pub async fn call(&self, ops: Vec<Value>) -> Result<Vec<Value>> {
        let n = ops.len();
        let v = self.queen.http.post("/api/v1/locks", &json!({"operations": ops})).await?.unwrap_or(Value::Null);
        let rs = v.get("results").and_then(Value::as_array).cloned().ok_or_else(|| Error::Protocol(format!("locks: no results in {v}")))?;
        if rs.len() != n {
            return Err(Error::Protocol(format!("locks: {} results for {n} ops", rs.len())));
        }
        Ok(rs)
    }
    /// Acquire `name` for `ttl_seconds` (`limit` 2..1024 = a semaphore). None = held/contended.
    pub async fn acquire(&self, name: &str, ttl_seconds: u64, limit: Option<u32>) -> Result<Option<LockPermit>> {
        let owner = default_owner();
        let mut op = json!({"op": "acquire", "name": name, "ttlSeconds": ttl_seconds, "owner": owner});
        if let Some(l) = limit {
            op["limit"] = json!(l);
        }
        let r = self.call(vec![op]).await?.remove(0);
        if r.get("acquired").and_then(Value::as_bool) != Some(true) {
            return Ok(None);
        }
        Ok(Some(LockPermit {
            name: name.into(),
            slot: r.get("slot").and_then(Value::as_i64),
            token: r.get("token").cloned().unwrap_or(Value::Null),
            owner: r.get("owner").and_then(Value::as_str).map(str::to_string).unwrap_or(owner),
            guard: r.get("guard").cloned(),
        }))
    }
    /// Renew; false = lost. The permit's token (and guard) are updated.
    pub async fn renew(&self, p: &mut LockPermit, ttl_seconds: u64) -> Result<bool> {
        let mut op = json!({"op": "renew", "name": p.name, "token": p.token, "ttlSeconds": ttl_seconds, "owner": p.owner});
        if let Some(s) = p.slot {
            op["slot"] = json!(s);
        }
        let r = self.call(vec![op]).await?.remove(0);
        if r.get("renewed").and_then(Value::as_bool) != Some(true) {
            return Ok(false);
        }
        p.token = r.get("token").cloned().unwrap_or(Value::Null);
        p.guard = r.get("guard").cloned();
        Ok(true)
    }
    pub async fn release(&self, p: &LockPermit) -> Result<bool> {
        let mut op = json!({"op": "release", "name": p.name, "token": p.token});
        if let Some(s) = p.slot {
            op["slot"] = json!(s);
        }
        Ok(self.call(vec![op]).await?.remove(0).get("released").and_then(Value::as_bool).unwrap_or(false))
    }
    pub async fn get(&self, name: &str) -> Result<Value> {
        Ok(self.call(vec![json!({"op": "get", "name": name})]).await?.remove(0))
    }
}
