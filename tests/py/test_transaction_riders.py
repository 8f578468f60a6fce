"""The transaction's kv and timers riders through the real 2.x client (tx.once, tx.kv.*,
tx.timer): committed atomically with the pushes and acks, a lost required precondition
returned (not raised) as kv_precondition with nothing applied, results in the flat layout
(pushes and acks, then kv, then timers), and the refusals of a rider the broker cannot take.
tests/integration/transaction.test.mjs has the wire-level cases."""

import uuid

import httpx
import pytest

from queen import Queen


@pytest.fixture
def ns():
    return "tx-" + uuid.uuid4().hex[:10]


async def pop_one(client: Queen, queue: str):
    msgs = await client.queue(queue).batch(1).wait(False).pop()
    assert msgs, f"nothing to pop on {queue}"
    return msgs


async def depth(client: Queen, queue: str) -> int:
    n = 0
    while True:
        msgs = await client.queue(queue).batch(100).wait(False).pop()
        if not msgs:
            return n
        n += len(msgs)
        await client.ack(msgs, True)


async def test_once_gate_commits_once(client: Queen, qname, ns):
    await client.queue(qname).push([{"data": {"n": 1}}, {"data": {"n": 2}}])
    first = await pop_one(client, qname)
    tx = client.transaction().once(ns, "order-1", ttl_seconds=600).ack(first[0])
    tx.queue(qname + "-out").push([{"data": "effect"}])
    r = await tx.commit()
    assert r and r["success"] is True, r
    # results: the pushed item and the ack in operations order, then the kv rider
    kinds = [x.get("type") for x in r["results"]]
    assert kinds == ["ack", "push", "kv"], r
    assert r["results"][2]["applied"] is True and r["results"][2]["index"] == 2
    # a redelivery of the same effect: the gate holds, nothing is applied, and it is returned
    second = await pop_one(client, qname)
    tx = client.transaction().once(ns, "order-1", ttl_seconds=600).ack(second[0])
    tx.queue(qname + "-out").push([{"data": "effect again"}])
    lost = await tx.commit()
    assert not lost
    assert lost["success"] is False and lost["reason"] == "kv_precondition", lost
    assert lost["kvReason"] == "exists"
    assert lost["failedIndex"] == 2  # the flat index: ack, push item, then kv[0]
    assert lost["value"] is True and lost["version"] > 0
    # nothing moved: one effect only, and the second message is still leased (its ack rolled back)
    assert await depth(client, qname + "-out") == 1
    assert await client.kv.get(ns, "order-1")


async def test_kv_rider_reads_and_writes_in_order(client: Queen, qname, ns):
    await client.kv.put(ns, "counter", 5, forever=True)
    tx = client.transaction()
    tx.queue(qname).push([{"data": 1}])
    tx.kv.incr(ns, "counter", delta=2, forever=True)
    tx.kv.get(ns, "counter")
    tx.kv.get_many(ns, ["counter", "nope"])
    tx.kv.put(ns, "state", {"s": "done"}, ttl_seconds=60)
    r = await tx.commit()
    assert r["success"] is True, r
    res = r["results"]
    assert [x["type"] for x in res] == ["push", "kv", "kv", "kv", "kv"]
    assert res[1]["value"] == 7 and res[2]["value"] == 7
    assert res[3]["missing"] == ["nope"]
    assert (await client.kv.get(ns, "state"))["value"] == {"s": "done"}
    with pytest.raises(ValueError):
        client.transaction().kv.get_prefix(ns, "c")


async def test_required_check_rolls_back_pushes_and_acks(client: Queen, qname, ns):
    w = await client.kv.put(ns, "fence", "v1", forever=True)
    await client.kv.put(ns, "fence", "v2", forever=True)  # the fence moved on
    await client.queue(qname).push([{"data": "in"}])
    msgs = await pop_one(client, qname)
    tx = client.transaction().ack(msgs[0])
    tx.queue(qname + "-out").push([{"data": "out"}])
    tx.kv.put(ns, "written", 1, forever=True)
    tx.kv.check(ns, "fence", expect=w["version"], required=True)
    tx.timer(qname + "-t").key("k").payload({"x": 1}).after_ms(3_600_000).schedule()
    r = await tx.commit()
    assert r["success"] is False and r["reason"] == "kv_precondition"
    assert r["kvReason"] == "version" and r["value"] == "v2" and r["failedIndex"] == 3
    assert not await client.kv.get(ns, "written")
    assert not await client.timers.peek(qname + "-t", "k")
    assert await depth(client, qname + "-out") == 0
    # a check that is not required only reports
    tx = client.transaction()
    tx.queue(qname + "-out").push([{"data": "out"}])
    tx.kv.check(ns, "fence", expect=w["version"])
    r = await tx.commit()
    assert r["success"] is True and r["results"][1]["applied"] is False
    assert await depth(client, qname + "-out") == 1


async def test_kv_only_and_timer_only_bundles(client: Queen, qname, ns):
    r = await client.transaction().once(ns, "g", forever=True).commit()
    assert r["success"] is True and [x["type"] for x in r["results"]] == ["kv"]
    tx = client.transaction()
    tx.timer(qname).key("later").payload({"v": 1}).after_ms(3_600_000).schedule()
    tx.kv.put(ns, "with-timer", 1, forever=True)
    r = await tx.commit()
    assert r["success"] is True
    assert [x["type"] for x in r["results"]] == ["kv", "timer"]
    assert r["results"][1]["status"] == "scheduled"
    assert (await client.timers.peek(qname, "later"))["found"] is True


async def test_rider_refusals(http: httpx.Client, ns):
    r = http.post("/api/v1/transaction", json={"operations": [], "kv": [{"op": "put", "ns": ns, "key": "k", "value": 1}]})
    assert r.status_code == 400 and r.json()["error"] == "kv_expiry_not_specified" and r.json()["index"] == 0
    r = http.post("/api/v1/transaction", json={"operations": [], "kv": [{"op": "getPrefix", "ns": ns, "prefix": "a"}]})
    assert r.status_code == 400 and r.json()["reason"] == "prefix_in_transaction"
    r = http.post("/api/v1/transaction", json={"operations": [], "timers": [{"op": "schedule"}]})
    assert r.status_code == 400 and r.json()["error"].startswith("timer_")
    # an unknown top-level key is refused, never dropped
    r = http.post("/api/v1/transaction", json={"operations": [{"type": "push", "items": [{"queue": "q", "payload": 1}]}],
                                               "kvv": []})
    assert r.status_code == 400 and r.json()["code"] == "unknown_field"
    r = http.post("/api/v1/transaction", json={"operations": []})
    assert r.status_code == 400
