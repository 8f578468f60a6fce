// shared by the broker tests: one real node (the sanitizer build, its own embedded PostgreSQL,
// started and always stopped by tests/integration/harness.mjs), unless QUEEN_URL names one
import { startQueen, sleep } from '../../../tests/integration/harness.mjs';
import { Queen } from '../index.js';

export { sleep };

export async function broker(t) {
  if (process.env.QUEEN_URL) return { url: process.env.QUEEN_URL, stop: async () => {} };
  const node = await startQueen({ env: { DEFAULT_BATCH_SIZE: '1' } });
  t.after(() => node.stop());
  return node;
}

let seq = 0;
export const uniq = (p) => `${p}-${process.pid}-${Date.now().toString(36)}-${seq++}`;

// read a sink queue to the end (lease-free): payloads in offset order, per partition
export async function readSink(queen, name) {
  const { partitions } = await queen.queue(name).changedSince();
  const out = [];
  for (const p of partitions) {
    const r = await queen.queue(name).fetch({ partition: p.name });
    for (const rec of r.records) out.push({ partition: p.name, ...rec });
  }
  return out;
}

export async function waitFor(fnc, ms, what) {
  const t0 = Date.now();
  for (;;) {
    const v = await fnc();
    if (v) return v;
    if (Date.now() - t0 > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(100);
  }
}

export function client(node) { return new Queen({ url: node.url }); }
