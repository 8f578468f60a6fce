"""Locks and semaphores through the real 2.x client (client.lock, client.semaphore,
client.locks): POST /api/v1/locks, permits as KV rows in `queen-locks`, the token changing at
every renew, idempotent acquire by owner, release and loss, get's holders, and the guard op a
transaction commits under (tx.guard(lock)), including the resend after the handle's own renew."""

import asyncio
import uuid

import httpx
import pytest

from queen import Queen
from queen.errors import LockError


@pytest.fixture
def name():
    return "lk-" + uuid.uuid4().hex[:10]


async def test_acquire_release_and_contention(client: Queen, name):
    a = client.lock(name, ttl_seconds=30, owner="holder-a")
    b = client.lock(name, ttl_seconds=30, owner="holder-b")
    assert await a.acquire() is True
    assert a.held and a.slot == 0 and a.token > 0
    assert await b.acquire() is False
    res = await client.locks.acquire(name, ttl_seconds=30, owner="holder-c")
    assert not res and res["reason"] == "held"
    assert [h["owner"] for h in res["holders"]] == ["holder-a"]
    # the same owner again is the permit it already has (an answer lost on the way)
    again = await client.locks.acquire(name, ttl_seconds=30, owner="holder-a")
    assert again["acquired"] is True and again.get("already") is True and again["token"] == a.token
    got = await client.locks.get(name)
    assert got and got["held"] is True
    h = got["holders"][0]
    assert (h["slot"], h["owner"], h["token"]) == (0, "holder-a", a.token)
    assert h["since"] and h["expiresAt"] and h["renewedAt"]
    # the permit is a KV row in queen-locks, readable with the public KV route
    row = await client.kv.get("queen-locks", f"{name}#0")
    assert row["found"] and row["version"] == a.token and row["value"]["owner"] == "holder-a"
    assert await a.release() is True
    assert not (await client.locks.get(name))["held"]
    assert await b.acquire() is True
    await b.release()


async def test_renew_changes_the_token_and_retires_the_old(client: Queen, name):
    lock = client.lock(name, ttl_seconds=30, auto_renew=False)
    assert await lock.acquire()
    first = lock.token
    guard = lock.guard()
    assert guard == {"op": "check", "ns": "queen-locks", "key": f"{name}#0", "expect": first, "required": True}
    assert await lock.renew() is True
    assert lock.token > first and lock.guard()["expect"] == lock.token
    stale = await client.locks.renew(name, token=first, ttl_seconds=30, slot=0)
    assert not stale and stale["reason"] == "lost" and stale["holders"][0]["token"] == lock.token
    rel = await client.locks.release(name, token=first, slot=0)
    assert not rel and rel["reason"] == "lost"
    # a renew without a slot finds the permit by its token
    r = await client.locks.renew(name, token=lock.token, ttl_seconds=30)
    assert r["renewed"] is True and r["slot"] == 0
    assert (await client.locks.release(name, token=r["token"]))["released"] is True


async def test_semaphore_permits(client: Queen, name):
    holders = [client.semaphore(name, 3, ttl_seconds=30) for _ in range(4)]
    got = [await h.acquire() for h in holders]
    assert got == [True, True, True, False]
    assert sorted(h.slot for h in holders[:3]) == [0, 1, 2]
    full = await client.locks.acquire(name, ttl_seconds=30, limit=3, owner="late")
    assert not full and full["reason"] == "held" and len(full["holders"]) == 3
    await holders[1].release()
    assert await holders[3].acquire() is True
    assert holders[3].slot == 1
    for h in holders:
        await h.release()


async def test_expired_permit_is_taken_over(client: Queen, name):
    a = client.lock(name, ttl_seconds=1, auto_renew=False, owner="a")
    assert await a.acquire()
    old = a.token
    await asyncio.sleep(1.3)
    b = client.lock(name, ttl_seconds=30, owner="b")
    assert await b.acquire() is True and b.token > old
    r = await client.locks.renew(name, token=old, ttl_seconds=30, slot=0)
    assert r["renewed"] is False
    await b.release()


async def test_guard_in_a_transaction(client: Queen, qname, name):
    lock = client.lock(name, ttl_seconds=30, auto_renew=False, owner="worker-1")
    assert await lock.acquire()
    r = await client.transaction().guard(lock).queue(qname).push([{"data": "under lock"}]).commit()
    assert r["success"] is True, r
    # the holder's own renew moved the token after the bundle was built: the client resends
    tx = client.transaction().guard(lock)
    tx.queue(qname).push([{"data": "after renew"}])
    await client.locks.renew(name, token=lock.token, ttl_seconds=30, slot=0, owner="worker-1")
    r = await tx.commit()
    assert r["success"] is False and r["reason"] == "kv_precondition" and r["kvReason"] == "version"
    assert r["value"]["owner"] == "worker-1" and r["failedIndex"] == 1
    # another holder took over: the guarded step commits nothing and the handle is lost
    await client.locks.release(name, token=r["version"], slot=0)
    other = client.lock(name, ttl_seconds=30, owner="worker-2")
    assert await other.acquire()
    lock2 = client.lock(name, ttl_seconds=30, owner="worker-1")
    lock2._token, lock2._slot, lock2._guard = lock.token, 0, lock.guard()
    lock2._valid_until = lock._valid_until
    r = await client.transaction().guard(lock2).queue(qname).push([{"data": "zombie"}]).commit()
    assert r["success"] is False and r["reason"] == "kv_precondition"
    assert lock2.lost.is_set()
    msgs = await client.queue(qname).batch(10).wait(False).pop()
    assert [m["data"] for m in msgs] == ["under lock"]
    await other.release()


async def test_refusals(client: Queen, http: httpx.Client, name):
    def refused(body):
        r = http.post("/api/v1/locks", json=body)
        assert r.status_code == 400, r.text
        return r.json()

    assert refused({"operations": [{"op": "acquire", "name": name}]})["error"] == "lock_invalid_ttl"
    assert refused({"operations": [{"op": "acquire", "name": "a#b", "ttlSeconds": 5}]})["error"] == "lock_invalid_name"
    assert refused({"operations": [{"op": "acquire", "name": "a\u0085b", "ttlSeconds": 5}]})["error"] == "lock_invalid_name"
    assert refused({"operations": [{"op": "acquire", "name": name, "ttlSeconds": 5, "limit": 1025}]})["error"] == "lock_invalid_limit"
    assert refused({"operations": [{"op": "renew", "name": name, "ttlSeconds": 5}]})["error"] == "lock_invalid_token"
    assert refused({"operations": [{"op": "release", "name": name, "token": 1, "ttlSeconds": 5}]})["error"] == "lock_unknown_field"
    assert refused({"operations": [{"op": "steal", "name": name}]})["error"] == "lock_invalid_op"
    with pytest.raises(LockError) as e:
        await client.locks.batch([{"op": "get", "name": name, "x": 1}])
    assert e.value.code == "lock_unknown_field" and e.value.status == 400
