"""The 2.x binary push (QPB1) through the real client — `Queen(binary_push=True)` and
`Queen(binary_push=True, push_compression=True)` (producer-compressed frames, flag 8) — and at
the wire with bodies made by the client's own encoder (queen.http.push_binary), then broken on
purpose: every malformed body answers 400 naming what, where (group, message), and nothing of
that request is stored."""

import struct

import httpx
import pytest
import zstandard
from queen import Queen
from queen.http.push_binary import PushBatch, encode_push_binary, encode_push_frames

CT = {"Content-Type": "application/x-queen-push"}
KEY = "11" * 32
BROKER_ENV = {"QUEEN_ENCRYPTION_KEY": KEY, "QUEEN_MAX_BODY_BYTES": str(1 << 20)}


def datas(messages):
    return [m["data"] for m in messages]


async def drain(client, queue, partition=None):
    q = client.queue(queue)
    if partition:
        q = q.partition(partition)
    return await q.batch(1000).wait(False).pop()


async def test_client_binary_push(broker, qname):
    await client_binary_push(broker, qname, False)


async def test_client_binary_push_compressed_frames(broker, qname):
    await client_binary_push(broker, qname, True)


async def client_binary_push(broker, qname, compression):
    async with Queen(broker.url, binary_push=True, push_compression=compression) as c:
        items = [{"data": {"i": i, "s": "héllo"}} for i in range(50)]
        res = await c.queue(qname).partition("p1").push(items)
        assert [r["status"] for r in res] == ["queued"] * 50, res
        # a caller's transactionId is deduplicated as with the JSON push
        first = await c.queue(qname).push([{"transactionId": f"tx-{compression}", "data": 1}])
        again = await c.queue(qname).push([{"transactionId": f"tx-{compression}", "data": 1}])
        assert first[0]["status"] == "queued" and again[0]["status"] == "duplicate"
        got = await drain(c, qname, "p1")
        assert datas(got) == [{"i": i, "s": "héllo"} for i in range(50)]
        assert [m["partition"] for m in got] == ["p1"] * 50
        ack = await c.ack(got, True)
        assert ack["success"] is True


async def test_client_binary_push_to_an_encrypted_queue(broker, qname):
    async with Queen(broker.url, binary_push=True, push_compression=True) as c:
        await c.queue(qname).config({"encryptionEnabled": True}).create()
        res = await c.queue(qname).push([{"data": {"secret": i}} for i in range(5)])
        assert [r["status"] for r in res] == ["queued"] * 5
        got = await drain(c, qname)
        assert datas(got) == [{"secret": i} for i in range(5)]


def post(broker, body, headers=CT):
    return httpx.post(broker.url + "/api/v1/push", content=body, headers=headers, timeout=30)


def test_wire_answers(broker, qname):
    batches = [PushBatch(qname, "a", [b'{"x":1}', b'"two"'], ["w-1", ""]), PushBatch(qname, "b", [b"[3]"], None)]
    r = post(broker, encode_push_binary(batches))
    assert r.status_code == 201, r.text
    body = r.json()
    assert [b["status"] for b in body] == ["queued"] * 3
    assert body[0]["transaction_id"] == "w-1"
    assert len(body[1]["transaction_id"]) == 36  # minted by the broker
    # the counts-only answer (flag 2)
    r = post(broker, encode_push_binary([PushBatch(qname, "a", [b"1", b"2"], ["w-1", "w-2"])], counts=True))
    assert r.status_code == 201, r.text
    assert r.json() == {"count": 2, "queued": 1, "duplicate": 1, "error": 0}
    r = post(broker, encode_push_frames([PushBatch(qname, "c", [b"4"], None)], counts=True))
    assert r.json() == {"count": 1, "queued": 1, "duplicate": 0, "error": 0}
    # the magic is enough without the Content-Type
    r = post(broker, encode_push_binary([PushBatch(qname, "d", [b"5"], None)]), headers={})
    assert r.status_code == 201, r.text
    got = httpx.get(f"{broker.url}/api/v1/pop/queue/{qname}?batch=100&wait=false&partitions=10", timeout=30).json()
    assert sorted(str(m["data"]) for m in got["messages"]) == sorted(["{'x': 1}", "two", "[3]", "2", "4", "5"])


def frames_group(queue, partition, frames, n):
    z = zstandard.ZstdCompressor(level=1, write_content_size=True).compress(frames)
    q, p = queue.encode(), partition.encode()
    return struct.pack("<H", len(q)) + q + struct.pack("<H", len(p)) + p + struct.pack("<II", n, len(z)) + z


V7 = bytes.fromhex("0193000000017001800102030405060708")[:16]


def frame(payload: bytes, txn: bytes = b"t", flags: int = 0, mid: bytes = V7) -> bytes:
    return struct.pack("<I", 1 + 16 + 2 + len(txn) + len(payload)) + bytes([flags]) + mid + struct.pack("<H", len(txn)) + txn + payload


@pytest.mark.parametrize("case", ["bad_json", "bad_id", "bad_flag", "count", "zstd_no_size", "bad_name"])
def test_malformed_frames_store_nothing(broker, qname, case):
    good = frame(b'{"ok":1}', b"g-" + case.encode())
    if case == "bad_json":
        g1 = frames_group(qname, "p", good + frame(b'{"x":', b"b"), 2)
        expect = ("bad_payload", 1, 1)
    elif case == "bad_id":
        g1 = frames_group(qname, "p", good + frame(b"1", b"b", mid=bytes(16)), 2)
        expect = ("bad_message_id", 1, 1)
    elif case == "bad_flag":
        g1 = frames_group(qname, "p", frame(b"1", b"b", flags=1) + good, 2)
        expect = ("bad_frame", 1, 0)
    elif case == "count":
        g1 = frames_group(qname, "p", good + good, n=1)
        expect = ("trailing_bytes", 1, None)
    elif case == "zstd_no_size":
        z = zstandard.ZstdCompressor(level=1, write_content_size=False).compress(good)
        q = qname.encode()
        g1 = struct.pack("<H", len(q)) + q + struct.pack("<H", 1) + b"p" + struct.pack("<I", 1) + struct.pack("<I", len(z)) + z
        expect = ("zstd_invalid", 1, None)
    else:
        g1 = frames_group("bad\x00name", "p", good, 1)
        expect = ("bad_queue", 1, None)
    # group 0 is valid: the refusal of group 1 must keep it out too
    body = b"QPB1" + bytes([8]) + struct.pack("<I", 2) + frames_group(qname, "p", good, 1) + g1
    r = post(broker, body)
    assert r.status_code == 400, r.text
    j = r.json()
    assert j["code"] == "invalid_push_body"
    reason, group, index = expect
    assert j["reason"] == reason, j
    assert j["group"] == group, j
    assert j.get("index") == index, j
    assert f"group {group}" in j["error"]
    got = httpx.get(f"{broker.url}/api/v1/pop/queue/{qname}?batch=10&wait=false", timeout=30)
    assert got.status_code == 204 or got.json().get("messages") == [], got.text


def test_malformed_bodies(broker, qname):
    for body, reason in [
        (b"QPB1", "truncated"),
        (b"QPB1\x40\x00\x00\x00\x00", "bad_flags"),
        (b"QPB1\x09\x00\x00\x00\x00", "bad_flags"),
        (b"QPB1\x01\x05\x00\x00\x00abcde", "zstd_invalid"),
        (b"QPB1\x00\xff\xff\xff\x7f", "truncated"),
        (b"QPX1\x00", "bad_magic"),
    ]:
        r = post(broker, body)
        assert r.status_code == 400, (body, r.text)
        assert r.json()["code"] == "invalid_push_body"
        assert r.json()["reason"] == reason, (body, r.json())
    # a body may expand to what it could have been sent as (QUEEN_MAX_BODY_BYTES, 1 MiB here):
    # 200 KB inflates, 2 MiB is refused before it is inflated, for either compressed form
    fits = [PushBatch(qname, "p", [b'"' + b"a" * 1000 + b'"'] * 200, None)]
    assert post(broker, encode_push_binary(fits, compress=True)).status_code == 201
    assert post(broker, encode_push_frames(fits)).status_code == 201
    bomb = [PushBatch(qname, "p", [b'"' + b"a" * 1000 + b'"'] * 2000, None)]
    for body in (encode_push_binary(bomb, compress=True), encode_push_frames(bomb)):
        assert len(body) < 1 << 20
        r = post(broker, body)
        assert r.status_code == 400, r.text
        assert r.json()["reason"] == "too_large"


async def test_client_binary_transaction(broker, qname):
    """binary_push + push_compression sends a transaction with pushes as QTB1; the answer lists
    the head's operations first, then the pushed messages, and the client puts them back."""
    src, dst = qname, qname + "-out"
    async with Queen(broker.url, binary_push=True, push_compression=True) as c:
        await c.queue(src).push([{"data": {"n": 1}}, {"data": {"n": 2}}])
        got = await c.queue(src).batch(2).wait(False).pop()
        assert len(got) == 2
        # pushes before the acks: the client sends the acks in the head and restores the order
        res = await (c.transaction().queue(dst).push([{"data": {"o": 1}}, {"data": {"o": 2}}])
                     .ack(got[0]).ack(got[1]).commit())
        assert res["success"] is True, res
        results = res["results"]
        assert len(results) == 4, results
        assert [r.get("index") for r in results] == [0, 1, 2, 3]
        out = await c.queue(dst).batch(10).wait(False).pop()
        assert datas(out) == [{"o": 1}, {"o": 2}]
        assert await c.queue(src).batch(10).wait(False).pop() == []


def test_wire_binary_transaction(broker, qname):
    from queen.http.push_binary import encode_transaction_frames

    head = b'{"operations":[],"requiredLeases":[]}'
    body = encode_transaction_frames(head, [PushBatch(qname, "a", [b'{"t":1}'], ["qtb-1"]), PushBatch(qname, "b", [b"2"], None)])
    r = httpx.post(broker.url + "/api/v1/transaction", content=body, headers=CT, timeout=30)
    assert r.status_code == 200, r.text
    assert r.json()["success"] is True
    # a broken frame: 400 naming it, nothing of the transaction stored
    bad = encode_transaction_frames(head, [PushBatch(qname, "c", [b'{"t":'], None)])
    r = httpx.post(broker.url + "/api/v1/transaction", content=bad, headers=CT, timeout=30)
    assert r.status_code == 400, r.text
    assert r.json()["reason"] == "bad_payload" and r.json()["group"] == 0
    # a head that is not an object, and flag 2 (counts), which the client never sends
    for b in (encode_transaction_frames(b"[1]", [PushBatch(qname, "c", [b"1"], None)]),
              encode_transaction_frames(head, [PushBatch(qname, "c", [b"1"], None)], counts=True)):
        r = httpx.post(broker.url + "/api/v1/transaction", content=b, headers=CT, timeout=30)
        assert r.status_code == 400, r.text
    got = httpx.get(f"{broker.url}/api/v1/pop/queue/{qname}?batch=10&wait=false&partitions=10", timeout=30).json()
    assert sorted(str(m["data"]) for m in got["messages"]) == ["2", "{'t': 1}"]
