//! `conflation(true)` against the real broker (QUEEN_URL): the newest record of each partition,
//! the consume loop, the broker's 400s as `Error::Http` codes, the one-time conflict warning; and
//! against a scripted server that ignores the flag (`Error::ConflationUnsupported`, terminal for
//! consume).
mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::{queen, uniq};
use queen_mq::serde_json::{json, Value};
use queen_mq::{ConsumeOptions, Error, Message, PushItem, Queen};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn push_n(q: &Queen, name: &str, partition: &str, from: i64, to: i64) {
    let items: Vec<PushItem> = (from..to).map(|v| PushItem::new(json!({"v": v})).partition(partition)).collect();
    let r = q.queue(name).push(items).await.unwrap();
    assert!(r.iter().all(|x| x.is_queued()), "{r:?}");
}

fn by_partition(msgs: &[Message]) -> BTreeMap<String, i64> {
    msgs.iter().map(|m| (m.partition.clone(), m.data["v"].as_i64().unwrap())).collect()
}

fn map(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[tokio::test]
async fn conflating_pop_gives_the_newest_record_of_each_partition() {
    let q = queen();
    let name = uniq("cf");
    push_n(&q, &name, "a", 0, 5).await;
    push_n(&q, &name, "b", 0, 3).await;
    let latest = q.queue(&name).group("g").conflation(true).batch(10).partitions(10).wait(false);
    let msgs = latest.pop().await.unwrap();
    assert_eq!(by_partition(&msgs), map(&[("a", 4), ("b", 2)]));
    for m in &msgs {
        assert!(q.ack(m, "completed", None).await.unwrap());
    }
    // an empty conflating pop is Ok(empty): the broker echoes it on a 200 body
    assert!(latest.pop().await.unwrap().is_empty());
    assert!(q.queue(&name).group("g").conflation(true).timeout(Duration::from_millis(300)).pop().await.unwrap().is_empty(), "a timed-out long poll too");
    // an ordinary group still sees every record
    assert_eq!(q.queue(&name).group("plain").batch(10).partitions(10).wait(false).pop().await.unwrap().len(), 8);
}

#[tokio::test]
async fn consume_with_conflation_handles_the_newest_of_each_partition() {
    let q = queen();
    let name = uniq("cfc");
    push_n(&q, &name, "a", 0, 4).await;
    push_n(&q, &name, "b", 0, 6).await;
    push_n(&q, &name, "c", 0, 1).await;
    let seen = Arc::new(std::sync::Mutex::new(Vec::<(String, i64)>::new()));
    let s2 = seen.clone();
    let h = q.queue(&name).group("workers").conflation(true).batch(10).partitions(10).timeout(Duration::from_millis(300)).consume(
        ConsumeOptions { limit: Some(3), ..Default::default() },
        move |m| {
            let s = s2.clone();
            async move {
                s.lock().unwrap().push((m.partition.clone(), m.data["v"].as_i64().unwrap()));
                Ok::<(), String>(())
            }
        },
    );
    let handled = tokio::time::timeout(Duration::from_secs(30), h.join()).await.expect("the loop ends with its limit").unwrap();
    assert_eq!(handled, 3);
    let mut got = seen.lock().unwrap().clone();
    got.sort();
    assert_eq!(got, vec![("a".into(), 3), ("b".into(), 5), ("c".into(), 0)]);
    // acked by the loop: only newer pushes come, newest-only again
    push_n(&q, &name, "a", 10, 13).await;
    let again = q.queue(&name).group("workers").conflation(true).batch(10).partitions(10).wait(false).pop().await.unwrap();
    assert_eq!(by_partition(&again), map(&[("a", 12)]));
}

#[tokio::test]
async fn the_conflation_refusals_are_http_400s_with_their_codes_and_stop_consume() {
    let q = queen();
    let name = uniq("cf400");
    push_n(&q, &name, "a", 0, 2).await;
    let e = q.queue(&name).conflation(true).wait(false).pop().await.unwrap_err();
    assert!(matches!(e, Error::Http { status: 400, .. }), "{e:?}");
    assert_eq!(e.code(), Some("conflation_needs_group"));
    let e = q.queue(&name).group("g").conflation(true).auto_ack(true).wait(false).pop().await.unwrap_err();
    assert_eq!((e.status(), e.code()), (Some(400), Some("conflation_with_auto_ack")));
    // consume: terminal, the loop ends with the error (not retried forever)
    let h = q.queue(&name).conflation(true).timeout(Duration::from_millis(300)).consume(ConsumeOptions::default(), |_m| async { Ok::<(), String>(()) });
    let r = tokio::time::timeout(Duration::from_secs(10), h.join()).await.expect("the loop stops on the 400");
    assert_eq!(r.unwrap_err().code(), Some("conflation_needs_group"));
    // nothing was touched: the group's first real pop stores the policy and gets the newest
    let m = q.queue(&name).group("g").conflation(true).wait(false).pop().await.unwrap();
    assert_eq!(m[0].data["v"], json!(1));
}

#[tokio::test]
async fn a_conflict_applies_the_stored_policy_and_warns() {
    let q = queen();
    let name = uniq("cfx");
    push_n(&q, &name, "a", 0, 3).await;
    // the group's first pop declares the ordinary policy: stored as not conflating
    let first = q.queue(&name).group("g").wait(false).pop().await.unwrap();
    assert_eq!(first[0].data["v"], json!(0));
    q.ack(&first[0], "completed", None).await.unwrap();
    let m = q.queue(&name).group("g").conflation(true).wait(false).pop().await.unwrap();
    assert_eq!(m[0].data["v"], json!(1), "the stored (ordinary) policy applied, no error");
    assert!(queen_mq::client::conflation_conflict_warned());
    q.ack(&m[0], "completed", None).await.unwrap();
    let m2 = q.queue(&name).group("g").conflation(true).wait(false).pop().await.unwrap();
    assert_eq!(m2[0].data["v"], json!(2));
}

/// A server that ignores the flag: answers each connection with the next canned response and
/// records the request lines.
async fn ignoring_server(responses: Vec<String>) -> (String, Arc<std::sync::Mutex<Vec<String>>>) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = format!("http://{}", l.local_addr().unwrap());
    let seen = Arc::new(std::sync::Mutex::new(vec![]));
    let s2 = seen.clone();
    tokio::spawn(async move {
        for resp in responses {
            let (mut sock, _) = l.accept().await.unwrap();
            let mut buf = vec![0u8; 65536];
            let mut n = 0;
            loop {
                let k = sock.read(&mut buf[n..]).await.unwrap();
                n += k;
                if k == 0 || String::from_utf8_lossy(&buf[..n]).contains("\r\n\r\n") {
                    break;
                }
            }
            let head = String::from_utf8_lossy(&buf[..n]).lines().next().unwrap_or("").to_string();
            s2.lock().unwrap().push(head);
            sock.write_all(resp.as_bytes()).await.unwrap();
            sock.shutdown().await.ok();
        }
    });
    (addr, seen)
}

fn resp(status: &str, body: &str) -> String {
    format!("HTTP/1.1 {status}\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}", body.len())
}

#[tokio::test]
async fn an_answer_without_the_echo_is_conflation_unsupported_and_ends_consume() {
    let msg: Value = json!({"success": true, "messages": [{"id": "m1", "transactionId": "t1", "partitionId": "p1", "leaseId": "l1",
        "partition": "a", "consumerGroup": "g", "data": {"v": 1}}]});
    let body = msg.to_string();
    let (url, seen) = ignoring_server(vec![
        resp("200 OK", &body),
        resp("204 No Content", ""),
        resp("200 OK", &body),
        resp("204 No Content", ""),
        resp("200 OK", &body),
    ])
    .await;
    let q = Queen::builder().url(url).retry_attempts(0).build().unwrap();
    let e = q.queue("q").group("g").conflation(true).wait(false).pop().await.unwrap_err();
    assert!(matches!(e, Error::ConflationUnsupported { status: 200 }), "{e:?}");
    assert_eq!(e.code(), Some("conflation_unsupported"));
    let e = q.queue("q").group("g").conflation(true).wait(false).pop().await.unwrap_err();
    assert!(matches!(e, Error::ConflationUnsupported { status: 204 }), "a 204 has no echo either: {e:?}");
    // without conflation the same answers are ordinary
    assert_eq!(q.queue("q").group("g").wait(false).pop().await.unwrap().len(), 1);
    assert!(q.queue("q").group("g").wait(false).pop().await.unwrap().is_empty());
    // consume: the first poll ends the loop with the error; the handler never runs
    let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let r2 = ran.clone();
    let h = q.queue("q").group("g").conflation(true).wait(false).consume(ConsumeOptions::default(), move |_m| {
        r2.store(true, std::sync::atomic::Ordering::SeqCst);
        async { Ok::<(), String>(()) }
    });
    let r = tokio::time::timeout(Duration::from_secs(10), h.join()).await.expect("terminal, not retried");
    assert!(matches!(r, Err(Error::ConflationUnsupported { .. })), "{r:?}");
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 5, "{seen:?}");
    assert!(seen[0].ends_with("&conflation=true HTTP/1.1"), "conflation is the last parameter: {}", seen[0]);
    assert!(!seen[2].contains("conflation"), "{}", seen[2]);
}
