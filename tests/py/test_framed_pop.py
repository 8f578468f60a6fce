"""The framed pop answer (QPF1, `application/x-queen-pop`) through the real 2.x client,
`Queen(framed_pop=True)`: pop, consume, ack (single, batch, in a transaction) with the framed
answer's partitionId (our partition's u64 id as a decimal string), partitions sweeps under one
lease, the autopilot echo, groups, encrypted queues (frames carry the opened plaintext), trace
ids, parts of a stored block, and namespace pops (JSON). The same records popped as JSON by another group decode to
the same messages. The raw answers are read with the client's own decoder
(queen.http.pop_frames) to check the wire: magic, version 1, content type, claim ranges."""

import asyncio
import uuid

import httpx
from queen import Queen
from queen.http.pop_frames import decode_pop_frames, is_pop_frames

KEY = "22" * 32
BROKER_ENV = {"QUEEN_ENCRYPTION_KEY": KEY}
SAME = ("id", "transactionId", "traceId", "data", "producerSub", "partition")


def datas(messages):
    return [m["data"] for m in messages]


def framed(broker):
    return Queen(broker.url, framed_pop=True)


def raw_pop(broker, path):
    r = httpx.get(broker.url + path + "&frames=true", timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/x-queen-pop"
    assert is_pop_frames(r.content) and r.content[4] == 1
    return r.content


async def test_framed_matches_json_and_acks(broker, client, qname):
    traces = [str(uuid.uuid4()) for _ in range(3)]
    await client.queue(qname).partition("p").push(
        [{"data": {"i": i, "s": "héllo", "n": None}} for i in range(5)])
    await client.queue(qname).partition("p").push(
        [{"data": i, "traceId": traces[i]} for i in range(3)])
    await client.queue(qname).partition("p").push([{"data": None}, {"data": [1, 2.5, "x"]}])
    async with framed(broker) as f:
        got = await f.queue(qname).partition("p").group("f").batch(100).wait(False).pop()
        ref = await client.queue(qname).partition("p").group("j").batch(100).wait(False).pop()
        assert len(got) == len(ref) == 10
        for a, b in zip(got, ref):
            assert {k: a[k] for k in SAME} == {k: b[k] for k in SAME}
            # the framed createdAt has milliseconds, the JSON one microseconds
            assert a["createdAt"] == b["createdAt"][:23] + "Z"
            assert a["consumerGroup"] == "f" and b["consumerGroup"] == "j"
        assert [m["traceId"] for m in got[5:8]] == traces
        assert got[8]["data"] is None and got[9]["data"] == [1, 2.5, "x"]
        # the framed partitionId is the partition's u64 id; the JSON answers keep the uuid
        pid = got[0]["partitionId"]
        assert pid.isdigit() and int(pid) > 0
        assert len(ref[0]["partitionId"]) == 36
        assert [m["offset"] for m in got] == list(range(10))
        assert {m["deliveryAttempt"] for m in got} == {1}
        # acks take the framed partitionId as the client hands it back
        res = await f.ack(got[:4], True, {"group": "f"})
        assert res["success"] is True, res
        res = await f.ack(got[4], True, {"group": "f"})
        assert res["success"] is True, res
        tx = await f.transaction().ack(got[5:], "completed", {"consumer_group": "f"}).queue(
            qname + "-out").push([{"data": "moved"}]).commit()
        assert tx["success"] is True, tx
        assert await f.queue(qname).partition("p").group("f").batch(100).wait(False).pop() == []
        await client.ack(ref, True, {"group": "j"})
        out = await f.queue(qname + "-out").wait(False).pop()
        assert datas(out) == ["moved"]
        assert (await f.ack(out, True))["success"] is True


async def test_a_wrong_framed_partition_id_is_refused(broker, http, qname):
    base = {"transactionId": "nope", "status": "completed", "error": None, "consumerGroup": None}
    r = http.post("/api/v1/ack", json={**base, "partitionId": "999999999"})
    assert r.status_code == 200 and r.json()[0]["success"] is False
    for bad in ("0", "-1", "00012", "99999999999999999999", "12a"):
        r = http.post("/api/v1/ack", json={**base, "partitionId": bad})
        assert r.status_code == 400, bad


async def test_part_of_a_stored_block_and_redelivery(broker, client, qname):
    await client.queue(qname).config({"retry_limit": 5}).create()
    await client.queue(qname).push([{"data": i} for i in range(10)])  # one stored block
    async with framed(broker) as f:
        a = await f.queue(qname).batch(3).autopilot(False).wait(False).pop()
        assert datas(a) == [0, 1, 2] and [m["offset"] for m in a] == [0, 1, 2]
        await f.ack(a, True)
        raw = raw_pop(broker, f"/api/v1/pop/queue/{qname}?batch=4&wait=false")
        b = decode_pop_frames(raw)
        assert datas(b["messages"]) == [3, 4, 5, 6]
        assert b["partitionsClaimed"] == 1 and b["messages"][0]["offset"] == 3
        # failed (the first: it releases the lease): the same records come back
        res = await f.ack(b["messages"][0], False)
        assert res["success"] is True, res
        again = await f.queue(qname).batch(4).autopilot(False).wait(True).timeout_millis(5000).pop()
        assert datas(again) == [3, 4, 5, 6]
        assert [m["id"] for m in again] == [m["id"] for m in b["messages"]]
        assert {m["deliveryAttempt"] for m in b["messages"]} == {1}
        assert {m["deliveryAttempt"] for m in again} == {2}
        await f.ack(again, True)
        rest = await f.queue(qname).batch(100).wait(False).pop()
        assert datas(rest) == [7, 8, 9]
        await f.ack(rest, True)


async def test_consume_sweeps_and_the_autopilot_echo(broker, client, qname):
    for p in ("a", "b", "c"):
        await client.queue(qname).partition(p).push([{"data": f"{p}{i}"} for i in range(2)])
    async with framed(broker) as f:
        res = await f.queue(qname).partitions(3).wait(False).pop_result()  # autopilot sizes the batch
        got = res.messages
        assert sorted(datas(got)) == ["a0", "a1", "b0", "b1", "c0", "c1"]
        assert res.autopilot is not None and res.autopilot.partitions == 3
        assert len({m["leaseId"] for m in got}) == 1
        assert len({m["partitionId"] for m in got}) == 3
        renewed = await f.renew(got)
        assert [r["success"] for r in renewed] == [True]
        assert (await f.ack(got, True))["success"] is True

        await client.queue(qname).push([{"data": i} for i in range(10)])
        seen = []

        async def handler(msgs):
            seen.extend(datas(msgs if isinstance(msgs, list) else [msgs]))

        await asyncio.wait_for(f.queue(qname).limit(10).wait(False).consume(handler), 30)
        assert sorted(seen) == list(range(10))
        assert await f.queue(qname).batch(10).wait(False).pop() == []


async def test_groups_and_auto_ack(broker, client, qname):
    await client.queue(qname).push([{"data": i} for i in range(4)])
    async with framed(broker) as f:
        for g in ("g1", "g2"):
            got = await f.queue(qname).group(g).batch(10).wait(False).pop()
            assert datas(got) == [0, 1, 2, 3]
            assert {m["consumerGroup"] for m in got} == {g}
            await f.ack(got, True, {"group": g})
        raw = raw_pop(broker, f"/api/v1/pop/queue/{qname}?batch=10&wait=false&autoAck=true&consumerGroup=g3")
        d = decode_pop_frames(raw)
        assert datas(d["messages"]) == [0, 1, 2, 3] and d["leaseId"] == ""


async def test_encrypted_queue_frames_carry_the_plaintext(broker, client, qname):
    await client.queue(qname).config({"encryptionEnabled": True}).create()
    await client.queue(qname).push([{"data": {"secret": i}} for i in range(3)])
    async with framed(broker) as f:
        raw = raw_pop(broker, f"/api/v1/pop/queue/{qname}?batch=10&wait=false&consumerGroup=peek&autoAck=true")
        assert b'{"secret":0}' in raw.replace(b" ", b"")
        got = await f.queue(qname).batch(10).wait(False).pop()
        assert datas(got) == [{"secret": i} for i in range(3)]
        assert (await f.ack(got, True))["success"] is True


async def test_framed_answer_keys(broker, client, qname):
    await client.queue(qname).push([{"data": 1}])
    raw = raw_pop(broker, f"/api/v1/pop/queue/{qname}?autopilot=true&wait=false&timeout=30000&autoAck=true")
    d = decode_pop_frames(raw)
    assert set(d) == {"success", "queue", "partition", "partitionId", "leaseId", "consumerGroup", "messages",
                      "partitionsClaimed", "autopilot"}
    assert d["autopilot"] == {"partitions": 8, "batch": 200, "waitMs": 0}
    assert d["queue"] == qname and d["partition"] == "Default" and d["consumerGroup"] == "__QUEUE_MODE__"


async def test_namespace_pops_stay_json(broker, client, qname, http):
    ns = qname + "-ns"
    for q in (qname + "-a", qname + "-b"):
        await client.queue(q).namespace(ns).create()
        await client.queue(q).push([{"data": q[-1]}])
    r = http.get(f"/api/v1/pop?namespace={ns}&batch=10&wait=false&frames=true&autoAck=true&consumerGroup=peek")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    async with framed(broker) as f:
        got = await f.queue().namespace(ns).batch(10).wait(False).pop()
        assert (await f.ack(got, True))["success"] is True
        got += await f.queue().namespace(ns).batch(10).wait(False).pop()
        assert sorted(datas(got)) == ["a", "b"]
        assert all(len(m["partitionId"]) == 36 for m in got)  # the JSON answer's uuids
        assert (await f.ack(got[-1:], True))["success"] is True


async def test_traces_from_a_framed_consumer(broker, client, qname):
    await client.queue(qname).push([{"transactionId": f"t{i}", "data": {"i": i}} for i in range(2)])
    answers = []

    async def handler(msg):
        answers.append(await msg["trace"]({"data": {"i": msg["data"]["i"]}, "traceName": "framed-" + qname}))

    async with framed(broker) as f:
        await asyncio.wait_for(f.queue(qname).limit(2).batch(1).wait(False).consume(handler), 30)
        assert [a["success"] for a in answers] == [True, True], answers
        listing = await f.admin.list_messages(queue=qname)
        uuid_pid = next(m for m in listing["messages"] if m["transactionId"] == "t0")["partitionId"]
        got = decode_pop_frames(raw_pop(broker, f"/api/v1/pop/queue/{qname}?wait=false&autoAck=true&consumerGroup=x"))
        num_pid = got["partitionId"]
        assert num_pid.isdigit()
        # read back by either spelling of the partition
        for pid in (uuid_pid, num_pid):
            tr = await f.admin.get_traces_for_message(pid, "t0")
            assert [t["data"] for t in tr["traces"]] == [{"i": 0}], pid


async def test_a_stream_on_a_framed_client(broker, client, qname):
    from queen.streams import Stream

    src, sink = qname, qname + ".out"
    for p in ("a", "b"):
        await client.queue(src).partition(p).push([{"data": {"amount": i + 1}} for i in range(3)])
    async with framed(broker) as f:
        h = await (Stream.from_(f.queue(src))
                   .window_tumbling(seconds=1, grace_period=0.2, idle_flush_ms=300)
                   .aggregate({"count": lambda m: 1, "sum": lambda m: m["amount"]})
                   .to(f.queue(sink))
                   .run(query_id=qname, url=broker.url, batch_size=50, max_wait_millis=300))
        try:
            rows = []
            for _ in range(100):
                got = await client.queue(sink).group("check").batch(100).wait(False).pop()
                rows += [m["data"] for m in got]
                if got:
                    await client.ack(got, True, {"group": "check"})
                if sum(r["count"] for r in rows) >= 6:
                    break
                await asyncio.sleep(0.1)
        finally:
            await h.stop()
        assert sum(r["count"] for r in rows) == 6 and sum(r["sum"] for r in rows) == 12, rows
        m = h.metrics()
        assert m["cyclesTotal"] >= 1 and not m.get("errorsTotal"), m
