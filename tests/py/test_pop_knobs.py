"""Pop's 2.x query knobs through the real client: autopilot (the default of queen-mq 2.6.0:
batch and partitions left unset are sized by the broker, which echoes what it used),
partitions (a multi-partition sweep under one lease), conflation's 400s (conflation itself:
tests/py/test_conflation.py), frames (QPF1, decoded by the client: tests/py/test_framed_pop.py), and
/api/v1/stats/refresh."""

import asyncio

import httpx
import pytest
from queen import Queen


def datas(messages):
    return [m["data"] for m in messages]


async def test_a_bare_pop_gets_all_five(client: Queen, qname):
    await client.queue(qname).push([{"data": i} for i in range(5)])
    got = await client.queue(qname).wait(False).pop()
    assert datas(got) == [0, 1, 2, 3, 4]
    assert (await client.ack(got, True))["success"] is True


async def test_the_autopilot_echo(client: Queen, qname):
    await client.queue(qname).push([{"data": i} for i in range(3)])
    res = await client.queue(qname).wait(False).pop_result()
    assert len(res.messages) == 3
    assert res.autopilot is not None
    assert (res.autopilot.partitions, res.autopilot.batch, res.autopilot.wait_millis) == (8, 200, 0)
    await client.ack(res.messages, True)
    # an empty answer carries the echo too, with the pacing for the next non-waiting poll
    empty = await client.queue(qname).wait(False).pop_result()
    assert empty.messages == []
    assert empty.autopilot is not None and empty.autopilot.wait_millis == 100
    # a pinned knob is kept: batch(2) is a budget of 2 and a width of at most 2
    await client.queue(qname).push([{"data": i} for i in range(5)])
    two = await client.queue(qname).batch(2).wait(False).pop_result()
    assert len(two.messages) == 2
    assert (two.autopilot.batch, two.autopilot.partitions) == (2, 2)
    await client.ack(two.messages, True)


async def test_autopilot_off_keeps_the_old_defaults(client: Queen, qname):
    await client.queue(qname).push([{"data": i} for i in range(5)])
    res = await client.queue(qname).autopilot(False).wait(False).pop_result()
    assert datas(res.messages) == [0]
    assert res.autopilot is None
    await client.ack(res.messages, True)


async def test_a_raw_pop_without_autopilot_is_unchanged(client: Queen, qname, http):
    await client.queue(qname).push([{"data": i} for i in range(3)])
    r = http.get(f"/api/v1/pop/queue/{qname}?wait=false&autoAck=true")
    assert r.status_code == 200
    body = r.json()
    assert len(body["messages"]) == 1
    assert "autopilot" not in body
    r = http.get(f"/api/v1/pop/queue/{qname}?wait=false&autoAck=true&batch=10")
    assert len(r.json()["messages"]) == 2
    assert http.get(f"/api/v1/pop/queue/{qname}?wait=false").status_code == 204


async def test_autopilot_sweeps_sparse_partitions(client: Queen, qname):
    for p in range(5):
        await client.queue(qname).partition(f"p{p}").push([{"data": p}])
    got = await client.queue(qname).wait(False).pop()
    assert sorted(datas(got)) == [0, 1, 2, 3, 4]
    assert len({m["leaseId"] for m in got}) == 1
    assert (await client.ack(got, True))["success"] is True


async def test_partitions_share_one_lease(client: Queen, qname):
    for p in ("a", "b", "c"):
        await client.queue(qname).partition(p).push([{"data": f"{p}{i}"} for i in range(2)])
    got = await client.queue(qname).partitions(3).batch(10).wait(False).pop()
    assert sorted(datas(got)) == ["a0", "a1", "b0", "b1", "c0", "c1"]
    assert {m["partition"] for m in got} == {"a", "b", "c"}
    leases = {m["leaseId"] for m in got}
    assert len(leases) == 1
    renewed = await client.renew(got)
    assert [r["success"] for r in renewed] == [True]
    assert (await client.ack(got, True))["success"] is True
    # partitions(1) pins the single-partition claim
    for p in ("a", "b"):
        await client.queue(qname).partition(p).push([{"data": p}])
    one = await client.queue(qname).partitions(1).wait(False).pop()
    assert len({m["partition"] for m in one}) == 1
    await client.ack(one, True)


async def test_consume_with_autopilot_takes_batches(client: Queen, qname):
    await client.queue(qname).push([{"data": i} for i in range(10)])
    seen = []

    async def handler(msgs):
        seen.append(len(msgs) if isinstance(msgs, list) else 1)

    await asyncio.wait_for(client.queue(qname).limit(10).wait(False).consume(handler), 30)
    assert sum(seen) == 10
    assert max(seen) > 1, seen
    assert await client.queue(qname).batch(10).wait(False).pop() == []


async def test_long_poll_times_out_with_the_echo(client: Queen, qname):
    await client.queue(qname).create()
    res = await client.queue(qname).wait(True).timeout_millis(500).pop_result()
    assert res.messages == []
    assert res.autopilot is not None


async def test_conflation_without_a_group_is_a_400(client: Queen, qname, http):
    await client.queue(qname).push([{"data": 1}])
    with pytest.raises(httpx.HTTPStatusError):
        await client.queue(qname).conflation().wait(False).pop()
    r = http.get(f"/api/v1/pop/queue/{qname}?conflation=true&consumerGroup=g&autoAck=true&wait=false")
    assert r.status_code == 400
    assert r.json()["code"] == "conflation_with_auto_ack"
    r = http.get(f"/api/v1/pop/queue/{qname}?conflation=maybe&wait=false")
    assert r.status_code == 400
    assert r.json()["code"] == "invalid_request"


async def test_framed_pop_reads_the_json_fallback(broker, qname):
    q = Queen(broker.url, framed_pop=True)
    try:
        await q.queue(qname).push([{"data": {"n": i}} for i in range(3)])
        got = await q.queue(qname).wait(False).pop()
        assert datas(got) == [{"n": 0}, {"n": 1}, {"n": 2}]
        assert (await q.ack(got, True))["success"] is True
    finally:
        await q.close()


async def test_stats_refresh(client: Queen):
    r = await client.admin.refresh_consumer_stats()
    assert r == {"skipped": True, "reason": "stats_are_live"}


async def test_a_namespace_pop_with_autopilot(client: Queen, qname):
    ns = qname + "-ns"
    for q in (qname + "-a", qname + "-b"):
        await client.queue(q).namespace(ns).create()
        await client.queue(q).push([{"data": f"{q[-1]}{i}"} for i in range(2)])
    res = await client.queue().namespace(ns).wait(False).pop_result()
    assert res.autopilot is not None
    got = res.messages
    assert len(got) >= 2
    assert (await client.ack(got, True))["success"] is True
    rest = await client.queue().namespace(ns).wait(False).pop()
    assert sorted(datas(got + rest)) == ["a0", "a1", "b0", "b1"]
