"""Conflation (last-value delivery per consumer group) through the real 2.6.0 client, as a user
drives it: `conflation()` on pop and on consume (the newest message of each partition, the
backlog behind it never handed out), the echo the client checks on every answer (an empty one
included: it must not raise ConflationUnsupportedError), the declaration conflict (stored policy
wins, the client warns once and keeps going), the 400s the client raises, framed pops, and the
depth answer (`conflation`, `effectivePending`), and a streams query whose source conflates.
Wire details: tests/integration/conflation.test.mjs."""

import asyncio

import httpx
import pytest
from queen import ConflationUnsupportedError, Queen
from queen.utils.conflation import reset_conflict_warnings


def datas(messages):
    return [m["data"] for m in messages]


async def fill(client: Queen, qname, parts):
    for p, n in parts.items():
        await client.queue(qname).partition(p).push([{"data": {"p": p, "v": i}} for i in range(n)])


async def test_pop_delivers_the_newest_per_partition(client: Queen, qname):
    await fill(client, qname, {"a": 5, "b": 3})
    got = await client.queue(qname).group("last").conflation().partitions(10).batch(10).wait(False).pop()
    assert sorted((m["data"]["p"], m["data"]["v"]) for m in got) == [("a", 4), ("b", 2)]
    assert (await client.ack(got, True, {"group": "last"}))["success"] is True
    # nothing behind the newest comes back, and an empty conflating answer does not raise
    again = await client.queue(qname).group("last").conflation().partitions(10).wait(False).pop()
    assert again == []
    # a long poll that times out empty carries the echo too
    timed_out = await client.queue(qname).group("last").conflation().wait(True).timeout_millis(500).pop()
    assert timed_out == []
    # another group is not conflating: every message
    every = await client.queue(qname).group("all").partitions(10).batch(100).wait(False).pop()
    assert len(every) == 8


async def test_depth_reads_the_policy(client: Queen, qname):
    await fill(client, qname, {"a": 4, "b": 2, "c": 0})
    got = await client.queue(qname).group("dc").conflation().partitions(10).wait(False).pop()
    assert len(got) == 2
    await client.queue(qname).partition("a").push([{"data": {"p": "a", "v": 9}}] * 3)
    d = await client.admin.get_queue_depth(qname, group="dc")
    assert d["conflation"] is True
    assert (d["pending"], d["partitionsPending"], d["effectivePending"]) == (5, 2, 2)
    queue_level = await client.admin.get_queue_depth(qname)
    assert queue_level["conflation"] is False and queue_level["effectivePending"] == queue_level["pending"]
    await client.ack(got, True, {"group": "dc"})


async def test_consume_runs_the_handler_on_the_newest(client: Queen, qname):
    await fill(client, qname, {"a": 50, "b": 20})
    seen = []

    async def handler(msg):
        seen.append((msg["data"]["p"], msg["data"]["v"]))

    await asyncio.wait_for(
        client.queue(qname).group("worker").conflation().partitions(10).batch(10).each().limit(2)
        .wait(False).consume(handler),
        30,
    )
    assert sorted(seen) == [("a", 49), ("b", 19)]
    # consumed (acked by consume): the group owes nothing
    d = await client.admin.get_queue_depth(qname, group="worker")
    assert (d["pending"], d["effectivePending"]) == (0, 0)


async def test_conflict_keeps_going_and_warns_once(client: Queen, qname, capfd):
    reset_conflict_warnings()
    await fill(client, qname, {"a": 3})
    # registered without conflation: the stored policy wins over a later conflation()
    first = await client.queue(qname).group("plain").batch(1).wait(False).pop()
    assert datas(first) == [{"p": "a", "v": 0}]
    await client.ack(first, True, {"group": "plain"})
    got = await client.queue(qname).group("plain").conflation().batch(10).wait(False).pop()
    assert [m["data"]["v"] for m in got] == [1, 2], "the stored policy (every message) applied"
    await client.ack(got, True, {"group": "plain"})
    empty = await client.queue(qname).group("plain").conflation().wait(False).pop()
    assert empty == []
    err = capfd.readouterr().err
    assert err.count("conflation conflict on queue") == 1, err


async def test_framed_pop_conflates(broker, qname):
    async with Queen(broker.url, framed_pop=True) as q:
        await fill(q, qname, {"a": 6})
        got = await q.queue(qname).group("fr").conflation().batch(10).wait(False).pop()
        assert [m["data"]["v"] for m in got] == [5]
        assert (await q.ack(got, True, {"group": "fr"}))["success"] is True
        assert await q.queue(qname).group("fr").conflation().wait(False).pop() == []


async def test_refusals_raise(client: Queen, qname):
    await client.queue(qname).push([{"data": 1}])
    # no group: a 400 the client raises (not swallowed into [])
    with pytest.raises(httpx.HTTPStatusError):
        await client.queue(qname).conflation().wait(False).pop()
    # with commit_on_delivery (autoAck): a 400 too
    with pytest.raises(httpx.HTTPStatusError) as e:
        await client.queue(qname).group("g").conflation().commit_on_delivery().wait(False).pop()
    assert e.value.response.json()["code"] == "conflation_with_auto_ack"
    # neither registered g: its first real pop stores conflation and gets the message
    got = await client.queue(qname).group("g").conflation().wait(False).pop()
    assert datas(got) == [1]
    await client.ack(got, True, {"group": "g"})


async def test_a_broker_that_ignored_it_would_raise(http, qname):
    """The client's own guard, against an answer without the echo (what a plain pop of a
    non-conflating group gets): proof that the echo checked above is what keeps it running."""
    from queen.utils.conflation import check_pop_response

    http.post("/api/v1/push", json={"items": [{"queue": qname, "payload": 1}]})
    r = http.get(f"/api/v1/pop/queue/{qname}?consumerGroup=x&wait=false")
    with pytest.raises(ConflationUnsupportedError):
        check_pop_response(r.json(), requested=True, queue=qname, group="x")
    r = http.get(f"/api/v1/pop/queue/{qname}?consumerGroup=y&conflation=true&wait=false")
    check_pop_response(r.json(), requested=True, queue=qname, group="y")


async def test_a_stream_source_conflates(client: Queen, broker, qname):
    """The streams runtime threads `conflation=True` through to its source pop: a map over a
    backlog sees the newest record of each partition only, committed by its cycle."""
    from queen.streams import Stream

    src, sink = qname, qname + ".out"
    await fill(client, src, {"a": 30, "b": 10})
    h = await (Stream.from_(client.queue(src))
               .map(lambda m, ctx=None: {"p": m["data"]["p"], "v": m["data"]["v"]})
               .to(client.queue(sink))
               .run(query_id=qname, url=broker.url, batch_size=50, max_partitions=4, max_wait_millis=200,
                    conflation=True))
    try:
        got = []
        for _ in range(100):
            msgs = await client.queue(sink).group("check").batch(100).wait(False).pop()
            if msgs:
                got.extend(m["data"] for m in msgs)
                await client.ack(msgs, True, {"group": "check"})
            if len(got) >= 2:
                await asyncio.sleep(0.5)  # anything more would be a second delivery
                more = await client.queue(sink).group("check").batch(100).wait(False).pop()
                got.extend(m["data"] for m in more)
                break
            await asyncio.sleep(0.1)
    finally:
        await h.stop()
    assert sorted((g["p"], g["v"]) for g in got) == [("a", 29), ("b", 9)]
    d = await client.admin.get_queue_depth(src, group=f"streams.{qname}")
    assert (d["conflation"], d["pending"], d["effectivePending"]) == (True, 0, 0)


async def test_conflation_over_producer_compressed_frames(broker, qname):
    """Records a 2.x producer pushed as its own zstd frames (binary push, flag 8, kept as sent):
    the newest is inside a stored frame, and a conflating pop (JSON and framed) hands out that
    one record, not the frame."""
    async with Queen(broker.url, binary_push=True, push_compression=True) as prod:
        await prod.queue(qname).partition("z").push([{"data": {"p": "z", "v": i}} for i in range(40)])
    async with Queen(broker.url) as q:
        got = await q.queue(qname).group("json").conflation().batch(10).wait(False).pop()
        assert [m["data"]["v"] for m in got] == [39]
        await q.ack(got, True, {"group": "json"})
    async with Queen(broker.url, framed_pop=True) as f:
        got = await f.queue(qname).group("framed").conflation().batch(10).wait(False).pop()
        assert [m["data"]["v"] for m in got] == [39]
        await f.ack(got, True, {"group": "framed"})
