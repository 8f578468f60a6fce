//! The stream runtime against the real broker (QUEEN_URL): every window type with
//! deterministic event times, late data, the idle flush, the gate's order on redelivery, a
//! restart (each window once), 409 and reset.
mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{drain, drain_exact, queen, uniq};
use queen_mq::serde_json::{json, Value};
use queen_mq::{Error, OnLate, PushItem, Queen, RunOptions, Stream};

fn opts(query: &str) -> RunOptions {
    RunOptions::new(query).reset(true).batch_size(100).max_wait(Duration::from_millis(200))
}

async fn push_ts(q: &Queen, queue: &str, partition: &str, tss: &[i64]) {
    let items: Vec<PushItem> = tss.iter().map(|t| PushItem::new(json!({"ts": t, "amount": 1})).partition(partition)).collect();
    let r = q.queue(queue).push(items).await.unwrap();
    assert!(r.iter().all(|x| x.is_queued()));
}

fn sorted_by(mut v: Vec<Value>, k: &str) -> Vec<Value> {
    v.sort_by_key(|x| x[k].as_i64().unwrap_or(i64::MIN));
    v
}

#[tokio::test]
async fn tumbling_event_time_closes_on_the_watermark_and_the_last_window_by_idle_flush() {
    let q = queen();
    let (src, sink) = (uniq("tumb-src"), uniq("tumb-sink"));
    push_ts(&q, &src, "p", &[1_000, 2_000, 11_000, 12_000, 28_500]).await;
    let h = Stream::from(q.queue(&src))
        .window_tumbling(10)
        .event_time(|r| r.number("ts") as i64)
        .idle_flush_ms(300)
        .aggregate_count("count")
        .aggregate_min("first", |r| r.number("ts"))
        .to(q.queue(&sink))
        .run(&q, opts(&uniq("tumb")))
        .await
        .unwrap();
    // [0,10) and [10,20) close on the watermark (28.5 s); [20,30) only when the partition has
    // been quiet 1.5 s by the broker's clock (watermark + quiet ≥ 30 s): the idle flush
    let got = drain_exact(&q, &sink, "r", 3, Duration::from_secs(20), Duration::from_millis(1500)).await;
    let st = h.stop().await.unwrap();
    assert_eq!(sorted_by(got, "first"), vec![json!({"count": 2, "first": 1000}), json!({"count": 2, "first": 11000}), json!({"count": 1, "first": 28500})]);
    assert!(st.flush_cycles >= 1, "{st:?}");
    assert_eq!(st.errors, 0, "{st:?}");
}

#[tokio::test]
async fn sliding_session_and_cron_windows() {
    let q = queen();
    // sliding 10/5: events at 6 s and 12 s; 100 s moves the watermark past all three windows
    let (src, sink) = (uniq("slide-src"), uniq("slide-sink"));
    push_ts(&q, &src, "p", &[6_000, 12_000, 100_000]).await;
    let h1 = Stream::from(q.queue(&src)).window_sliding(10, 5).event_time(|r| r.number("ts") as i64).idle_flush_ms(0)
        .aggregate_count("count").aggregate_min("first", |r| r.number("ts")).aggregate_max("last", |r| r.number("ts"))
        .to(q.queue(&sink)).run(&q, opts(&uniq("slide"))).await.unwrap();
    // sessions with a 5 s gap keyed by user: a = {0, 3 s} then 20 s; b = {1 s}
    let (ssrc, ssink) = (uniq("sess-src"), uniq("sess-sink"));
    let ev = |user: &str, ts: i64| PushItem::new(json!({"user": user, "ts": ts})).partition("p");
    q.queue(&ssrc).push(vec![ev("a", 0), ev("b", 1_000), ev("a", 3_000), ev("a", 20_000)]).await.unwrap();
    let h2 = Stream::from(q.queue(&ssrc)).key_by(|v| v["user"].as_str().unwrap_or("?").to_string()).window_session(5)
        .event_time(|r| r.number("ts") as i64).idle_flush_ms(0)
        .reduce(json!({"n": 0}), |acc, v| json!({"n": acc["n"].as_i64().unwrap_or(0) + 1, "user": v["user"]}))
        .to(q.queue(&ssink)).run(&q, opts(&uniq("sess"))).await.unwrap();
    // cron minute: 00:00:10, 00:00:50 | 00:01:05 | 00:03:00 (the watermark)
    let (csrc, csink) = (uniq("cron-src"), uniq("cron-sink"));
    push_ts(&q, &csrc, "p", &[10_000, 50_000, 65_000, 180_000]).await;
    let h3 = Stream::from(q.queue(&csrc)).window_cron("minute").event_time(|r| r.number("ts") as i64).idle_flush_ms(0)
        .aggregate_count("count").aggregate_sum("sum", |r| r.number("ts"))
        .to(q.queue(&csink)).run(&q, opts(&uniq("cron"))).await.unwrap();

    let sliding = drain_exact(&q, &sink, "r", 3, Duration::from_secs(20), Duration::from_millis(800)).await;
    let sessions = drain_exact(&q, &ssink, "r", 2, Duration::from_secs(20), Duration::from_millis(800)).await;
    let cron = drain_exact(&q, &csink, "r", 2, Duration::from_secs(20), Duration::from_millis(800)).await;
    for h in [h1, h2, h3] {
        let st = h.stop().await.unwrap();
        assert_eq!(st.errors, 0, "{st:?}");
    }
    // windows [0,10) {6}, [5,15) {6,12}, [10,20) {12}
    let mut s: Vec<(i64, i64, i64)> = sliding.iter().map(|v| (v["count"].as_i64().unwrap(), v["first"].as_i64().unwrap(), v["last"].as_i64().unwrap())).collect();
    s.sort();
    assert_eq!(s, vec![(1, 6_000, 6_000), (1, 12_000, 12_000), (2, 6_000, 12_000)]);
    // a's first session closed by the 20 s event (gap 5 s), b's by the clock (a's 20 s)
    let mut ss: Vec<(String, i64)> = sessions.iter().map(|v| (v["user"].as_str().unwrap().to_string(), v["n"].as_i64().unwrap())).collect();
    ss.sort();
    assert_eq!(ss, vec![("a".into(), 2), ("b".into(), 1)]);
    let mut c: Vec<(i64, i64)> = cron.iter().map(|v| (v["count"].as_i64().unwrap(), v["sum"].as_i64().unwrap())).collect();
    c.sort();
    assert_eq!(c, vec![(1, 65_000), (2, 60_000)]);
}

async fn late_run(on_late: OnLate) -> (Vec<Value>, u64) {
    let q = queen();
    let (src, sink) = (uniq("late-src"), uniq("late-sink"));
    let h = Stream::from(q.queue(&src)).window_tumbling(10).event_time(|r| r.number("ts") as i64).idle_flush_ms(0).on_late(on_late)
        .aggregate_count("count").aggregate_min("first", |r| r.number("ts"))
        .to(q.queue(&sink)).run(&q, opts(&uniq("late"))).await.unwrap();
    push_ts(&q, &src, "p", &[1_000, 15_000]).await;
    let mut got = drain(&q, &sink, "r", 1, Duration::from_secs(20)).await; // [0,10) closed, watermark 15 s
    push_ts(&q, &src, "p", &[2_000]).await; // late: below the watermark
    tokio::time::sleep(Duration::from_millis(1500)).await;
    push_ts(&q, &src, "p", &[40_000]).await; // closes [10,20)
    let want = if on_late == OnLate::Include { 2 } else { 1 };
    got.extend(drain_exact(&q, &sink, "r", want, Duration::from_secs(20), Duration::from_millis(800)).await);
    let st = h.stop().await.unwrap();
    assert_eq!(st.errors, 0, "{st:?}");
    (sorted_by(got, "first"), st.late_events)
}

#[tokio::test]
async fn late_data_is_dropped_or_included() {
    let (dropped, n) = late_run(OnLate::Drop).await;
    assert_eq!(dropped, vec![json!({"count": 1, "first": 1000}), json!({"count": 1, "first": 15000})]);
    assert_eq!(n, 1);
    let (included, n) = late_run(OnLate::Include).await;
    assert_eq!(included, vec![json!({"count": 1, "first": 1000}), json!({"count": 1, "first": 2000}), json!({"count": 1, "first": 15000})]);
    assert_eq!(n, 0);
}

#[tokio::test]
async fn allowed_lateness_holds_the_watermark_back() {
    let q = queen();
    let (src, sink) = (uniq("lat-src"), uniq("lat-sink"));
    let h = Stream::from(q.queue(&src)).window_tumbling(10).event_time(|r| r.number("ts") as i64).allowed_lateness(10).idle_flush_ms(0)
        .aggregate_count("count").to(q.queue(&sink)).run(&q, opts(&uniq("lat"))).await.unwrap();
    push_ts(&q, &src, "p", &[1_000, 15_000]).await; // watermark 5 s: [0,10) stays open
    tokio::time::sleep(Duration::from_millis(1200)).await;
    push_ts(&q, &src, "p", &[6_000]).await; // above the watermark (5 s): folded into [0,10)
    tokio::time::sleep(Duration::from_millis(1200)).await;
    push_ts(&q, &src, "p", &[25_000]).await; // watermark 15 s: [0,10) closes with 2
    let got = drain_exact(&q, &sink, "r", 1, Duration::from_secs(20), Duration::from_millis(800)).await;
    h.stop().await.unwrap();
    assert_eq!(got, vec![json!({"count": 2})]);
}

#[tokio::test]
async fn gate_denies_in_place_and_redelivery_keeps_partition_order() {
    let q = queen();
    let (src, sink) = (uniq("gate-src"), uniq("gate-sink"));
    q.queue(&src).configure(json!({"leaseTime": 2})).await.unwrap();
    let items: Vec<PushItem> = (1..=8).map(|i| PushItem::new(json!({"seq": i})).partition("p")).collect();
    q.queue(&src).push(items).await.unwrap();
    // deny seq 1 once (a first-message deny: no cycle at all) and seq 5 once (a partial ack of
    // 1..4 with the lease kept); the bucket counts what it allowed in ctx.state
    let denied1 = Arc::new(AtomicBool::new(false));
    let denied5 = Arc::new(AtomicBool::new(false));
    let (d1, d5) = (denied1.clone(), denied5.clone());
    let query = uniq("gate");
    let h = Stream::from(q.queue(&src))
        .gate(move |v, ctx| {
            let seq = v["seq"].as_i64().unwrap();
            if (seq == 1 && !d1.swap(true, Ordering::SeqCst)) || (seq == 5 && !d5.swap(true, Ordering::SeqCst)) {
                ctx.state.insert("poisoned".into(), json!(true)); // discarded with the deny
                return false;
            }
            let n = ctx.state.get("allowed").and_then(Value::as_i64).unwrap_or(0);
            ctx.state.insert("allowed".into(), json!(n + 1));
            true
        })
        .to(q.queue(&sink))
        .run(&q, opts(&query).batch_size(50))
        .await
        .unwrap();
    let got = drain_exact(&q, &sink, "r", 8, Duration::from_secs(40), Duration::from_millis(1000)).await;
    let server_id = h.server_query_id.clone();
    let st = h.stop().await.unwrap();
    let seqs: Vec<i64> = got.iter().map(|v| v["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, (1..=8).collect::<Vec<_>>(), "each once, in partition order");
    assert!(st.gate_denied >= 2, "{st:?}");
    // the state row: 8 allowed, the denied mutations never committed
    let pid = q.queue(&src).partition("p").fetch(0).await.unwrap();
    assert_eq!(pid.records.len(), 8);
    let ch = q.changed_since(&src, None).await.unwrap();
    let p = ch.partitions.iter().find(|p| p.name == "p").unwrap();
    let state = q.http().post("/streams/v1/state/get", &json!({"query_id": server_id, "partition_id": p.id, "keys": []})).await.unwrap().unwrap();
    let row = state["rows"].as_array().unwrap().iter().find(|r| r["key"] == json!(p.id)).cloned().unwrap_or_else(|| panic!("no row keyed by the partition id {}: {state}", p.id));
    assert_eq!(row["value"], json!({"allowed": 8}), "{state}");
}

#[tokio::test]
async fn token_bucket_gate_admits_capacity_then_paces() {
    let q = queen();
    let (src, sink) = (uniq("tb-src"), uniq("tb-sink"));
    q.queue(&src).configure(json!({"leaseTime": 1})).await.unwrap();
    q.queue(&src).push((1..=5).map(|i| PushItem::new(json!({"seq": i})).partition("p"))).await.unwrap();
    let h = Stream::from(q.queue(&src)).gate(queen_mq::token_bucket_gate(3.0, 2.0, |_| 1.0)).to(q.queue(&sink))
        .run(&q, opts(&uniq("tb"))).await.unwrap();
    let first = drain(&q, &sink, "r", 3, Duration::from_secs(10)).await;
    let rest = drain_exact(&q, &sink, "r", 2, Duration::from_secs(20), Duration::from_millis(500)).await;
    h.stop().await.unwrap();
    let seqs: Vec<i64> = first.iter().chain(rest.iter()).map(|v| v["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, vec![1, 2, 3, 4, 5]);
}

#[tokio::test]
async fn a_restarted_runner_continues_its_state_and_emits_each_window_once() {
    let q = queen();
    let (src, sink) = (uniq("rs-src"), uniq("rs-sink"));
    q.queue(&src).configure(json!({"leaseTime": 2})).await.unwrap();
    let query = uniq("restart");
    let chain = |q: &Queen| {
        Stream::from(q.queue(&src)).window_tumbling(10).event_time(|r| r.number("ts") as i64).idle_flush_ms(0)
            .aggregate_count("count").aggregate_min("first", |r| r.number("ts")).to(q.queue(&sink))
    };
    let run_opts = || RunOptions::new(&query).batch_size(2).max_wait(Duration::from_millis(200));
    // run 1 folds [0,10) partly and is killed; its batches in flight come back with the lease
    push_ts(&q, &src, "p", &[1_000, 2_000, 3_000, 12_000]).await;
    let h = chain(&q).run(&q, run_opts().reset(true)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    h.abort();
    push_ts(&q, &src, "p", &[13_000, 25_000, 31_000, 45_000]).await;
    // runs 2 and 3: killed again after a while, then one that runs to the end
    let h = chain(&q).run(&q, run_opts()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    h.abort();
    let h = chain(&q).run(&q, run_opts()).await.unwrap();
    let got = drain_exact(&q, &sink, "r", 4, Duration::from_secs(30), Duration::from_millis(2500)).await;
    let st = h.stop().await.unwrap();
    assert_eq!(
        sorted_by(got, "first"),
        vec![json!({"count": 3, "first": 1000}), json!({"count": 2, "first": 12000}), json!({"count": 1, "first": 25000}), json!({"count": 1, "first": 31000})],
        "each window once ({st:?})"
    );
}

#[tokio::test]
async fn a_changed_chain_is_refused_until_reset() {
    let q = queen();
    let (src, sink) = (uniq("h-src"), uniq("h-sink"));
    let query = uniq("hash");
    let h = Stream::from(q.queue(&src)).window_tumbling(2).aggregate_count("count").to(q.queue(&sink)).run(&q, opts(&query)).await.unwrap();
    h.stop().await.unwrap();
    let changed = || Stream::from(q.queue(&src)).window_tumbling(3).aggregate_count("count").to(q.queue(&sink));
    let e = changed().run(&q, RunOptions::new(&query)).await.err().expect("a 409");
    assert!(matches!(e, Error::ConfigMismatch(_)), "{e}");
    changed().run(&q, RunOptions::new(&query).reset(true)).await.unwrap().stop().await.unwrap();
}

#[tokio::test]
async fn processing_time_idle_flush_closes_on_the_brokers_safe_time() {
    let q = queen();
    let (src, sink) = (uniq("pt-src"), uniq("pt-sink"));
    let h = Stream::from(q.queue(&src)).window_tumbling(1).idle_flush_ms(200).aggregate_count("count").to(q.queue(&sink))
        .run(&q, opts(&uniq("pt"))).await.unwrap();
    q.queue(&src).partition("a").push((0..3).map(|i| json!({"i": i}))).await.unwrap();
    q.queue(&src).partition("b").push((0..2).map(|i| json!({"i": i}))).await.unwrap();
    // no later message arrives: only the flush can close these windows (createdAt + ≤ 1 s)
    let got = drain_exact(&q, &sink, "r", 2, Duration::from_secs(15), Duration::from_millis(1500)).await;
    let st = h.stop().await.unwrap();
    let total: i64 = got.iter().map(|v| v["count"].as_i64().unwrap()).sum();
    assert_eq!(total, 5, "{got:?}");
    assert!(st.flush_cycles >= 2, "{st:?}");
    // each sink message is on its source partition's name
    let ch = q.changed_since(&sink, None).await.unwrap();
    let mut names: Vec<String> = ch.partitions.iter().map(|p| p.name.clone()).collect();
    names.sort();
    assert_eq!(names, vec!["a".to_string(), "b".to_string()]);
}

#[tokio::test]
async fn a_restarted_runner_flushes_the_open_window_of_a_quiet_partition() {
    let q = queen();
    let (src, sink) = (uniq("rf-src"), uniq("rf-sink"));
    let query = uniq("rf");
    let chain = || Stream::from(q.queue(&src)).window_tumbling(4).event_time(|r| r.number("ts") as i64).idle_flush_ms(300)
        .aggregate_count("count").to(q.queue(&sink));
    push_ts(&q, &src, "p", &[1_000, 2_000]).await;
    let h = chain().run(&q, opts(&query)).await.unwrap();
    // run 1 folds both (the window [0,4) needs 2 s of quiet), then stops before that
    let t0 = std::time::Instant::now();
    while h.stats().messages < 2 && t0.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let st1 = h.stop().await.unwrap();
    assert_eq!((st1.messages, st1.flush_cycles), (2, 0), "{st1:?}");
    // run 2 pops nothing: it knows the partition from the broker (touched_within_ms) and its
    // acked stamp from __wm__, and the idle flush closes the window
    let h = chain().run(&q, RunOptions::new(&query).max_wait(Duration::from_millis(200))).await.unwrap();
    let got = drain_exact(&q, &sink, "r", 1, Duration::from_secs(15), Duration::from_millis(1000)).await;
    let st2 = h.stop().await.unwrap();
    assert_eq!(got, vec![json!({"count": 2})], "{st2:?}");
    assert!(st2.flush_cycles >= 1 && st2.messages == 0, "{st2:?}");
}

#[tokio::test]
async fn gate_acks_source_messages_not_values() {
    let q = queen();
    let (src, sink) = (uniq("gv-src"), uniq("gv-sink"));
    q.queue(&src).configure(json!({"leaseTime": 2})).await.unwrap();
    q.queue(&src).push((1..=4).map(|i| PushItem::new(json!({"seq": i, "skip": false})).partition("p"))
        .chain((5..=6).map(|i| PushItem::new(json!({"seq": i, "skip": true})).partition("p")))).await.unwrap();
    // each message becomes two values; the second value of message 3 is denied once: nothing of
    // message 3 may be emitted or acked in that cycle (the earlier SDK acked it whole and lost
    // the denied copy), and the all-filtered tail (5, 6) is acked, not redelivered forever
    let denied = Arc::new(AtomicBool::new(false));
    let d = denied.clone();
    let h = Stream::from(q.queue(&src))
        .filter(|v| !v["skip"].as_bool().unwrap_or(false))
        .flat_map(|v| vec![json!({"seq": v["seq"], "copy": 0}), json!({"seq": v["seq"], "copy": 1})])
        .gate(move |v, ctx| {
            if v["seq"] == json!(3) && v["copy"] == json!(1) && !d.swap(true, Ordering::SeqCst) {
                return false;
            }
            let n = ctx.state.get("n").and_then(Value::as_i64).unwrap_or(0);
            ctx.state.insert("n".into(), json!(n + 1));
            true
        })
        .to(q.queue(&sink))
        .run(&q, opts(&uniq("gv")))
        .await
        .unwrap();
    let got = drain_exact(&q, &sink, "r", 8, Duration::from_secs(30), Duration::from_millis(3000)).await;
    let st = h.stop().await.unwrap();
    let pairs: Vec<(i64, i64)> = got.iter().map(|v| (v["seq"].as_i64().unwrap(), v["copy"].as_i64().unwrap())).collect();
    assert_eq!(pairs, vec![(1, 0), (1, 1), (2, 0), (2, 1), (3, 0), (3, 1), (4, 0), (4, 1)], "{st:?}");
    assert_eq!(st.messages, 6 + 4, "the first pop (6) and the redelivery of 3..6 (4), nothing more: {st:?}");
}

#[tokio::test]
async fn an_operator_that_panics_commits_nothing_and_the_batch_comes_back() {
    let q = queen();
    let (src, sink) = (uniq("pn-src"), uniq("pn-sink"));
    q.queue(&src).configure(json!({"leaseTime": 2})).await.unwrap();
    q.queue(&src).push((1..=3).map(|i| PushItem::new(json!({"seq": i})).partition("p"))).await.unwrap();
    let once = Arc::new(AtomicBool::new(false));
    let o = once.clone();
    let h = Stream::from(q.queue(&src))
        .map(move |v| {
            if v["seq"] == json!(2) && !o.swap(true, Ordering::SeqCst) {
                panic!("deliberate operator panic (test)");
            }
            v
        })
        .to(q.queue(&sink))
        .run(&q, opts(&uniq("pn")))
        .await
        .unwrap();
    let got = drain_exact(&q, &sink, "r", 3, Duration::from_secs(20), Duration::from_millis(1000)).await;
    let st = h.stop().await.unwrap();
    let seqs: Vec<i64> = got.iter().map(|v| v["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, vec![1, 2, 3], "{st:?}");
    assert!(st.errors >= 1 && st.last_error.as_deref().unwrap_or("").contains("panicked"), "{st:?}");
}
