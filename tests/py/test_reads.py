"""The lease-free reads through the real 2.x client: queue(q).fetch(...) (POST /api/v1/fetch)
and queue(q).changed_since(...) (POST /api/v1/partitions/changed), with the loops the client
runs over them (1000 entries a call, asking again up to the high watermark, restarting at the
log start after retention, following next)."""

import asyncio
import re
from datetime import datetime, timedelta, timezone

from queen import Queen

BROKER_ENV = {"RETENTION_INTERVAL": "300"}
ISO_US = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


async def test_fetch_two_partitions(client: Queen, qname):
    await client.queue(qname).partition("a").push([{"data": {"a": i}} for i in range(3)])
    await client.queue(qname).partition("b").push([{"data": {"b": 0}}])
    read = await client.queue(qname).fetch(["a", "b"])
    assert list(read) == ["a", "b"]
    a = read["a"]
    assert [r["offset"] for r in a["records"]] == [0, 1, 2]
    assert [r["payload"] for r in a["records"]] == [{"a": 0}, {"a": 1}, {"a": 2}]
    assert all(ISO_US.match(r["ts"]) for r in a["records"])
    assert all(r["transactionId"] for r in a["records"])
    assert (a["highWatermark"], a["logStartOffset"], a["nextOffset"]) == (3, 0, 3)
    assert read["b"]["nextOffset"] == 1


async def test_fetch_from_offsets_reads_only_what_is_new(client: Queen, qname):
    await client.queue(qname).partition("p").push([{"data": i} for i in range(5)])
    first = await client.queue(qname).fetch("p")
    nxt = first["p"]["nextOffset"]
    await client.queue(qname).partition("p").push([{"data": 5}, {"data": 6}])
    again = await client.queue(qname).fetch("p", offsets={"p": nxt})
    assert [r["payload"] for r in again["p"]["records"]] == [5, 6]
    assert again["p"]["nextOffset"] == 7


async def test_fetch_unknown_queue_and_partition_read_nothing(client: Queen, qname):
    await client.queue(qname).partition("here").push([{"data": 1}])
    read = await client.queue(qname).fetch(["here", "not-here"])
    assert len(read["here"]["records"]) == 1
    assert read["not-here"]["records"] == []
    assert read["not-here"]["highWatermark"] == 0
    none = await client.queue(qname + "-never").fetch("x")
    assert none["x"]["records"] == []


async def test_fetch_loops_until_the_high_watermark_under_a_small_budget(client: Queen, qname):
    pad = "x" * 200
    await client.queue(qname).partition("p").push([{"data": {"i": i, "pad": pad}} for i in range(40)])
    read = await client.queue(qname).fetch("p", max_bytes=500)
    assert [r["payload"]["i"] for r in read["p"]["records"]] == list(range(40))


async def test_fetch_more_partitions_than_one_call_takes(client: Queen, qname, http):
    # 1100 partitions: the client asks in calls of 1000 entries; the broker answers one per entry
    items = [{"queue": qname, "partition": f"p{i:04d}", "payload": i} for i in range(1100)]
    r = http.post("/api/v1/push", json={"items": items})
    assert r.status_code == 201, r.text
    names = [f"p{i:04d}" for i in range(1100)]
    read = await client.queue(qname).fetch(names)
    assert len(read) == 1100
    assert all(read[n]["records"][0]["payload"] == i for i, n in enumerate(names))
    # discovery pages of 1000, followed by the client through next
    changed = await client.queue(qname).changed_since()
    assert [p["name"] for p in changed["partitions"]] == names
    assert ISO_US.match(changed["safeTime"])


async def test_fetch_after_retention_restarts_at_the_log_start(client: Queen, qname, http):
    # retention needs retentionEnabled here, an option the 2.x client's create() does not send
    r = http.post("/api/v1/configure", json={"queue": qname, "options": {"retentionEnabled": True,
                                                                         "retentionSeconds": 1}})
    assert r.status_code == 200, r.text
    await client.queue(qname).partition("r").push([{"data": {"old": i}} for i in range(5)])
    await asyncio.sleep(1.3)
    await client.queue(qname).partition("r").push([{"data": {"new": i}} for i in range(3)])
    for _ in range(60):
        read = await client.queue(qname).fetch("r")
        if read["r"]["logStartOffset"] == 5:
            break
        await asyncio.sleep(0.15)
    assert read["r"]["logStartOffset"] == 5
    assert [r["offset"] for r in read["r"]["records"]] == [5, 6, 7]
    assert [r["payload"] for r in read["r"]["records"]] == [{"new": 0}, {"new": 1}, {"new": 2}]


async def test_changed_since(client: Queen, qname):
    await client.queue(qname).partition("zeta").push([{"data": 1}])
    await client.queue(qname).partition("alpha").push([{"data": 1}])
    everything = await client.queue(qname).changed_since()
    parts = everything["partitions"]
    assert [p["name"] for p in parts] == ["zeta", "alpha"]  # creation order, not name order
    for p in parts:
        assert set(p) == {"name", "id", "lastOffset", "logStart", "lastWriteAt"}
        assert p["lastOffset"] == 0 and p["logStart"] == 0
        assert ISO_US.match(p["lastWriteAt"])
    safe = everything["safeTime"]
    assert ISO_US.match(safe)
    assert safe >= max(p["lastWriteAt"] for p in parts)
    await client.queue(qname).partition("zeta").push([{"data": 2}])
    moved = await client.queue(qname).changed_since(safe)
    newer = [(p["name"], p["lastOffset"]) for p in moved["partitions"] if p["lastWriteAt"] > safe]
    assert newer == [("zeta", 1)]
    assert moved["safeTime"] > safe
    # a datetime is sent as ISO with microseconds; an hour ago covers both
    hour_ago = await client.queue(qname).changed_since(datetime.now(timezone.utc) - timedelta(hours=1))
    assert len(hour_ago["partitions"]) == 2
    future = await client.queue(qname).changed_since(datetime.now(timezone.utc) + timedelta(hours=1))
    assert future["partitions"] == []


async def test_changed_since_unknown_queue(client: Queen, qname):
    r = await client.queue(qname + "-never").changed_since()
    assert r == {"partitions": [], "safeTime": None}


async def test_the_sink_loop_sees_every_record_once(client: Queen, qname):
    """Discovery with since = the last safeTime, then fetch from the last offsets: across rounds
    with pushes in between, every record is read exactly once."""
    seen = []
    offsets = {}
    since = None
    for rnd in range(4):
        await client.queue(qname).partition(f"p{rnd % 2}").push([{"data": {"r": rnd, "i": i}} for i in range(3)])
        changed = await client.queue(qname).changed_since(since)
        names = [p["name"] for p in changed["partitions"]]
        read = await client.queue(qname).fetch(names, offsets={n: offsets.get(n, 0) for n in names})
        for n in names:
            seen.extend((n, r["offset"]) for r in read[n]["records"])
            offsets[n] = read[n]["nextOffset"]
        since = changed["safeTime"]
    assert sorted(seen) == sorted(set(seen))
    assert len(seen) == 12
