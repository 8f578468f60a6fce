// Two nodes on one database push concurrently to one queue while observers read safeTime.
// The invariant the S3 sink rests on (ARCHITECTURE §3): once a safeTime S has been observed,
// no record stamped at or below S ever appears later.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { isoToUs, post, readQueue, rmrf, sleep, startPostgres, startQueen } from './harness.mjs';

let pg;
let nodes = [];
before(async () => {
  pg = await startPostgres();
  nodes = [
    await startQueen({ env: { QUEEN_PG_URL: pg.url, QUEEN_NODE_ID: 'a' } }),
    await startQueen({ env: { QUEEN_PG_URL: pg.url, QUEEN_NODE_ID: 'b' } }),
  ];
});
after(async () => {
  for (const n of nodes) { await n.stop(); rmrf(n.data); }
  if (pg) pg.destroy();
});

// Records of the queue stamped at or below s (µs), as this node reads them now.
async function countAtOrBelow(url, s) {
  return (await readQueue(url, 'inv')).records.filter((r) => r.ts <= s).length;
}

test('no record is ever stamped at or below an observed safeTime', async () => {
  // at least 6 s of traffic, longer on a loaded machine until there is enough to judge (each
  // observation reads the whole queue, so a busy machine makes few), at most 60 s
  const minStop = Date.now() + 6000, maxStop = Date.now() + 60000;
  const pushes = [];
  const observations = [];
  const going = () => Date.now() < minStop ||
    (Date.now() < maxStop && (pushes.length <= 100 || observations.length <= 20));
  let seq = 0;
  async function pusher(node, k) {
    while (going()) {
      const items = [];
      const n = 1 + (seq % 3);
      for (let i = 0; i < n; i++) items.push({ queue: 'inv', partition: `p${(seq + i) % 4}`, transactionId: `${node.port}-${k}-${seq++}`, payload: { k } });
      const t0 = performance.now();
      const r = await post(node.url, '/api/v1/push', { items });
      const t1 = performance.now();
      assert.equal(r.status, 201, r.text);
      pushes.push({ t0, t1, txns: r.json.map((x) => x.transaction_id) });
    }
  }
  async function observer(node) {
    while (going()) {
      const r = await post(node.url, '/api/v1/partitions/changed', { entries: [{ queue: 'inv' }] });
      assert.equal(r.status, 200, r.text);
      if (r.json.entries[0].error === 'UNKNOWN_TOPIC_OR_PARTITION') { await sleep(5); continue; }
      const t1 = performance.now();
      assert.match(r.json.safeTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
      const s = isoToUs(r.json.safeTime);
      observations.push({ s, t1, count: await countAtOrBelow(node.url, s) });
    }
  }
  const work = [];
  for (const node of nodes) {
    for (let k = 0; k < 4; k++) work.push(pusher(node, k));
    work.push(observer(node));
  }
  await Promise.all(work);
  assert.ok(pushes.length > 100, `only ${pushes.length} pushes`);
  assert.ok(observations.length > 20, `only ${observations.length} observations`);

  const all = await readQueue(nodes[0].url, 'inv');
  const tsOf = new Map(all.records.map((r) => [r.transactionId, r.ts]));
  // 1. a push that started after an observation finished is stamped above it
  let checked = 0;
  for (const o of observations) {
    for (const p of pushes) {
      if (p.t0 <= o.t1) continue;
      for (const t of p.txns) {
        assert.ok(tsOf.get(t) > o.s, `record ${t} stamped ${tsOf.get(t)} <= safeTime ${o.s} observed before it was pushed`);
        checked++;
      }
    }
  }
  assert.ok(checked > 0);
  // 2. what was at or below S when S was observed is exactly what is there now
  for (const o of observations) {
    const now = [...tsOf.values()].filter((ts) => ts <= o.s).length;
    assert.equal(now, o.count, `records at or below ${o.s}: ${o.count} when observed, ${now} now`);
  }
  // 3. stamps never decrease in offset order within a partition
  const byPart = {};
  for (const r of all.records) (byPart[r.partition] ||= []).push(r);
  for (const recs of Object.values(byPart)) {
    for (let i = 1; i < recs.length; i++) {
      assert.equal(recs[i].offset, recs[i - 1].offset + 1);
      assert.ok(recs[i].ts >= recs[i - 1].ts);
    }
  }
});
