"""Timers through the real 2.x client's public API (client.timers, client.timer(q), the
transaction's timer leg): schedule/reschedule as one upsert on (queue, timerKey), the standalone
cancel over DELETE, peek, list and list_all, payload_zstd, the broker's refusals as TimerError,
and the delivered messages as a consumer pops them. tests/integration/timers.test.mjs covers the
wire edges the client does not exercise (races, too_late, paging limits)."""

import asyncio
import base64
import json
import re
from datetime import timedelta

import httpx
import pytest
import zstandard

from queen import Queen
from queen.errors import TimerError

ISO_US = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


async def pop_until(client: Queen, queue: str, n: int, seconds: float = 10.0):
    """Pops (and acks) until n messages came or the time is up."""
    got = []
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while len(got) < n and loop.time() < end:
        msgs = await client.queue(queue).batch(100).wait(False).pop()
        if msgs:
            got.extend(msgs)
            await client.ack(msgs, True)
        else:
            await asyncio.sleep(0.1)
    return got


async def test_schedule_peek_and_deliver(client: Queen, qname):
    r = await client.timers.schedule(qname, "order:9f1/expire", {"orderId": "9f1", "total": 42.5}, delay_ms=300)
    assert r
    assert r["ok"] is True and r["status"] == "scheduled"
    assert (r["queue"], r["timerKey"]) == (qname, "order:9f1/expire")
    assert UUID.match(r["txn"]), r  # minted by the client (v7 with uuid_extensions, else v4)
    assert r["messageId"] is None  # a message's id is its place in the log: none until it fires
    assert ISO_US.match(r["deliverAt"])
    p = await client.timers.peek(qname, "order:9f1/expire")
    assert p and p["found"] is True
    assert p["txn"] == r["txn"] and p["deliverAt"] == r["deliverAt"]
    assert p["encrypted"] is False and p["attempts"] == 0
    # the payload exactly as stored: the JSON text the client encoded
    assert json.loads(base64.b64decode(p["payload"])) == {"orderId": "9f1", "total": 42.5}
    msgs = await pop_until(client, qname, 1)
    assert [m["data"] for m in msgs] == [{"orderId": "9f1", "total": 42.5}]
    # the delivered message carries the timer's txn: the correlation the client relies on
    assert msgs[0]["transactionId"] == r["txn"]
    miss = await client.timers.peek(qname, "order:9f1/expire")
    assert not miss
    assert dict(miss) == {"found": False}


async def test_builder_reschedule_replaces(client: Queen, qname):
    first = await client.timer(qname).key("k").payload({"v": 1}).after(timedelta(hours=1)).schedule()
    assert first["status"] == "scheduled"
    # the same upsert under either name: a schedule of a pending key replaces it too
    again = await client.timers.schedule(qname, "k", {"v": 2}, delay=timedelta(hours=1), txn="mine-2")
    assert (again["status"], again["txn"]) == ("rescheduled", "mine-2")
    last = await client.timer(qname).key("k").payload({"v": 3}).after_ms(200).partition("p7").reschedule()
    assert last["status"] == "rescheduled"
    msgs = await pop_until(client, qname, 1)
    await asyncio.sleep(1.0)
    msgs += await pop_until(client, qname, 1, seconds=0.5)
    # only the last one fires, into its partition
    assert [(m["data"], m["partition"], m["transactionId"]) for m in msgs] == [({"v": 3}, "p7", last["txn"])]
    # a reschedule of a key no longer pending creates it: scheduled
    fresh = await client.timers.reschedule(qname, "k", {"v": 4}, delay_ms=3_600_000)
    assert fresh["status"] == "scheduled"
    await client.timers.cancel(qname, "k")


async def test_cancel_over_the_delete_route(client: Queen, qname):
    s = await client.timers.schedule(qname, "a/b c", "later", delay_ms=3_600_000)
    c = await client.timers.cancel(qname, "a/b c", txn=s["txn"])
    assert c and (c["status"], c["txn"], c["deliverAt"]) == ("cancelled", s["txn"], s["deliverAt"])
    # not pending any more: absent (which may mean delivered), the txn echoed for that check
    gone = await client.timers.cancel(qname, "a/b c", txn=s["txn"])
    assert not gone
    assert (gone["ok"], gone["status"], gone["txn"], gone["deliverAt"]) == (False, "absent", s["txn"], None)
    assert await pop_until(client, qname, 1, seconds=0.5) == []
    # the builder's cancel takes the same route
    await client.timer(qname).key("b").payload(1).after_ms(3_600_000).schedule()
    assert (await client.timer(qname).key("b").cancel())["status"] == "cancelled"


async def test_list_and_list_all(client: Queen, qname):
    keys = ["b", "B", "a/1", "a", "caf\u00e9", "z z", "0"]
    res = await client.timers.batch([client.timers.op.schedule(qname, k, {"k": k}, delay_ms=3_600_000) for k in keys])
    assert [r["status"] for r in res] == ["scheduled"] * len(keys)
    order = sorted(keys, key=lambda k: k.encode())
    page = await client.timers.list(qname, limit=3)
    assert [r["timerKey"] for r in page["rows"]] == order[:3]
    assert page["truncated"] is True and page["nextAfter"] == order[2]
    nxt = await client.timers.list(qname, after=page["nextAfter"], limit=3)
    assert [r["timerKey"] for r in nxt["rows"]] == order[3:6]
    rows = await client.timers.list_all(qname, limit=2)
    assert [r["timerKey"] for r in rows] == order
    assert all(json.loads(base64.b64decode(r["payload"])) == {"k": r["timerKey"]} for r in rows)
    assert [r["timerKey"] for r in await client.timers.list_all(qname, limit=2, max_rows=4)] == order[:4]
    # limit is clamped, never refused
    assert len((await client.timers.list(qname, limit=0))["rows"]) == 1
    assert len((await client.timers.list(qname, limit=10**6))["rows"]) == len(keys)
    res = await client.timers.batch([client.timers.op.cancel(qname, k) for k in keys])
    assert [r["status"] for r in res] == ["cancelled"] * len(keys)
    assert (await client.timers.list(qname)) == {"rows": [], "truncated": False, "nextAfter": None}


async def test_batch_results_are_index_aligned(client: Queen, qname):
    op = client.timers.op
    res = await client.timers.batch([
        op.schedule(qname, "x", 1, delay_ms=3_600_000),
        op.cancel(qname, "nothing", txn="t-0"),
        op.schedule(qname, "y", 2, delay_ms=3_600_000, reschedule=True),
        op.cancel(qname, "x"),
        op.schedule(qname, "x", 3, delay_ms=3_600_000),
    ])
    assert [(r["timerKey"], r["status"]) for r in res] == [
        ("x", "scheduled"), ("nothing", "absent"), ("y", "scheduled"), ("x", "cancelled"), ("x", "scheduled")]
    assert res[1]["txn"] == "t-0"
    assert [bool(r) for r in res] == [True, False, True, True, True]
    for k in ("x", "y"):
        await client.timers.cancel(qname, k)


async def test_payload_zstd_and_raw_bytes(client: Queen, qname):
    text = json.dumps({"zipped": True, "lines": list(range(50))}).encode()
    frame = zstandard.ZstdCompressor(level=1, write_content_size=True).compress(text)
    z = await client.timer(qname).key("z").payload(frame, zstd=True).after_ms(100).schedule()
    assert z["status"] == "scheduled"
    # bytes go through as they are: a caller's own JSON text, spacing kept
    raw = await client.timers.schedule(qname, "raw", b'{ "spaced" :  1 }', delay_ms=100)
    assert raw["status"] == "scheduled"
    msgs = await pop_until(client, qname, 2)
    assert sorted([json.dumps(m["data"], sort_keys=True) for m in msgs]) == sorted(
        [json.dumps({"zipped": True, "lines": list(range(50))}, sort_keys=True), json.dumps({"spaced": 1})])
    # a frame without its content size is refused, with the broker's code
    sizeless = zstandard.ZstdCompressor(level=1, write_content_size=False).compressobj()
    frame2 = sizeless.compress(text) + sizeless.flush()
    with pytest.raises(TimerError) as e:
        await client.timers.schedule(qname, "z2", frame2, delay_ms=100, payload_zstd=True)
    assert (e.value.status, e.value.code, e.value.reason) == (400, "timer_invalid_payload", "zstd_invalid")
    assert "content size" in e.value.detail


async def test_refusals_are_timer_errors(client: Queen, qname, http):
    with pytest.raises(TimerError) as e:
        await client.timers.schedule(qname, "k", b"not json", delay_ms=1)
    assert (e.value.status, e.value.code, e.value.reason) == (400, "timer_invalid_payload", "not_json")
    long_key = "k" * 1025
    with pytest.raises(TimerError) as e:
        await client.timers.schedule(qname, long_key, 1, delay_ms=1)
    assert (e.value.code, e.value.reason) == ("timer_invalid_name", "key_invalid")
    # the client refuses server-owned fields before sending; the broker refuses them too
    with pytest.raises(ValueError):
        await client.timers.batch([{**client.timers.op.schedule(qname, "k", 1, delay_ms=1), "producerSub": "mallory"}])
    op = {**client.timers.op.schedule(qname, "k", 1, delay_ms=1), "producerSub": "mallory"}
    r = http.post("/api/v1/timers", json={"operations": [op]})
    assert r.status_code == 400
    assert r.json()["code"] == "timer_server_owned_field" and r.json()["index"] == 0
    assert (await client.timers.list(qname))["rows"] == []


async def test_transaction_rider(client: Queen, qname):
    await client.queue(qname).push([{"data": "in"}])
    msgs = await client.queue(qname).batch(1).wait(False).pop()
    tx = client.transaction().ack(msgs[0])
    tx.queue(qname + "-out").push([{"data": "out"}])
    tx.timer(qname + "-later").key("k").payload({"later": True}).after_ms(3_600_000).schedule()
    result = await tx.commit()
    assert result.get("success") is True, result
    p = await client.timers.peek(qname + "-later", "k")
    assert p["found"] is True
    tx2 = client.transaction()
    tx2.timer(qname + "-later").key("k").cancel()
    assert (await tx2.commit()).get("success") is True
    assert not await client.timers.peek(qname + "-later", "k")
