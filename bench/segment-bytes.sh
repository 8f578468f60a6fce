#!/usr/bin/env bash
# bench/segment-bytes.sh — bytes per record: our segments (raw and as PostgreSQL stores them) next to
# the 2.x producer frames of the same records (raw and zstd level 1, groups of 100). Starts
# build/release/queen on a fresh embedded PostgreSQL; docs/storage.md quotes its figures. The
# *_z queues hold the same records pushed by the real 2.x client with push_compression (QPB1
# flag 8, kept as codec-1 segments: the producer's zstd frames as sent).
cd "$(dirname "$0")/.."
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
data=$(mktemp -d /tmp/queen-exp-XXXXXX); chmod 755 $data
PORT=$port HOST=127.0.0.1 QUEEN_DATA_DIR=$data QUEEN_LOG_LEVEL=warn build/release/queen > $data.log 2>&1 &
pid=$!
trap "kill -TERM $pid; wait $pid; rm -rf $data $data.log" EXIT
for i in $(seq 1 100); do curl -sf http://127.0.0.1:$port/health >/dev/null && break; sleep 0.2; done
build/venv/bin/python - $port <<'PY'
import sys, json, httpx, struct, zstandard, os
port=sys.argv[1]
pad="x"*170
rng=os.urandom
def items(q, n, rand):
    out=[]
    for i in range(n):
        d = rng(85).hex() if rand else pad
        out.append({"queue":q,"partition":f"p{i%10}","payload":{"n":i,"data":d}})
    return out
for q, rand in (("exp_plain", False), ("exp_rand", True)):
    its = items(q, 100000, rand)
    for k in range(0, len(its), 1000):
        r = httpx.post(f"http://127.0.0.1:{port}/api/v1/push", json={"items": its[k:k+1000]}, timeout=60)
        assert r.status_code == 201, r.text
    # the same records as the 2.x client's frames, one zstd frame per 100 messages of a partition
    raw_total = 0; z_total = 0
    byp = {}
    for it in its:
        byp.setdefault(it["partition"], []).append(json.dumps(it["payload"], separators=(",",":")).encode())
    for p, pls in byp.items():
        for k in range(0, len(pls), 100):
            fr = bytearray()
            for pl in pls[k:k+100]:
                txn = b"0193aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"
                fr += struct.pack("<I", 1+16+2+len(txn)+len(pl)) + b"\0" + b"\x01"*16 + struct.pack("<H", len(txn)) + txn + pl
            raw_total += len(fr)
            z_total += len(zstandard.ZstdCompressor(level=1, write_content_size=True).compress(bytes(fr)))
    print(f"{q}: producer frames {raw_total/len(its):.1f} B/record raw, {z_total/len(its):.1f} B/record as zstd level-1 frames of 100")
    # the same records from the 2.x client, producer-compressed frames (one frame per partition per push)
    import asyncio
    from queen import Queen
    async def frames():
        async with Queen(f"http://127.0.0.1:{port}", binary_push=True, push_compression=True) as c:
            for k in range(0, len(its), 1000):
                by = {}
                for it in its[k:k+1000]:
                    by.setdefault(it["partition"], []).append({"data": it["payload"]})
                for part, items in by.items():
                    res = await c.queue(q + "_z").partition(part).push(items)
                    assert all(r["status"] == "queued" for r in res), res[:3]
    asyncio.run(frames())
PY
psql_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
sock=$data/run
for q in exp_plain exp_rand exp_plain_z exp_rand_z; do
runuser -u postgres -- $psql_bin/psql -h $sock -p 5432 -U postgres -d queen -At -c "SELECT '$q', count(*) AS segments, sum(record_count) AS records, round(sum(octet_length(s.data))::numeric / sum(record_count), 1) AS raw_b_per_rec, round(sum(pg_column_size(s.data))::numeric / sum(record_count), 1) AS stored_b_per_rec, string_agg(DISTINCT get_byte(s.data, 0)::text, ',') AS codec_bytes FROM queen.segments s JOIN queen.partitions p ON p.id=s.partition_id JOIN queen.queues q ON q.id=p.queue_id WHERE q.name='$q'" 2>&1 || true
done
