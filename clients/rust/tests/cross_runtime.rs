//! A query started by the real 2.x Python runtime (queen-mq 2.6.0 in build/venv), or by our JS SDK
//! (clients/js), and resumed by this one: the same config_hash (no 409 without reset), and the
//! state the first runner left open is continued here. QUEEN_PYTHON names the venv's interpreter (make sdk-rust sets it).
mod common;

use std::time::Duration;

use common::{drain_exact, queen, uniq, url};
use queen_mq::serde_json::json;
use queen_mq::{PushItem, RunOptions, Stream};

const PY: &str = r#"
import asyncio, sys
from queen import Queen
from queen.streams import Stream
url, src, sink, query = sys.argv[1:5]
async def main():
    q = Queen(url)
    h = await (Stream.from_(q.queue(src))
               .window_tumbling(seconds=10, event_time=lambda m: m["data"]["ts"], idle_flush_ms=0)
               .aggregate({"count": lambda m: 1, "sum": lambda m: m["ts"]})
               .to(q.queue(sink))
               .run(query_id=query, url=url, batch_size=50, max_wait_millis=300, reset=True))
    for _ in range(100):
        await asyncio.sleep(0.1)
        if h.metrics()["messagesTotal"] >= 3:
            break
    await h.stop()
    print("python messages", h.metrics()["messagesTotal"], "hash", h.stream.config_hash if hasattr(h, "stream") else "")
asyncio.run(main())
"#;

#[tokio::test]
async fn a_query_started_in_python_is_resumed_in_rust() {
    let py = std::env::var("QUEEN_PYTHON").expect("QUEEN_PYTHON (the venv with queen-mq 2.6.0) is not set: run `make sdk-rust`");
    let q = queen();
    let (src, sink, query) = (uniq("x-src"), uniq("x-sink"), uniq("x-query"));
    let ev = |ts: i64| PushItem::new(json!({"ts": ts})).partition("p");
    q.queue(&src).push(vec![ev(1_000), ev(2_000), ev(12_000)]).await.unwrap();
    let out = tokio::process::Command::new(&py).arg("-c").arg(PY).args([url(), src.clone(), sink.clone(), query.clone()]).output().await.unwrap();
    assert!(out.status.success(), "python runner: {}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    // the chain, spelled in Rust: the same hash, so no reset is needed to resume it
    let h = Stream::from(q.queue(&src))
        .window_tumbling(10)
        .event_time(|r| r.number("ts") as i64)
        .idle_flush_ms(0)
        .aggregate_count("count")
        .aggregate_sum("sum", |r| r.number("ts"))
        .to(q.queue(&sink))
        .run(&q, RunOptions::new(&query).batch_size(50).max_wait(Duration::from_millis(200)))
        .await
        .expect("the Rust chain resumes the Python query (same config_hash)");
    q.queue(&src).push(vec![ev(13_000), ev(25_000)]).await.unwrap();
    let mut got = drain_exact(&q, &sink, "r", 2, Duration::from_secs(20), Duration::from_millis(800)).await;
    let st = h.stop().await.unwrap();
    got.sort_by_key(|v| v["sum"].as_i64());
    // [0,10) closed by Python; [10,20) opened by Python (12 s) and closed here with 13 s
    assert_eq!(got, vec![json!({"count": 2, "sum": 3000}), json!({"count": 2, "sum": 25000})], "{st:?}\n{}", String::from_utf8_lossy(&out.stdout));
}

const JS: &str = r#"
const [pkg, url, src, sink, query] = process.argv.slice(2);
const { Queen, Stream } = await import(pkg);
const q = new Queen({ url });
const h = await Stream.from(q.queue(src))
  .windowTumbling({ seconds: 10, eventTime: (m) => m.data.ts, idleFlushMs: 0 })
  .aggregate({ count: () => 1, sum: (m) => m.ts })
  .to(q.queue(sink))
  .run({ queryId: query, url, batchSize: 50, maxWait: 300, reset: true });
for (let i = 0; i < 100 && h.metrics().messagesTotal < 3; i++) await new Promise((r) => setTimeout(r, 100));
await h.stop();
console.log('js messages', h.metrics().messagesTotal);
"#;

#[tokio::test]
async fn a_query_started_in_js_is_resumed_in_rust() {
    let q = queen();
    let (src, sink, query) = (uniq("xj-src"), uniq("xj-sink"), uniq("xj-query"));
    let ev = |ts: i64| PushItem::new(json!({"ts": ts})).partition("p");
    q.queue(&src).push(vec![ev(1_000), ev(2_000), ev(12_000)]).await.unwrap();
    let pkg = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../js/index.js").canonicalize().unwrap();
    let script = std::env::temp_dir().join(format!("{query}.mjs"));
    std::fs::write(&script, JS).unwrap();
    let out = tokio::process::Command::new("node")
        .arg(&script)
        .args([format!("file://{}", pkg.display()), url(), src.clone(), sink.clone(), query.clone()])
        .output()
        .await
        .unwrap();
    let _ = std::fs::remove_file(&script);
    assert!(out.status.success(), "js runner: {}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    // the same chain in Rust: the JS SDK registered it under the same config_hash, so it resumes
    // without a reset and continues the window the JS runner left open
    let h = Stream::from(q.queue(&src))
        .window_tumbling(10)
        .event_time(|r| r.number("ts") as i64)
        .idle_flush_ms(0)
        .aggregate_count("count")
        .aggregate_sum("sum", |r| r.number("ts"))
        .to(q.queue(&sink))
        .run(&q, RunOptions::new(&query).batch_size(50).max_wait(Duration::from_millis(200)))
        .await
        .expect("the Rust chain resumes the JS query (same config_hash)");
    q.queue(&src).push(vec![ev(13_000), ev(25_000)]).await.unwrap();
    let mut got = drain_exact(&q, &sink, "r", 2, Duration::from_secs(20), Duration::from_millis(800)).await;
    let st = h.stop().await.unwrap();
    got.sort_by_key(|v| v["sum"].as_i64());
    // [0,10) closed by the JS runner; [10,20) opened there (12 s) and closed here with 13 s
    assert_eq!(got, vec![json!({"count": 2, "sum": 3000}), json!({"count": 2, "sum": 25000})], "{st:?}\n{}", String::from_utf8_lossy(&out.stdout));
}
