"""The KV store through the real 2.x client's public API (client.kv): every op of POST
/api/v1/kv, the mandatory expiry, `expect` fencing (an expired row against expect 0), `required`
rolling a whole batch back, per-op verdicts at 200, incr's min/max admission and create-only
TTL, getMany/getPrefix pages, and the broker's refusals as KvError with their stable codes.
tests/integration/kv.test.mjs covers the wire edges the client refuses to send."""

import asyncio
import re
import uuid

import httpx
import pytest

from queen import Queen
from queen.errors import KvError

ISO_US = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


@pytest.fixture
def ns():
    return "t-" + uuid.uuid4().hex[:10]


async def test_put_get_roundtrip_and_verdicts(client: Queen, ns):
    kv = client.kv
    miss = await kv.get(ns, "a")
    assert not miss and miss["found"] is False
    w = await kv.put(ns, "a", {"x": [1, 2.5, "s"], "n": None}, ttl_seconds=60)
    assert w and w["applied"] is True and w["version"] > 0
    assert ISO_US.match(w["expiresAt"])
    g = await kv.get(ns, "a")
    assert g and g["found"] is True and g["key"] == "a"
    assert g["value"] == {"x": [1, 2.5, "s"], "n": None}
    assert g["version"] == w["version"] and g["expiresAt"] == w["expiresAt"]
    assert ISO_US.match(g["updatedAt"])
    # {found: true, value: null} is not {found: false}
    await kv.put(ns, "nul", None, forever=True)
    n = await kv.get(ns, "nul")
    assert n["found"] is True and n["value"] is None and n["expiresAt"] is None
    # a put never inherits the previous expiry: forever now
    w2 = await kv.put(ns, "a", "v2", forever=True)
    assert w2["version"] > w["version"] and w2["expiresAt"] is None


async def test_expect_fencing_and_put_if_absent(client: Queen, ns):
    kv = client.kv
    first = await kv.put_if_absent(ns, "lease", {"holder": "n1"}, ttl_seconds=30)
    assert first["applied"] is True
    second = await kv.put_if_absent(ns, "lease", {"holder": "n2"}, ttl_seconds=30)
    assert not second and second["reason"] == "exists"
    # the loser sees the current value and version (advisory)
    assert second["value"] == {"holder": "n1"} and second["version"] == first["version"]
    assert await kv.once(ns, "gate", ttl_seconds=30) is True
    assert await kv.once(ns, "gate", ttl_seconds=30) is False
    ok = await kv.put(ns, "lease", {"holder": "n1", "n": 2}, ttl_seconds=30, expect=first["version"])
    assert ok["applied"] is True
    stale = await kv.put(ns, "lease", {"holder": "zombie"}, ttl_seconds=30, expect=first["version"])
    assert not stale and stale["reason"] == "version" and stale["version"] == ok["version"]
    # expect N > 0 creates nothing
    none = await kv.put(ns, "nothere", 1, forever=True, expect=5)
    assert not none and none["reason"] == "absent"
    assert not await kv.get(ns, "nothere")
    # delete with expect, and an absent delete at 200
    bad = await kv.delete(ns, "lease", expect=first["version"])
    assert not bad and bad["reason"] == "version"
    gone = await kv.delete(ns, "lease", expect=ok["version"])
    assert gone["applied"] is True
    again = await kv.delete(ns, "lease")
    assert not again and again["reason"] == "absent"
    # the version sequence never repeats: a re-created key is a stranger to an old fence
    re_ = await kv.put_if_absent(ns, "lease", 1, ttl_seconds=30)
    assert re_["version"] > ok["version"]


async def test_expired_row_counts_as_absent(client: Queen, ns):
    kv = client.kv
    w = await kv.put(ns, "e", "short", ttl_seconds=1)
    await asyncio.sleep(1.3)
    assert not await kv.get(ns, "e")
    # expect 0 holds against an expired row the reaper may not have pruned yet
    c = await kv.check(ns, "e", expect=0)
    assert c["applied"] is True
    fenced = await kv.put(ns, "e", "late", ttl_seconds=5, expect=w["version"])
    assert not fenced and fenced["reason"] == "absent"
    r = await kv.put(ns, "e", "new", ttl_seconds=5, expect=0)
    assert r["applied"] is True


async def test_check(client: Queen, ns):
    kv = client.kv
    w = await kv.put(ns, "k", {"a": 1}, forever=True)
    assert (await kv.check(ns, "k", expect=w["version"]))["applied"] is True
    c = await kv.check(ns, "k", expect=0)
    assert not c and c["reason"] == "exists" and c["value"] == {"a": 1}
    c = await kv.check(ns, "k", expect=w["version"] + 1000)
    assert not c and c["reason"] == "version"
    c = await kv.check(ns, "zz", expect=3)
    assert not c and c["reason"] == "absent"
    with pytest.raises(ValueError):
        await kv.check(ns, "k")  # the client requires expect


async def test_incr_min_max_and_create_only_ttl(client: Queen, ns):
    kv = client.kv
    a = await kv.incr(ns, "c", ttl_seconds=2)
    assert a["applied"] is True and a["value"] == 1 and a["created"] is True
    b = await kv.incr(ns, "c", delta=4, max=5, ttl_seconds=3600)
    assert b["applied"] is True and b["value"] == 5
    # the window keeps its first expiry (create-only TTL)
    assert b["expiresAt"] == a["expiresAt"]
    refused = await kv.incr(ns, "c", max=5, ttl_seconds=2)
    assert not refused and refused["reason"] == "max_exceeded" and refused["value"] == 5
    low = await kv.incr(ns, "c", delta=-5, min=1, ttl_seconds=2)
    assert not low and low["reason"] == "min_exceeded"
    down = await kv.incr(ns, "c", delta=-4, min=1, ttl_seconds=2)
    assert down["applied"] is True and down["value"] == 1
    await asyncio.sleep(2.2)
    # an expired counter counts as zero and opens a new window
    fresh = await kv.incr(ns, "c", delta=3, forever=True)
    assert fresh["value"] == 3 and fresh["created"] is True and fresh["expiresAt"] is None
    await kv.put(ns, "s", "text", forever=True)
    bad = await kv.incr(ns, "s", forever=True)
    assert not bad and bad["reason"] == "not_integer"
    with pytest.raises(TypeError):
        await kv.incr(ns, "c", delta=True, forever=True)


async def test_get_many_and_prefix_pages(client: Queen, ns):
    kv = client.kv
    ops = [kv.op.put(ns, f"p:{i:03d}", {"i": i}, forever=True) for i in range(25)]
    ops.append(kv.op.put(ns, "q:1", 1, forever=True))
    res = await kv.batch(ops)
    assert len(res) == 26 and all(r["applied"] for r in res)
    m = await kv.get_many(ns, ["p:003", "nope", "p:001", "p:003"])
    assert [r["key"] for r in m["rows"]] == ["p:003", "p:001"]
    assert m["rows"][0]["value"] == {"i": 3} and m["missing"] == ["nope"]
    page = await kv.get_prefix(ns, "p:", limit=10)
    assert [r["key"] for r in page["rows"]] == [f"p:{i:03d}" for i in range(10)]
    assert page["truncated"] is True and page["nextAfter"] == "p:009"
    nxt = await kv.get_prefix(ns, "p:", after=page["nextAfter"], limit=10, keys_only=True)
    assert [r["key"] for r in nxt["rows"]] == [f"p:{i:03d}" for i in range(10, 20)]
    assert "value" not in nxt["rows"][0]
    every = await kv.list_all(ns, "p:", limit=7)
    assert [r["key"] for r in every] == [f"p:{i:03d}" for i in range(25)]
    # a huge limit is clamped, never refused; LIKE metacharacters are literal
    big = await kv.get_prefix(ns, "p:", limit=10**9)
    assert len(big["rows"]) == 25 and big["truncated"] is False and big["nextAfter"] is None
    await kv.put(ns, "x%_y", 1, forever=True)
    lit = await kv.get_prefix(ns, "x%_")
    assert [r["key"] for r in lit["rows"]] == ["x%_y"]
    assert (await kv.get_prefix(ns, "x_"))["rows"] == []
    with pytest.raises(ValueError, match="kv_prefix_required"):
        await kv.get_prefix(ns, "")


async def test_batch_in_order_and_required_rolls_back(client: Queen, ns):
    kv = client.kv
    op = kv.op
    res = await kv.batch([
        op.put(ns, "a", 1, forever=True),
        op.get(ns, "a"),
        op.incr(ns, "a", delta=2, forever=True),
        op.delete(ns, "a"),
        op.get(ns, "a"),
    ])
    assert [bool(r) for r in res] == [True, True, True, True, False]
    assert res[1]["value"] == 1 and res[2]["value"] == 3
    # a non-required failure does not stop the batch
    res = await kv.batch([op.put_if_absent(ns, "b", 1, forever=True), op.put_if_absent(ns, "b", 2, forever=True),
                          op.put(ns, "c", 3, forever=True)])
    assert [bool(r) for r in res] == [True, False, True]
    # a required one rolls everything back, earlier writes included
    res = await kv.batch([
        op.put(ns, "d", "written", forever=True),
        op.incr(ns, "c", forever=True),
        op.put_if_absent(ns, "b", "again", forever=True, required=True),
        op.put(ns, "e", "after", forever=True),
    ])
    assert len(res) == 4 and not any(bool(r) for r in res)
    assert res[2]["reason"] == "exists" and res[2]["value"] == 1
    assert res[0]["reason"] == "rolled_back"
    assert not await kv.get(ns, "d") and not await kv.get(ns, "e")
    assert (await kv.get(ns, "c"))["value"] == 3


async def test_refusals_are_kv_errors(client: Queen, ns, http: httpx.Client):
    def refused(body):
        r = http.post("/api/v1/kv", json=body)
        assert r.status_code == 400, r.text
        j = r.json()
        assert set(j) >= {"error", "reason", "detail"}
        return j

    j = refused({"operations": [{"op": "put", "ns": ns, "key": "k", "value": 1}]})
    assert j["error"] == "kv_expiry_not_specified" and j["index"] == 0
    j = refused({"operations": [{"op": "put", "ns": ns, "key": "k", "value": 1, "ttlSeconds": 5, "forever": True}]})
    assert j["error"] == "kv_expiry_not_specified"
    j = refused({"operations": [{"op": "getPrefix", "ns": ns, "prefix": ""}]})
    assert j["error"] == "kv_prefix_required"
    j = refused({"operations": [{"op": "get", "ns": ns, "key": "k"}, {"op": "put", "ns": ns, "key": "k",
                                                                           "value": 1, "forever": True, "expect": None}]})
    assert j["error"] == "kv_invalid_expect" and j["index"] == 1
    j = refused({"operations": [{"op": "incr", "ns": ns, "key": "k", "forever": True, "expect": 1}]})
    assert j["error"] == "kv_unknown_field"
    j = refused({"operations": [], "namespace": ns})
    assert j["error"] == "kv_invalid_body"
    # the client raises KvError with the code and reason of the envelope
    with pytest.raises(KvError) as e:
        await client.kv.batch([{"op": "frobnicate", "ns": ns, "key": "k"}])
    assert e.value.code == "kv_invalid_op" and e.value.reason == "op_unknown" and e.value.status == 400
    with pytest.raises(KvError) as e:
        await client.kv.put(ns, "k" * 2000, 1, forever=True)
    assert e.value.code == "kv_invalid_name"
