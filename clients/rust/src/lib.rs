//! queen-mq: the Rust client of the queen broker (2.x wire) and its stream runtime.
//!
//! ```no_run
//! # async fn demo() -> queen_mq::Result<()> {
//! use queen_mq::{Queen, Stream, RunOptions};
//! use std::time::Duration;
//! let q = Queen::new("http://localhost:6632")?;
//! q.queue("orders").push(vec![serde_json::json!({"amount": 3})]).await?;
//! let handle = Stream::from(q.queue("orders"))
//!     .window_tumbling(2)
//!     .idle_flush_ms(500)
//!     .aggregate_count("count")
//!     .aggregate_sum("sum", |r| r.number("amount"))
//!     .to(q.queue("orders.per_2s"))
//!     .run(&q, RunOptions::new("orders.per_2s").batch_size(50).max_wait(Duration::from_millis(300)))
//!     .await?;
//! handle.stop().await?;
//! # Ok(()) }
//! ```
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

pub mod client;
pub mod error;
pub mod http;
pub mod kv;
pub mod locks;
pub mod streams;
pub mod timers;
pub mod util;

pub use client::{ConsumeOptions, ConsumerHandle, Message, PushItem, PushResult, Queen, QueenBuilder, QueueRef, Transaction, TxResult};
pub use error::{Error, Result};
pub use kv::{Kv, KvOp};
pub use locks::{LockPermit, Locks};
pub use streams::{config_hash, token_bucket_gate, EventTime, GateCtx, OnLate, Record, RunOptions, Stream, StreamHandle};
pub use timers::{TimerOp, Timers};
pub use serde_json;
