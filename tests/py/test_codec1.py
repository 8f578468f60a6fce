"""Codec 1: the producer's zstd frames (`Queen(binary_push=True, push_compression=True)`, QPB1
flag 8) stored as they were sent, and every reader reading them back exactly as it reads the
same records pushed as JSON (codec 0). Each test first checks, in PostgreSQL, that the segments
it reads really are codec 1 (first byte 2) — or, where the broker must fall back (a sealed
queue, a duplicate inside a frame, a deleted record), codec 0 — so no test here passes on the
old path by accident."""

import asyncio

import httpx
from queen import Queen

KEY = "33" * 32
BROKER_ENV = {"QUEEN_ENCRYPTION_KEY": KEY, "RETENTION_INTERVAL": "300"}
ITEMS = [{"transactionId": f"t{i}", "data": {"i": i, "s": "héllo", "pad": "x" * 40}} for i in range(30)]


def db(broker):
    return broker.env["QUEEN_PG_URL"].rsplit("/", 1)[1]


def codecs(pg, broker, queue):
    """The first byte of each segment of the queue, in (partition name, offset) order."""
    out = pg.psql(
        "SELECT string_agg(get_byte(s.data, 0)::text, ',' ORDER BY p.name, s.base_offset) FROM queen.segments s "
        f"JOIN queen.partitions p ON p.id = s.partition_id JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '{queue}'",
        db(broker))
    return [int(x) for x in out.split(",")] if out else []


async def push_both(broker, qname, items=ITEMS, partition="p"):
    """The same items as JSON into qname-json and as producer frames into qname-z."""
    async with Queen(broker.url) as j, Queen(broker.url, binary_push=True, push_compression=True) as z:
        a = await j.queue(qname + "-json").partition(partition).push(items)
        b = await z.queue(qname + "-z").partition(partition).push(items)
    assert [r["status"] for r in a] == [r["status"] for r in b] == ["queued"] * len(items), (a, b)
    return a, b


def strip(m):
    return {k: m.get(k) for k in ("transactionId", "data", "partition", "producerSub", "traceId")}


async def test_frames_are_stored_unchanged_and_pop_reads_them(broker, pg, qname):
    await push_both(broker, qname)
    assert codecs(pg, broker, qname + "-json") == [1]
    assert codecs(pg, broker, qname + "-z") == [2]
    async with Queen(broker.url) as c, Queen(broker.url, framed_pop=True) as f:
        want = await c.queue(qname + "-json").batch(100).wait(False).pop()
        got = await c.queue(qname + "-z").batch(100).wait(False).pop()
        assert [strip(m) for m in got] == [strip(m) for m in want]
        assert len(got) == 30
        # the framed pop of another group, whole and in parts (a claim inside a stored frame)
        framed = await f.queue(qname + "-z").group("fr").batch(100).wait(False).pop()
        assert [strip(m) for m in framed] == [strip(m) for m in want]
        part = []
        for _ in range(4):
            got8 = await f.queue(qname + "-z").group("fr8").batch(8).wait(False).pop()
            part += got8
            ack = await f.ack(got8, True, {"group": "fr8"})
            assert ack["success"] is True
        assert [m["transactionId"] for m in part] == [f"t{i}" for i in range(30)]
        # and a caller's transactionId still deduplicates against what the frames stored
    async with Queen(broker.url, binary_push=True, push_compression=True) as z:
        again = await z.queue(qname + "-z").partition("p").push([ITEMS[3], {"transactionId": "new", "data": 1}])
        assert [r["status"] for r in again] == ["duplicate", "queued"]


def framed_raw(broker, path):
    r = httpx.get(broker.url + path + "&frames=true", timeout=30)
    assert r.status_code == 200, r.text
    return r.content


async def test_framed_pop_hands_a_whole_frame_out_as_stored(broker, pg, qname):
    from queen.http.pop_frames import decode_pop_frames

    await push_both(broker, qname)
    body = framed_raw(broker, f"/api/v1/pop/queue/{qname}-z?batch=100&wait=false&autoAck=true")
    stored = pg.psql(
        "SELECT encode(s.data, 'hex') FROM queen.segments s JOIN queen.partitions p ON p.id = s.partition_id "
        f"JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '{qname}-z'", db(broker))
    seg = bytes.fromhex(stored)
    # codec 1, one zstd chunk: 02 | 01 | count | producer len 0 | zlen varint | z
    assert seg[0] == 2 and seg[1] == 1 and seg[2] == 30 and seg[3] == 0
    zlen, i, shift = 0, 4, 0
    while True:
        b = seg[i]
        zlen |= (b & 127) << shift
        i += 1
        if b < 128:
            break
        shift += 7
    z = seg[i:i + zlen]
    assert len(z) == zlen and z in body, "the answer carries the producer's zstd frame byte for byte"
    msgs = decode_pop_frames(body)["messages"]
    assert [m["data"] for m in msgs] == [it["data"] for it in ITEMS]
    assert [m["transactionId"] for m in msgs] == [it["transactionId"] for it in ITEMS]


async def test_fetch_changed_and_the_browser_read_codec1(broker, pg, qname):
    await push_both(broker, qname)
    assert codecs(pg, broker, qname + "-z") == [2]
    async with Queen(broker.url) as c:
        a = await c.queue(qname + "-json").fetch("p")
        b = await c.queue(qname + "-z").fetch("p")
        assert len(a["p"]["records"]) == len(b["p"]["records"]) == 30
        rec = lambda r: (r["offset"], r["transactionId"], r["payload"])  # noqa: E731
        assert [rec(r) for r in b["p"]["records"]] == [rec(r) for r in a["p"]["records"]]
        assert b["p"]["nextOffset"] == 30
        # from an offset inside the frame
        mid = await c.queue(qname + "-z").fetch("p", offsets={"p": 17})
        assert [r["offset"] for r in mid["p"]["records"]] == list(range(17, 30))
        ch = await c.queue(qname + "-z").changed_since()
        assert "'p'" in str(ch), ch
        lst = await c.admin.list_messages(queue=qname + "-z")
        assert sorted(m["transactionId"] for m in lst["messages"]) == sorted(f"t{i}" for i in range(30))
        pid = lst["messages"][0]["partitionId"]
    with httpx.Client(base_url=broker.url, timeout=30) as h:
        for t in ("t0", "t29", "t13"):
            m = h.get(f"/api/v1/messages/{pid}/{t}").json()
            assert m["payload"] == ITEMS[int(t[1:])]["data"] and m["transactionId"] == t
        # by message id (derived from partition and offset, as for every push)
        mid_id = lst["messages"][0]["id"]
        assert h.get(f"/api/v1/messages/{pid}/{mid_id}").json()["id"] == mid_id


async def test_delete_re_encodes_the_segment_and_skips_the_record(broker, pg, qname):
    await push_both(broker, qname)
    async with Queen(broker.url) as c:
        pid = (await c.admin.list_messages(queue=qname + "-z"))["messages"][0]["partitionId"]
        with httpx.Client(base_url=broker.url, timeout=30) as h:
            r = h.delete(f"/api/v1/messages/{pid}/t7")
            assert r.status_code == 200, r.text
            assert h.get(f"/api/v1/messages/{pid}/t7").status_code == 404
            assert h.get(f"/api/v1/messages/{pid}/t8").json()["payload"] == ITEMS[8]["data"]
        assert codecs(pg, broker, qname + "-z") == [1]
        got = await c.queue(qname + "-z").batch(100).wait(False).pop()
        assert [m["transactionId"] for m in got] == [f"t{i}" for i in range(30) if i != 7]


async def test_dead_letters_and_retry_of_a_record_inside_a_frame(broker, pg, qname):
    async with Queen(broker.url) as c:
        await c.queue(qname + "-z").config({"deadLetterQueue": True}).create()
    await push_both(broker, qname)
    assert codecs(pg, broker, qname + "-z") == [2]
    async with Queen(broker.url) as c:
        got = await c.queue(qname + "-z").batch(3).wait(False).pop()
        assert [m["transactionId"] for m in got] == ["t0", "t1", "t2"]
        await c.ack(got[1], "dlq")
        await c.ack(got[2], "dlq")
        await c.ack(got[0], True)
        dl = await c.queue(qname + "-z").dlq().get()
        assert dl["total"] == 2
        pid = got[1]["partitionId"]
        with httpx.Client(base_url=broker.url, timeout=30) as h:
            m = h.get(f"/api/v1/messages/{pid}/t1").json()
            assert m["payload"] == ITEMS[1]["data"] and m["status"] == "dead_letter"
            d = h.get("/api/v1/dlq", params={"queue": qname + "-z"}).json()
            assert sorted((m["transactionId"], m["offset"], str(m["data"])) for m in d["messages"]) == [
                ("t1", 1, str(ITEMS[1]["data"])), ("t2", 2, str(ITEMS[2]["data"]))], d
            # a requeue appends the dead letter's record (read out of the frame) as a new one
            t2 = [m for m in d["messages"] if m["transactionId"] == "t2"][0]
            rq = h.post(f"/api/v1/dlq/{t2['dlqId']}/requeue", json={"keepTransactionId": True})
            assert rq.status_code == 201, rq.text
            assert rq.json()["offset"] == 30
        # and a retry of the other one by its transactionId
        r = await c.admin.retry_message(pid, "t1")
        assert r.get("success", True) is not False, r
        rest = await c.queue(qname + "-z").batch(100).wait(False).pop()
        again = {m["transactionId"]: m["data"] for m in rest if m["transactionId"] in ("t1", "t2")}
        assert again == {"t1": ITEMS[1]["data"], "t2": ITEMS[2]["data"]}, rest


async def test_fallbacks_sealed_queue_and_duplicate_inside_a_frame(broker, pg, qname):
    async with Queen(broker.url, binary_push=True, push_compression=True) as z:
        await z.queue(qname + "-sealed").config({"encryptionEnabled": True}).create()
        res = await z.queue(qname + "-sealed").partition("p").push(ITEMS[:5])
        assert [r["status"] for r in res] == ["queued"] * 5
        assert codecs(pg, broker, qname + "-sealed") == [1]
        got = await z.queue(qname + "-sealed").batch(10).wait(False).pop()
        assert [m["data"] for m in got] == [it["data"] for it in ITEMS[:5]]
        # a transactionId twice inside one frame: the group is re-encoded without the repeat
        dup = [{"transactionId": "a", "data": 1}, {"transactionId": "b", "data": 2}, {"transactionId": "a", "data": 3}]
        res = await z.queue(qname + "-dup").partition("p").push(dup)
        assert [r["status"] for r in res] == ["queued", "queued", "duplicate"]
        assert codecs(pg, broker, qname + "-dup") == [1]
        got = await z.queue(qname + "-dup").batch(10).wait(False).pop()
        assert [m["data"] for m in got] == [1, 2]
        await z.ack(got, True)
        # an earlier transactionId inside a frame: the rest is stored, the repeat answered duplicate
        res = await z.queue(qname + "-dup").partition("p").push(
            [{"transactionId": "c", "data": 4}, {"transactionId": "b", "data": 5}])
        assert [r["status"] for r in res] == ["queued", "duplicate"]
        got = await z.queue(qname + "-dup").batch(10).wait(False).pop()
        assert [m["data"] for m in got] == [4]


async def test_json_and_frame_producers_share_one_dense_offset_sequence(broker, pg, qname):
    q = qname + "-mix"
    async with Queen(broker.url) as j, Queen(broker.url, binary_push=True, push_compression=True) as z:
        async def js(k):
            return await j.queue(q).partition("p").push([{"transactionId": f"j{k}-{i}", "data": i} for i in range(7)])

        async def zs(k):
            return await z.queue(q).partition("p").push([{"transactionId": f"z{k}-{i}", "data": i} for i in range(9)])

        await asyncio.gather(*[f(k) for k in range(6) for f in (js, zs)])
        assert 2 in codecs(pg, broker, q)
        read = await j.queue(q).fetch("p")
        recs = read["p"]["records"]
        assert [r["offset"] for r in recs] == list(range(6 * 16))
        assert sorted(r["transactionId"] for r in recs) == sorted(
            [f"j{k}-{i}" for k in range(6) for i in range(7)] + [f"z{k}-{i}" for k in range(6) for i in range(9)])
        # each producer's records keep their order
        zs0 = [r["payload"] for r in recs if r["transactionId"].startswith("z0-")]
        assert zs0 == list(range(9))


async def test_seek_by_time_and_depth_over_codec1(broker, pg, qname):
    await push_both(broker, qname)
    async with Queen(broker.url) as c:
        got = await c.queue(qname + "-z").group("g").batch(100).wait(False).pop()
        await c.ack(got, True, {"group": "g"})
        with httpx.Client(base_url=broker.url, timeout=30) as h:
            r = h.post(f"/api/v1/consumer-groups/g/queues/{qname}-z/seek", json={"timestamp": "2000-01-01T00:00:00Z"})
            assert r.status_code == 200, r.text
        again = await c.queue(qname + "-z").group("g").batch(100).wait(False).pop()
        assert [m["transactionId"] for m in again] == [f"t{i}" for i in range(30)]
        d = await c.admin.get_queue_depth(qname + "-z")
        assert d["pending"] == 30 and d["partitions"] == [{"partition": "p", "pending": 30}], d


async def test_retention_drops_whole_codec1_segments(broker, pg, qname):
    q = qname + "-ret"
    with httpx.Client(base_url=broker.url, timeout=30) as h:
        r = h.post("/api/v1/configure", json={"queue": q, "options": {"retentionEnabled": True, "retentionSeconds": 1}})
        assert r.status_code == 200, r.text
    async with Queen(broker.url, binary_push=True, push_compression=True) as z:
        await z.queue(q).partition("r").push([{"transactionId": f"o{i}", "data": {"old": i}} for i in range(5)])
        assert codecs(pg, broker, q) == [2]
        await asyncio.sleep(1.3)
        await z.queue(q).partition("r").push([{"transactionId": f"n{i}", "data": {"new": i}} for i in range(3)])
        for _ in range(60):
            read = await z.queue(q).fetch("r")
            if read["r"]["logStartOffset"] == 5:
                break
            await asyncio.sleep(0.15)
        assert read["r"]["logStartOffset"] == 5
        assert [r["payload"] for r in read["r"]["records"]] == [{"new": i} for i in range(3)]
        assert codecs(pg, broker, q) == [2]
        d = await z.admin.get_queue_depth(q)
        assert d["pending"] == 3 and [p for p in d["partitions"] if p["pending"]] == [{"partition": "r", "pending": 3}], d


async def test_traces_of_a_record_inside_a_frame(broker, pg, qname):
    await push_both(broker, qname)
    assert codecs(pg, broker, qname + "-z") == [2]
    async with Queen(broker.url) as c:
        pid = (await c.admin.list_messages(queue=qname + "-z"))["messages"][0]["partitionId"]
        name = f"codec1-{qname}"[:200]
        with httpx.Client(base_url=broker.url, timeout=30) as h:
            r = h.post("/api/v1/traces", json={"transactionId": "t11", "partitionId": pid, "traceNames": [name],
                                               "data": {"step": 1}})
            assert r.status_code == 201, r.text
        by = await c.admin.get_traces_by_name(name, limit=10)
        assert len(by["traces"]) == 1
        t = by["traces"][0]
        # the traced record's payload, read out of the producer's frame (record_at_v1's reference)
        assert t["message_payload"] == ITEMS[11]["data"], t
        assert t["transaction_id"] == "t11"
        tr = await c.admin.get_traces_for_message(pid, "t11")
        assert len(tr["traces"]) == 1
