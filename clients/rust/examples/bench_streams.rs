//! The Rust streams bench (make bench): the spec example's chain (tumbling 2 s, idle flush
//! 500 ms, count + sum, to a sink) over a backlog spread on 16 partitions, once with batch 50 and
//! once with batch 500. Figure: source records/s = records / time until the runner has
//! committed cycles for all of them (the sink writes and the acks are in those cycles).
//!
//!     QUEEN_URL=... BENCH_RECORDS=40000 cargo run --release --example bench_streams
use std::time::{Duration, Instant};

use queen_mq::serde_json::json;
use queen_mq::{PushItem, Queen, RunOptions, Stream};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("QUEEN_URL").unwrap_or_else(|_| "http://localhost:6632".into());
    let n: usize = std::env::var("BENCH_RECORDS").ok().and_then(|v| v.parse().ok()).unwrap_or(40_000);
    let q = Queen::new(&url)?;
    for batch in [50u32, 500] {
        let tag = queen_mq::util::now_ms();
        let (src, sink, query) = (format!("bench-rs-src-{batch}-{tag}"), format!("bench-rs-sink-{batch}-{tag}"), format!("bench-rs-{batch}-{tag}"));
        let t0 = Instant::now();
        let mut items = vec![];
        for i in 0..n {
            items.push(PushItem::new(json!({"i": i, "amount": i % 10})).partition(&format!("p{:02}", i % 16)));
            if items.len() == 1000 {
                q.queue(&src).push(std::mem::take(&mut items)).await?;
            }
        }
        q.queue(&src).push(items).await?;
        let push_s = t0.elapsed().as_secs_f64();
        let t1 = Instant::now();
        let handle = Stream::from(q.queue(&src))
            .window_tumbling(2)
            .idle_flush_ms(500)
            .aggregate_count("count")
            .aggregate_sum("sum", |r| r.number("amount"))
            .to(q.queue(&sink))
            .run(&q, RunOptions::new(&query).reset(true).batch_size(batch).max_partitions(16).max_wait(Duration::from_millis(300)))
            .await?;
        let deadline = Instant::now() + Duration::from_secs(600);
        while (handle.stats().messages as usize) < n && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let secs = t1.elapsed().as_secs_f64();
        let st = handle.stop().await?;
        if (st.messages as usize) < n {
            return Err(format!("batch {batch}: only {} of {n} records consumed in 600 s", st.messages).into());
        }
        println!(
            "rust streams bench: 16 partitions, batch {batch}: {n} source records in {secs:.2} s = {:.0} records/s ({} cycles, {} sink pushes, {} errors; backlog pushed at {:.0} records/s)",
            n as f64 / secs,
            st.cycles,
            st.push_items,
            st.errors,
            n as f64 / push_s
        );
    }
    Ok(())
}
