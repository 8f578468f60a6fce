// /streams/v1/*: the earlier release's wire (register, cycle, state/get) exactly as its JS SDK
// and the 2.x Python runtime send it, plus what this broker adds: list/read/drop of queries,
// the partial ack in source records, derived sink transactionIds (no double emit), the flush
// fence, kv/timers refused, tenant scope and the counters.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { api, get, post, readQueue, rmrf, sleep, startQueen } from './harness.mjs';

let node;
before(async () => { node = await startQueen(); });
after(async () => { if (node) { await node.stop(); rmrf(node.data); } });

const push = (items) => post(node.url, '/api/v1/push', { items });
const pop = async (q, group, extra = '') => {
  const r = await get(node.url, `/api/v1/pop/queue/${q}?batch=50&consumerGroup=${group}${extra}`);
  return r.status === 200 ? r.json.messages : [];
};
const register = (body) => post(node.url, '/streams/v1/queries', body);
const cycle = (body) => post(node.url, '/streams/v1/cycle', body);
const stateGet = (body) => post(node.url, '/streams/v1/state/get', body);
const sinkRecords = async (q) => { try { return (await readQueue(node.url, q)).records; } catch { return []; } };

let seq = 0;
const uniq = (p) => `${p}-${process.pid}-${++seq}`;

test('register: fresh, resumed, 409 on a changed config_hash, reset keeps the id and wipes state', async () => {
  const name = uniq('q');
  const r1 = await register({ name, source_queue: 'src-a', sink_queue: 'sink-a', config_hash: 'h1', reset: false });
  assert.equal(r1.status, 200, r1.text);
  assert.equal(r1.json.success, true);
  assert.match(r1.json.query_id, /^[0-9a-f-]{36}$/);
  assert.equal(r1.json.name, name);
  assert.equal(r1.json.config_hash, 'h1');
  assert.equal(r1.json.fresh, true);
  assert.equal(r1.json.reset, false);
  const id = r1.json.query_id;

  const r2 = await register({ name, source_queue: 'src-a', config_hash: 'h1', reset: true });
  assert.equal(r2.status, 200);
  assert.deepEqual([r2.json.query_id, r2.json.fresh, r2.json.reset], [id, false, false], 'same hash: reset wipes nothing');

  // some state to wipe
  await push([{ queue: 'src-a', partition: 'p0', payload: { n: 1 } }]);
  const [m] = await pop('src-a', `streams.${name}`);
  const c = await cycle({ query_id: id, partition_id: m.partitionId, consumer_group: `streams.${name}`,
    state_ops: [{ type: 'upsert', key: 'k1', value: { acc: 1 } }], push_items: [],
    ack: { transactionId: m.transactionId, leaseId: m.leaseId, status: 'completed', count: 1 }, release_lease: true });
  assert.equal(c.json.success, true, c.text);

  const r3 = await register({ name, source_queue: 'src-a', config_hash: 'h2', reset: false });
  assert.equal(r3.status, 409);
  assert.equal(r3.json.success, false);
  assert.equal(r3.json.query_id, id);
  assert.equal(r3.json.name, name);
  assert.equal(r3.json.error, `config_hash mismatch: operator chain changed for queryId '${name}'. Pass reset:true to wipe existing state, or use a new queryId.`);
  const s1 = await stateGet({ query_id: id, partition_id: m.partitionId, keys: [] });
  assert.equal(s1.json.rows.length, 1, 'a 409 changes nothing');

  const r4 = await register({ name, source_queue: 'src-a', config_hash: 'h2', reset: true });
  assert.equal(r4.status, 200);
  assert.deepEqual([r4.json.query_id, r4.json.fresh, r4.json.reset], [id, false, true]);
  const s2 = await stateGet({ query_id: id, partition_id: m.partitionId, keys: [] });
  assert.deepEqual(s2.json, { success: true, rows: [] });
  // the cursor was not rewound: the acked message does not come back
  assert.deepEqual(await pop('src-a', `streams.${name}`), []);

  const bad = [
    [{}, 'name is required'], [{ name }, 'source_queue is required'], [{ name, source_queue: 's' }, 'config_hash is required'],
    [{ name: '', source_queue: 's', config_hash: 'h' }, 'name is required'],
  ];
  for (const [body, error] of bad) {
    const r = await register(body);
    assert.equal(r.status, 400);
    assert.equal(r.json.error, error);
  }
  assert.equal((await register({ name, source_queue: 's', config_hash: 'h', extra: 1 })).status, 400, 'unknown fields are refused');
  const e = await api(node.url, 'POST', '/streams/v1/queries', '');
  assert.equal(e.status, 400);
  assert.equal(e.json.error, 'Empty request body');
  const nj = await api(node.url, 'POST', '/streams/v1/queries', '[1]');
  assert.equal(nj.json.error, 'request body must be a JSON object');
});

test('list, read and drop a query; drop reclaims its state', async () => {
  const name = uniq('lq');
  const id = (await register({ name, source_queue: 'src-l', sink_queue: 'sink-l', config_hash: 'h' })).json.query_id;
  await push([{ queue: 'src-l', partition: 'p0', payload: { n: 1 } }]);
  const [m] = await pop('src-l', `streams.${name}`);
  const c = await cycle({ query_id: id, partition_id: m.partitionId, consumer_group: `streams.${name}`,
    state_ops: [{ type: 'upsert', key: 'a', value: { x: 1 } }, { type: 'upsert', key: 'b', value: { x: 2 } }],
    ack: { transactionId: m.transactionId, leaseId: m.leaseId }, release_lease: true });
  assert.equal(c.json.success, true, c.text);

  const l = await get(node.url, '/streams/v1/queries');
  assert.equal(l.status, 200);
  const q = l.json.queries.find((x) => x.name === name);
  assert.equal(q.query_id, id);
  assert.equal(q.source_queue, 'src-l');
  assert.equal(q.sink_queue, 'sink-l');
  assert.equal(q.config_hash, 'h');
  assert.equal(q.consumer_group, `streams.${name}`);
  assert.equal(q.state_rows, 2);
  assert.equal(q.partitions, 1);
  assert.match(q.last_cycle_at, /^\d{4}-\d\d-\d\dT/);

  const one = await get(node.url, `/streams/v1/queries/${name}`);
  assert.equal(one.status, 200);
  assert.equal(one.json.query_id, id);
  assert.deepEqual(one.json.partitions_detail.map((p) => [p.partition_id, p.partition, p.state_rows]), [[m.partitionId, 'p0', 2]]);
  assert.equal(one.json.metrics.cycles, 1);

  const dr = await api(node.url, 'DELETE', `/streams/v1/queries/${name}`);
  assert.equal(dr.status, 200);
  assert.deepEqual(dr.json, { success: true, query_id: id, name, state_rows_deleted: 2 });
  assert.equal((await get(node.url, `/streams/v1/queries/${name}`)).status, 404);
  assert.equal((await api(node.url, 'DELETE', `/streams/v1/queries/${name}`)).status, 404);
  const s = await stateGet({ query_id: id, partition_id: m.partitionId, keys: [] });
  assert.deepEqual(s.json.rows, []);
  const cy = await cycle({ query_id: id, partition_id: m.partitionId, state_ops: [{ type: 'upsert', key: 'a', value: {} }], ack: null });
  assert.equal(cy.json.success, false, 'a dropped query takes no cycle');
});

test('cycle: state + sink pushes + ack in one transaction; the 0.15 answer shape', async () => {
  const name = uniq('cy');
  const group = `streams.${name}`;
  const id = (await register({ name, source_queue: 'src-c', config_hash: 'h' })).json.query_id;
  await push([1, 2, 3].map((n) => ({ queue: 'src-c', partition: 'p0', payload: { n } })));
  const ms = await pop('src-c', group);
  assert.equal(ms.length, 3);
  const last = ms[2];
  const r = await cycle({ query_id: id, partition_id: last.partitionId, consumer_group: group,
    state_ops: [{ type: 'upsert', key: 'w1', value: { acc: { count: 3 }, windowStart: 0, windowEnd: 1000 } }],
    push_items: [{ queue: 'sink-c', partition: 'p0', payload: { count: 3 } }, { queue: 'sink-c', partition: 'p0', payload: { count: 4 } }],
    ack: { transactionId: last.transactionId, leaseId: last.leaseId, status: 'completed', count: 3 }, release_lease: true });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.success, true, r.text);
  assert.equal(r.json.query_id, id);
  assert.equal(r.json.partition_id, last.partitionId);
  assert.equal(r.json.queueName, 'src-c');
  assert.equal(r.json.state_ops_applied, 1);
  assert.equal(r.json.push_results.length, 2);
  for (const [i, p] of r.json.push_results.entries()) {
    assert.equal(p.index, i);
    assert.equal(p.status, 'queued');
    assert.equal(p.queueName, 'sink-c');
    assert.match(p.message_id, /^[0-9a-f-]{36}$/);
    assert.match(p.partition_id, /^[0-9a-f-]{36}$/);
    assert.match(p.transaction_id, /^sq:[0-9a-f]{36}$/, 'a transactionId derived on the broker');
  }
  assert.deepEqual(r.json.ack_result, { success: true, count: 3, lease_released: true, dlq: false, count_requested: 3, count_matched: true });
  const sink = await sinkRecords('sink-c');
  assert.deepEqual(sink.map((x) => [x.offset, x.payload]), [[0, { count: 3 }], [1, { count: 4 }]], 'real offsets, emit order');
  assert.deepEqual(await pop('src-c', group), [], 'the source batch is acked');

  // the same cycle again (a lost answer, retried): the lease is gone, nothing lands twice
  const again = await cycle({ query_id: id, partition_id: last.partitionId, consumer_group: group,
    state_ops: [{ type: 'upsert', key: 'w1', value: { acc: { count: 99 } } }],
    push_items: [{ queue: 'sink-c', partition: 'p0', payload: { count: 3 } }],
    ack: { transactionId: last.transactionId, leaseId: last.leaseId, status: 'completed', count: 3 }, release_lease: true });
  assert.equal(again.status, 200);
  assert.equal(again.json.success, false);
  assert.equal(again.json.error, 'Invalid or expired lease');
  assert.equal((await sinkRecords('sink-c')).length, 2);
  const st = await stateGet({ query_id: id, partition_id: last.partitionId, keys: ['w1'] });
  assert.deepEqual(st.json.rows[0].value, { acc: { count: 3 }, windowStart: 0, windowEnd: 1000 }, 'the failed cycle rolled back whole');
});

test('cycle refusals: kv and timers with the reason, bad fields, null arrays accepted', async () => {
  const name = uniq('rf');
  const id = (await register({ name, source_queue: 'src-r', config_hash: 'h' })).json.query_id;
  const P = '0190c2d4-0000-7000-8000-0000000000aa';
  for (const k of ['kv', 'timers']) {
    const r = await cycle({ query_id: id, partition_id: P, state_ops: [], push_items: [], ack: null, [k]: [] });
    assert.equal(r.status, 400);
    assert.equal(r.json.reason, `cycle_${k}_unsupported`);
    assert.match(r.json.detail, /lock order puts queen\.kv and queen\.log_timers outside it/);
    assert.match(r.json.detail, /blocking on an advisory lock/);
  }
  assert.equal((await cycle({ partition_id: P })).json.error, 'query_id is required');
  assert.equal((await cycle({ query_id: id })).json.error, 'partition_id is required');
  assert.equal((await cycle({ query_id: 'nope', partition_id: P })).status, 400);
  assert.equal((await cycle({ query_id: id, partition_id: P, surprise: 1 })).status, 400);
  const nul = await cycle({ query_id: id, partition_id: P, state_ops: null, push_items: null, ack: null });
  assert.equal(nul.status, 200, nul.text);
  assert.equal(nul.json.success, true);
  const long = await cycle({ query_id: id, partition_id: P, state_ops: [{ type: 'upsert', key: 'k'.repeat(2049), value: {} }] });
  assert.equal(long.status, 400, 'a key longer than 2048 bytes');
  assert.equal((await cycle({ query_id: id, partition_id: P, state_ops: [{ type: 'upsert', key: 'k'.repeat(2048), value: {} }], ack: null })).json.success, true);
  const ut = await cycle({ query_id: id, partition_id: P, state_ops: [{ type: 'merge', key: 'k' }] });
  assert.deepEqual([ut.status, ut.json.success, ut.json.error], [200, false, 'Unknown state_op type: merge']);
  const nt = await cycle({ query_id: id, partition_id: P, ack: { leaseId: P } });
  assert.deepEqual([nt.json.success, nt.json.error], [false, 'ack.transactionId is required']);
  const nf = await cycle({ query_id: id, partition_id: P, ack: { transactionId: 'x' } });
  assert.deepEqual([nf.json.success, nf.json.error], [false, 'Message not found']);
  const unk = await cycle({ query_id: '0190c2d4-0000-7000-8000-0000000000bb', partition_id: P, ack: null });
  assert.equal(unk.json.success, false);
  assert.match(unk.json.error, /Unknown query_id/);
});

test('state/get: exact keys, a literal key_prefix (% and _ are not wildcards), ripeness, recent partitions', async () => {
  const name = uniq('sg');
  const id = (await register({ name, source_queue: 'src-s', config_hash: 'h' })).json.query_id;
  const P = '0190c2d4-0000-7000-8000-0000000000cc';
  const ops = [
    ['tumb:60\u001f2026-05-06T10:00:00.000Z\u001fk', { acc: 1, windowStart: 1, windowEnd: 1000 }],
    ['tumb:60\u001f2026-05-06T10:01:00.000Z\u001fk', { acc: 2, windowStart: 1000, windowEnd: 2000 }],
    ['tumb:6%\u001fx', { acc: 3, windowEnd: 500 }],
    ['tumb:6_\u001fy', { acc: 4, windowEnd: 500 }],
    ['sess:5\u001fopen\u001fk', { acc: 5, sessionStart: 1, lastEventTime: 2 }],
    ['__wm__', { eventTimeMs: 7 }],
  ];
  const w = await cycle({ query_id: id, partition_id: P, state_ops: ops.map(([key, value]) => ({ type: 'upsert', key, value })), ack: null });
  assert.equal(w.json.success, true, w.text);
  const all = await stateGet({ query_id: id, partition_id: P, keys: [] });
  assert.equal(all.json.rows.length, 6);
  assert.deepEqual(all.json.rows.map((r) => r.key), ops.map(([k]) => k).sort((a, b) => (Buffer.from(a) < Buffer.from(b) ? -1 : 1)), 'key (byte) order');
  assert.match(all.json.rows[0].updated_at, /Z$/);
  const ex = await stateGet({ query_id: id, partition_id: P, keys: ['__wm__', 'missing'] });
  assert.deepEqual(ex.json.rows.map((r) => [r.key, r.value]), [['__wm__', { eventTimeMs: 7 }]]);
  const pre = await stateGet({ query_id: id, partition_id: P, keys: [], key_prefix: 'tumb:60\u001f' });
  assert.equal(pre.json.rows.length, 2);
  const pct = await stateGet({ query_id: id, partition_id: P, keys: [], key_prefix: 'tumb:6%' });
  assert.deepEqual(pct.json.rows.map((r) => r.value.acc), [3], '% is a plain character');
  const und = await stateGet({ query_id: id, partition_id: P, keys: [], key_prefix: 'tumb:6_' });
  assert.deepEqual(und.json.rows.map((r) => r.value.acc), [4], '_ is a plain character');
  const ripe = await stateGet({ query_id: id, partition_id: P, keys: [], key_prefix: 'tumb:60\u001f', ripe_at_or_before: 1000 });
  assert.deepEqual(ripe.json.rows.map((r) => r.value.acc), [1]);
  const ripeAll = await stateGet({ query_id: id, partition_id: P, keys: [], ripe_at_or_before: 1e13 });
  assert.equal(ripeAll.json.rows.length, 4, 'only rows with a numeric windowEnd');
  const recent = await stateGet({ query_id: id, touched_within_ms: 300000 });
  assert.deepEqual(recent.json.partitions.map((p) => [p.partition_id, p.state_rows]), [[P, 6]]);
  assert.equal((await stateGet({ partition_id: P })).json.error, 'query_id is required');
  assert.equal((await stateGet({ query_id: id })).json.error, 'partition_id is required');
  assert.equal((await stateGet({ query_id: id, partition_id: 'x' })).status, 400, 'a bad uuid is a 400, not a 500');
});

test('partial ack (release_lease false): K source records, the lease kept, the tail redelivered in order', async () => {
  const name = uniq('gate');
  const group = `streams.${name}`;
  const id = (await register({ name, source_queue: 'src-g', config_hash: 'h' })).json.query_id;
  await post(node.url, '/api/v1/configure', { queue: 'src-g', options: { leaseTime: 2 } });
  await push([0, 1, 2, 3, 4, 5].map((n) => ({ queue: 'src-g', partition: 'p0', payload: { n }, transactionId: `g${n}` })));
  // delete g2 from the middle of the log before the pop: it is skipped, never counted
  const pid = (await readQueue(node.url, 'src-g')).records[0];
  void pid;
  const ms = await pop('src-g', group);
  assert.deepEqual(ms.map((m) => m.data.n), [0, 1, 2, 3, 4, 5]);
  // allow 0..2, deny 3: count 3, the transactionId of the last allowed
  const r = await cycle({ query_id: id, partition_id: ms[0].partitionId, consumer_group: group,
    state_ops: [{ type: 'upsert', key: ms[0].partitionId, value: { remaining: 0 } }],
    push_items: ms.slice(0, 3).map((m) => ({ queue: 'sink-g', partition: 'p0', payload: m.data })),
    ack: { transactionId: 'g2', leaseId: ms[0].leaseId, status: 'completed', count: 3 }, release_lease: false });
  assert.equal(r.json.success, true, r.text);
  assert.deepEqual(r.json.ack_result, { success: true, count: 3, lease_released: false, dlq: false, count_requested: 3, count_matched: true });
  assert.deepEqual(await pop('src-g', group), [], 'the lease is kept: nothing is redelivered before it expires');
  // the same partial cycle retried while the lease still holds: one emit each, ack a no-op
  const rr = await cycle({ query_id: id, partition_id: ms[0].partitionId, consumer_group: group,
    state_ops: [{ type: 'upsert', key: ms[0].partitionId, value: { remaining: 0 } }],
    push_items: ms.slice(0, 3).map((m) => ({ queue: 'sink-g', partition: 'p0', payload: m.data })),
    ack: { transactionId: 'g2', leaseId: ms[0].leaseId, status: 'completed', count: 3 }, release_lease: false });
  assert.equal(rr.json.success, true, rr.text);
  assert.deepEqual(rr.json.push_results.map((p) => p.status), ['duplicate', 'duplicate', 'duplicate']);
  assert.equal(rr.json.ack_result.count, 0);
  assert.deepEqual((await sinkRecords('sink-g')).map((x) => x.payload.n), [0, 1, 2]);
  await sleep(2600);
  const tail = await pop('src-g', group);
  assert.deepEqual(tail.map((m) => m.data.n), [3, 4, 5], 'the denied message and its tail, in order');
});

test('partial ack across a gap: deleted records are skipped, not counted; a count that disagrees is reported, the transactionId decides', async () => {
  const name = uniq('gap');
  const group = `streams.${name}`;
  const id = (await register({ name, source_queue: 'src-gap', config_hash: 'h' })).json.query_id;
  await push([0, 1, 2, 3, 4, 5, 6].map((n) => ({ queue: 'src-gap', partition: 'p0', payload: { n }, transactionId: `x${n}` })));
  const first = await pop('src-gap', 'peek-group');
  const partitionId = first[0].partitionId;
  for (const t of ['x1', 'x2']) {
    const d = await api(node.url, 'DELETE', `/api/v1/messages/${partitionId}/${t}`);
    assert.ok(d.status < 300, d.text);
  }
  const ms = await pop('src-gap', group);
  assert.deepEqual(ms.map((m) => m.data.n), [0, 3, 4, 5, 6]);
  // K = 3 source records: x0, x3, x4 (x1, x2 no longer exist)
  const r = await cycle({ query_id: id, partition_id: partitionId, consumer_group: group, state_ops: [], push_items: [],
    ack: { transactionId: 'x4', leaseId: ms[0].leaseId, count: 3 }, release_lease: false });
  assert.equal(r.json.success, true, r.text);
  assert.equal(r.json.ack_result.count, 3);
  assert.equal(r.json.ack_result.count_matched, true);
  // an SDK that counted envelopes (a filter before the gate): count 1, transactionId x5 → acks x5 only
  const r2 = await cycle({ query_id: id, partition_id: partitionId, consumer_group: group,
    ack: { transactionId: 'x5', leaseId: ms[0].leaseId, count: 7 }, release_lease: false });
  assert.equal(r2.json.success, true, r2.text);
  assert.deepEqual([r2.json.ack_result.count, r2.json.ack_result.count_requested, r2.json.ack_result.count_matched], [1, 7, false]);
  // release the rest
  const r3 = await cycle({ query_id: id, partition_id: partitionId, consumer_group: group,
    ack: { transactionId: 'x6', leaseId: ms[0].leaseId, count: 1 }, release_lease: true });
  assert.deepEqual([r3.json.ack_result.count, r3.json.ack_result.lease_released], [1, true]);
  assert.deepEqual(await pop('src-gap', group), []);
});

test('flush (ack null): derived ids make a retried or concurrent flush emit once; a stale flush is refused', async () => {
  const name = uniq('fl');
  const id = (await register({ name, source_queue: 'src-f', config_hash: 'h' })).json.query_id;
  const P = '0190c2d4-0000-7000-8000-0000000000dd';
  const key = 'tumb:1\u001f2026-05-06T10:00:00.000Z\u001fk';
  const seed = await cycle({ query_id: id, partition_id: P, state_ops: [{ type: 'upsert', key, value: { acc: { count: 2 }, windowStart: 0, windowEnd: 1 } }], ack: null });
  assert.equal(seed.json.success, true);
  const flush = { query_id: id, partition_id: P, consumer_group: `streams.${name}`,
    state_ops: [{ type: 'delete', key }], push_items: [{ queue: 'sink-f', partition: 'p0', payload: { count: 2 } }], ack: null, release_lease: true };
  // two runners flushing the same ripe row at once, and each retrying its request
  const answers = await Promise.all([cycle(flush), cycle(flush), cycle(flush), cycle(flush)]);
  for (const a of answers) assert.equal(a.json.success, true, a.text);
  assert.equal(answers.filter((a) => a.json.push_results[0].status === 'queued').length, 1);
  assert.equal(answers.filter((a) => a.json.replay).length, 3);
  assert.deepEqual((await sinkRecords('sink-f')).map((x) => x.payload), [{ count: 2 }], 'one window, one message');
  // a flush that read a row since closed by someone else with a different result: refused whole
  const stale = await cycle({ ...flush, push_items: [{ queue: 'sink-f', partition: 'p0', payload: { count: 1 } }] });
  assert.equal(stale.json.success, false);
  assert.match(stale.json.error, /stale flush/);
  assert.equal((await sinkRecords('sink-f')).length, 1);
  // a cycle that seeded the window before the flush closed it (another runner's flush): its
  // result would count the window twice — refused, and its lease released so the batch comes
  // back at once to be folded again
  const group = `streams.${name}`;
  await push([{ queue: 'src-f', partition: 'p0', payload: { n: 1 } }]);
  const [m] = await pop('src-f', group);
  const late = await cycle({ query_id: id, partition_id: m.partitionId, consumer_group: group, state_ops: [{ type: 'delete', key }],
    push_items: [{ queue: 'sink-f', partition: 'p0', payload: { count: 3 } }], ack: { transactionId: m.transactionId, leaseId: m.leaseId, count: 1 } });
  assert.equal(late.json.success, false);
  assert.match(late.json.error, /stale state/);
  assert.equal((await sinkRecords('sink-f')).length, 1);
  const again = await pop('src-f', group);
  assert.deepEqual(again.map((x) => x.transactionId), [m.transactionId], 'redelivered at once, not after the lease');
});

test('a cycle and a flush on one shard serialise; two shards never block each other', async () => {
  const name = uniq('lk');
  const id = (await register({ name, source_queue: 'src-k', config_hash: 'h' })).json.query_id;
  const A = '0190c2d4-0000-7000-8000-0000000000e1';
  const B = '0190c2d4-0000-7000-8000-0000000000e2';
  // 20 concurrent read-modify-write-free upserts on one key of shard A and 20 on shard B
  const all = [];
  for (let i = 0; i < 20; i++) {
    all.push(cycle({ query_id: id, partition_id: A, state_ops: [{ type: 'upsert', key: `k${i % 3}`, value: { i } }], ack: null }));
    all.push(cycle({ query_id: id, partition_id: B, state_ops: [{ type: 'upsert', key: `k${i % 3}`, value: { i } }], ack: null }));
  }
  const res = await Promise.all(all);
  for (const r of res) assert.equal(r.json.success, true, r.text);
  const m = await get(node.url, '/metrics/prometheus');
  assert.match(m.text, new RegExp(`queen_stream_flushes_total\\{query_id="${id}",query="${name}"\\} 40`));
});

test('tenant scope and /status counters', async () => {
  const s = await get(node.url, '/status');
  assert.equal(s.status, 200);
  assert.ok(s.json.streams, s.text.slice(0, 400));
  assert.ok(Array.isArray(s.json.streams.queries));
  const q = s.json.streams.queries.find((x) => x.cycles > 0);
  assert.ok(q);
  for (const k of ['cycles', 'flushes', 'sink_pushes', 'state_ops', 'conflicts', 'aborted_cycles', 'failed_cycles']) assert.equal(typeof q[k], 'number', k);
  assert.ok(s.json.streams.queries.some((x) => x.conflicts >= 1));
  assert.ok(s.json.streams.queries.some((x) => x.aborted_cycles >= 1));
  assert.ok(s.json.streams.queries.every((x) => typeof x.state_rows === 'number'), 'every query with its state rows');
  assert.ok(s.json.streams.queries.some((x) => x.state_rows > 0));
  const m = await get(node.url, '/metrics/prometheus');
  assert.match(m.text, /# TYPE queen_stream_state_rows gauge\nqueen_stream_state_rows\{query_id="[0-9a-f-]{36}",query="[^"]+"\} \d+/);
  for (const f of ['cycles', 'flushes', 'sink_pushes', 'conflicts', 'aborted_cycles']) assert.match(m.text, new RegExp(`queen_stream_${f}_total\\{`));
});

test('an array of cycles: one transaction, each element in its own savepoint, answers in request order', async () => {
  const name = uniq('arr');
  const group = `streams.${name}`;
  const id = (await register({ name, source_queue: 'src-arr', config_hash: 'h' })).json.query_id;
  await push([0, 1].map((n) => ({ queue: 'src-arr', partition: 'p0', payload: { n } })));
  const ms = await pop('src-arr', group);
  const P = '0190c2d4-0000-7000-8000-0000000000a9';
  const key = 'tumb:1\u001fw\u001fk';
  const seed = await cycle({ query_id: id, partition_id: P, state_ops: [{ type: 'upsert', key, value: { acc: 5, windowEnd: 1 } }], ack: null });
  assert.equal(seed.json.success, true);
  const flush = { query_id: id, partition_id: P, state_ops: [{ type: 'delete', key }], push_items: [{ queue: 'sink-arr', payload: { acc: 5 } }], ack: null };
  const r = await cycle([
    { query_id: id, partition_id: ms[0].partitionId, consumer_group: group, state_ops: [{ type: 'upsert', key: 'a', value: { ok: 1 } }],
      push_items: [{ queue: 'sink-arr', payload: { from: 'e0' } }], ack: { transactionId: ms[1].transactionId, leaseId: ms[1].leaseId, count: 2 } },
    // a foreign lease: this element rolls back alone
    { query_id: id, partition_id: ms[0].partitionId, consumer_group: group, state_ops: [{ type: 'upsert', key: 'b', value: { bad: 1 } }],
      push_items: [{ queue: 'sink-arr', payload: { from: 'e1' } }], ack: { transactionId: ms[1].transactionId, leaseId: P, count: 2 } },
    flush,
    // the same flush again in the same request: found written, a replay
    flush,
    { query_id: id, partition_id: P, state_ops: [{ type: 'merge', key: 'x' }], ack: null },
  ]);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.map((e) => [e.idx, e.success]), [[0, true], [1, false], [2, true], [3, true], [4, false]]);
  assert.equal(r.json[0].ack_result.count, 2);
  assert.equal(r.json[1].error, 'Invalid or expired lease');
  assert.equal(r.json[2].push_results[0].status, 'queued');
  assert.deepEqual([r.json[3].push_results[0].status, r.json[3].replay], ['duplicate', true]);
  assert.equal(r.json[4].error, 'Unknown state_op type: merge');
  // elements run in (query, partition) order (the lock order), so the sink order follows that
  assert.deepEqual((await sinkRecords('sink-arr')).map((x) => JSON.stringify(x.payload)).sort(), ['{"acc":5}', '{"from":"e0"}']);
  const st = await stateGet({ query_id: id, partition_id: ms[0].partitionId, keys: [] });
  assert.deepEqual(st.json.rows.map((x) => x.key), ['a'], 'the failed element wrote nothing');
  assert.equal((await cycle([{ query_id: id, partition_id: P, kv: [] }])).status, 400);
  assert.equal((await cycle([])).status, 400);
  assert.equal((await cycle([1])).status, 400);
});
