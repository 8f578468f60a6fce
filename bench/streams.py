"""bench/streams.py — the streams workload of `make bench`: a tumbling count+sum over 16
partitions with 50-record batches, driven by the real 2.x runtime (queen-mq's queen.streams
Runner, in processes of its own). The source queue is filled first; then the runners drain it
and the script reports source records/s and cycles/s (from the broker's per-query counters,
GET /streams/v1/queries/:name), and the CPU each side spent (runner processes, the broker,
PostgreSQL), which names the limit.

    build/venv/bin/python bench/streams.py --url http://127.0.0.1:6632 [--runners 1]
        [--per-partition 2000] [--partitions 16] [--batch 50] [--broker-pid PID]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import time
import uuid

import httpx

TICK = os.sysconf("SC_CLK_TCK")


def cpu_of(pids):
    t = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                parts = f.read().rsplit(")", 1)[1].split()
            t += int(parts[11]) + int(parts[12])
        except (OSError, IndexError, ValueError):
            pass
    return t / TICK


def postgres_pids():
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/comm") as f:
                    if f.read().strip() in ("postgres", "postmaster"):
                        out.append(int(d))
            except OSError:
                pass
    return out


def runner_main(url, query, src, sink, batch, partitions, stop):
    from queen import Queen
    from queen.streams import Stream

    async def go():
        q = Queen(url)
        h = await (Stream.from_(q.queue(src))
                   .window_tumbling(seconds=1, idle_flush_ms=1000)
                   .aggregate({"count": lambda m: 1, "sum": lambda m: m["amount"]})
                   .to(q.queue(sink))
                   .run(query_id=query, url=url, batch_size=batch, max_partitions=partitions, max_wait_millis=200))
        while not stop.is_set():
            await asyncio.sleep(0.1)
        await h.stop()
        await q.close()

    asyncio.run(go())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--runners", type=int, default=1)
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--per-partition", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--pop-partitions", type=int, default=4)
    ap.add_argument("--broker-pid", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=300)
    a = ap.parse_args()
    run = uuid.uuid4().hex[:8]
    src, sink, query = f"bench_stream_src_{run}", f"bench_stream_sink_{run}", f"bench-stream-{run}"
    total = a.partitions * a.per_partition
    with httpx.Client(base_url=a.url, timeout=60) as c:
        for p in range(a.partitions):
            for off in range(0, a.per_partition, 1000):
                n = min(1000, a.per_partition - off)
                items = [{"queue": src, "partition": f"p{p}", "payload": {"amount": (off + i) % 10 + 1}} for i in range(n)]
                r = c.post("/api/v1/push", json={"items": items})
                r.raise_for_status()
        stop = mp.Event()
        procs = [mp.Process(target=runner_main, args=(a.url, query, src, sink, a.batch, a.pop_partitions, stop))
                 for _ in range(a.runners)]
        pg = postgres_pids()
        cpu0 = (cpu_of([a.broker_pid]) if a.broker_pid else 0, cpu_of(pg))
        t0 = time.monotonic()
        for pr in procs:
            pr.start()
        acked = cycles = flushes = 0
        deadline = t0 + a.timeout
        while time.monotonic() < deadline:
            time.sleep(0.25)
            r = c.get(f"/streams/v1/queries/{query}")
            if r.status_code != 200:
                continue
            m = r.json().get("metrics") or {}
            acked, cycles, flushes = m.get("source_acked", 0), m.get("cycles", 0), m.get("flushes", 0)
            if acked >= total:
                break
        t1 = time.monotonic()
        cpu_run = cpu_of([p.pid for p in procs])
        cpu1 = (cpu_of([a.broker_pid]) if a.broker_pid else 0, cpu_of(pg))
        stop.set()
        for pr in procs:
            pr.join(30)
        secs = t1 - t0
        print(f"runners={a.runners} partitions={a.partitions} batch={a.batch} records={total} acked={acked} "
              f"secs={secs:.2f} records_per_s={acked / secs:.0f} cycles_per_s={cycles / secs:.0f} "
              f"flushes={flushes} records_per_cycle={acked / max(cycles, 1):.1f}")
        wall = max(secs, 1e-9)
        print(f"cpu (cores busy on average): runners={cpu_run / wall:.2f} broker={(cpu1[0] - cpu0[0]) / wall:.2f} "
              f"postgres={(cpu1[1] - cpu0[1]) / wall:.2f} of {os.cpu_count()}")
        c.delete(f"/streams/v1/queries/{query}")


if __name__ == "__main__":
    main()
