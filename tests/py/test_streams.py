"""Streams through the real 2.x runtime (queen-mq 2.6.0, queen.streams: Stream, the Runner, its
StreamsHttpClient) against the real binary: tumbling count+sum, sliding, session, cron, event
time with lateness, a gate, the idle flush, restart and resume, 409 and reset, a cycle whose
answer is lost and retried (every cycle and flush sent twice), and two runners on one query.
Every window result must land on the sink exactly once: a post-map tags each result with its
window and partition, and the test counts them. Processing-time windows get a grace period: the
runtime's idle flush closes windows on the client's wall clock, and a record stamped just
before a window's end but folded after such a flush would open the window again (a second,
partial result: the runtime's own behaviour, the earlier release's B5, not the broker's).
tests/integration/streams.test.mjs covers the wire edges the runtime does not exercise."""

import asyncio
import time
from collections import Counter

import pytest

from queen import Queen
from queen.streams import Stream
from queen.streams.runtime import streams_http_client as shc
from queen.streams.runtime.register import StreamsConfigHashMismatch

pytestmark = pytest.mark.anyio


async def drain(client: Queen, queue: str, want, seconds: float = 20.0, settle: float = 0.0):
    """Pops (and acks) the sink under a group of its own until want(got) or the time is up,
    then keeps reading for `settle` seconds (to see anything emitted twice)."""
    got = []
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    extra_end = None
    while loop.time() < end:
        msgs = await client.queue(queue).group("check").batch(200).wait(False).pop()
        if msgs:
            got.extend(msgs)
            await client.ack(msgs, True, {"group": "check"})
        else:
            await asyncio.sleep(0.1)
        if want([m["data"] for m in got]):
            if extra_end is None:
                extra_end = loop.time() + settle
            if loop.time() >= extra_end:
                break
    return [m["data"] for m in got]


def tag(v, ctx):
    return {**v, "wk": ctx["windowKey"], "p": ctx["partition"]}


async def push_spread(client, q, parts, n, start=0, delay=0.0):
    for i in range(start, start + n):
        for p in parts:
            await client.queue(q).partition(p).push([{"data": {"amount": i + 1, "user": p}}])
        if delay:
            await asyncio.sleep(delay)


def assert_once(rows):
    c = Counter((r["p"], r["wk"]) for r in rows)
    dup = {k: v for k, v in c.items() if v > 1}
    assert not dup, f"windows emitted more than once: {dup}"


async def test_tumbling_count_sum_exact_once_per_window(client: Queen, broker, qname):
    src, sink = qname, qname + ".out"
    parts = ["a", "b", "c"]
    await push_spread(client, src, parts, 6, delay=0.35)
    h = await (Stream.from_(client.queue(src))
               .window_tumbling(seconds=1, grace_period=0.5, idle_flush_ms=300)
               .aggregate({"count": lambda m: 1, "sum": lambda m: m["amount"]})
               .map(tag)
               .to(client.queue(sink))
               .run(query_id=qname, url=broker.url, batch_size=50, max_wait_millis=300))
    try:
        rows = await drain(client, sink, lambda g: sum(r["count"] for r in g) >= 18, settle=1.5)
    finally:
        await h.stop()
    assert_once(rows)
    per = {p: (sum(r["count"] for r in rows if r["p"] == p), sum(r["sum"] for r in rows if r["p"] == p)) for p in parts}
    assert per == {p: (6, 21) for p in parts}, per
    m = h.metrics()
    assert m["cyclesTotal"] >= 1 and m["flushCyclesTotal"] >= 1, m


async def test_sliding_and_session_and_cron(client: Queen, broker, qname):
    # sliding: size 2 s, slide 1 s: every event lands in two windows
    src = qname
    await push_spread(client, src, ["s"], 4, delay=0.3)
    h = await (Stream.from_(client.queue(src))
               .window_sliding(size=2, slide=1, grace_period=0.5, idle_flush_ms=300)
               .aggregate({"count": lambda m: 1})
               .map(tag)
               .to(client.queue(src + ".sl"))
               .run(query_id=qname + ".sl", url=broker.url, batch_size=50, max_wait_millis=300))
    try:
        rows = await drain(client, src + ".sl", lambda g: sum(r["count"] for r in g) >= 8, settle=1.0)
    finally:
        await h.stop()
    assert_once(rows)
    assert sum(r["count"] for r in rows) == 8

    # session: gap 1 s; two bursts with a 2 s pause → two sessions
    ss = qname + ".ss"
    await push_spread(client, ss, ["u"], 3)
    h = await (Stream.from_(client.queue(ss))
               .window_session(gap=1, idle_flush_ms=300)
               .aggregate({"count": lambda m: 1, "sum": lambda m: m["amount"]})
               .map(tag)
               .to(client.queue(ss + ".out"))
               .run(query_id=ss, url=broker.url, batch_size=50, max_wait_millis=300))
    try:
        await asyncio.sleep(2.5)
        await push_spread(client, ss, ["u"], 2, start=10)
        rows = await drain(client, ss + ".out", lambda g: len(g) >= 2, settle=1.5)
    finally:
        await h.stop()
    assert sorted((r["count"], r["sum"]) for r in rows) == [(2, 23), (3, 6)], rows

    # cron: every second
    cr = qname + ".cr"
    await push_spread(client, cr, ["c"], 5, delay=0.3)
    h = await (Stream.from_(client.queue(cr))
               .window_cron(every="second", grace_period=0.5, idle_flush_ms=300)
               .aggregate({"count": lambda m: 1})
               .map(tag)
               .to(client.queue(cr + ".out"))
               .run(query_id=cr, url=broker.url, batch_size=50, max_wait_millis=300))
    try:
        rows = await drain(client, cr + ".out", lambda g: sum(r["count"] for r in g) >= 5, settle=1.0)
    finally:
        await h.stop()
    assert_once(rows)
    assert sum(r["count"] for r in rows) == 5
    assert all(r["wk"].endswith(".000Z") for r in rows)


async def test_event_time_with_lateness(client: Queen, broker, qname):
    # event times in the message: windows of 10 s, 5 s of allowed lateness
    base = 1_700_000_000_000 - (1_700_000_000_000 % 10_000)
    evs = [0, 3_000, 12_000, 9_000, 15_000, 30_000]  # 9 s arrives late but within the lateness
    await client.queue(qname).partition("e").push([{"data": {"t": base + e, "amount": 1}} for e in evs])
    h = await (Stream.from_(client.queue(qname))
               .window_tumbling(seconds=10, event_time=lambda m: m["data"]["t"], allowed_lateness=5, idle_flush_ms=0)
               .aggregate({"count": lambda m: 1})
               .map(tag)
               .to(client.queue(qname + ".out"))
               .run(query_id=qname, url=broker.url, batch_size=2, max_wait_millis=300))
    try:
        rows = await drain(client, qname + ".out", lambda g: len(g) >= 2, settle=1.0)
    finally:
        await h.stop()
    assert_once(rows)
    byw = {r["wk"]: r["count"] for r in rows}
    first = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(base / 1000))
    assert byw.get(first) == 3, byw  # 0, 3 s and the late 9 s
    assert h.metrics()["lateEventsTotal"] == 0


async def test_gate_partial_ack_keeps_order(client: Queen, broker, qname):
    await client.queue(qname).config({"lease_time": 1}).create()
    await client.queue(qname).partition("k").push([{"data": {"n": i}} for i in range(6)])

    def budget(value, ctx):
        ctx.state.setdefault("remaining", 3)
        if ctx.state["remaining"] < 1:
            return False
        ctx.state["remaining"] -= 1
        return True

    h = await (Stream.from_(client.queue(qname)).gate(budget).to(client.queue(qname + ".ok"))
               .run(query_id=qname, url=broker.url, batch_size=10, max_wait_millis=300))
    try:
        rows = await drain(client, qname + ".ok", lambda g: len(g) >= 3, settle=3.0)
    finally:
        await h.stop()
    assert [r["n"] for r in rows] == [0, 1, 2], rows
    m = h.metrics()
    assert m["gateAllowsTotal"] == 3 and m["gateDenialsTotal"] >= 1, m


async def test_restart_resume_409_and_reset(client: Queen, broker, qname, http):
    sink = qname + ".out"
    mk = lambda secs: (Stream.from_(client.queue(qname))  # noqa: E731
                       .window_tumbling(seconds=secs, grace_period=0.5, idle_flush_ms=300)
                       .aggregate({"count": lambda m: 1, "sum": lambda m: m["amount"]})
                       .map(tag).to(client.queue(sink)))
    await push_spread(client, qname, ["r"], 4)
    h = await mk(1).run(query_id=qname, url=broker.url, batch_size=50, max_wait_millis=300)
    rows = await drain(client, sink, lambda g: sum(r["count"] for r in g) >= 4)
    await h.stop()
    await push_spread(client, qname, ["r"], 3, start=4)
    h = await mk(1).run(query_id=qname, url=broker.url, batch_size=50, max_wait_millis=300)
    rows += await drain(client, sink, lambda g: sum(r["count"] for r in g) >= 3, settle=1.0)
    await h.stop()
    assert sum(r["count"] for r in rows) == 7 and sum(r["sum"] for r in rows) == 28, rows
    assert_once(rows)
    # a changed chain under the same name: 409, then reset
    with pytest.raises(StreamsConfigHashMismatch, match="config_hash mismatch"):
        await mk(2).run(query_id=qname, url=broker.url)
    q = http.get(f"/streams/v1/queries/{qname}").json()
    h = await mk(2).run(query_id=qname, url=broker.url, reset=True)
    await h.stop()
    q2 = http.get(f"/streams/v1/queries/{qname}").json()
    assert q2["query_id"] == q["query_id"] and q2["config_hash"] != q["config_hash"]
    assert q2["state_rows"] == 0


async def test_lost_answers_and_two_runners_emit_once(client: Queen, broker, qname, monkeypatch):
    """Every cycle and flush is sent twice (the first answer dropped, as after a crash between
    the commit and the reply), and two runners share the query: each window result once."""
    orig = shc.StreamsHttpClient.post
    sent = Counter()

    async def twice(self, path, body):
        if path == "/streams/v1/cycle":
            sent[path] += 1
            await orig(self, path, body)  # committed; its answer is lost
        return await orig(self, path, body)

    monkeypatch.setattr(shc.StreamsHttpClient, "post", twice)
    src, sink = qname, qname + ".out"
    parts = [f"p{i}" for i in range(4)]
    runs = []
    for _ in range(2):
        runs.append(await (Stream.from_(client.queue(src))
                           .window_tumbling(seconds=1, grace_period=0.8, idle_flush_ms=250)
                           .aggregate({"count": lambda m: 1, "sum": lambda m: m["amount"]})
                           .map(tag).to(client.queue(sink))
                           .run(query_id=qname, url=broker.url, batch_size=5, max_partitions=2, max_wait_millis=200)))
    try:
        await push_spread(client, src, parts, 8, delay=0.2)
        rows = await drain(client, sink, lambda g: sum(r["count"] for r in g) >= 32, seconds=30, settle=2.0)
    finally:
        for h in runs:
            await h.stop()
    assert sent["/streams/v1/cycle"] > 0
    assert_once(rows)
    per = {p: (sum(r["count"] for r in rows if r["p"] == p), sum(r["sum"] for r in rows if r["p"] == p)) for p in parts}
    assert per == {p: (8, 36) for p in parts}, per
