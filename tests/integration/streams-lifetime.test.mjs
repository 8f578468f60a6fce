// Stream state over time: maintenance never deletes a partition a state row names (and deletes
// it once the window closed); retention never touches state rows; a partial ack across records
// retention removed after the pop skips them instead of counting them; and tenants: one query
// name in two tenants is two queries, and nothing of one is visible to another.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, test } from 'node:test';

import { get, post, api, rmrf, sleep, startPostgres, startQueen } from './harness.mjs';
import { bearer, nowS, sign } from './jwt.mjs';

const SECRET = 'streams-lifetime-secret-of-at-least-32-bytes';
const TA = 'aaaaaaaa-0000-4000-8000-0000000000a1';
const TB = 'bbbbbbbb-0000-4000-8000-0000000000b1';
const tok = (tenant, role = 'read-write') => ({ ...bearer(sign('HS256', SECRET, { sub: `svc-${tenant.slice(0, 1)}`, role, exp: nowS() + 600, tenant })) });
const A = tok(TA), B = tok(TB), RO = tok(TA, 'read-only');

let pg, node;
before(async () => {
  pg = await startPostgres();
  node = await startQueen({ env: { QUEEN_PG_URL: pg.url, RETENTION_INTERVAL: '300', PARTITION_CLEANUP_DAYS: '1', JWT_ENABLED: 'true', JWT_SECRET: SECRET,
    QUEEN_ENCRYPTION_KEY: 'ab'.repeat(32) } });
});
after(async () => {
  if (node) { await node.stop(); rmrf(node.data); }
  if (pg) pg.destroy();
});

async function until(fn, ms = 15000) {
  const end = Date.now() + ms;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(100);
  }
}
const q1 = (sql) => pg.psql(sql);
const partitionsOf = (queue) => q1(`SELECT coalesce(string_agg(p.name, ',' ORDER BY p.name), '') FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '${queue}'`);
const age = (queue) => q1(`UPDATE queen.partitions p SET last_ts = p.last_ts - 172800000000, created_at = p.created_at - interval '2 days'
  FROM queen.queues q WHERE q.id = p.queue_id AND q.name = '${queue}'`);
const pushA = async (items) => { const r = await post(node.url, '/api/v1/push', { items }, A); assert.equal(r.status, 201, r.text); };

test('maintenance keeps a partition with open stream state; retention leaves the state; the closed window lets it go', async () => {
  assert.equal((await post(node.url, '/api/v1/configure', { queue: 'lt-src', options: { retentionEnabled: true, retentionSeconds: 1 } }, A)).status, 200);
  await pushA([{ queue: 'lt-src', partition: 'keyed', payload: { n: 1 } }, { queue: 'lt-src', partition: 'plain', payload: { n: 2 } }]);
  const reg = await post(node.url, '/streams/v1/queries', { name: 'lt', source_queue: 'lt-src', config_hash: 'h' }, A);
  const id = reg.json.query_id;
  const p = await get(node.url, '/api/v1/pop/queue/lt-src/partition/keyed?batch=10&consumerGroup=streams.lt', A);
  const m = p.json.messages[0];
  const c = await post(node.url, '/streams/v1/cycle', { query_id: id, partition_id: m.partitionId, consumer_group: 'streams.lt',
    state_ops: [{ type: 'upsert', key: 'w', value: { acc: 1, windowEnd: 1 } }], ack: { transactionId: m.transactionId, leaseId: m.leaseId } }, A);
  assert.equal(c.json.success, true, c.text);
  // retention empties both partitions; the state row stays
  await until(async () => q1(`SELECT count(*) FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'lt-src' AND p.next_offset = p.start_offset`) === '3'
    || q1(`SELECT count(*) FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'lt-src' AND p.next_offset > p.start_offset`) === '0');
  assert.equal(q1(`SELECT count(*) FROM queen.stream_state`), '1', 'retention never touches stream state');
  age('lt-src');
  await until(async () => !partitionsOf('lt-src').includes('plain'));
  await sleep(800);
  assert.ok(partitionsOf('lt-src').includes('keyed'), 'the partition with state survives maintenance');
  // the window closes (a flush deletes its row): the partition may go
  const f = await post(node.url, '/streams/v1/cycle', { query_id: id, partition_id: m.partitionId, state_ops: [{ type: 'delete', key: 'w' }],
    push_items: [{ queue: 'lt-sink', payload: { acc: 1 } }], ack: null }, A);
  assert.equal(f.json.success, true, f.text);
  age('lt-src');
  await until(async () => !partitionsOf('lt-src').includes('keyed'));
});

test('a partial ack over records retention removed after the pop skips them: K counts what still exists', async () => {
  assert.equal((await post(node.url, '/api/v1/configure', { queue: 'lt-gap', options: { retentionEnabled: true, retentionSeconds: 3, leaseTime: 60 } }, A)).status, 200);
  const reg = await post(node.url, '/streams/v1/queries', { name: 'gap', source_queue: 'lt-gap', config_hash: 'h' }, A);
  const id = reg.json.query_id;
  await pushA([0, 1, 2].map((n) => ({ queue: 'lt-gap', partition: 'g', payload: { n }, transactionId: `r${n}` })));
  await sleep(1500);
  await pushA([3, 4, 5].map((n) => ({ queue: 'lt-gap', partition: 'g', payload: { n }, transactionId: `r${n}` })));
  const p = await get(node.url, '/api/v1/pop/queue/lt-gap/partition/g?batch=10&consumerGroup=streams.gap', A);
  const ms = p.json.messages;
  assert.deepEqual(ms.map((m) => m.data.n), [0, 1, 2, 3, 4, 5]);
  // retention removes the first segment (r0..r2) while the lease is held
  await until(async () => q1(`SELECT p.start_offset FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'lt-gap' AND p.name = 'g'`) === '3');
  // a gate allowed r0..r4 and counted 5 envelopes: the broker acks through r4 and counts the 2 records left
  const c = await post(node.url, '/streams/v1/cycle', { query_id: id, partition_id: ms[0].partitionId, consumer_group: 'streams.gap',
    ack: { transactionId: 'r4', leaseId: ms[0].leaseId, count: 5 }, release_lease: false }, A);
  assert.equal(c.json.success, true, c.text);
  assert.deepEqual([c.json.ack_result.count, c.json.ack_result.count_requested, c.json.ack_result.count_matched, c.json.ack_result.lease_released], [2, 5, false, false]);
  assert.equal(q1(`SELECT x.next_offset FROM queen.cursors x JOIN queen.partitions p ON p.id = x.partition_id WHERE p.name = 'g' AND x.consumer_group = 'streams.gap'`), '5');
});

test('tenants: one query name in two tenants is two queries; B cannot read, cycle, drop or list A\'s; state/get is read-only', async () => {
  const ra = await post(node.url, '/streams/v1/queries', { name: 'shared-q', source_queue: 's', config_hash: 'ha' }, A);
  const rb = await post(node.url, '/streams/v1/queries', { name: 'shared-q', source_queue: 's', config_hash: 'hb' }, B);
  assert.equal(ra.status, 200);
  assert.equal(rb.status, 200, 'another tenant\'s name with another hash is no conflict');
  assert.notEqual(ra.json.query_id, rb.json.query_id);
  assert.equal(rb.json.fresh, true);
  const P = '0190c2d4-0000-7000-8000-0000000000f1';
  const w = await post(node.url, '/streams/v1/cycle', { query_id: ra.json.query_id, partition_id: P, state_ops: [{ type: 'upsert', key: 'k', value: { a: 1 } }], ack: null }, A);
  assert.equal(w.json.success, true);
  // B with A's query id
  const bc = await post(node.url, '/streams/v1/cycle', { query_id: ra.json.query_id, partition_id: P, state_ops: [{ type: 'upsert', key: 'k', value: { b: 1 } }], ack: null }, B);
  assert.equal(bc.json.success, false);
  assert.match(bc.json.error, /Unknown query_id/);
  const bs = await post(node.url, '/streams/v1/state/get', { query_id: ra.json.query_id, partition_id: P, keys: [] }, B);
  assert.deepEqual(bs.json.rows, []);
  const as = await post(node.url, '/streams/v1/state/get', { query_id: ra.json.query_id, partition_id: P, keys: [] }, RO);
  assert.equal(as.status, 200, 'state/get is read-only');
  assert.deepEqual(as.json.rows.map((r) => r.value), [{ a: 1 }]);
  assert.equal((await post(node.url, '/streams/v1/cycle', { query_id: ra.json.query_id, partition_id: P, ack: null }, RO)).status, 403, 'a cycle is read-write');
  const lb = await get(node.url, '/streams/v1/queries', B);
  assert.deepEqual(lb.json.queries.map((q) => [q.name, q.config_hash]), [['shared-q', 'hb']]);
  assert.equal((await api(node.url, 'DELETE', '/streams/v1/queries/shared-q', undefined, B)).status, 200);
  assert.equal((await get(node.url, '/streams/v1/queries/shared-q', A)).json.config_hash, 'ha', 'B dropped its own query only');
  const st = await get(node.url, '/status', B);
  assert.ok(st.json.streams.queries.every((q) => q.query_id !== ra.json.query_id), '/status shows a tenant its own queries');
});

test('sink pushes take the push path: an encrypted sink queue gets sealed records, every record the token\'s producer', async () => {
  assert.equal((await post(node.url, '/api/v1/configure', { queue: 'lt-sealed', options: { encryptionEnabled: true } }, A)).status, 200);
  const reg = await post(node.url, '/streams/v1/queries', { name: 'sealq', source_queue: 'x', config_hash: 'h' }, A);
  const P = '0190c2d4-0000-7000-8000-0000000000f9';
  const c = await post(node.url, '/streams/v1/cycle', { query_id: reg.json.query_id, partition_id: P, ack: null,
    push_items: [{ queue: 'lt-sealed', partition: 's', payload: { secret: 42 } }, { queue: 'lt-plain', partition: 's', payload: { open: 1 } }] }, A);
  assert.equal(c.json.success, true, c.text);
  assert.equal(q1(`SELECT bool_and(get_byte(s.data, 1) & 8 = 8) FROM queen.segments s JOIN queen.partitions p ON p.id = s.partition_id
    JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'lt-sealed'`), 't', 'sealed at rest');
  assert.equal(q1(`SELECT bool_and(get_byte(s.data, 1) & 8 = 0) FROM queen.segments s JOIN queen.partitions p ON p.id = s.partition_id
    JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'lt-plain'`), 't');
  const p = await get(node.url, '/api/v1/pop/queue/lt-sealed?batch=10', A);
  assert.deepEqual(p.json.messages.map((m) => [m.data, m.producerSub]), [[{ secret: 42 }, 'svc-a']]);
});

test('the shard lock: a cycle, flush or state read waits while its (query, partition) is held; another shard never waits', async () => {
  const reg = await post(node.url, '/streams/v1/queries', { name: 'locks', source_queue: 'x', config_hash: 'h' }, A);
  const id = reg.json.query_id;
  const PA = '0190c2d4-0000-7000-8000-00000000aa01';
  const PB = '0190c2d4-0000-7000-8000-00000000bb02';
  // another transaction in the middle of a cycle on shard A: it holds A's lock for 2 s
  const sql = `SELECT pg_advisory_lock(hashtextextended('queen.streams:${id}:${PA}', 0)); SELECT pg_sleep(2);`;
  const args = ['-h', pg.sock, '-p', String(pg.port), '-U', 'postgres', '-At', '-c', sql];
  const holder = process.getuid && process.getuid() === 0 ? spawn('runuser', ['-u', 'postgres', '--', 'psql', ...args], { cwd: '/' }) : spawn('psql', args);
  const exited = new Promise((res) => holder.on('exit', res));
  await until(async () => q1(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted`) !== '0', 5000);
  const t0 = Date.now();
  const body = (P) => ({ query_id: id, partition_id: P, state_ops: [{ type: 'upsert', key: 'k', value: { v: 1 } }], ack: null });
  const a = post(node.url, '/streams/v1/cycle', body(PA), A).then((r) => ({ r, ms: Date.now() - t0 }));
  const b = await post(node.url, '/streams/v1/cycle', body(PB), A);
  const bMs = Date.now() - t0;
  assert.equal(b.json.success, true, b.text);
  assert.ok(bMs < 1000, `shard B answered in ${bMs} ms`);
  // a state read takes the shard lock shared: it waits for a cycle in flight on its shard (so a
  // close it does not see is stamped after it: docs/streams.md, "The fence"), never on another
  const sgB = await post(node.url, '/streams/v1/state/get', { query_id: id, partition_id: PB, keys: [] }, A);
  const sgBMs = Date.now() - t0;
  assert.equal(sgB.json.success, true, sgB.text);
  assert.ok(sgBMs < 1000, `state/get on shard B answered in ${sgBMs} ms`);
  const sgA = await post(node.url, '/streams/v1/state/get', { query_id: id, partition_id: PA, keys: [] }, A);
  const sgAMs = Date.now() - t0;
  assert.equal(sgA.json.success, true, sgA.text);
  assert.ok(sgAMs >= 1500, `state/get on shard A waited for the holder (${sgAMs} ms)`);
  const ra = await a;
  assert.equal(ra.r.json.success, true, ra.r.text);
  assert.ok(ra.ms >= 1500, `shard A waited for the holder (${ra.ms} ms)`);
  await exited;
});
