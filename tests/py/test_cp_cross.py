"""Two clusters of the embedded proxy through the real 2.x client (queen-mq 2.6.0), each with its
own cluster token as bearer_token (docs/control-plane.md). Cluster A's queues, transactionIds,
messages, KV keys, locks and timers are invisible to and untouchable by cluster B's client,
which makes its own under the same names (tests/integration/cp-cross.test.mjs tries every
route). Then the quotas as the client lives them, hit and recovered: over the request rate the
client waits out Retry-After and goes on, and at full speed once the quota is lifted; at the
storage ceiling pushes raise storage_quota_exceeded (not retried) and KV writes raise KvError
with that code, while pops go on; the ceiling lifts after the space is freed (retention, a
deleted queue, a purge) or the ceiling is raised."""

import asyncio
import time
import uuid

import httpx
import pytest

from conftest import free_port
from queen import Queen
from queen.errors import KvError

CP = "py-cp-cross-token-0123456789abcdef"
PROXY_PORT = free_port()
# retention rounds every 300 ms, so a queue with retentionSeconds=1 frees its space at once
BROKER_ENV = {"QUEEN_PROXY_CP_TOKEN": CP, "QUEEN_PROXY_PORT": str(PROXY_PORT), "RETENTION_INTERVAL": "300"}
PROXY = f"http://127.0.0.1:{PROXY_PORT}"
H = {"x-queen-cp-token": CP}


def cp(method: str, path: str, body=None) -> httpx.Response:
    return httpx.request(method, PROXY + "/api/cp" + path, json=body, headers=H, timeout=10)


@pytest.fixture(scope="module")
def clusters(broker):
    out = {}
    for name in ("pya", "pyb"):
        r = cp("POST", "/clusters", {"name": name})
        assert r.status_code == 201, r.text
        out[name] = r.json()
    return out


@pytest.fixture
async def qa(clusters):
    q = Queen(PROXY, bearer_token=clusters["pya"]["token"])
    try:
        yield q
    finally:
        await q.close()


@pytest.fixture
async def qb(clusters):
    q = Queen(PROXY, bearer_token=clusters["pyb"]["token"])
    try:
        yield q
    finally:
        await q.close()


def raw(clusters, name: str, method: str, path: str, body=None) -> httpx.Response:
    h = {"authorization": f"Bearer {clusters[name]['token']}"}
    return httpx.request(method, PROXY + path, json=body, headers=h, timeout=10)


async def test_nothing_of_a_reaches_b(qa: Queen, qb: Queen, qname):
    ns, lock_name = "ns-" + uuid.uuid4().hex[:8], "lk-" + uuid.uuid4().hex[:8]
    first = await qa.queue(qname).push([{"transactionId": "t-1", "data": {"owner": "a", "n": 1}},
                                        {"transactionId": "t-2", "data": {"owner": "a", "n": 2}}])
    assert [x["status"] for x in first] == ["queued", "queued"]
    leased = await qa.queue(qname).batch(1).wait(False).pop()
    assert [m["data"]["n"] for m in leased] == [1]
    await qa.kv.put(ns, "k", {"owner": "a"}, forever=True)
    a_lock = qa.lock(lock_name, ttl_seconds=60, owner="a", auto_renew=False)
    assert await a_lock.acquire() is True
    await qa.timers.schedule(qname + "-t", "tk", {"owner": "a"}, delay_ms=3600000)

    # B sees none of it
    assert await qb.queue(qname).batch(10).wait(False).pop() == []
    got = await qb.kv.get(ns, "k")
    assert not got or not got.get("found"), got
    assert not (await qb.locks.get(lock_name))["held"]
    peek = await qb.timers.peek(qname + "-t", "tk")
    assert not peek or not peek.get("found"), peek
    # B's ack of A's leased message (its ids as B's client would send them) settles nothing
    nack = await qb.ack(leased, True)
    assert nack["success"] is False, nack
    # the same transactionId, lock and key in B are B's own
    mine = await qb.queue(qname).push([{"transactionId": "t-1", "data": {"owner": "b"}}])
    assert mine[0]["status"] == "queued", mine
    b_lock = qb.lock(lock_name, ttl_seconds=60, owner="b", auto_renew=False)
    assert await b_lock.acquire() is True
    await qb.kv.put(ns, "k", {"owner": "b"}, forever=True)
    got = await qb.queue(qname).batch(10).wait(False).pop()
    assert [m["data"] for m in got] == [{"owner": "b"}]
    await qb.ack(got, True)

    # A's things are as A left them: its lease still acks, its lock is its own
    ok = await qa.ack(leased, True)
    assert ok["success"] is True, ok
    rest = await qa.queue(qname).batch(10).wait(False).pop()
    assert [m["data"]["n"] for m in rest] == [2]
    await qa.ack(rest, True)
    assert (await qa.kv.get(ns, "k"))["value"] == {"owner": "a"}
    holders = (await qa.locks.get(lock_name))["holders"]
    assert [(h["owner"], h["token"]) for h in holders] == [("a", a_lock.token)]
    assert (await qa.timers.peek(qname + "-t", "tk"))["found"]
    await a_lock.release()
    await b_lock.release()


async def test_rate_quota_slows_the_client_then_recovers(qa: Queen, qname):
    assert cp("PATCH", "/clusters/pya", {"quotas": {"requestsPerSecond": 2}}).status_code == 200
    try:
        # 6 pushes at 2 a second: every 429 was retried in place after Retry-After, none failed
        t0 = time.monotonic()
        for i in range(6):
            await qa.queue(qname).push([{"data": {"i": i}}])
        assert time.monotonic() - t0 >= 1.5
    finally:
        assert cp("PATCH", "/clusters/pya", {"quotas": {"requestsPerSecond": 0}}).status_code == 200
    # lifted: 30 requests do not wait out a Retry-After (at 2 a second they would take 15 s)
    t0 = time.monotonic()
    for i in range(30):
        await qa.kv.get("rate-ns", f"k{i}")
    assert time.monotonic() - t0 < 5.0
    got = await qa.queue(qname).batch(10).wait(False).pop()
    assert sorted(m["data"]["i"] for m in got) == list(range(6))
    await qa.ack(got, True)


async def push_code(q: Queen, queue: str, data) -> str | None:
    try:
        await q.queue(queue).push([{"data": data}])
        return None
    except httpx.HTTPStatusError as e:
        assert e.response.status_code == 403, e.response.text
        return getattr(e, "code", None)


async def until_push_passes(q: Queen, queue: str, seconds: float = 8.0) -> float:
    t0 = time.monotonic()
    while True:
        code = await push_code(q, queue, {"probe": True})
        if code is None:
            return time.monotonic() - t0
        assert code == "storage_quota_exceeded", code
        assert time.monotonic() - t0 < seconds, "the ceiling was not lifted"
        await asyncio.sleep(0.2)


async def test_storage_ceiling_hit_and_recovered(clusters, qa: Queen, qname):
    big = "x" * 4000
    ns = "ns-" + uuid.uuid4().hex[:8]
    await qa.queue(qname).push([{"data": {"big": big}}])
    r = cp("PATCH", "/clusters/pya", {"quotas": {"maxStorageBytes": 2000}})
    assert r.status_code == 200 and r.json()["usage"]["storageBytes"] >= 2000, r.text
    try:
        # a push raises at once (the client does not retry a 403)
        t0 = time.monotonic()
        assert await push_code(qa, qname, 1) == "storage_quota_exceeded"
        assert time.monotonic() - t0 < 1.0
        with pytest.raises(KvError) as ke:
            await qa.kv.put(ns, "k", 1, forever=True)
        assert (ke.value.code, ke.value.status) == ("storage_quota_exceeded", 403)
        # consumers go on
        got = await qa.queue(qname).batch(10).wait(False).pop()
        assert len(got) == 1
        await qa.ack(got, True)

        # 1. space freed by deleting the queue: lifted at the next measurement (at most 5 s)
        assert raw(clusters, "pya", "DELETE", f"/api/v1/resources/queues/{qname}").status_code == 200
        await until_push_passes(qa, qname + "-after")
        await qa.kv.put(ns, "k", 1, forever=True)

        # 2. space freed by retention: a queue that keeps its records one second
        rq = qname + "-ret"
        await qa.queue(rq).config({"retentionEnabled": True, "retentionSeconds": 1}).create()
        await qa.queue(rq).push([{"data": {"big": big}}])
        r = cp("PATCH", "/clusters/pya", {"quotas": {"maxStorageBytes": 2000}})
        assert r.json()["usage"]["storageBytes"] >= 2000, r.text
        assert await push_code(qa, qname + "-after", 1) == "storage_quota_exceeded"
        await until_push_passes(qa, qname + "-after", seconds=12.0)

        # 3. a raised ceiling: lifted at once on this node (the write measures again)
        await qa.queue(qname + "-big").push([{"data": {"big": big}}])
        r = cp("PATCH", "/clusters/pya", {"quotas": {"maxStorageBytes": 1000}})
        assert r.json()["usage"]["storageBytes"] >= 1000, r.text
        assert await push_code(qa, qname + "-after", 1) == "storage_quota_exceeded"
        assert cp("PATCH", "/clusters/pya", {"quotas": {"maxStorageBytes": 10**12}}).status_code == 200
        assert await push_code(qa, qname + "-after", 1) is None

        # 4. a purge: nothing left, lifted at once
        assert cp("PATCH", "/clusters/pya", {"quotas": {"maxStorageBytes": 1000}}).status_code == 200
        assert await push_code(qa, qname + "-after", 1) == "storage_quota_exceeded"
        assert cp("POST", "/clusters/pya/purge").json() == {"cluster": "pya", "purged": True}
        r = cp("GET", "/clusters/pya")
        assert r.json()["usage"]["storageBytes"] == 0, r.text
        assert await push_code(qa, qname + "-after", 1) is None
    finally:
        assert cp("PATCH", "/clusters/pya", {"quotas": {"maxStorageBytes": 0}}).status_code == 200
