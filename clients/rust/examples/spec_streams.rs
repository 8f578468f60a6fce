//! The Rust example of the streams spec (shared/spec/streams.txt), as printed there, around a
//! producer and a reader so it shows its result: six orders (amounts 1..6) go to `src`, the
//! chain folds them into 2-second windows, the idle flush (500 ms) closes the last one, and the
//! windows arrive on `sink` as ordinary messages.
//!
//!     QUEEN_URL=http://localhost:6632 cargo run --example spec_streams
//!
//! Prints one line per window and then `total count=6 sum=21` (what `make sdk-rust` checks).
use std::time::{Duration, Instant};

use queen_mq::serde_json::json;
use queen_mq::{Queen, RunOptions, Stream};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("QUEEN_URL").unwrap_or_else(|_| "http://localhost:6632".into());
    let q = Queen::new(&url)?;
    let tag = queen_mq::util::now_ms();
    let src = format!("spec-rust-orders-{tag}");
    let sink = format!("spec-rust-orders-per-2s-{tag}");
    let query = format!("spec-rust-{tag}");

    q.queue(&src).push((1..=6).map(|i| json!({"order": i, "amount": i}))).await?;

    let handle = Stream::from(q.queue(&src))
        .window_tumbling(2)
        .idle_flush_ms(500)
        .aggregate_count("count")
        .aggregate_sum("sum", |r| r.number("amount"))
        .to(q.queue(&sink))
        .run(
            &q,
            RunOptions::new(&query)
                .reset(true)
                .batch_size(50)
                .max_wait(Duration::from_millis(300)),
        )
        .await
        .unwrap();

    let reader = q.queue(&sink).group("spec-reader").batch(100).timeout(Duration::from_millis(500));
    let (mut count, mut sum) = (0i64, 0i64);
    let deadline = Instant::now() + Duration::from_secs(30);
    while count < 6 && Instant::now() < deadline {
        for m in reader.pop().await? {
            println!("window on {}: {}", m.partition, m.data);
            count += m.data["count"].as_i64().unwrap_or(0);
            sum += m.data["sum"].as_i64().unwrap_or(0);
            q.ack(&m, "completed", None).await?;
        }
    }
    let stats = handle.stop().await?;
    println!("cycles={} flush_cycles={} errors={}", stats.cycles, stats.flush_cycles, stats.errors);
    if let Some(e) = stats.last_error {
        println!("last error: {e}");
    }
    println!("total count={count} sum={sum}");
    if count != 6 || sum != 21 {
        return Err(format!("expected count=6 sum=21 on {sink}").into());
    }
    Ok(())
}
