"""The rest of the 2.x admin surface through the real client's public API: a consumer's
message["trace"](...), the trace reads of client.admin, retry_message, get_queue_depth,
get_partitions, the status and analytics pages and this node's metrics."""

import asyncio

from queen import Queen


async def consume_n(client: Queen, q: str, n: int, handler, group=None):
    b = client.queue(q).batch(1).limit(n)
    if group:
        b = b.group(group)
    await asyncio.wait_for(b.consume(handler), 30)


async def test_trace_from_a_consumer_and_the_three_reads(client: Queen, qname):
    await client.queue(qname).push([{"transactionId": f"t{i}", "data": {"i": i}} for i in range(2)])
    answers = []

    async def handler(msg):
        answers.append(await msg["trace"]({"data": {"step": "start", "i": msg["data"]["i"]}, "traceName": "order-42"}))
        answers.append(await msg["trace"]({"data": [1, "two", None], "traceName": ["order-42", "", "audit"],
                                           "eventType": "step"}))
        # no data: refused by the client itself, never raises
        answers.append(await msg["trace"]({"traceName": "x"}))

    await consume_n(client, qname, 2, handler)
    assert [a["success"] for a in answers] == [True, True, False] * 2, answers
    assert all(len(a["traceId"]) == 36 for a in answers if a["success"])

    admin = client.admin
    listing = await admin.list_messages(queue=qname)
    m0 = next(m for m in listing["messages"] if m["transactionId"] == "t0")
    pid = m0["partitionId"]
    tr = await admin.get_traces_for_message(pid, "t0")
    assert [t["event_type"] for t in tr["traces"]] == ["info", "step"]
    assert tr["traces"][0]["data"] == {"step": "start", "i": 0}
    assert tr["traces"][1]["data"] == [1, "two", None]
    assert tr["traces"][0]["consumer_group"] == "__QUEUE_MODE__"
    assert tr["traces"][1]["trace_names"] == ["order-42", "audit"]

    by = await admin.get_traces_by_name("order-42", limit=3)
    assert by["total"] == 4
    assert by["pagination"] == {"limit": 3, "offset": 0}
    assert len(by["traces"]) == 3
    assert {t["queue_name"] for t in by["traces"]} == {qname}
    assert {t["transaction_id"] for t in by["traces"]} <= {"t0", "t1"}
    # each trace carries its record's payload
    assert all(t["message_payload"] == {"i": int(t["transaction_id"][1])} for t in by["traces"]), by

    names = await admin.get_trace_names()
    got = {n["trace_name"]: n for n in names["trace_names"]}
    assert got["order-42"]["trace_count"] == 4
    assert got["order-42"]["message_count"] == 2
    assert got["audit"]["trace_count"] == 2


async def test_trace_of_a_producer_compressed_record(broker, client: Queen, qname):
    """A record pushed inside a producer's zstd frame (binary push, flag 8): the trace finds it
    and the by-name read answers its payload."""
    async with Queen(broker.url, binary_push=True, push_compression=True) as prod:
        await prod.queue(qname).push([{"transactionId": f"z{i}", "data": {"z": i}} for i in range(5)])
    answers = []

    async def handler(msg):
        answers.append(await msg["trace"]({"data": {"seen": msg["data"]["z"]}, "traceName": "zt-" + qname}))

    await consume_n(client, qname, 5, handler)
    assert all(a["success"] for a in answers), answers
    by = await client.admin.get_traces_by_name("zt-" + qname, limit=10)
    assert sorted(t["message_payload"]["z"] for t in by["traces"]) == [0, 1, 2, 3, 4]
    assert all(t["message_payload"]["z"] == t["data"]["seen"] for t in by["traces"])


async def test_trace_in_a_group_and_after_the_queue_is_gone(client: Queen, qname):
    await client.queue(qname).push([{"transactionId": "g0", "data": 1}])
    out = {}

    async def handler(msg):
        out["pid"] = msg["partitionId"]
        out["ok"] = await msg["trace"]({"data": {"n": 1}})
        await client.queue(qname).delete()
        # the partition is gone: the broker answers 404 and the client still does not raise
        out["gone"] = await msg["trace"]({"data": {"n": 2}})

    try:
        await consume_n(client, qname, 1, handler, group="tg")
    except Exception:
        pass  # the ack of a message whose queue was deleted may fail; the traces are the point
    assert out["ok"]["success"] is True, out
    assert out["gone"]["success"] is False, out
    tr = await client.admin.get_traces_for_message(out["pid"], "g0")
    assert tr == {"traces": []}


async def test_retry_message_requeues_a_dead_letter(client: Queen, qname):
    await client.queue(qname).create()
    await client.queue(qname).push([{"transactionId": "bad-1", "data": "poison"}, {"data": "fine"}])
    got = await client.queue(qname).batch(1).wait(False).pop()
    await client.ack(got[0], "dlq")
    assert (await client.queue(qname).dlq().get())["total"] == 1
    r = await client.admin.retry_message(got[0]["partitionId"], "bad-1")
    assert r["requeued"] is True and r["transactionId"] == "bad-1", r
    again = await client.queue(qname).batch(10).wait(False).pop()
    assert [m["data"] for m in again] == ["fine", "poison"]
    await client.ack(again, True)


async def test_queue_depth_and_partitions(client: Queen, qname):
    for p in ("a", "b"):
        await client.queue(qname).partition(p).push([{"data": i} for i in range(3)])
    admin = client.admin
    d = await admin.get_queue_depth(qname)
    assert d["queue"] == qname and d["group"] is None
    assert d["pending"] == 6 and d["partitionsPending"] == 2
    assert d["conflation"] is False and d["effectivePending"] == 6
    assert d["partitions"] == [{"partition": "a", "pending": 3}, {"partition": "b", "pending": 3}]
    got = await client.queue(qname).partition("a").group("dg").batch(10).wait(False).pop()
    await client.ack(got, True, {"group": "dg"})
    d = await admin.get_queue_depth(qname, group="dg")
    assert d["group"] == "dg"
    assert d["partitions"] == [{"partition": "a", "pending": 0}, {"partition": "b", "pending": 3}]
    assert d["pending"] == 3 and d["partitionsPending"] == 1
    parts = await admin.get_partitions(queue=qname)
    assert [p["name"] for p in parts["partitions"]] == ["a", "b"]
    assert parts["partitions"][0]["messages"]["total"] == 3


async def test_status_analytics_and_node_metrics(client: Queen, qname):
    await client.queue(qname).push([{"data": i} for i in range(4)])
    admin = client.admin
    s = await admin.get_status(queue=qname)
    assert s["messages"]["total"] == 4
    assert sum(p["ingested"] for p in s["throughput"]) == 4
    assert [q["name"] for q in s["queues"]] == [qname]
    assert len(s["workers"]) == 1
    a = await admin.get_analytics(queue=qname, interval="minute",
                                  **{"from": __import__("datetime").datetime.utcnow().strftime("%Y-%m-%dT%H:00:00Z")})
    assert a["interval"] == "minute"
    assert sum(p["messages"] for p in a["dataPoints"]) == 4
    sm = await admin.get_system_metrics()
    assert len(sm["replicas"]) == 1
    wm = await admin.get_worker_metrics()
    assert len(wm["workers"]) == 1
