//! Helpers of the integration tests: they run against the broker named by QUEEN_URL, which
//! `make sdk-rust` (scripts/test-with-broker.mjs) starts with its own PostgreSQL.
#![allow(dead_code)]
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use queen_mq::serde_json::Value;
use queen_mq::Queen;

pub fn url() -> String {
    std::env::var("QUEEN_URL").expect("these tests run against a broker: QUEEN_URL is not set (run `make sdk-rust`, which starts one)")
}

pub fn queen() -> Queen {
    Queen::new(&url()).unwrap()
}

static N: AtomicU32 = AtomicU32::new(0);

/// A name no other test (or run) uses.
pub fn uniq(prefix: &str) -> String {
    format!("rs-{prefix}-{}-{}-{}", std::process::id(), queen_mq::util::now_ms() % 1_000_000, N.fetch_add(1, Ordering::SeqCst))
}

/// Pop `queue` as `group` until `want` messages came or `timeout` passed; acks them; the
/// payloads in delivery order.
pub async fn drain(q: &Queen, queue: &str, group: &str, want: usize, timeout: Duration) -> Vec<Value> {
    let r = q.queue(queue).group(group).batch(100).partitions(10).timeout(Duration::from_millis(300));
    let mut out = vec![];
    let deadline = Instant::now() + timeout;
    while out.len() < want && Instant::now() < deadline {
        for m in r.pop().await.unwrap() {
            out.push(m.data.clone());
            q.ack(&m, "completed", None).await.unwrap();
        }
    }
    out
}

/// As [`drain`], then keeps reading for `extra` to show that nothing more arrives.
pub async fn drain_exact(q: &Queen, queue: &str, group: &str, want: usize, timeout: Duration, extra: Duration) -> Vec<Value> {
    let mut out = drain(q, queue, group, want, timeout).await;
    let more = drain(q, queue, group, usize::MAX, extra).await;
    out.extend(more);
    out
}
