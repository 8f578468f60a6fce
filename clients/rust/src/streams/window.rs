//! The pure part of a cycle: placing events in windows, folding them, deciding what closes.
//! No I/O here, so every rule is unit-tested with deterministic times.
//!
//! State rows are the 2.x SDK's, so a query can move between runtimes: key
//! `"<operatorTag>\x1f<windowStartISO>\x1f<userKey>"`, value `{acc, windowStart, windowEnd}`;
//! open sessions `"sess:<gap>\x1fopen\x1f<userKey>"` → `{acc, sessionStart, lastEventTime}`.
use serde_json::{json, Map, Value};

use super::{AggKind, Op, Record, WindowKind, WindowSpec};
use crate::util::{iso_ms, parse_iso_ms};

pub const SEP: char = '\u{1f}';
pub const WATERMARK_KEY: &str = "__wm__";
const WEEK_OFFSET_MS: i64 = 4 * 86_400_000; // 1970-01-01 was a Thursday: weeks start Monday

pub fn every_ms(every: &str) -> Option<i64> {
    Some(match every {
        "second" => 1000,
        "minute" => 60_000,
        "hour" => 3_600_000,
        "day" => 86_400_000,
        "week" => 7 * 86_400_000,
        _ => return None,
    })
}

/// The windows `[start, end)` an event at `ts` belongs to (session windows: none here).
pub fn windows_for(kind: &WindowKind, ts: i64) -> Vec<(i64, i64)> {
    match kind {
        WindowKind::Tumbling { seconds } => {
            let w = *seconds as i64 * 1000;
            let s = ts.div_euclid(w) * w;
            vec![(s, s + w)]
        }
        WindowKind::Sliding { size, slide } => {
            let (size, slide) = (*size as i64 * 1000, *slide as i64 * 1000);
            let latest = ts.div_euclid(slide) * slide;
            let n = size / slide;
            let mut out = vec![];
            for i in 0..n {
                let s = latest - i * slide;
                if ts >= s && ts < s + size {
                    out.push((s, s + size));
                }
            }
            out
        }
        WindowKind::Cron { every } => {
            let w = every_ms(every).unwrap_or(1000);
            let s = if every == "week" { (ts - WEEK_OFFSET_MS).div_euclid(w) * w + WEEK_OFFSET_MS } else { ts.div_euclid(w) * w };
            vec![(s, s + w)]
        }
        WindowKind::Session { .. } => vec![],
    }
}

/// One event after the pre-window operators.
#[derive(Clone, Debug)]
pub struct Env {
    pub key: String,
    pub value: Value,
    pub ts: i64,
}

/// A closed window (or session) leaving the reducer.
#[derive(Clone, Debug, PartialEq)]
pub struct Emit {
    pub key: String,
    pub window_start: i64,
    pub window_end: i64,
    pub window_key: String,
    pub value: Value,
}

pub fn state_key(tag: &str, window_key: &str, user_key: &str) -> String {
    format!("{tag}{SEP}{window_key}{SEP}{user_key}")
}

pub fn session_key(tag: &str, user_key: &str) -> String {
    format!("{tag}{SEP}open{SEP}{user_key}")
}

/// The event time of one value: the extractor's, else the message's createdAt (ms).
pub fn event_ts(spec: &WindowSpec, value: &Value, created_at_ms: Option<i64>) -> Option<i64> {
    match &spec.event_time {
        Some(f) => f(&Record(value)).to_ms(),
        None => created_at_ms,
    }
}

fn num(v: &Value) -> Option<f64> {
    v.as_f64()
}

fn jnum(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

/// The reducer's starting accumulator.
pub(crate) fn initial(reducer: &Op) -> Value {
    match reducer {
        Op::Reduce { initial, .. } => initial.clone().unwrap_or(Value::Null),
        Op::Aggregate(fields) => {
            let mut m = Map::new();
            for f in fields {
                match f.kind {
                    AggKind::Min | AggKind::Max => {
                        m.insert(f.name.clone(), Value::Null);
                    }
                    AggKind::Avg => {
                        let (s, c) = avg_keys(&f.name);
                        m.insert(s, json!(0));
                        m.insert(c, json!(0));
                        m.insert(f.name.clone(), json!(0));
                    }
                    _ => {
                        m.insert(f.name.clone(), json!(0));
                    }
                }
            }
            Value::Object(m)
        }
        _ => Value::Null,
    }
}

/// The hidden running fields of an average (the Python SDK's names for the field `avg`).
pub fn avg_keys(name: &str) -> (String, String) {
    if name == "avg" {
        ("__avg_sum".into(), "__avg_count".into())
    } else {
        (format!("__{name}_sum"), format!("__{name}_count"))
    }
}

/// Fold one value into an accumulator.
pub(crate) fn step(reducer: &Op, acc: Value, value: &Value) -> Value {
    match reducer {
        Op::Reduce { f, .. } => f(acc, value),
        Op::Aggregate(fields) => {
            let mut m = match acc {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            let r = Record(value);
            for f in fields {
                let x = f.extract.as_ref().map(|e| e(&r));
                let cur = m.get(&f.name).and_then(num);
                match f.kind {
                    AggKind::Count => {
                        m.insert(f.name.clone(), jnum(cur.unwrap_or(0.0) + 1.0));
                    }
                    AggKind::Sum => {
                        let x = x.filter(|x| x.is_finite()).unwrap_or(0.0);
                        m.insert(f.name.clone(), jnum(cur.unwrap_or(0.0) + x));
                    }
                    AggKind::Min | AggKind::Max => {
                        if let Some(x) = x.filter(|x| x.is_finite()) {
                            let n = match (cur, f.kind) {
                                (None, _) => x,
                                (Some(c), AggKind::Min) => c.min(x),
                                (Some(c), _) => c.max(x),
                            };
                            m.insert(f.name.clone(), jnum(n));
                        }
                    }
                    AggKind::Avg => {
                        if let Some(x) = x.filter(|x| x.is_finite()) {
                            let (sk, ck) = avg_keys(&f.name);
                            let s = m.get(&sk).and_then(num).unwrap_or(0.0) + x;
                            let c = m.get(&ck).and_then(num).unwrap_or(0.0) + 1.0;
                            m.insert(sk, jnum(s));
                            m.insert(ck, jnum(c));
                            m.insert(f.name.clone(), jnum(s / c));
                        }
                    }
                }
            }
            Value::Object(m)
        }
        _ => acc,
    }
}

/// What an accumulator emits: an aggregate without its internal `__` fields (the earlier SDK
/// leaked `__avg_sum`/`__avg_count` into the sink).
pub(crate) fn finish(reducer: &Op, acc: Value) -> Value {
    match (reducer, acc) {
        (Op::Aggregate(_), Value::Object(m)) => Value::Object(m.into_iter().filter(|(k, _)| !k.starts_with("__")).collect()),
        (_, a) => a,
    }
}

struct Acc {
    key: String,
    start: i64,
    end: i64,
    window_key: String,
    acc: Value,
    touched: bool,
    seeded: bool,
}

/// Fold a batch into the loaded windows of `spec` and close those with
/// `windowEnd + grace ≤ stream_time`. Returns (state ops, emits in (start, key) order).
pub(crate) fn reduce_windows(spec: &WindowSpec, reducer: &Op, envs: &[Env], loaded: &Map<String, Value>, stream_time: i64) -> (Vec<Value>, Vec<Emit>) {
    let tag = spec.operator_tag();
    let mut accs: Vec<(String, Acc)> = vec![];
    let mut index: std::collections::HashMap<String, usize> = Default::default();
    for (sk, v) in loaded {
        let parts: Vec<&str> = sk.split(SEP).collect();
        if parts.len() != 3 || parts[0] != tag {
            continue;
        }
        let ws = v.get("windowStart").and_then(Value::as_i64).or_else(|| parse_iso_ms(parts[1])).unwrap_or(0);
        let we = v.get("windowEnd").and_then(Value::as_i64).unwrap_or(ws);
        let acc = v.get("acc").cloned().filter(|a| !a.is_null()).unwrap_or_else(|| initial(reducer));
        index.insert(sk.clone(), accs.len());
        accs.push((sk.clone(), Acc { key: parts[2].to_string(), start: ws, end: we, window_key: parts[1].to_string(), acc, touched: false, seeded: true }));
    }
    for e in envs {
        for (s, end) in windows_for(&spec.kind, e.ts) {
            let wk = iso_ms(s);
            let sk = state_key(&tag, &wk, &e.key);
            let i = match index.get(&sk) {
                Some(i) => *i,
                None => {
                    index.insert(sk.clone(), accs.len());
                    accs.push((sk.clone(), Acc { key: e.key.clone(), start: s, end, window_key: wk, acc: initial(reducer), touched: false, seeded: false }));
                    accs.len() - 1
                }
            };
            let a = &mut accs[i].1;
            a.acc = step(reducer, std::mem::take(&mut a.acc), &e.value);
            a.touched = true;
        }
    }
    let mut ops = vec![];
    let mut emits = vec![];
    for (sk, a) in accs {
        if a.end + spec.grace_ms() <= stream_time {
            if a.seeded {
                ops.push(json!({"type": "delete", "key": sk}));
            }
            emits.push(Emit { key: a.key, window_start: a.start, window_end: a.end, window_key: a.window_key, value: finish(reducer, a.acc) });
        } else if a.touched {
            ops.push(json!({"type": "upsert", "key": sk, "value": {"acc": a.acc, "windowStart": a.start, "windowEnd": a.end}}));
        }
    }
    emits.sort_by(|a, b| (a.window_start, &a.key).cmp(&(b.window_start, &b.key)));
    (ops, emits)
}

/// Rows the idle flush closes: those of this operator with `windowEnd + grace ≤ clock`.
pub(crate) fn ripe_rows(spec: &WindowSpec, reducer: &Op, rows: &Map<String, Value>, clock: i64) -> (Vec<Value>, Vec<Emit>) {
    reduce_windows(spec, reducer, &[], rows, clock)
}

struct Session {
    acc: Value,
    start: i64,
    last: i64,
    dirty: bool,
    seeded: bool,
    closed: bool,
}

/// Session windows: extend a key's session while events come within `gap`; close it when
/// `lastEventTime + gap + grace ≤ now`.
pub(crate) fn run_session(spec: &WindowSpec, reducer: &Op, envs: &[Env], loaded: &Map<String, Value>, now: i64) -> (Vec<Value>, Vec<Emit>) {
    let gap = match spec.kind {
        WindowKind::Session { gap } => gap as i64 * 1000,
        _ => 0,
    };
    let tag = spec.operator_tag();
    let prefix = format!("{tag}{SEP}open{SEP}");
    let mut sessions: Vec<(String, Session)> = vec![];
    let find = |s: &Vec<(String, Session)>, k: &str| s.iter().position(|(x, _)| x == k);
    for (sk, v) in loaded {
        let Some(user) = sk.strip_prefix(&prefix) else { continue };
        let (Some(start), Some(last)) = (v.get("sessionStart").and_then(Value::as_i64), v.get("lastEventTime").and_then(Value::as_i64)) else { continue };
        let acc = v.get("acc").cloned().filter(|a| !a.is_null()).unwrap_or_else(|| initial(reducer));
        sessions.push((user.to_string(), Session { acc, start, last, dirty: false, seeded: true, closed: false }));
    }
    let emit = |user: &str, s: &Session| Emit { key: user.to_string(), window_start: s.start, window_end: s.last + gap, window_key: iso_ms(s.start), value: finish(reducer, s.acc.clone()) };
    let mut emits = vec![];
    for e in envs {
        let i = match find(&sessions, &e.key) {
            Some(i) if sessions[i].1.last + gap >= e.ts => {
                let s = &mut sessions[i].1;
                if e.ts > s.last {
                    s.last = e.ts;
                }
                if e.ts < s.start {
                    s.start = e.ts;
                }
                s.dirty = true;
                i
            }
            Some(i) => {
                emits.push(emit(&e.key, &sessions[i].1));
                let seeded = sessions[i].1.seeded;
                sessions[i].1 = Session { acc: initial(reducer), start: e.ts, last: e.ts, dirty: true, seeded, closed: false };
                i
            }
            None => {
                sessions.push((e.key.clone(), Session { acc: initial(reducer), start: e.ts, last: e.ts, dirty: true, seeded: false, closed: false }));
                sessions.len() - 1
            }
        };
        let s = &mut sessions[i].1;
        s.acc = step(reducer, std::mem::take(&mut s.acc), &e.value);
    }
    let mut ops = vec![];
    for (user, s) in sessions.iter_mut() {
        if s.last + gap + spec.grace_ms() <= now {
            emits.push(emit(user, s));
            s.closed = true;
        }
        let sk = session_key(&tag, user);
        if s.closed {
            if s.seeded {
                ops.push(json!({"type": "delete", "key": sk}));
            }
        } else if s.dirty {
            ops.push(json!({"type": "upsert", "key": sk, "value": {"acc": s.acc, "sessionStart": s.start, "lastEventTime": s.last}}));
        }
    }
    (ops, emits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Queen, Stream};

    fn spec_of(s: &Stream) -> (WindowSpec, Op) {
        let st = s.stages().unwrap();
        (st.window.unwrap(), st.reducer.unwrap())
    }
    fn q() -> Queen {
        Queen::new("http://127.0.0.1:9").unwrap()
    }
    fn env(key: &str, ts: i64, amount: f64) -> Env {
        Env { key: key.into(), value: json!({"amount": amount}), ts }
    }

    #[test]
    fn tumbling_closes_on_stream_time_and_seeds_from_state() {
        let s = Stream::from(q().queue("s")).window_tumbling(2).aggregate_count("count").aggregate_sum("sum", |r| r.number("amount"));
        let (w, r) = spec_of(&s);
        let envs = vec![env("p", 0, 1.0), env("p", 1500, 2.0), env("p", 2100, 4.0)];
        let (ops, emits) = reduce_windows(&w, &r, &envs, &Map::new(), 2100);
        assert_eq!(emits.len(), 1);
        assert_eq!(emits[0].value, json!({"count": 2, "sum": 3}));
        assert_eq!(emits[0].window_key, "1970-01-01T00:00:00.000Z");
        assert_eq!(ops.len(), 1); // the open [2,4) window, upserted; the closed one was never stored
        assert_eq!(ops[0]["key"], json!(format!("tumb:2{SEP}1970-01-01T00:00:02.000Z{SEP}p")));
        // next batch: the stored row is seeded, extended, then closed and deleted
        let mut loaded = Map::new();
        loaded.insert(ops[0]["key"].as_str().unwrap().into(), ops[0]["value"].clone());
        let (ops2, emits2) = reduce_windows(&w, &r, &[env("p", 3000, 10.0)], &loaded, 4000);
        assert_eq!(emits2[0].value, json!({"count": 2, "sum": 14}));
        assert_eq!(ops2, vec![json!({"type": "delete", "key": ops[0]["key"]})]);
    }

    #[test]
    fn grace_holds_a_window_open() {
        let s = Stream::from(q().queue("s")).window_tumbling(2).grace_period(1).aggregate_count("n");
        let (w, r) = spec_of(&s);
        let (_, e) = reduce_windows(&w, &r, &[env("p", 100, 0.0)], &Map::new(), 2500);
        assert!(e.is_empty());
        let (_, e) = reduce_windows(&w, &r, &[env("p", 100, 0.0)], &Map::new(), 3000);
        assert_eq!(e.len(), 1);
    }

    #[test]
    fn sliding_places_each_event_in_size_over_slide_windows() {
        assert_eq!(windows_for(&WindowKind::Sliding { size: 10, slide: 5 }, 12_000), vec![(10_000, 20_000), (5_000, 15_000)]);
        let s = Stream::from(q().queue("s")).window_sliding(10, 5).aggregate_sum("sum", |r| r.number("amount"));
        let (w, r) = spec_of(&s);
        let (_, e) = reduce_windows(&w, &r, &[env("k", 6_000, 1.0), env("k", 12_000, 2.0)], &Map::new(), 30_000);
        let sums: Vec<(i64, Value)> = e.iter().map(|x| (x.window_start, x.value["sum"].clone())).collect();
        assert_eq!(sums, vec![(0, json!(1)), (5_000, json!(3)), (10_000, json!(2))]);
    }

    #[test]
    fn cron_buckets_align_to_the_wall_clock() {
        let t = parse_iso_ms("2026-12-02T13:45:12.345Z").unwrap(); // a Wednesday
        let start = |every: &str| iso_ms(windows_for(&WindowKind::Cron { every: every.into() }, t)[0].0);
        assert_eq!(start("second"), "2026-12-02T13:45:12.000Z");
        assert_eq!(start("minute"), "2026-12-02T13:45:00.000Z");
        assert_eq!(start("hour"), "2026-12-02T13:00:00.000Z");
        assert_eq!(start("day"), "2026-12-02T00:00:00.000Z");
        assert_eq!(start("week"), "2026-11-30T00:00:00.000Z"); // Monday
    }

    #[test]
    fn session_extends_within_gap_and_splits_after() {
        let s = Stream::from(q().queue("s")).window_session(5).aggregate_count("n");
        let (w, r) = spec_of(&s);
        let envs = vec![env("a", 0, 0.0), env("a", 4_000, 0.0), env("a", 20_000, 0.0), env("b", 1_000, 0.0)];
        let (ops, e) = run_session(&w, &r, &envs, &Map::new(), 21_000);
        // a's first session [0, 9000) closed by the split, b's [1000, 6000) by the clock
        assert_eq!(e.len(), 2);
        assert_eq!((e[0].key.as_str(), e[0].window_start, e[0].window_end, e[0].value["n"].clone()), ("a", 0, 9_000, json!(2)));
        assert_eq!((e[1].key.as_str(), e[1].window_end), ("b", 6_000));
        assert_eq!(ops.len(), 1); // a's second session stays open
        assert_eq!(ops[0]["value"]["sessionStart"], json!(20_000));
    }

    #[test]
    fn aggregate_emits_no_internal_fields() {
        let s = Stream::from(q().queue("s")).window_tumbling(1).aggregate_avg("avg", |r| r.number("amount")).aggregate_min("min", |r| r.number("amount")).aggregate_max("max", |r| r.number("amount"));
        let (w, r) = spec_of(&s);
        let (_, e) = reduce_windows(&w, &r, &[env("p", 0, 1.0), env("p", 10, 4.0)], &Map::new(), 5000);
        assert_eq!(e[0].value, json!({"avg": 2.5, "min": 1, "max": 4}));
    }

    #[test]
    fn reduce_with_initial() {
        let s = Stream::from(q().queue("s")).window_tumbling(1).reduce(json!(0), |acc, v| json!(acc.as_f64().unwrap_or(0.0) + v["amount"].as_f64().unwrap_or(0.0)));
        let (w, r) = spec_of(&s);
        let (_, e) = reduce_windows(&w, &r, &[env("p", 0, 1.5), env("p", 10, 4.0)], &Map::new(), 5000);
        assert_eq!(e[0].value, json!(5.5));
    }
}
