"""What a 2.x user does first, through the real client's public API: create, push, pop, ack,
renew, consume, consumer groups, transactions, dead letters. A regression in any of these
shows here as the client would see it."""

import asyncio

from queen import Queen


def datas(messages):
    return [m["data"] for m in messages]


async def test_push_pop_ack_in_order(client: Queen, qname):
    await client.queue(qname).create()
    res = await client.queue(qname).push([{"data": {"i": i}} for i in range(4)])
    assert [r["status"] for r in res] == ["queued"] * 4
    got = await client.queue(qname).batch(10).wait(False).pop()
    assert datas(got) == [{"i": i} for i in range(4)]
    m = got[0]
    for key in ("id", "transactionId", "partitionId", "leaseId", "data", "createdAt", "partition"):
        assert key in m, key
    assert m["partition"] == "Default"
    # leased: a second pop gets nothing until the acks
    assert await client.queue(qname).batch(10).wait(False).pop() == []
    ack = await client.ack(got, True)
    assert ack["success"] is True, ack
    assert await client.queue(qname).batch(10).wait(False).pop() == []


async def test_duplicate_transaction_id(client: Queen, qname):
    first = await client.queue(qname).push([{"transactionId": "t-1", "data": 1}])
    again = await client.queue(qname).push([{"transactionId": "t-1", "data": 1}])
    assert first[0]["status"] == "queued"
    assert again[0]["status"] == "duplicate"


async def test_partitions_keep_their_own_order(client: Queen, qname):
    for p in ("a", "b"):
        await client.queue(qname).partition(p).push([{"data": f"{p}{i}"} for i in range(3)])
    got = await client.queue(qname).partition("b").batch(10).wait(False).pop()
    assert datas(got) == ["b0", "b1", "b2"]
    assert {m["partition"] for m in got} == {"b"}
    await client.ack(got, True)


async def test_failed_ack_redelivers(client: Queen, qname):
    await client.queue(qname).create()
    await client.queue(qname).push([{"data": "x"}])
    m = (await client.queue(qname).batch(1).wait(False).pop())[0]
    r = await client.ack(m, False)
    assert r["success"] is True, r
    again = await client.queue(qname).batch(1).wait(True).timeout_millis(5000).pop()
    assert datas(again) == ["x"]
    await client.ack(again, True)


async def test_renew_extends_the_lease(client: Queen, qname):
    await client.queue(qname).push([{"data": 1}])
    got = await client.queue(qname).batch(1).wait(False).pop()
    r = await client.renew(got[0])
    assert r["success"] is True, r
    assert r.get("newExpiresAt")
    await client.ack(got, True)
    # after the ack the lease is gone: renew says so, at 200
    r = await client.renew(got[0])
    assert r["success"] is False


async def test_consumer_groups_each_see_everything(client: Queen, qname):
    await client.queue(qname).push([{"data": i} for i in range(3)])
    for g in ("g-a", "g-b"):
        got = await client.queue(qname).group(g).batch(10).wait(False).pop()
        assert datas(got) == [0, 1, 2]
        r = await client.ack(got, True, {"group": g})
        assert r["success"] is True, r
    assert await client.queue(qname).group("g-a").batch(10).wait(False).pop() == []


async def test_consume_with_limit(client: Queen, qname):
    await client.queue(qname).push([{"data": i} for i in range(5)])
    seen = []

    async def handler(msg):
        seen.append(msg["data"])

    await asyncio.wait_for(client.queue(qname).batch(1).limit(5).consume(handler), 30)
    assert seen == [0, 1, 2, 3, 4]
    # consume acked each one
    assert await client.queue(qname).batch(10).wait(False).pop() == []


async def test_long_poll_woken_by_a_push(client: Queen, qname):
    await client.queue(qname).create()

    async def later():
        await asyncio.sleep(0.5)
        await client.queue(qname).push([{"data": "late"}])

    task = asyncio.create_task(later())
    got = await client.queue(qname).batch(5).wait(True).timeout_millis(10000).pop()
    await task
    assert datas(got) == ["late"]
    await client.ack(got, True)


async def test_transaction_acks_and_pushes_atomically(client: Queen, qname):
    src, dst = qname, qname + "-out"
    await client.queue(src).push([{"data": {"n": 1}}])
    m = (await client.queue(src).batch(1).wait(False).pop())[0]
    res = await client.transaction().ack(m).queue(dst).push([{"data": {"n": 2}}]).commit()
    assert res["success"] is True, res
    out = await client.queue(dst).batch(10).wait(False).pop()
    assert datas(out) == [{"n": 2}]
    await client.ack(out, True)
    # the ack took: nothing left in the source
    assert await client.queue(src).batch(10).wait(False).pop() == []


async def test_dead_letter_after_retries(client: Queen, qname):
    await client.queue(qname).config({"retry_limit": 1}).create()
    await client.queue(qname).push([{"data": "poison"}])
    for _ in range(2):
        got = await client.queue(qname).batch(1).wait(True).timeout_millis(5000).pop()
        assert datas(got) == ["poison"]
        await client.ack(got, False)
    dlq = await client.queue(qname).dlq().get()
    assert dlq["total"] == 1, dlq
    assert [m.get("data", m.get("payload")) for m in dlq["messages"]] == ["poison"]
    assert await client.queue(qname).batch(1).wait(False).pop() == []


async def test_ack_with_status_dlq(client: Queen, qname):
    await client.queue(qname).create()
    await client.queue(qname).push([{"data": "bad"}])
    got = await client.queue(qname).batch(1).wait(False).pop()
    r = await client.ack(got[0], "dlq")
    assert r["success"] is True, r
    assert (await client.queue(qname).dlq().get())["total"] == 1


async def test_commit_on_delivery_needs_no_ack(client: Queen, qname):
    await client.queue(qname).push([{"data": i} for i in range(3)])
    got = await client.queue(qname).batch(10).wait(False).commit_on_delivery().pop()
    assert datas(got) == [0, 1, 2]
    assert await client.queue(qname).batch(10).wait(False).pop() == []


async def test_seek_to_start_replays_for_a_group(client: Queen, qname):
    n = 3
    await client.queue(qname).push([{"data": i} for i in range(n)])
    got = await client.queue(qname).group("replay").batch(10).wait(False).pop()
    await client.ack(got, True, {"group": "replay"})
    admin = client.admin
    await admin.seek_consumer_group("replay", qname, {"toStart": True})
    again = await client.queue(qname).group("replay").batch(10).wait(False).pop()
    assert datas(again) == list(range(n))
