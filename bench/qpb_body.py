#!/usr/bin/env python3
"""Writes a QPB1 binary push body (docs/http-api.md, "The binary body") shaped like bench/push.lua's
JSON batches: BATCH messages of ~200-byte payloads over PARTS partitions of QUEUE, in groups per
partition. Every transactionId is empty, so the broker mints one per message and the same body
can be sent over and over (as push.lua's items carry none). FRAMES=1 writes flags 4+8: each group's
messages framed and compressed once here with zstd, as the 2.x client's push_compression does (the
broker stores each group's frame as it is: codec 1, docs/storage.md).
Usage: QUEUE=q BATCH=100 PARTS=10 FRAMES=0|1 bench/qpb_body.py OUT"""
import os
import struct
import sys
import uuid

queue = os.environ.get("QUEUE", "bench").encode()
batch = int(os.environ.get("BATCH", "100"))
parts = int(os.environ.get("PARTS", "10"))
frames = os.environ.get("FRAMES") == "1"
pad = "x" * 170
groups = {}
for i in range(batch):
    groups.setdefault(f"p{i % parts}".encode(), []).append(f'{{"n":{i},"data":"{pad}"}}'.encode())
body = bytearray(struct.pack("<I", len(groups)))
for part, payloads in groups.items():
    body += struct.pack("<H", len(queue)) + queue + struct.pack("<H", len(part)) + part + struct.pack("<I", len(payloads))
    if frames:
        import zstandard

        raw = bytearray()
        for p in payloads:
            mid = uuid.uuid4().bytes
            mid = mid[:6] + bytes([0x70 | (mid[6] & 0x0F)]) + mid[7:8] + bytes([0x80 | (mid[8] & 0x3F)]) + mid[9:]
            raw += struct.pack("<I", 1 + 16 + 2 + len(p)) + b"\x00" + mid + struct.pack("<H", 0) + p
        z = zstandard.ZstdCompressor(level=1, write_content_size=True).compress(bytes(raw))
        body += struct.pack("<I", len(z)) + z
    else:
        for p in payloads:
            body += struct.pack("<H", 0) + struct.pack("<I", len(p)) + p
with open(sys.argv[1], "wb") as f:
    # the 2.x client always sets flag 4, with push_compression 4+8 (= 12)
    f.write(b"QPB1" + bytes([12 if frames else 4]) + bytes(body))
