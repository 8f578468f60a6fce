// Retention deletes whole segments: by age (retentionSeconds), by age once every group has
// passed them (completedRetentionSeconds), and unconsumed by age (maxWaitTimeSeconds); the
// sink hold keeps records back; consumers behind continue from the new start of the log.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { get, post, readQueue, rmrf, sleep, startQueen } from './harness.mjs';

let node;
before(async () => { node = await startQueen({ env: { RETENTION_INTERVAL: '300', EVICTION_INTERVAL: '300' } }); });
after(async () => { if (node) { await node.stop(); rmrf(node.data); } });

const configure = (queue, options) => post(node.url, '/api/v1/configure', { queue, options });
const push = (queue, n, tag) => post(node.url, '/api/v1/push', { items: [...Array(n).keys()].map((i) => ({ queue, payload: { tag, i } })) });
async function log(queue) {
  const r = await readQueue(node.url, queue, { partitions: ['Default'] });
  assert.ok(r.found, `${queue}/Default not found`);
  return { records: r.records, part: r.partitions[0] };
}
async function until(fn, ms = 8000) {
  const end = Date.now() + ms;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(150);
  }
}

test('retentionSeconds deletes what is older, keeps what is newer, and moves startOffset', async () => {
  await configure('ret1', { retentionEnabled: true, retentionSeconds: 1 });
  await push('ret1', 5, 'old');
  await sleep(1300);
  await push('ret1', 3, 'new');
  await until(async () => (await log('ret1')).records.length === 3);
  const { records, part } = await log('ret1');
  assert.deepEqual(records.map((r) => r.payload.tag), ['new', 'new', 'new']);
  assert.deepEqual(records.map((r) => r.offset), [5, 6, 7]);
  assert.equal(part.startOffset, 5);
  assert.equal(part.endOffset, 8);
  // a consumer that never read continues from the new start
  const p = await get(node.url, '/api/v1/pop/queue/ret1?batch=10&autoAck=true');
  assert.deepEqual(p.json.messages.map((m) => m.data.tag), ['new', 'new', 'new']);
  const m = await get(node.url, '/metrics/prometheus');
  assert.match(m.text, /queen_retention_deleted_records_total\{queue="ret1",kind="retention"\} 5/);
});

test('retention without retentionEnabled deletes nothing', async () => {
  await configure('ret2', { retentionSeconds: 1 });
  await push('ret2', 3, 'kept');
  await sleep(1800);
  assert.equal((await log('ret2')).records.length, 3);
});

test('completedRetentionSeconds deletes only what every group has passed', async () => {
  await configure('ret3', { retentionEnabled: true, completedRetentionSeconds: 1 });
  await push('ret3', 4, 'a');
  await push('ret3', 4, 'b');
  // queue mode consumes the first push; group g consumes everything
  const q = await get(node.url, '/api/v1/pop/queue/ret3?batch=4&autoAck=true');
  assert.equal(q.json.messages.length, 4);
  await get(node.url, '/api/v1/pop/queue/ret3?batch=10&autoAck=true&consumerGroup=g');
  await sleep(1500);
  await until(async () => (await log('ret3')).part.startOffset === 4);
  const { records } = await log('ret3');
  assert.deepEqual(records.map((r) => r.payload.tag), ['b', 'b', 'b', 'b']);
  // a group still behind keeps what it has not read
  await configure('ret4', { retentionEnabled: true, completedRetentionSeconds: 1 });
  await push('ret4', 3, 'x');
  await get(node.url, '/api/v1/pop/queue/ret4?batch=10&autoAck=true');
  await get(node.url, '/api/v1/pop/queue/ret4?batch=1&autoAck=true&consumerGroup=slow');
  await sleep(1800);
  assert.equal((await log('ret4')).records.length, 3);
});

test('maxWaitTimeSeconds deletes old records whether consumed or not, without retentionEnabled', async () => {
  await configure('ev1', { maxWaitTimeSeconds: 1 });
  await push('ev1', 4, 'stale');
  await until(async () => (await log('ev1')).records.length === 0);
  const m = await get(node.url, '/metrics/prometheus');
  assert.match(m.text, /queen_retention_deleted_records_total\{queue="ev1",kind="eviction"\} 4/);
});

test('the sink hold keeps records its sink has not committed, up to the cap', async () => {
  await configure('hold1', { retentionEnabled: true, retentionSeconds: 1, retentionSinkHold: 'default', retentionSinkHoldMaxSeconds: 60 });
  await push('hold1', 3, 'held');
  await sleep(1800);
  assert.equal((await log('hold1')).records.length, 3);
  // eviction ignores the hold
  await configure('hold2', { maxWaitTimeSeconds: 1, retentionSinkHold: 'default' });
  await push('hold2', 2, 'gone');
  await until(async () => (await log('hold2')).records.length === 0);
});
