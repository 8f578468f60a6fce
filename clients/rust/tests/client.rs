//! The broker client against the real broker (QUEEN_URL).
mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{drain, queen, uniq, url};
use queen_mq::serde_json::{json, Value};
use queen_mq::{ConsumeOptions, Error, PushItem, Queen, TimerOp};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn push_with_transaction_ids_dedups_and_pop_ack_drains() {
    let q = queen();
    let name = uniq("push");
    let queue = q.queue(&name);
    let r = queue.push(vec![PushItem::new(json!({"n": 1})).transaction_id("t-1"), PushItem::new(json!({"n": 2})).transaction_id("t-2")]).await.unwrap();
    assert!(r.iter().all(|x| x.is_queued()), "{r:?}");
    assert_eq!(r[0].transaction_id, "t-1");
    let again = queue.push(vec![PushItem::new(json!({"n": 1})).transaction_id("t-1")]).await.unwrap();
    assert!(again[0].is_duplicate(), "{again:?}");
    // minted transactionIds are UUIDv7
    let minted = queue.push(vec![json!({"n": 3})]).await.unwrap();
    assert_eq!(&minted[0].transaction_id[14..15], "7");
    let got = drain(&q, &name, "g1", 3, Duration::from_secs(10)).await;
    assert_eq!(got, vec![json!({"n": 1}), json!({"n": 2}), json!({"n": 3})]);
    // acked: the group has nothing more; another group reads everything again
    assert!(q.queue(&name).group("g1").batch(10).wait(false).pop().await.unwrap().is_empty());
    assert_eq!(drain(&q, &name, "g2", 3, Duration::from_secs(10)).await.len(), 3);
}

#[tokio::test]
async fn consume_acks_completed_and_nacks_failed_for_redelivery() {
    let q = queen();
    let name = uniq("consume");
    q.queue(&name).configure(json!({"retryLimit": 5})).await.unwrap();
    q.queue(&name).push((1..=3).map(|i| json!({"n": i}))).await.unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::<i64>::new()));
    let done = Arc::new(std::sync::Mutex::new(std::collections::BTreeSet::<i64>::new()));
    let failed_once = Arc::new(AtomicU32::new(0));
    let (s2, d2, f2) = (seen.clone(), done.clone(), failed_once.clone());
    let h = q.queue(&name).group("workers").batch(10).timeout(Duration::from_millis(300)).consume(
        ConsumeOptions { renew_every: Some(Duration::from_millis(200)), ..Default::default() },
        move |m| {
            let (s, d, f) = (s2.clone(), d2.clone(), f2.clone());
            async move {
                let n = m.data["n"].as_i64().unwrap();
                s.lock().unwrap().push(n);
                if n == 2 && f.fetch_add(1, Ordering::SeqCst) == 0 {
                    return Err("try again");
                }
                d.lock().unwrap().insert(n);
                Ok(())
            }
        },
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while done.lock().unwrap().len() < 3 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    h.stop().await.unwrap();
    assert_eq!(done.lock().unwrap().iter().copied().collect::<Vec<_>>(), vec![1, 2, 3]);
    let s = seen.lock().unwrap().clone();
    assert!(s.iter().filter(|n| **n == 2).count() >= 2, "message 2 comes back after its nack: {s:?}");
    assert!(q.queue(&name).group("workers").batch(10).wait(false).pop().await.unwrap().is_empty());
}

#[tokio::test]
async fn lease_renewal() {
    let q = queen();
    let name = uniq("lease");
    q.queue(&name).configure(json!({"leaseTime": 2})).await.unwrap();
    q.queue(&name).push(vec![json!({"x": 1})]).await.unwrap();
    let ms = q.queue(&name).group("g").batch(1).timeout(Duration::from_secs(5)).pop().await.unwrap();
    let lease = ms[0].lease_id.clone().unwrap();
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(900)).await;
        let ok = q.renew(&lease).await.unwrap();
        assert!(ok, "renew of {lease} refused; popped {:?}", ms[0].raw);
    }
    // 2.7 s past the pop with a 2 s lease: still ours, so the ack lands
    assert!(q.ack(&ms[0], "completed", None).await.unwrap());
    assert!(!q.renew("00000000-0000-7000-8000-000000000000").await.unwrap());
}

#[tokio::test]
async fn transaction_acks_and_pushes_together() {
    let q = queen();
    let (a, b) = (uniq("txa"), uniq("txb"));
    q.queue(&a).push(vec![json!({"step": 1})]).await.unwrap();
    let ms = q.queue(&a).group("g").batch(1).timeout(Duration::from_secs(5)).pop().await.unwrap();
    let r = q.transaction().ack(&ms[0], "completed").push(&q.queue(&b), vec![json!({"step": 2})]).commit().await.unwrap();
    assert!(r.success, "{:?}", r.raw);
    assert!(q.queue(&a).group("g").batch(10).wait(false).pop().await.unwrap().is_empty());
    assert_eq!(drain(&q, &b, "g", 1, Duration::from_secs(10)).await, vec![json!({"step": 2})]);
    // a second commit of the same ack: the lease is gone, the bundle fails whole
    let again = q.transaction().ack(&ms[0], "completed").push(&q.queue(&b), vec![json!({"step": 3})]).commit().await;
    assert!(again.is_err() || !again.unwrap().success);
    assert!(q.queue(&b).group("g").batch(10).wait(false).pop().await.unwrap().is_empty());
}

#[tokio::test]
async fn fetch_and_partitions_changed() {
    let q = queen();
    let name = uniq("fetch");
    q.queue(&name).partition("p1").push((0..3).map(|i| json!({"i": i}))).await.unwrap();
    let f = q.queue(&name).partition("p1").fetch(0).await.unwrap();
    assert_eq!(f.records.iter().map(|r| r.payload.clone()).collect::<Vec<_>>(), vec![json!({"i": 0}), json!({"i": 1}), json!({"i": 2})]);
    assert_eq!((f.high_watermark, f.next_offset), (3, 3));
    let from1 = q.fetch(&name, "p1", 1).await.unwrap();
    assert_eq!(from1.records[0].offset, 1);
    let ch = q.queue(&name).changed_since(None).await.unwrap();
    assert_eq!(ch.partitions.len(), 1);
    let p = &ch.partitions[0];
    assert_eq!((p.name.as_str(), p.last_offset), ("p1", 2));
    let safe = queen_mq::util::parse_iso_us(ch.safe_time.as_deref().unwrap()).unwrap();
    let last = queen_mq::util::parse_iso_us(p.last_write_at.as_deref().unwrap()).unwrap();
    assert!(safe >= last, "safeTime {safe} below lastWriteAt {last}");
    // since after the last write: nothing listed
    let later = q.queue(&name).changed_since(Some(safe + 1)).await.unwrap();
    assert!(later.partitions.is_empty());
    let none = q.changed_since(&uniq("nosuch"), None).await.unwrap();
    assert!(none.partitions.is_empty());
}

#[tokio::test]
async fn keyed_timers_fire_onto_their_queue() {
    let q = queen();
    let name = uniq("timers");
    let t = q.timers();
    let r = t.batch(vec![TimerOp::schedule(&name, "order/1", &json!({"remind": 1}), 300)]).await.unwrap();
    assert_eq!(r[0]["status"], json!("scheduled"), "{r:?}");
    let peek = t.peek(&name, "order/1").await.unwrap();
    assert_ne!(peek.get("found"), Some(&json!(false)), "{peek}");
    let listed = t.list(&name, None, Some(10)).await.unwrap();
    assert_eq!(listed["rows"].as_array().map(|a| a.len()), Some(1), "{listed}");
    assert_eq!(drain(&q, &name, "g", 1, Duration::from_secs(15)).await, vec![json!({"remind": 1})]);
    // scheduled and cancelled before it fires: nothing arrives
    t.schedule(&name, "order/2", &json!({"remind": 2}), 60_000).await.unwrap();
    let c = t.cancel(&name, "order/2").await.unwrap();
    assert_eq!(c.get("status").or_else(|| c.get("results").and_then(|r| r[0].get("status"))), Some(&json!("cancelled")), "{c}");
}

#[tokio::test]
async fn failover_to_the_next_url() {
    let dead = format!("http://127.0.0.1:{}", free_port().await);
    let q = Queen::builder().url(dead).url(url()).retry_base(Duration::from_millis(50)).build().unwrap();
    let name = uniq("failover");
    for i in 0..4 {
        let r = q.queue(&name).push(vec![json!({"i": i})]).await.unwrap();
        assert!(r[0].is_queued());
    }
    // one URL only, down: a network error after the retries
    let only_dead = Queen::builder().url(format!("http://127.0.0.1:{}", free_port().await)).retry_attempts(1).retry_base(Duration::from_millis(10)).build().unwrap();
    assert!(matches!(only_dead.queue(&name).push(vec![json!({})]).await, Err(Error::Network(_))));
}

async fn free_port() -> u16 {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    l.local_addr().unwrap().port()
}

/// A scripted HTTP server: answers each connection's request with the next canned response and
/// records the request heads.
async fn scripted(responses: Vec<String>) -> (String, Arc<std::sync::Mutex<Vec<(std::time::Instant, String)>>>) {
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
                let text = String::from_utf8_lossy(&buf[..n]).to_string();
                if let Some(h) = text.find("\r\n\r\n") {
                    let len = text[..h].lines().find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap())).unwrap_or(0);
                    if n >= h + 4 + len || k == 0 {
                        break;
                    }
                }
                if k == 0 {
                    break;
                }
            }
            s2.lock().unwrap().push((std::time::Instant::now(), String::from_utf8_lossy(&buf[..n]).to_string()));
            sock.write_all(resp.as_bytes()).await.unwrap();
            sock.shutdown().await.ok();
        }
    });
    (addr, seen)
}

fn resp(status: &str, extra: &str, body: &str) -> String {
    format!("HTTP/1.1 {status}\r\ncontent-type: application/json\r\nconnection: close\r\n{extra}content-length: {}\r\n\r\n{body}", body.len())
}

#[tokio::test]
async fn retry_after_is_honoured_and_the_bearer_token_sent() {
    let ok = r#"[{"index":0,"status":"queued","transaction_id":"t"}]"#;
    let (addr, seen) = scripted(vec![
        resp("429 Too Many Requests", "retry-after: 0.4\r\n", r#"{"error":"slow down","code":"rate_limited"}"#),
        resp("503 Service Unavailable", "", r#"{"error":"db down","code":"database_unavailable"}"#),
        resp("201 Created", "", ok),
    ])
    .await;
    let q = Queen::builder().url(addr).bearer_token("tok-123").retry_base(Duration::from_millis(100)).build().unwrap();
    let r = q.queue("x").push(vec![PushItem::new(json!({})).transaction_id("t")]).await.unwrap();
    assert!(r[0].is_queued());
    let s = seen.lock().unwrap().clone();
    assert_eq!(s.len(), 3);
    assert!(s.iter().all(|(_, req)| req.to_ascii_lowercase().contains("authorization: bearer tok-123")));
    let waited = s[1].0 - s[0].0;
    assert!(waited >= Duration::from_millis(380), "Retry-After 0.4 s, waited {waited:?}");
    // every retry carries the same transactionId: the broker deduplicates a retried push
    assert!(s.iter().all(|(_, req)| req.contains(r#""transactionId":"t""#)));
}

#[tokio::test]
async fn a_4xx_is_not_retried_and_keeps_its_code() {
    let (addr, seen) = scripted(vec![resp("400 Bad Request", "", r#"{"error":"kv_expiry_not_specified","reason":"no_expiry","detail":"say ttlSeconds or forever"}"#)]).await;
    let q = Queen::builder().url(addr).build().unwrap();
    let e = q.kv().put("ns", "k", json!(1), None).await.unwrap_err();
    assert_eq!(e.status(), Some(400));
    assert_eq!(e.code(), Some("kv_expiry_not_specified"));
    assert_eq!(seen.lock().unwrap().len(), 1);
}

/// KV and locks on the 2.x wire need POST /api/v1/kv and /api/v1/locks (the kv branch). On a
/// broker without them this says so and checks only that the refusal is a clean 404.
#[tokio::test]
async fn kv_and_locks_when_the_broker_has_them() {
    let q = queen();
    let ns = uniq("ns");
    match q.kv().put(&ns, "a", json!({"v": 1}), Some(60)).await {
        Err(e) if e.status() == Some(404) => {
            eprintln!("UNTESTED: POST /api/v1/kv is not on this broker (404)");
        }
        Err(e) => panic!("kv put: {e}"),
        Ok(r) => {
            assert_eq!(r["applied"], json!(true), "{r}");
            let g = q.kv().get(&ns, "a").await.unwrap();
            assert_eq!((g["found"].clone(), g["value"].clone()), (json!(true), json!({"v": 1})));
            let i = q.kv().incr(&ns, "c", 2, Some(60)).await.unwrap();
            assert_eq!(i["applied"], json!(true), "{i}");
            let absent = q.kv().delete(&ns, "nope").await.unwrap();
            assert_eq!(absent["applied"], json!(false));
        }
    }
    match q.locks().acquire(&uniq("lock"), 30, None).await {
        Err(e) if e.status() == Some(404) => eprintln!("UNTESTED: POST /api/v1/locks is not on this broker (404)"),
        Err(e) => panic!("lock acquire: {e}"),
        Ok(p) => {
            let mut p = p.expect("a fresh lock is free");
            assert!(q.locks().acquire(&p.name, 30, None).await.unwrap().is_none(), "held");
            assert!(q.locks().renew(&mut p, 30).await.unwrap());
            assert!(q.locks().release(&p).await.unwrap());
        }
    }
    let _: Option<Value> = None;
}

#[tokio::test]
async fn consumer_group_seek_and_delete() {
    let q = queen();
    let name = uniq("groups");
    let g = uniq("group"); // DELETE of a group is for every queue: a name no other test uses
    q.queue(&name).push((0..3).map(|i| json!({"i": i}))).await.unwrap();
    // a first pop registers the group; then seek it to the end: nothing left to read
    let first = q.queue(&name).group(&g).batch(1).timeout(Duration::from_secs(5)).pop().await.unwrap();
    q.ack(&first[0], "completed", None).await.unwrap();
    q.seek(&g, &name, json!({"toEnd": true})).await.unwrap();
    assert!(q.queue(&name).group(&g).batch(10).wait(false).pop().await.unwrap().is_empty());
    let groups = q.consumer_groups().await.unwrap().unwrap();
    assert!(groups.to_string().contains(&format!("\"{g}\"")), "{groups}");
    // deleted: a new group of the same name starts from the beginning again
    q.delete_consumer_group(&g, true).await.unwrap();
    assert_eq!(drain(&q, &name, &g, 3, Duration::from_secs(10)).await.len(), 3);
}

/// The riders cannot be exercised against a broker that has no `kv`/`timers` rider yet, so
/// their wire shape is checked against a scripted server: top-level siblings of `operations`,
/// the lock guard first in `kv`, `requiredLeases` from the acks, and the kv_precondition answer
/// read as a verdict, not an error.
#[tokio::test]
async fn transaction_riders_on_the_wire() {
    let answer = r#"{"success":false,"reason":"kv_precondition","failedIndex":2,"kvReason":"exists","results":[]}"#;
    let (addr, seen) = scripted(vec![resp("200 OK", "", answer)]).await;
    let q = Queen::builder().url(addr).build().unwrap();
    let m = queen_mq::Message::from_value(json!({"id": "i1", "transactionId": "t1", "partitionId": "p-1", "leaseId": "L1", "consumerGroup": "g", "data": {}})).unwrap();
    let permit = queen_mq::LockPermit { name: "job".into(), slot: Some(0), token: json!(7), owner: "me".into(), guard: Some(json!({"op": "check", "ns": "queen-locks", "key": "job#0", "expect": 7, "required": true})) };
    let mut tx = q.transaction().ack(&m, "completed").push(&q.queue("out"), vec![json!({"a": 1})]).once("dedup", "order-1", Some(3600));
    tx.timers().op(TimerOp::schedule("later", "k1", &json!({"x": 1}), 5000));
    let r = tx.guard(&permit).commit().await.unwrap();
    assert!(!r.success);
    assert_eq!((r.reason.as_deref(), r.failed_index), (Some("kv_precondition"), Some(2)));
    let req = seen.lock().unwrap()[0].1.clone();
    let body: Value = queen_mq::serde_json::from_str(&req[req.find("\r\n\r\n").unwrap() + 4..]).unwrap();
    assert_eq!(body["requiredLeases"], json!(["L1"]));
    assert_eq!(body["operations"][0], json!({"type": "ack", "transactionId": "t1", "partitionId": "p-1", "status": "completed", "consumerGroup": "g", "leaseId": "L1"}));
    assert_eq!(body["operations"][1]["type"], json!("push"));
    assert_eq!(body["kv"][0]["op"], json!("check"), "the guard goes first: {body}");
    assert_eq!(body["kv"][1], json!({"op": "putIfAbsent", "ns": "dedup", "key": "order-1", "value": true, "ttlSeconds": 3600, "required": true}));
    assert_eq!(body["timers"][0]["op"], json!("schedule"));
    assert_eq!(body["timers"][0]["payload"], json!(queen_mq::util::base64_encode(br#"{"x":1}"#)));
    // getPrefix is refused client-side, before anything is sent
    let mut tx = q.transaction();
    tx.kv().op(queen_mq::KvOp::get_prefix("ns", "a", None, None));
    assert!(matches!(tx.commit().await, Err(Error::Invalid(_))));
}

#[tokio::test]
async fn binary_push_qpb1() {
    let q = Queen::builder().url(url()).binary_push(true).build().unwrap();
    let name = uniq("qpb1");
    let items = vec![
        PushItem::new(json!({"n": 1, "s": "dünn"})).partition("a").transaction_id("b-1"),
        PushItem::new(json!({"n": 2})).partition("a").transaction_id("b-2"),
        PushItem::new(json!([1, 2, 3])).partition("b"),
    ];
    let r = q.queue(&name).push(items).await.unwrap();
    assert!(r.iter().all(|x| x.is_queued()), "{r:?}");
    let again = q.queue(&name).push(vec![PushItem::new(json!({"n": 1})).partition("a").transaction_id("b-1")]).await.unwrap();
    assert!(again[0].is_duplicate(), "{again:?}");
    let a = q.fetch(&name, "a", 0).await.unwrap();
    assert_eq!(a.records.iter().map(|r| (r.transaction_id.clone(), r.payload.clone())).collect::<Vec<_>>(),
        vec![("b-1".to_string(), json!({"n": 1, "s": "dünn"})), ("b-2".to_string(), json!({"n": 2}))]);
    assert_eq!(q.fetch(&name, "b", 0).await.unwrap().records[0].payload, json!([1, 2, 3]));
    // a traceId cannot ride in QPB1: that push goes as JSON and still lands
    let t = q.queue(&name).push(vec![PushItem::new(json!({"n": 9})).trace_id("0190c2d4-0000-4000-8000-000000000001")]).await.unwrap();
    assert!(t[0].is_queued());
}

#[tokio::test]
async fn qpb1_bytes_and_content_type() {
    let items = vec![json!({"queue": "q", "partition": "p", "payload": {"a": 1}, "transactionId": "t"}), json!({"queue": "q", "partition": "p", "payload": 2, "transactionId": "u"})];
    let b = queen_mq::client::encode_qpb1(&items).unwrap();
    let mut want = b"QPB1\x04\x01\x00\x00\x00\x01\x00q\x01\x00p\x02\x00\x00\x00".to_vec();
    want.extend_from_slice(b"\x01\x00t\x07\x00\x00\x00{\"a\":1}\x01\x00u\x01\x00\x00\x002");
    assert_eq!(b, want);
    assert!(queen_mq::client::encode_qpb1(&[json!({"queue": "q", "partition": "p", "payload": 1, "transactionId": "t", "traceId": "x"})]).is_none());
    let (addr, seen) = scripted(vec![resp("201 Created", "", r#"[{"index":0,"status":"queued","transaction_id":"t"}]"#)]).await;
    let q = Queen::builder().url(addr).binary_push(true).build().unwrap();
    q.queue("q").push(vec![PushItem::new(json!({})).transaction_id("t")]).await.unwrap();
    let req = seen.lock().unwrap()[0].1.to_ascii_lowercase();
    assert!(req.contains("content-type: application/x-queen-push") && req.contains("qpb1"), "{req}");
}
