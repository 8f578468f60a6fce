"""The embedded proxy through the real 2.x client (queen-mq 2.6.0): a cluster's token as the
client's bearer_token on the proxy port. The client sees the proxy's answers as it expects them
(docs/control-plane.md): 429 rate_limited with Retry-After is retried in place until it passes;
403 cluster_suspended makes a push raise with .code and a pop return nothing; push_blocked lets
the consumer drain; 403 storage_quota_exceeded reaches KV callers as KvError.code."""

import asyncio
import time

import httpx
import pytest

from conftest import free_port
from queen import Queen
from queen.errors import KvError

CP = "py-cp-token-0123456789abcdef"
PROXY_PORT = free_port()
BROKER_ENV = {"QUEEN_PROXY_CP_TOKEN": CP, "QUEEN_PROXY_PORT": str(PROXY_PORT)}
PROXY = f"http://127.0.0.1:{PROXY_PORT}"
H = {"x-queen-cp-token": CP}


def cp(method: str, path: str, body=None) -> httpx.Response:
    return httpx.request(method, PROXY + "/api/cp" + path, json=body, headers=H, timeout=10)


@pytest.fixture(scope="module")
def cluster(broker):
    r = cp("POST", "/clusters", {"name": "pyc"})
    assert r.status_code == 201, r.text
    return r.json()


@pytest.fixture
async def cc(cluster):
    q = Queen(PROXY, bearer_token=cluster["token"])
    try:
        yield q
    finally:
        await q.close()


async def test_push_and_pop_through_the_proxy(cc: Queen, qname):
    await cc.queue(qname).push([{"data": {"n": 1}}])
    msgs = await cc.queue(qname).batch(10).wait(False).pop()
    assert [m["data"] for m in msgs] == [{"n": 1}]
    await cc.ack(msgs, True)


async def test_rate_limit_is_retried_after_retry_after(cc: Queen, qname):
    r = cp("PATCH", "/clusters/pyc", {"quotas": {"requestsPerSecond": 2}})
    assert r.status_code == 200, r.text
    try:
        t0 = time.monotonic()
        for i in range(6):
            await cc.queue(qname).push([{"data": {"i": i}}])
        # 6 requests at 2 a second: the client waited out Retry-After at least twice
        assert time.monotonic() - t0 >= 1.5
        got = await cc.queue(qname).batch(10).wait(False).pop()
        assert sorted(m["data"]["i"] for m in got) == list(range(6))
    finally:
        assert cp("PATCH", "/clusters/pyc", {"quotas": {"requestsPerSecond": 0}}).status_code == 200


async def test_suspended_and_push_blocked(cc: Queen, qname):
    await cc.queue(qname).push([{"data": {"n": 1}}, {"data": {"n": 2}}])
    assert cp("PUT", "/clusters/pyc/status", {"status": "push_blocked"}).status_code == 200
    try:
        with pytest.raises(httpx.HTTPStatusError) as e:
            await cc.queue(qname).push([{"data": {"n": 3}}])
        assert e.value.response.status_code == 403
        assert getattr(e.value, "code", None) == "forbidden"
        # consumers drain
        msgs = await cc.queue(qname).batch(10).wait(False).pop()
        assert [m["data"]["n"] for m in msgs] == [1, 2]
        await cc.ack(msgs, True)

        assert cp("PUT", "/clusters/pyc/status", {"status": "suspended"}).status_code == 200
        with pytest.raises(httpx.HTTPStatusError) as e:
            await cc.queue(qname).push([{"data": {"n": 4}}])
        assert e.value.response.status_code == 403
        assert getattr(e.value, "code", None) == "cluster_suspended"
        # a pop swallows the 403 into nothing
        assert await cc.queue(qname).batch(10).wait(False).pop() == []
    finally:
        assert cp("PUT", "/clusters/pyc/status", {"status": "active"}).status_code == 200
    await cc.queue(qname).push([{"data": {"n": 5}}])


def kv_route_exists(broker) -> bool:
    """The client's KV surface is the 2.x batch route POST /api/v1/kv (issue 16's work)."""
    r = httpx.post(broker.url + "/api/v1/kv", json={"operations": []}, timeout=10)
    return not (r.status_code == 404 and r.json().get("code") == "not_found")


async def test_storage_ceiling(cc: Queen, qname):
    await cc.queue(qname).push([{"data": {"big": "x" * 4000}}])
    r = cp("PATCH", "/clusters/pyc", {"quotas": {"maxStorageBytes": 1000}})
    assert r.status_code == 200 and r.json()["usage"]["storageBytes"] >= 1000, r.text
    try:
        with pytest.raises(httpx.HTTPStatusError) as e:
            await cc.queue(qname).push([{"data": 1}])
        assert e.value.response.status_code == 403
        assert getattr(e.value, "code", None) == "storage_quota_exceeded"
        msgs = await cc.queue(qname).batch(10).wait(False).pop()
        assert len(msgs) == 1
    finally:
        assert cp("PATCH", "/clusters/pyc", {"quotas": {"maxStorageBytes": 0}}).status_code == 200


async def test_kv_sees_the_proxy_codes(broker, cc: Queen):
    if not kv_route_exists(broker):
        pytest.skip("this broker has no POST /api/v1/kv (the 2.x KV batch) yet")
    r = cp("PATCH", "/clusters/pyc", {"quotas": {"maxStorageBytes": 1}})
    assert r.status_code == 200, r.text
    try:
        with pytest.raises(KvError) as ke:
            await cc.kv.put("ns", "k", {"v": 1}, forever=True)
        assert ke.value.code == "storage_quota_exceeded" and ke.value.status == 403
        assert cp("PUT", "/clusters/pyc/status", {"status": "suspended"}).status_code == 200
        with pytest.raises(KvError) as ke:
            await cc.kv.get("ns", "k")
        assert ke.value.code == "cluster_suspended"
    finally:
        assert cp("PUT", "/clusters/pyc/status", {"status": "active"}).status_code == 200
        assert cp("PATCH", "/clusters/pyc", {"quotas": {"maxStorageBytes": 0}}).status_code == 200
