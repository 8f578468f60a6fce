// PARTITION_CLEANUP_DAYS: a partition that holds no record and has been idle that long is
// deleted by the retention job; one with records, one recently used, or one whose dead letters
// are the only copy of its records is kept. A later push creates it again from offset 0.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { get, post, readQueue, rmrf, sleep, startPostgres, startQueen } from './harness.mjs';

let pg;
let node;
before(async () => {
  pg = await startPostgres();
  node = await startQueen({ env: { QUEEN_PG_URL: pg.url, RETENTION_INTERVAL: '300', PARTITION_CLEANUP_DAYS: '1' } });
});
after(async () => {
  if (node) { await node.stop(); rmrf(node.data); }
  if (pg) pg.destroy();
});

async function until(fn, ms = 10000) {
  const end = Date.now() + ms;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(150);
  }
}
const push = async (queue, partition, n) => {
  const r = await post(node.url, '/api/v1/push', { items: [...Array(n).keys()].map((i) => ({ queue, partition, payload: i })) });
  assert.equal(r.status, 201, r.text);
  return r.json;
};
const partitions = (queue) => pg.psql(`SELECT string_agg(p.name, ',' ORDER BY p.name) FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '${queue}'`);
const empty = (queue, partition) => pg.psql(`SELECT p.next_offset = p.start_offset FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '${queue}' AND p.name = '${partition}'`) === 't';
// make a partition look idle for two days
const age = (queue, partition) => pg.psql(`UPDATE queen.partitions p SET last_ts = p.last_ts - 172800000000, created_at = p.created_at - interval '2 days'
  FROM queen.queues q WHERE q.id = p.queue_id AND q.name = '${queue}' AND p.name = '${partition}'`);

test('empty and idle partitions go; busy, recent and dead-lettered ones stay; a push brings one back', async () => {
  assert.equal((await post(node.url, '/api/v1/configure', { queue: 'pc', options: { retentionEnabled: true, retentionSeconds: 1 } })).status, 200);
  const first = await push('pc', 'old', 3);
  await push('pc', 'recent', 2);
  await push('pc', 'dead', 1);
  const p = await get(node.url, '/api/v1/pop/queue/pc/partition/dead?batch=1');
  assert.equal(p.status, 200, p.text);
  assert.equal((await post(node.url, '/api/v1/ack', { transactionId: p.json.messages[0].transactionId,
    partitionId: p.json.messages[0].partitionId, leaseId: p.json.messages[0].leaseId, status: 'dlq' })).status, 200);
  // a queue without retention: its old partition keeps its records
  await push('keep', 'full', 2);
  await until(async () => empty('pc', 'old') && empty('pc', 'recent') && empty('pc', 'dead'));
  age('pc', 'old');
  age('pc', 'dead');
  age('keep', 'full');
  await until(async () => partitions('pc') === 'Default,dead,recent' || partitions('pc') === 'dead,recent');
  await sleep(1000);
  assert.match(partitions('pc'), /dead,recent$/);
  assert.equal(partitions('keep'), 'full');
  const m = await get(node.url, '/metrics/prometheus');
  assert.match(m.text, /queen_partitions_cleaned_total [1-9]/);
  // the dead letter is still there
  const d = await get(node.url, '/api/v1/dlq?queue=pc');
  assert.equal(d.json.messages.length, 1);
  // pushed again: a new partition, offsets from 0
  const again = await push('pc', 'old', 1);
  assert.notEqual(again[0].partition_id, first[0].partition_id);
  const f = await readQueue(node.url, 'pc', { partitions: ['old'] });
  assert.deepEqual(f.records.map((r) => r.offset), [0]);
});
