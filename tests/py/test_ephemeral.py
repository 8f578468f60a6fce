"""Ephemeral (RAM) queues through the real 2.x client's `client.ephemeral` (configure, push,
pop with groups and commit-on-delivery, ack outcomes, reset, delete, queues, depth) and at the
wire for what the client does not exercise: bounds and policies, TTL, leases running out,
retryLimit, stale ids, long polls woken by a push, windowBuffer, refusals."""

import asyncio
import time

import httpx
import pytest
from queen import Queen
from queen.errors import EphemeralQueueNotFoundError

BROKER_ENV = {"QUEEN_EPHEMERAL_MAX_BYTES": str(4 << 20)}


def payloads(res):
    return [m["payload"] for m in res["messages"]]


async def test_push_pop_ack_through_the_client(client: Queen, qname):
    eph = client.ephemeral
    await eph.configure(qname, max_length=100, lease_seconds=30, retry_limit=2)
    assert (await eph.push(qname, [{"payload": {"i": i}} for i in range(5)], partition="p"))["pushed"] == 5
    got = await eph.pop(qname, batch=3, group="workers")
    assert payloads(got) == [{"i": 0}, {"i": 1}, {"i": 2}]
    m = got["messages"][0]
    assert set(m) == {"id", "partition", "payload", "attempts"}
    assert m["partition"] == "p" and m["attempts"] == 1
    # competing consumers of one group share the work; another group sees everything
    rest = await eph.pop(qname, batch=10, group="workers")
    assert payloads(rest) == [{"i": 3}, {"i": 4}]
    tail = await eph.pop(qname, batch=10, group="tail")
    assert len(tail["messages"]) == 5
    res = await eph.ack(qname, got["messages"], group="workers")
    assert [r["outcome"] for r in res["results"]] == ["acked"] * 3
    # an ack with a retry status sends it back with one more attempt
    res = await eph.ack(qname, [{"id": rest["messages"][0]["id"], "status": "retry"}], group="workers")
    assert res["results"][0]["outcome"] == "redelivered"
    again = await eph.pop(qname, batch=10, group="workers")
    assert payloads(again) == [{"i": 3}] and again["messages"][0]["attempts"] == 2
    # acking twice: the second is stale; an id never issued is unknown
    res = await eph.ack(qname, got["messages"][:1], group="workers")
    assert res["results"][0]["outcome"] == "stale"
    bogus = got["messages"][0]["id"].rsplit(".", 1)[0] + ".999"
    res = await eph.ack(qname, [bogus], group="workers")
    assert res["results"][0]["outcome"] == "unknown"
    depth = await eph.depth(qname)
    assert depth["queue"] == qname and depth["durable"] is False
    groups = {g["group"]: g for g in depth["groups"]}
    assert groups["workers"]["inflight"] == 2  # i=3 (again) and i=4
    qs = await eph.queues()
    assert qname in [q["queue"] for q in qs["queues"]]


async def test_commit_on_delivery_queue_mode_reset_delete(client: Queen, qname):
    eph = client.ephemeral
    await eph.push(qname, [1, 2, 3])
    got = await eph.pop(qname, batch=2, commit_on_delivery=True)
    assert payloads(got) == [1, 2]
    got = await eph.pop(qname, batch=2, commit_on_delivery=True)
    assert payloads(got) == [3]
    assert (await eph.pop(qname, batch=2))["messages"] == []
    await eph.push(qname, [4, 5])
    assert (await eph.reset(qname))["dropped"] == 2
    assert (await eph.pop(qname, batch=5))["messages"] == []
    assert (await eph.delete(qname))["deleted"] is True
    assert (await eph.delete(qname))["deleted"] is False
    with pytest.raises(EphemeralQueueNotFoundError):
        await eph.depth(qname)


async def test_long_poll_woken_by_a_push(client: Queen, qname):
    eph = client.ephemeral

    t0 = time.monotonic()
    push = asyncio.create_task(later_push(client, qname))
    got = await eph.pop(qname, wait=True, timeout=10000, group="g")
    await push
    assert payloads(got) == ["late"]
    assert time.monotonic() - t0 < 5
    # nothing comes: the pop answers empty at its timeout
    t0 = time.monotonic()
    got = await eph.pop(qname, wait=True, timeout=400, group="g")
    assert got["messages"] == [] and 0.3 < time.monotonic() - t0 < 5


async def later_push(client, qname):
    await asyncio.sleep(0.3)
    await client.ephemeral.push(qname, ["late"])


async def test_unknown_option_refused_by_the_client(client: Queen, qname):
    with pytest.raises(ValueError):
        await client.ephemeral.configure(qname, ttl_second=5)


def test_bounds_and_policies(http, qname):
    assert http.post("/api/v1/ephemeral/configure", json={"queue": qname, "options": {"maxLength": 3}}).json()["created"] is True
    r = http.post("/api/v1/ephemeral/push", json={"queue": qname, "messages": [{"payload": i} for i in range(3)]})
    assert r.json()["pushed"] == 3
    r = http.post("/api/v1/ephemeral/push", json={"queue": qname, "messages": [{"payload": 9}]})
    assert r.status_code == 429 and r.headers["retry-after"] == "1"
    assert r.json()["code"] == "ephemeral_queue_full"
    # drop_oldest makes room instead
    http.post("/api/v1/ephemeral/configure", json={"queue": qname, "options": {"maxLength": 3, "policy": "drop_oldest"}})
    r = http.post("/api/v1/ephemeral/push", json={"queue": qname, "messages": [{"payload": 3}, {"payload": 4}]})
    assert r.status_code == 200
    got = http.get(f"/api/v1/ephemeral/pop?queue={qname}&batch=10&autoAck=true").json()
    assert [m["payload"] for m in got["messages"]] == [2, 3, 4]
    d = http.get(f"/api/v1/ephemeral/queues/{qname}/depth").json()
    assert d["dropped"]["policy"] == 2
    # the node-wide budget (4 MiB here): 503, nothing pushed
    big = "x" * 100000
    r = http.post("/api/v1/ephemeral/push", json={"queue": qname + "-big", "messages": [{"payload": big}] * 50})
    assert r.status_code == 503 and r.json()["code"] == "ephemeral_node_full"
    assert http.get(f"/api/v1/ephemeral/queues/{qname}-big/depth").json()["length"] == 0


def test_ttl_lease_expiry_and_retry_limit(http, qname):
    http.post("/api/v1/ephemeral/configure",
              json={"queue": qname, "options": {"ttlSeconds": 1, "leaseSeconds": 1, "retryLimit": 1}})
    http.post("/api/v1/ephemeral/push", json={"queue": qname, "messages": [{"payload": "a"}]})
    first = http.get(f"/api/v1/ephemeral/pop?queue={qname}&group=g").json()["messages"]
    assert [m["attempts"] for m in first] == [1]
    time.sleep(1.2)
    # the lease ran out: redelivered once (retryLimit 1) ... unless the TTL dropped it first
    got = http.get(f"/api/v1/ephemeral/pop?queue={qname}&group=g").json()["messages"]
    assert got == []  # ttlSeconds 1 dropped it
    d = http.get(f"/api/v1/ephemeral/queues/{qname}/depth").json()
    assert d["dropped"]["ttl"] == 1
    http.post("/api/v1/ephemeral/configure",
              json={"queue": qname, "options": {"ttlSeconds": 0, "leaseSeconds": 1, "retryLimit": 1}})
    http.post("/api/v1/ephemeral/push", json={"queue": qname, "messages": [{"payload": "b"}]})
    m1 = http.get(f"/api/v1/ephemeral/pop?queue={qname}&group=g").json()["messages"]
    assert [m["attempts"] for m in m1] == [1]
    time.sleep(1.2)
    m2 = http.get(f"/api/v1/ephemeral/pop?queue={qname}&group=g").json()["messages"]
    assert [(m["payload"], m["attempts"]) for m in m2] == [("b", 2)]
    # an id names the message, not one delivery of it: the first delivery's id settles the
    # redelivered message too
    r = http.post("/api/v1/ephemeral/ack", json={"queue": qname, "group": "g", "acks": [{"id": m1[0]["id"]}]}).json()
    assert r["results"][0]["outcome"] == "acked"
    time.sleep(1.2)
    # attempts spent (retryLimit 1): dropped after its second lease, not delivered a third time
    http.post("/api/v1/ephemeral/push", json={"queue": qname, "messages": [{"payload": "c"}]})
    c1 = http.get(f"/api/v1/ephemeral/pop?queue={qname}&group=g").json()["messages"]
    assert [m["payload"] for m in c1] == ["c"]
    r = http.post("/api/v1/ephemeral/ack", json={"queue": qname, "group": "g",
                                                 "acks": [{"id": c1[0]["id"], "status": "failed"}]}).json()
    assert r["results"][0]["outcome"] == "redelivered"
    c2 = http.get(f"/api/v1/ephemeral/pop?queue={qname}&group=g").json()["messages"]
    assert [(m["payload"], m["attempts"]) for m in c2] == [("c", 2)]
    r = http.post("/api/v1/ephemeral/ack", json={"queue": qname, "group": "g",
                                                 "acks": [{"id": c2[0]["id"], "status": "failed"}]}).json()
    assert r["results"][0]["outcome"] == "acked"  # no attempts left: dropped and counted
    assert http.get(f"/api/v1/ephemeral/pop?queue={qname}&group=g").json()["messages"] == []
    assert http.get(f"/api/v1/ephemeral/queues/{qname}/depth").json()["dropped"]["retries"] == 1


def test_stale_after_delete_and_recreate(http, qname):
    http.post("/api/v1/ephemeral/push", json={"queue": qname, "messages": [{"payload": 1}]})
    m = http.get(f"/api/v1/ephemeral/pop?queue={qname}").json()["messages"][0]
    http.delete(f"/api/v1/ephemeral/queue/{qname}")
    http.post("/api/v1/ephemeral/push", json={"queue": qname, "messages": [{"payload": 2}]})
    r = http.post("/api/v1/ephemeral/ack", json={"queue": qname, "acks": [{"id": m["id"]}]}).json()
    assert r["results"][0]["outcome"] == "stale"


def test_window_buffer(http, qname):
    http.post("/api/v1/ephemeral/configure", json={"queue": qname, "options": {"windowBuffer": {"ms": 600, "count": 3}}})
    http.post("/api/v1/ephemeral/push", json={"queue": qname, "messages": [{"payload": 1}]})
    t0 = time.monotonic()
    got = http.get(f"/api/v1/ephemeral/pop?queue={qname}&batch=10&wait=true&timeout=5000").json()
    took = time.monotonic() - t0
    assert [m["payload"] for m in got["messages"]] == [1]
    assert 0.5 < took < 3, took  # waited out the window for more, then took what there was


@pytest.mark.parametrize("body,reason", [
    ({"queue": "q", "options": {"maxBytes": -1}}, "invalid_option"),
    ({"queue": "q", "options": {"policy": "lifo"}}, "invalid_option"),
    ({"queue": "q", "options": {"ttl": 5}}, "unknown_field"),
    ({"queue": "q", "extra": 1}, "unknown_field"),
    ({"options": {}}, "missing_field"),
    ({"queue": ""}, "invalid_name"),
])
def test_configure_refusals(http, body, reason):
    r = http.post("/api/v1/ephemeral/configure", json=body)
    assert r.status_code == 400, r.text
    j = r.json()
    assert j["error"] == "ephemeral_invalid_request" and j["code"] == "ephemeral_invalid_request"
    assert j["reason"] == reason, j
    assert j["detail"]


def test_other_refusals(http, qname):
    for path, body in [
        ("/api/v1/ephemeral/push", {"queue": qname, "messages": [{"payload": 1, "transactionId": "x"}]}),
        ("/api/v1/ephemeral/push", {"queue": qname, "messages": "no"}),
        ("/api/v1/ephemeral/push", {"queue": "a\u0000b", "messages": []}),
        ("/api/v1/ephemeral/ack", {"queue": qname, "acks": [{"id": "x", "status": "maybe"}]}),
        ("/api/v1/ephemeral/ack", {"queue": qname, "acks": [{}]}),
        ("/api/v1/ephemeral/reset", {}),
    ]:
        r = http.post(path, json=body)
        assert r.status_code == 400, (path, body, r.text)
        assert r.json()["code"] == "ephemeral_invalid_request"
    r = http.post("/api/v1/ephemeral/push", content=b"{bad", headers={"content-type": "application/json"})
    assert r.status_code == 400
    for q in ["batch=0", "batch=x", "timeout=-1", "wait=maybe", ""]:
        r = http.get(f"/api/v1/ephemeral/pop?queue={qname}&{q}" if q else "/api/v1/ephemeral/pop")
        assert r.status_code == 400, (q, r.text)
    # a route of the family that does not exist: the client reads it as an old broker
    assert http.get("/api/v1/ephemeral/nothing").status_code == 404


async def test_depth_of_a_queue_never_made(client: Queen):
    # the one 404 of the family that is a data fact (ephemeral_queue_not_found), not a version one
    with pytest.raises(EphemeralQueueNotFoundError) as e:
        await client.ephemeral.depth("never-made-here")
    assert e.value.code == "ephemeral_queue_not_found"
