// The streams runtime against the real broker (sanitizer build, own PostgreSQL): each window type
// with deterministic event times, late data dropped and included, the idle flush on event-time and
// processing-time windows, the gate's order on redelivery, a runner killed mid-cycle and restarted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { broker, uniq, readSink, waitFor, client, sleep } from './_broker.mjs';
import { Stream, StreamsError } from '../index.js';

const B = Date.parse('2026-01-05T00:00:00.000Z'); // a Monday, fixed: event times are deterministic
const at = (s) => B + Math.round(s * 1000);

async function pushEvents(queen, queue, partition, events) {
  await queen.queue(queue).partition(partition).push(events.map((e) => ({ data: e })));
}

async function processed(h, n, ms = 20000) {
  await waitFor(() => h.metrics().messagesTotal >= n, ms, `${n} source messages processed (${JSON.stringify(h.metrics())})`);
}

async function sinkPayloads(queen, sink, n, ms = 20000) {
  return waitFor(async () => { const r = await readSink(queen, sink); return r.length >= n ? r : null; }, ms, `${n} sink messages on ${sink}`);
}

const withWindow = (m) => (agg, ctx) => ({ w: new Date(ctx.windowStart).toISOString().slice(11, 19), key: ctx.key, ...agg, ...(m ? m(ctx) : {}) });
const byW = (a, b) => (a.w < b.w ? -1 : a.w > b.w ? 1 : String(a.key).localeCompare(String(b.key)));

test('streams on the real broker', async (t) => {
  const node = await broker(t);
  const queen = client(node);
  const errors = [];
  const run = (s, o) => s.run({ url: node.url, batchSize: 50, maxWait: 300, onError: (e) => errors.push(e), ...o });

  await t.test('tumbling, event time: windows close on the watermark, then the idle flush closes the last one', async () => {
    const src = uniq('tumb'), sink = uniq('tumb-out');
    const h = await run(Stream.from(queen.queue(src))
      .windowTumbling({ seconds: 10, eventTime: (m) => m.data.ts, idleFlushMs: 200 })
      .aggregate({ count: () => 1, sum: (v) => v.n, min: (v) => v.n, max: (v) => v.n, avg: (v) => v.n })
      .map(withWindow())
      .to(queen.queue(sink)), { queryId: uniq('q') });
    try {
      await pushEvents(queen, src, 'p', [{ ts: at(1), n: 1 }, { ts: at(4), n: 3 }, { ts: at(9.999), n: 5 }, { ts: at(12), n: 7 }]);
      await processed(h, 4);
      // [0,10) closes on the watermark (12 s); [10,20) is open until the partition has been
      // quiet for 8 s of broker time (the idle rule), then the flush closes it
      const rows = (await sinkPayloads(queen, sink, 2, 30000)).map((r) => r.payload).sort(byW);
      assert.deepEqual(rows, [
        { w: '00:00:00', key: rows[0].key, count: 3, sum: 9, min: 1, max: 5, avg: 3 },
        { w: '00:00:10', key: rows[0].key, count: 1, sum: 7, min: 7, max: 7, avg: 7 },
      ]);
      assert.ok(h.metrics().flushCyclesTotal >= 1, 'the last window was closed by the idle flush');
      await sleep(500);
      assert.equal((await readSink(queen, sink)).length, 2, 'each window once');
    } finally { await h.stop(); }
  });

  await t.test('sliding, event time, keyBy: every window of every key once', async () => {
    const src = uniq('slide'), sink = uniq('slide-out');
    const h = await run(Stream.from(queen.queue(src)).keyBy((m) => m.data.k)
      .windowSliding({ size: 4, slide: 2, eventTime: (m) => new Date(m.data.ts), idleFlushMs: 0 })
      .reduce((acc, v) => acc + v.n, 0)
      .map((sum, ctx) => ({ w: (ctx.windowStart - B) / 1000, key: ctx.key, sum }))
      .to(queen.queue(sink)), { queryId: uniq('q') });
    try {
      await pushEvents(queen, src, 'p', [{ k: 'a', ts: at(1), n: 1 }, { k: 'b', ts: at(3), n: 10 }, { k: 'a', ts: at(5), n: 100 }]);
      await processed(h, 3);
      await pushEvents(queen, src, 'p', [{ k: 'z', ts: at(30), n: 0 }]); // moves the watermark past them all
      await processed(h, 4);
      const rows = (await sinkPayloads(queen, sink, 6)).map((r) => r.payload).sort((x, y) => x.w - y.w || x.key.localeCompare(y.key));
      await sleep(300);
      assert.equal((await readSink(queen, sink)).length, 6, 'each window once');
      assert.deepEqual(rows, [
        { w: -2, key: 'a', sum: 1 }, { w: 0, key: 'a', sum: 1 }, { w: 0, key: 'b', sum: 10 },
        { w: 2, key: 'a', sum: 100 }, { w: 2, key: 'b', sum: 10 }, { w: 4, key: 'a', sum: 100 },
      ]);
    } finally { await h.stop(); }
  });

  await t.test('session, event time: a gap splits, a split session closing at once leaves no row, the idle flush closes the open one', async () => {
    const src = uniq('sess'), sink = uniq('sess-out');
    const h = await run(Stream.from(queen.queue(src)).keyBy((m) => m.data.user)
      .windowSession({ gap: 2, eventTime: (m) => new Date(m.data.ts).toISOString(), idleFlushMs: 200 })
      .aggregate({ count: () => 1 })
      .map((agg, ctx) => ({ key: ctx.key, start: (ctx.windowStart - B) / 1000, end: (ctx.windowEnd - B) / 1000, ...agg }))
      .to(queen.queue(sink)), { queryId: uniq('q') });
    try {
      await pushEvents(queen, src, 'p', [{ user: 'u', ts: at(0) }, { user: 'u', ts: at(1.5) }, { user: 'u', ts: at(3) }]);
      await processed(h, 3);
      // 10 > 3 + 2: u's first session closes and a new one starts on the same row; v at 30 moves
      // the watermark past that new one too, so it closes in the same cycle and its row must go
      // (the earlier release left it behind and emitted it again later)
      await pushEvents(queen, src, 'p', [{ user: 'u', ts: at(10) }, { user: 'v', ts: at(30) }]);
      await processed(h, 5);
      const rows = (await sinkPayloads(queen, sink, 3, 30000)).map((r) => r.payload).sort((a, b) => a.start - b.start);
      assert.deepEqual(rows, [{ key: 'u', start: 0, end: 5, count: 3 }, { key: 'u', start: 10, end: 12, count: 1 }, { key: 'v', start: 30, end: 32, count: 1 }]);
      await sleep(1000);
      assert.equal((await readSink(queen, sink)).length, 3, 'each session once');
    } finally { await h.stop(); }
  });

  await t.test('cron (every minute), event time, closes on the next minute', async () => {
    const src = uniq('cron'), sink = uniq('cron-out');
    const h = await run(Stream.from(queen.queue(src))
      .windowCron({ every: 'minute', eventTime: (m) => m.data.ts, idleFlushMs: 0 })
      .aggregate({ count: () => 1, sum: (v) => v.n }).map(withWindow()).to(queen.queue(sink)), { queryId: uniq('q') });
    try {
      await pushEvents(queen, src, 'p', [{ ts: at(0), n: 1 }, { ts: at(59.9), n: 2 }, { ts: at(60), n: 4 }, { ts: at(125), n: 8 }]);
      await processed(h, 4);
      const rows = (await sinkPayloads(queen, sink, 2)).map((r) => r.payload).sort(byW);
      assert.deepEqual(rows.map(({ key, ...r }) => r), [{ w: '00:00:00', count: 2, sum: 3 }, { w: '00:01:00', count: 1, sum: 4 }]);
    } finally { await h.stop(); }
  });

  for (const onLate of ['drop', 'include']) {
    await t.test(`late data: onLate '${onLate}'`, async () => {
      const src = uniq(`late-${onLate}`), sink = uniq('late-out');
      const h = await run(Stream.from(queen.queue(src))
        .windowTumbling({ seconds: 10, eventTime: (m) => m.data.ts, gracePeriod: 1, onLate, idleFlushMs: 0 })
        .aggregate({ count: () => 1, sum: (v) => v.n })
        .map((agg, ctx) => ({ w: (ctx.windowStart - B) / 1000, late: !!ctx.late, ...agg }))
        .to(queen.queue(sink)), { queryId: uniq('q') });
      try {
        await pushEvents(queen, src, 'p', [{ ts: at(2), n: 1 }, { ts: at(9), n: 2 }, { ts: at(10.5), n: 4 }]);
        await processed(h, 3);
        // the watermark is 10.5 s: [0,10) is still open (grace 1 s), so this is not late
        await pushEvents(queen, src, 'p', [{ ts: at(5), n: 8 }]);
        await processed(h, 4);
        await pushEvents(queen, src, 'p', [{ ts: at(11.5), n: 16 }]); // closes [0,10)
        await processed(h, 5);
        await pushEvents(queen, src, 'p', [{ ts: at(3), n: 32 }]); // late: its window was emitted
        await processed(h, 6);
        await pushEvents(queen, src, 'p', [{ ts: at(40), n: 64 }]); // closes [10,20)
        await processed(h, 7);
        const want = [{ w: 0, late: false, count: 3, sum: 11 }, { w: 10, late: false, count: 2, sum: 20 }];
        if (onLate === 'include') want.splice(1, 0, { w: 0, late: true, count: 1, sum: 32 });
        const rows = (await sinkPayloads(queen, sink, want.length)).map((r) => r.payload);
        await sleep(300);
        assert.deepEqual((await readSink(queen, sink)).map((r) => r.payload), want);
        assert.deepEqual(rows.slice(0, want.length), want);
        assert.equal(h.metrics().lateEventsTotal, 1);
      } finally { await h.stop(); }
    });
  }

  await t.test('processing time: the idle flush closes a window by the broker clock once the partition is drained', async () => {
    const src = uniq('pt'), sink = uniq('pt-out');
    const h = await run(Stream.from(queen.queue(src)).windowTumbling({ seconds: 1, idleFlushMs: 200 })
      .aggregate({ count: () => 1, sum: (v) => v.n }).to(queen.queue(sink)), { queryId: uniq('q') });
    try {
      await pushEvents(queen, src, 'a', [{ n: 1 }, { n: 2 }]);
      await pushEvents(queen, src, 'b', [{ n: 5 }]);
      await processed(h, 3);
      const rows = await sinkPayloads(queen, sink, 2, 10000);
      const byPart = Object.fromEntries(rows.map((r) => [r.partition, r.payload]));
      assert.deepEqual(byPart, { a: { count: 2, sum: 3 }, b: { count: 1, sum: 5 } });
    } finally { await h.stop(); }
  });

  // the runner waits for the push's last record before it flushes (and the broker's flush fence
  // would refuse an early close too): one result with the full count
  await t.test('processing time: one result per window while a push that shares its stamp is half consumed', async () => {
    const src = uniq('tie'), sink = uniq('tie-out');
    const h = await run(Stream.from(queen.queue(src)).map(async (m) => { await sleep(250); return m.data; })
      .windowTumbling({ seconds: 1, idleFlushMs: 100 })
      .aggregate({ count: () => 1, sum: (v) => v.n }).to(queen.queue(sink)), { queryId: uniq('q'), batchSize: 2 });
    try {
      await pushEvents(queen, src, 'p', [1, 2, 3, 4, 5, 6].map((n) => ({ n }))); // one stamp, three batches
      await processed(h, 6);
      const rows = await sinkPayloads(queen, sink, 1, 10000);
      await sleep(800);
      assert.deepEqual((await readSink(queen, sink)).map((r) => r.payload), [{ count: 6, sum: 21 }]);
      assert.equal(rows.length, 1);
    } finally { await h.stop(); }
  });

  await t.test('gate: a deny keeps the lease, the tail comes back in order, the denied mutation is discarded', async () => {
    const src = uniq('gate'), sink = uniq('gate-out');
    await queen.queue(src).config({ leaseTime: 1 }).create();
    const deniedOnce = new Set();
    const h = await run(Stream.from(queen.queue(src)).gate((v, ctx) => {
      ctx.state.seen = (ctx.state.seen ?? 0) + 1; // a mutation before the decision
      if (v.n % 4 === 3 && !deniedOnce.has(v.n)) { deniedOnce.add(v.n); return false; }
      v.seq = ctx.state.seen;
      return true;
    }).to(queen.queue(sink)), { queryId: uniq('q') });
    try {
      await pushEvents(queen, src, 'p', Array.from({ length: 10 }, (_, i) => ({ n: i + 1 })));
      const rows = (await sinkPayloads(queen, sink, 10, 30000)).map((r) => r.payload);
      await sleep(300);
      assert.equal((await readSink(queen, sink)).length, 10, 'each allowed message once');
      assert.deepEqual(rows.map((r) => r.n), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 'source order kept across redeliveries');
      assert.deepEqual(rows.map((r) => r.seq), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 'a denied message left no state behind');
      assert.equal(h.metrics().gateDenialsTotal, 2);
    } finally { await h.stop(); }
  });

  await t.test('gate after filter and flatMap: filtered records are acked, a message is allowed whole or not at all', async () => {
    const src = uniq('gate2'), sink = uniq('gate2-out');
    await queen.queue(src).config({ leaseTime: 1 }).create();
    let deniedOnce = false;
    const h = await run(Stream.from(queen.queue(src)).filter((m) => m.data.n % 3 !== 0)
      .flatMap((m) => [{ n: m.data.n, copy: 1 }, { n: m.data.n, copy: 2 }])
      .gate((v, ctx) => {
        ctx.state.allowed = (ctx.state.allowed ?? 0) + 1;
        if (v.n === 2 && v.copy === 2 && !deniedOnce) { deniedOnce = true; return false; }
        v.allowed = ctx.state.allowed;
        return true;
      }).to(queen.queue(sink)), { queryId: uniq('q') });
    try {
      await pushEvents(queen, src, 'p', [1, 2, 3, 4, 5, 6].map((n) => ({ n })));
      const rows = (await sinkPayloads(queen, sink, 8, 30000)).map((r) => r.payload);
      await processed(h, 6);
      await sleep(1500); // past the lease: nothing comes back
      assert.equal((await readSink(queen, sink)).length, 8);
      assert.deepEqual(rows.map((r) => `${r.n}.${r.copy}`), ['1.1', '1.2', '2.1', '2.2', '4.1', '4.2', '5.1', '5.2']);
      assert.deepEqual(rows.map((r) => r.allowed), [1, 2, 3, 4, 5, 6, 7, 8], 'the denied message\'s first copy left no state');
      // a batch the filter empties entirely is acked too, not redelivered forever
      await pushEvents(queen, src, 'p', [{ n: 9 }, { n: 12 }]);
      await processed(h, 8, 10000);
    } finally { await h.stop(); }
  });

  await t.test('a runner killed mid-cycle and restarted: each window once', async () => {
    const src = uniq('crash'), sink = uniq('crash-out'), queryId = uniq('q');
    await queen.queue(src).config({ leaseTime: 2 }).create();
    const events = [];
    for (let i = 0; i < 20; i++) events.push({ ts: at(i), n: 1 });
    events.push({ ts: at(100), n: 0 });
    await pushEvents(queen, src, 'p', events);
    // the child pops the batch, folds it slowly, and is killed before it can commit
    const child = spawn(process.execPath, [fileURLToPath(new URL('./fixtures/crash-runner.mjs', import.meta.url)), node.url, src, sink, queryId], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    await waitFor(() => out.includes('folding'), 20000, 'the child to start a cycle');
    child.kill('SIGKILL');
    await new Promise((r) => child.on('exit', r));
    assert.equal((await readSink(queen, sink)).length, 0, 'nothing committed by the killed runner');
    const h = await run(Stream.from(queen.queue(src)).map((m) => m.data)
      .windowTumbling({ seconds: 5, eventTime: (m) => m.data.ts, idleFlushMs: 0 })
      .aggregate({ count: () => 1 }).map(withWindow()).to(queen.queue(sink)), { queryId });
    try {
      const rows = (await sinkPayloads(queen, sink, 4, 30000)).map((r) => r.payload).sort(byW);
      await sleep(500);
      assert.equal((await readSink(queen, sink)).length, 4, 'each window once');
      assert.deepEqual(rows.map((r) => [r.w, r.count]), [['00:00:00', 5], ['00:00:05', 5], ['00:00:10', 5], ['00:00:15', 5]]);
    } finally { await h.stop(); }
  });

  await t.test('a query started by the real 2.x Python runtime is resumed here: same config_hash, its open window continued', async () => {
    const py = fileURLToPath(new URL('../../../build/venv/bin/python', import.meta.url));
    const src = uniq('x-src'), sink = uniq('x-sink'), queryId = uniq('x-q');
    await pushEvents(queen, src, 'p', [{ ts: 1000 }, { ts: 2000 }, { ts: 12000 }]);
    const PY = `
import asyncio, sys
from queen import Queen
from queen.streams import Stream
url, src, sink, query = sys.argv[1:5]
async def main():
    q = Queen(url)
    h = await (Stream.from_(q.queue(src))
               .window_tumbling(seconds=10, event_time=lambda m: m["data"]["ts"], idle_flush_ms=0)
               .aggregate({"count": lambda m: 1, "sum": lambda m: m["ts"]})
               .to(q.queue(sink))
               .run(query_id=query, url=url, batch_size=50, max_wait_millis=300, reset=True))
    for _ in range(100):
        await asyncio.sleep(0.1)
        if h.metrics()["messagesTotal"] >= 3:
            break
    await h.stop()
    print("python messages", h.metrics()["messagesTotal"])
asyncio.run(main())
`;
    const out = await new Promise((resolve) => {
      const p = spawn(py, ['-c', PY, node.url, src, sink, queryId], { stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      p.stdout.on('data', (d) => { text += d; });
      p.stderr.on('data', (d) => { text += d; });
      p.on('exit', (code) => resolve({ code, text }));
    });
    assert.equal(out.code, 0, out.text);
    assert.match(out.text, /python messages 3/);
    // the same chain in JS: no reset needed (a different hash would be a 409)
    const h = await run(Stream.from(queen.queue(src))
      .windowTumbling({ seconds: 10, eventTime: (m) => m.data.ts, idleFlushMs: 0 })
      .aggregate({ count: () => 1, sum: (m) => m.ts })
      .to(queen.queue(sink)), { queryId });
    try {
      await pushEvents(queen, src, 'p', [{ ts: 13000 }, { ts: 25000 }]);
      const rows = await sinkPayloads(queen, sink, 2);
      await sleep(500);
      // [0,10) closed by Python; [10,20) opened by Python (12 s) and closed here at 25 s
      assert.deepEqual((await readSink(queen, sink)).map((r) => r.payload).sort((a, b) => a.sum - b.sum), [{ count: 2, sum: 3000 }, { count: 2, sum: 25000 }]);
      assert.equal(rows.length, 2);
    } finally { await h.stop(); }
  });

  await t.test('a changed chain under the same queryId is refused (409) until reset', async () => {
    const src = uniq('hash'), queryId = uniq('q');
    const a = await run(Stream.from(queen.queue(src)).map((m) => m).to(queen.queue(uniq('o'))), { queryId });
    await a.stop();
    await assert.rejects(run(Stream.from(queen.queue(src)).filter(() => true).to(queen.queue(uniq('o'))), { queryId }),
      (e) => e instanceof StreamsError && e.code === 'STREAMS_CONFIG_HASH_MISMATCH' && e.status === 409);
    const b = await run(Stream.from(queen.queue(src)).filter(() => true).to(queen.queue(uniq('o'))), { queryId, reset: true });
    await b.stop();
  });

  assert.deepEqual(errors.filter((e) => !/lease|stale/i.test(String(e?.message))).map((e) => e.message), [], 'no unexpected runner error');
});
