// The JavaScript streams bench (make bench): the spec's JS example chain (filter, tumbling 60 s
// with idleFlushMs 5000, aggregate count + sum, to a sink) run by clients/js over a backlog spread
// on 16 partitions, once with batchSize 50 and once with 500 (the example's other run options:
// maxPartitions and maxWait at their defaults, 4 and 1000 ms). Figure: source records/s =
// records / time from run() until the runner has committed the cycles that acked all of them
// (each cycle carries the window's state upsert, the watermark row and the source ack).
//   node bench/streams-js.mjs --url http://127.0.0.1:6632 [--records 32000]
// Without --url it starts the release build with its own PostgreSQL (tests/integration/harness.mjs).
import { Queen, Stream } from '../clients/js/index.js';

const arg = (name, def) => { const i = process.argv.indexOf(`--${name}`); return i > 0 ? process.argv[i + 1] : def; };
const records = Number(arg('records', process.env.BENCH_JS_RECORDS ?? 32000));
let url = arg('url', process.env.QUEEN_URL);
let node;
if (!url) {
  process.env.QUEEN_BIN ??= new URL('../build/release/queen', import.meta.url).pathname;
  const { startQueen } = await import('../tests/integration/harness.mjs');
  node = await startQueen();
  url = node.url;
}
const queen = new Queen({ url });
let failed = false;
try {
  for (const batchSize of [50, 500]) {
    const tag = `${Date.now().toString(36)}-${batchSize}`;
    const src = `bench-js-orders-${tag}`, sink = `bench-js-per-minute-${tag}`;
    const t0 = Date.now();
    for (let i = 0; i < records;) {
      const items = [];
      for (let k = 0; k < 1000 && i < records; k++, i++) items.push({ data: { id: i, amount: (i % 10) + 1 }, partition: `p${String(i % 16).padStart(2, '0')}` });
      await queen.queue(src).push(items);
    }
    const pushS = (Date.now() - t0) / 1000;
    const t1 = Date.now();
    const handle = await Stream
      .from(queen.queue(src))
      .filter(msg => msg.data.amount > 0)
      .windowTumbling({ seconds: 60, idleFlushMs: 5000 })
      .aggregate({ count: () => 1, sum: m => m.amount })
      .to(queen.queue(sink))
      .run({ queryId: `bench-js-${tag}`, url, batchSize });
    const deadline = Date.now() + 600000;
    while (handle.metrics().messagesTotal < records && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const secs = (Date.now() - t1) / 1000;
    const m = handle.metrics();
    await handle.stop();
    if (m.messagesTotal < records) { failed = true; console.log(`js streams bench: batch ${batchSize}: only ${m.messagesTotal} of ${records} records in 600 s`); continue; }
    console.log(`js streams bench: 16 partitions, batchSize ${batchSize}: ${records} source records in ${secs.toFixed(2)} s = ${Math.round(records / secs)} records/s (${m.cyclesTotal} cycles, ${m.errorsTotal} errors; backlog pushed at ${Math.round(records / pushS)} records/s)`);
  }
} finally {
  if (node) await node.stop();
}
process.exitCode = failed ? 1 : 0;
