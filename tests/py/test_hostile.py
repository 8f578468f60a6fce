"""Hostile but legal use of the real 2.x client (queen-mq), and boot values only a byte-level
environment can carry.

- Odd payloads (empty string, null, empty containers, nesting, U+0000 and U+2028 inside strings,
  2**63, -0.0, a 1 MiB string, 100 levels deep) under odd partition names (4-byte UTF-8, spaces,
  ';' and ':', 255 bytes) come back equal and of the same type through every wire the client
  speaks: JSON push and pop, QPB1 push, QPB1 with client-compressed frames, the framed (QPF1)
  pop; each with the message keys the wire reference lists, and the ack succeeds.
- Namespace/task pops of queues configured with unicode names.
- QUEEN_NODE_ID and QUEEN_S3_INSTANCE that are not valid UTF-8 stop the boot with one line in
  the spec's form (a node id is written into JSON answers, log lines and the sink's lease
  documents, which must stay valid UTF-8).
"""

from __future__ import annotations

import os
import subprocess
import tempfile

import pytest
from queen import Queen

from conftest import QUEEN_BIN

PAYLOADS = [
    ("empty string", ""),
    ("null", None),
    ("empty object", {}),
    ("empty array", []),
    ("nested", {"a": [{"b": {"c": [1, 2, {"d": None}]}}]}),
    ("unicode", {"s": "é😀\u2028\u0000"}),
    ("2**63", 2**63),
    ("float", 1.0000000000000002),
    ("negative zero", -0.0),
    ("false", False),
    ("1 MiB", "x" * (1 << 20)),
    ("100 deep", [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]),
]
PARTITIONS = ["Default", "pé😀", "p with space", "p:x;y", "p" * 255]
WIRES = {"json": {}, "qpb1": {"binary_push": True}, "qpb1-frames": {"binary_push": True, "push_compression": True},
         "framed-pop": {"framed_pop": True}}
KEYS = ("id", "transactionId", "partitionId", "leaseId", "data", "createdAt", "partition", "consumerGroup", "traceId",
        "producerSub")


async def test_odd_payloads_and_partitions_round_trip(broker, qname):
    for wire in WIRES:
        await _round_trip(broker, f"{qname}-{wire}", wire)


async def _round_trip(broker, qname, wire):
    async with Queen(broker.url, **WIRES[wire]) as c:
        for pi, part in enumerate(PARTITIONS):
            q = f"{qname}-{pi}"
            await c.queue(q).create()
            res = await c.queue(q).partition(part).push([{"data": d} for _, d in PAYLOADS])
            assert [r["status"] for r in res] == ["queued"] * len(PAYLOADS), res
            got = []
            for _ in range(5):
                got += await c.queue(q).partition(part).batch(100).wait(False).pop()
                if len(got) >= len(PAYLOADS):
                    break
            assert len(got) == len(PAYLOADS), (part, len(got))
            for (name, want), m in zip(PAYLOADS, got):
                assert m["data"] == want and type(m["data"]) is type(want), (wire, part, name, repr(m["data"])[:80])
                assert m["partition"] == part, (wire, m["partition"], part)
                for k in KEYS:
                    assert k in m, (wire, name, k)
            a = await c.ack(got, True)
            assert a["success"] is True, a
            assert await c.queue(q).partition(part).batch(10).wait(False).pop() == []


async def test_namespace_and_task_pops_with_unicode_names(broker, qname):
    async with Queen(broker.url) as c:
        ns, task = "ns-é😀", "task ;x"
        for i in range(2):
            await c.queue(f"{qname}-{i}").namespace(ns).task(task).create()
            await c.queue(f"{qname}-{i}").push([{"data": {"q": i}}])
        got = []
        for _ in range(5):
            got += await c.queue().namespace(ns).task(task).batch(10).wait(False).pop()
            if len(got) >= 2:
                break
        assert sorted(m["data"]["q"] for m in got) == [0, 1]
        assert (await c.ack(got, True))["success"] is True
        # a namespace nobody has: nothing, not an error
        assert await c.queue().namespace(ns + "-none").batch(10).wait(False).pop() == []


def _boot(extra: dict[bytes, bytes]) -> subprocess.CompletedProcess:
    env = {b"PATH": os.environb.get(b"PATH", b"/usr/bin:/bin"), b"HOME": b"/tmp",
           b"QUEEN_DATA_DIR": tempfile.mkdtemp(prefix="queen-boot-").encode(),
           b"QUEEN_PG_URL": b"postgresql://postgres@127.0.0.1:1/none", b"QUEEN_BOOT_DB_WAIT_MS": b"100"}
    env.update(extra)
    return subprocess.run([QUEEN_BIN], env=env, capture_output=True, timeout=60)


S3_ENV = {b"QUEEN_S3_EMBEDDED": b"true", b"QUEEN_S3_QUEUES": b"orders", b"QUEEN_S3_ENDPOINT": b"http://127.0.0.1:9",
          b"QUEEN_S3_REGION": b"us-east-1", b"QUEEN_S3_BUCKET": b"lake", b"QUEEN_S3_ACCESS_KEY": b"ak",
          b"QUEEN_S3_SECRET_KEY": b"sk"}


@pytest.mark.parametrize("name,value,line", [
    (b"QUEEN_NODE_ID", b"n\xff", b"ERROR boot: FATAL: queen: QUEEN_NODE_ID=<2 bytes, not valid UTF-8> is not valid UTF-8. "
     b"It names this node in status, logs and the sink's leases\n"),
    (b"QUEEN_RAFT_NODE_ID", b"\xc0\xafx", b"ERROR boot: FATAL: queen: QUEEN_RAFT_NODE_ID=<3 bytes, not valid UTF-8> is not valid "
     b"UTF-8. It names this node in status, logs and the sink's leases\n"),
    (b"QUEEN_S3_INSTANCE", b"i\xed\xa0\x80", None),
])
def test_a_name_that_is_not_utf8_stops_the_boot(name, value, line):
    extra = {name: value}
    if name == b"QUEEN_S3_INSTANCE":
        extra.update(S3_ENV)
    r = _boot(extra)
    assert r.returncode == 2, r.stderr
    assert r.stdout == b""
    if line is None:
        assert r.stderr.startswith(b"ERROR boot: FATAL: QUEEN_S3_EMBEDDED=true: " + name + b"=<4 bytes, not valid UTF-8> "
                                   b"is not valid UTF-8. "), r.stderr
        assert r.stderr.count(b"\n") == 1, r.stderr
    else:
        assert r.stderr == line
    # and a valid 4-byte name is a name
    ok = _boot({name: "n😀".encode(), **(S3_ENV if name == b"QUEEN_S3_INSTANCE" else {})})
    assert b"not valid UTF-8" not in ok.stderr, ok.stderr
    assert b"cannot connect to PostgreSQL" in ok.stderr, ok.stderr
