//! Every shared vector of clients/vectors/config_hash.json (made from the real 2.x Python SDK)
//! rebuilt as a Rust chain: the canonical text and the hash must be the Python SDK's.
use queen_mq::serde_json::{self, Value};
use queen_mq::{OnLate, Queen, Stream};

fn build(q: &Queen, steps: &[Value]) -> Stream {
    let mut s = Stream::from(q.queue("src"));
    for st in steps {
        let a = st.get("args").cloned().unwrap_or(Value::Null);
        let u = |k: &str| a.get(k).and_then(Value::as_u64);
        let window_opts = |mut s: Stream| {
            if let Some(g) = u("gracePeriod") {
                s = s.grace_period(g);
            }
            if let Some(i) = u("idleFlushMs") {
                s = s.idle_flush_ms(i);
            }
            if a.get("eventTime").and_then(Value::as_bool) == Some(true) {
                s = s.event_time(|r| r.number("ts") as i64);
            }
            if let Some(l) = u("allowedLateness") {
                s = s.allowed_lateness(l);
            }
            match a.get("onLate").and_then(Value::as_str) {
                Some("include") => s = s.on_late(OnLate::Include),
                Some("drop") => s = s.on_late(OnLate::Drop),
                _ => {}
            }
            s
        };
        s = match st["op"].as_str().unwrap() {
            "map" => s.map(|v| v),
            "filter" => s.filter(|_| true),
            "flatMap" => s.flat_map(|v| vec![v]),
            "keyBy" => s.key_by(|_| "k".into()),
            "gate" => s.gate(|_, _| true),
            "foreach" => s.foreach(|_, _| {}),
            "to" => s.to(q.queue(a["queue"].as_str().unwrap())),
            "windowTumbling" => window_opts(s.window_tumbling(u("seconds").unwrap())),
            "windowSliding" => window_opts(s.window_sliding(u("size").unwrap(), u("slide").unwrap())),
            "windowSession" => window_opts(s.window_session(u("gap").unwrap())),
            "windowCron" => window_opts(s.window_cron(a["every"].as_str().unwrap())),
            "reduce" => s.reduce(a.get("initial").cloned().unwrap_or(Value::Null), |acc, _| acc),
            "aggregate" => {
                for f in a["fields"].as_array().unwrap() {
                    let name = f.as_str().unwrap();
                    s = match name {
                        "count" => s.aggregate_count(name),
                        "min" => s.aggregate_min(name, |r| r.number("x")),
                        "max" => s.aggregate_max(name, |r| r.number("x")),
                        "avg" => s.aggregate_avg(name, |r| r.number("x")),
                        _ => s.aggregate_sum(name, |r| r.number("x")),
                    };
                }
                s
            }
            other => panic!("vector step {other} unknown to this test"),
        };
    }
    s
}

#[test]
fn every_shared_vector_matches_the_python_sdk() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../vectors/config_hash.json")).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let q = Queen::new("http://127.0.0.1:9").unwrap();
    let vectors = doc["vectors"].as_array().unwrap();
    assert!(vectors.len() >= 9, "the vectors file lost entries");
    for v in vectors {
        let s = build(&q, v["steps"].as_array().unwrap());
        assert_eq!(s.canonical_config(), v["canonical"].as_str().unwrap(), "canonical of {}", v["steps"]);
        assert_eq!(s.config_hash(), v["config_hash"].as_str().unwrap(), "hash of {}", v["steps"]);
    }
}

#[test]
fn the_worked_example_of_the_reference() {
    let q = Queen::new("http://127.0.0.1:9").unwrap();
    let s = Stream::from(q.queue("src")).window_tumbling(2).aggregate_count("count").aggregate_sum("sum", |r| r.number("amount")).to(q.queue("sink"));
    assert_eq!(s.config_hash(), "d5996a8234f7f9b8b6c9aabe1c2c2d3a1b37fd688933dfe3efe3aa9a01da8822");
}

#[test]
fn chain_rules_are_checked_when_built() {
    let q = Queen::new("http://127.0.0.1:9").unwrap();
    let src = || Stream::from(q.queue("src"));
    let err = |s: Stream| s.build().unwrap_err().to_string();
    assert!(err(src().gate(|_, _| true).gate(|_, _| true)).contains("at most one .gate()"));
    assert!(err(src().window_tumbling(1).aggregate_count("n").gate(|_, _| true)).contains("mutually exclusive"));
    assert!(err(src().gate(|_, _| true).window_tumbling(1)).contains("mutually exclusive"));
    assert!(err(src().gate(|_, _| true).key_by(|_| "k".into())).contains("before"));
    assert!(err(src().aggregate_count("n")).contains("requires a preceding window"));
    assert!(err(src().window_tumbling(1).window_sliding(2, 1)).contains("only one window"));
    assert!(err(src().idle_flush_ms(10)).contains("must follow a window"));
    assert!(err(src().window_sliding(10, 3)).contains("multiple"));
    assert!(err(src().window_cron("fortnight")).contains("every must be"));
    assert!(err(src().window_session(5).to(q.queue("x"))).contains("requires a downstream"));
    assert!(err(src().to(q.queue("x")).map(|v| v)).contains("nothing may follow"));
    assert!(err(src().window_tumbling(1).aggregate_count("__x")).contains("reserved"));
    assert!(src().key_by(|_| "k".into()).gate(|_, _| true).to(q.queue("x")).build().is_ok());
    assert!(src().window_tumbling(2).idle_flush_ms(500).aggregate_count("count").to(q.queue("x")).build().is_ok());
}
