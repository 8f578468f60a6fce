// Conflation (last-value delivery per consumer group, docs/consume.md "Conflation") at the wire:
// a conflating group's pop of a partition delivers its newest visible record only and retires
// the ones behind it for good; the policy is stored at the group's first pop and wins over what
// later pops declare (the conflict echo); the echo rides every answer with a body, empty ones
// included (they get a body); failed acks, retries, the dead letter queue and lease expiry work
// on the newest record, a newer one starting again; the depth answer's conflation and
// effectivePending; autoAck refused; the framed answer's own keys; namespace pops; forgetting
// the policy with the group. tests/py/test_conflation.py drives the 2.6.0 client.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { api, get, post, rmrf, sleep, startPostgres, startQueen } from './harness.mjs';

let node;
before(async () => { node = await startQueen(); });
after(async () => { if (node) { await node.stop(); rmrf(node.data); } });

const push = async (items) => {
  const r = await post(node.url, '/api/v1/push', { items });
  assert.equal(r.status, 201, r.text);
  return r.json;
};
const pushN = (queue, partition, from, to) =>
  push(Array.from({ length: to - from }, (_, i) => ({ queue, partition, payload: { v: from + i } })));
const pop = (q, qs) => get(node.url, `/api/v1/pop/queue/${q}?${qs}`);
const ack = async (m, status = 'completed', extra = {}) => {
  const r = await post(node.url, '/api/v1/ack', {
    transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId,
    consumerGroup: m.consumerGroup, status, error: null, ...extra,
  });
  assert.equal(r.status, 200, r.text);
  return r.json;
};
const depth = (q, group) => get(node.url, `/api/v1/resources/queues/${q}/depth${group ? `?group=${group}` : ''}`);
const conflatedTotal = async () => {
  const m = /^queen_pop_conflated_total (\d+)$/m.exec((await get(node.url, '/metrics/prometheus')).text);
  assert.ok(m, 'queen_pop_conflated_total is exported');
  return Number(m[1]);
};
const byPartition = (msgs) => Object.fromEntries(msgs.map((m) => [m.partition, m.data.v]));

test('a conflating pop delivers the newest record of each partition and retires the rest', async () => {
  await pushN('c1', 'a', 0, 5);
  await pushN('c1', 'b', 0, 3);
  const d0 = await depth('c1', 'g');
  assert.deepEqual([d0.json.pending, d0.json.conflation, d0.json.effectivePending], [8, false, 8],
    'a group that never popped has no policy yet');
  const before = await conflatedTotal();
  const r = await pop('c1', 'consumerGroup=g&conflation=true&batch=10&partitions=10&wait=false');
  assert.equal(r.status, 200, r.text);
  assert.equal(await conflatedTotal() - before, 6, 'a: 0..3 and b: 0..1 retired, counted on /metrics/prometheus');
  assert.equal(r.json.conflation, true);
  assert.equal('conflationConflict' in r.json, false);
  assert.deepEqual(byPartition(r.json.messages), { a: 4, b: 2 });
  // the records behind the newest are retired already: pending is the two leased records
  const d1 = await depth('c1', 'g');
  assert.deepEqual(d1.json, {
    queue: 'c1', group: 'g', pending: 2, partitionsPending: 2, conflation: true, effectivePending: 2,
    partitions: [{ partition: 'a', pending: 1 }, { partition: 'b', pending: 1 }],
  });
  // more records while leased: pending counts them, effectivePending is the partitions owing work
  await pushN('c1', 'a', 5, 9);
  const d2 = await depth('c1', 'g');
  assert.deepEqual([d2.json.pending, d2.json.partitionsPending, d2.json.effectivePending], [6, 2, 2]);
  // queue level (no group) reads no policy
  const dq = await depth('c1');
  assert.equal(dq.json.conflation, false);
  assert.equal(dq.json.effectivePending, dq.json.pending);
  for (const m of r.json.messages) assert.equal((await ack(m))[0].success, true);
  // a is conflated again (newest 8); b has nothing left
  const r2 = await pop('c1', 'consumerGroup=g&conflation=true&batch=10&partitions=10&wait=false');
  assert.deepEqual(byPartition(r2.json.messages), { a: 8 });
  assert.equal((await ack(r2.json.messages[0]))[0].success, true);
  // empty: 200 with a body, for the echo (a plain pop keeps its 204)
  const e = await pop('c1', 'consumerGroup=g&conflation=true&wait=false');
  assert.equal(e.status, 200);
  assert.deepEqual(e.json, { success: true, messages: [], conflation: true });
  assert.equal((await pop('c1', 'consumerGroup=other&wait=false&batch=100&partitions=10&autoAck=true')).json.messages.length, 12,
    'another group delivers every record');
  assert.equal((await pop('c1', 'consumerGroup=other&wait=false')).status, 204);
  // never redelivered: rewinding is a seek, and the retired records are in the log still
  const d3 = await depth('c1', 'g');
  assert.deepEqual([d3.json.pending, d3.json.effectivePending], [0, 0]);
});

test('batch is one record per partition: a one-partition pop gets one message', async () => {
  await pushN('c2', 'a', 0, 20);
  const r = await pop('c2', 'consumerGroup=g&conflation=true&batch=50&wait=false');
  assert.equal(r.json.messages.length, 1);
  assert.equal(r.json.messages[0].data.v, 19);
  // a named partition conflates too
  await ack(r.json.messages[0]);
  await pushN('c2', 'a', 20, 23);
  const p = await get(node.url, '/api/v1/pop/queue/c2/partition/a?consumerGroup=g&conflation=true&wait=false&batch=10');
  assert.deepEqual(p.json.messages.map((m) => m.data.v), [22]);
  assert.equal(p.json.conflation, true);
});

test('the stored policy wins; the other declaration is echoed as a conflict', async () => {
  await pushN('c3', 'a', 0, 4);
  // g-on conflates (its first pop said so); a pop of it that does not declare it still conflates
  const first = await pop('c3', 'consumerGroup=on&conflation=true&wait=false');
  assert.deepEqual([first.json.messages[0].data.v, first.json.conflation], [3, true]);
  await ack(first.json.messages[0]);
  await pushN('c3', 'a', 4, 7);
  const undeclared = await pop('c3', 'consumerGroup=on&wait=false&batch=10');
  assert.equal(undeclared.json.conflation, true);
  assert.equal(undeclared.json.conflationConflict, true);
  assert.deepEqual(undeclared.json.messages.map((m) => m.data.v), [6]);
  await ack(undeclared.json.messages[0]);
  // g-off registered without conflation: a conflating declaration gets every record and the conflict
  const plain = await pop('c3', 'consumerGroup=off&wait=false&batch=2');
  assert.deepEqual(plain.json.messages.map((m) => m.data.v), [0, 1]);
  assert.equal('conflation' in plain.json, false);
  for (const m of plain.json.messages) await ack(m);
  const declared = await pop('c3', 'consumerGroup=off&conflation=true&wait=false&batch=10');
  assert.deepEqual(declared.json.messages.map((m) => m.data.v), [2, 3, 4, 5, 6]);
  assert.equal(declared.json.conflationConflict, true);
  assert.equal('conflation' in declared.json, false, 'conflation: true only when the group conflates');
  for (const m of declared.json.messages) await ack(m);
  // the conflict rides the empty answer too (a body, not 204)
  const e = await pop('c3', 'consumerGroup=off&conflation=true&wait=false');
  assert.deepEqual([e.status, e.json], [200, { success: true, messages: [], conflationConflict: true }]);
  const eu = await pop('c3', 'consumerGroup=on&wait=false');
  assert.deepEqual([eu.status, eu.json], [200, { success: true, messages: [], conflation: true, conflationConflict: true }]);
  // an undeclared pop of a non-conflating group: no echo, 204 when empty
  assert.equal((await pop('c3', 'consumerGroup=off&wait=false')).status, 204);
  // forgetting the group's metadata forgets its policy: the next first pop stores it again
  const del = await api(node.url, 'DELETE', '/api/v1/consumer-groups/on/queues/c3?deleteMetadata=true');
  assert.equal(del.status, 200, del.text);
  const again = await pop('c3', 'consumerGroup=on&wait=false&batch=10&autoAck=true');
  assert.equal(again.json.messages.length, 7);
  assert.equal('conflation' in again.json, false);
  assert.equal((await pop('c3', 'consumerGroup=on&conflation=true&wait=false')).json.conflationConflict, true);
});

test('failed acks retry the newest; a newer record is a new delivery; exhausted retries go to the DLQ', async () => {
  await post(node.url, '/api/v1/configure', { queue: 'c4', options: { retryLimit: 1, retryDelay: 0 } });
  await pushN('c4', 'a', 0, 3);
  const r1 = await pop('c4', 'consumerGroup=g&conflation=true&wait=false');
  assert.equal(r1.json.messages[0].data.v, 2);
  await ack(r1.json.messages[0], 'failed', { error: 'boom' });
  // retried: the same record (nothing newer)
  const r2 = await pop('c4', 'consumerGroup=g&conflation=true&wait=false');
  assert.equal(r2.json.messages[0].transactionId, r1.json.messages[0].transactionId);
  // a newer record arrives before the next failure: it replaces the failing one, retries start again
  await pushN('c4', 'a', 3, 4);
  await ack(r2.json.messages[0], 'failed', { error: 'boom' }); // its one retry is used: dead-lettered
  const dl = await get(node.url, '/api/v1/dlq?queue=c4&consumerGroup=g');
  assert.deepEqual(dl.json.messages.map((m) => m.data?.v ?? m.payload?.v), [2]);
  const r3 = await pop('c4', 'consumerGroup=g&conflation=true&wait=false');
  assert.equal(r3.json.messages[0].data.v, 3);
  await ack(r3.json.messages[0], 'failed', { error: 'once' });
  await pushN('c4', 'a', 4, 6);
  const r4 = await pop('c4', 'consumerGroup=g&conflation=true&wait=false');
  assert.equal(r4.json.messages[0].data.v, 5, 'the newer value, not the retry of 3');
  await ack(r4.json.messages[0], 'failed', { error: 'first failure of 5' });
  const r5 = await pop('c4', 'consumerGroup=g&conflation=true&wait=false');
  assert.equal(r5.json.messages[0].data.v, 5, 'its retry count started again: one retry left');
  await ack(r5.json.messages[0], 'dlq', { error: 'to the DLQ' });
  const dl2 = await get(node.url, '/api/v1/dlq?queue=c4&consumerGroup=g');
  assert.equal(dl2.json.total, 2);
  const e = await pop('c4', 'consumerGroup=g&conflation=true&wait=false');
  assert.deepEqual(e.json.messages, []);
});

test('an expired lease gives the newest record then, the older never again', async () => {
  await post(node.url, '/api/v1/configure', { queue: 'c5', options: { leaseTime: 1 } });
  await pushN('c5', 'a', 0, 3);
  const r1 = await pop('c5', 'consumerGroup=g&conflation=true&wait=false');
  assert.equal(r1.json.messages[0].data.v, 2);
  await pushN('c5', 'a', 3, 5);
  // held: nothing to give (the lease covers the partition)
  const held = await pop('c5', 'consumerGroup=g&conflation=true&wait=false');
  assert.deepEqual(held.json.messages, []);
  assert.equal(held.json.conflation, true);
  // a long poll waits for the lease to end and gets the newest record
  const t0 = Date.now();
  const r2 = await pop('c5', 'consumerGroup=g&conflation=true&wait=true&timeout=5000');
  assert.ok(Date.now() - t0 < 4500);
  assert.equal(r2.json.messages[0].data.v, 4);
  assert.equal((await ack(r1.json.messages[0]))[0].success, false, 'the expired lease acks nothing');
  assert.equal((await ack(r2.json.messages[0]))[0].success, true);
  const d = await depth('c5', 'g');
  assert.deepEqual([d.json.pending, d.json.effectivePending], [0, 0]);
});

test('an empty long poll answers with the echo when it times out; a queue not there yet echoes the declaration', async () => {
  await pushN('c6', 'a', 0, 1);
  const r = await pop('c6', 'consumerGroup=g&conflation=true&wait=false');
  await ack(r.json.messages[0]);
  const t0 = Date.now();
  const e = await pop('c6', 'consumerGroup=g&conflation=true&wait=true&timeout=600');
  assert.ok(Date.now() - t0 >= 500);
  assert.deepEqual([e.status, e.json], [200, { success: true, messages: [], conflation: true }]);
  const none = await pop('c6-not-yet', 'consumerGroup=g&conflation=true&wait=false');
  assert.deepEqual([none.status, none.json], [200, { success: true, messages: [], conflation: true }]);
  // a pop that wakes on a push delivers the newest of what came
  const parked = pop('c6', 'consumerGroup=g&conflation=true&wait=true&timeout=5000');
  await sleep(200);
  await pushN('c6', 'a', 1, 4);
  const w = await parked;
  assert.equal(w.json.messages.length, 1);
  assert.ok(w.json.messages[0].data.v >= 1);
  assert.equal(w.json.conflation, true);
});

test('autoAck is refused with a conflating declaration and on a group that conflates', async () => {
  await pushN('c7', 'a', 0, 2);
  const declared = await pop('c7', 'consumerGroup=g&conflation=true&autoAck=true&wait=true&timeout=5000');
  assert.deepEqual([declared.status, declared.json.code], [400, 'conflation_with_auto_ack']);
  const noGroup = await pop('c7', 'conflation=true&wait=false');
  assert.deepEqual([noGroup.status, noGroup.json.code], [400, 'conflation_needs_group']);
  // neither touched anything: g has no policy yet, so this pop stores it (conflating)
  const r = await pop('c7', 'consumerGroup=g&conflation=true&wait=false');
  assert.equal(r.json.messages[0].data.v, 1);
  await ack(r.json.messages[0]);
  await pushN('c7', 'a', 2, 3);
  const stored = await pop('c7', 'consumerGroup=g&autoAck=true&wait=true&timeout=5000');
  assert.deepEqual([stored.status, stored.json.code], [400, 'conflation_with_auto_ack']);
  const after = await pop('c7', 'consumerGroup=g&conflation=true&wait=false');
  assert.equal(after.json.messages[0].data.v, 2, 'the refused autoAck pop consumed nothing');
});

test('the framed answer carries the echo in its own keys and one record per claim', async () => {
  await pushN('c8', 'a', 0, 6);
  await pushN('c8', 'b', 0, 2);
  const r = await fetch(`${node.url}/api/v1/pop/queue/c8?consumerGroup=g&conflation=true&frames=true&partitions=2&batch=10&wait=false`);
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'application/x-queen-pop');
  const b = Buffer.from(await r.arrayBuffer());
  assert.equal(b.subarray(0, 4).toString(), 'QPF1');
  assert.equal(b[4], 1);
  const elen = b.readUInt32LE(5);
  assert.deepEqual(JSON.parse(b.subarray(9, 9 + elen).toString()), { frames: true, conflation: true });
  // walk the header to the claims: u16 queue, u16 leaseId, u16 group, u32 claims
  let o = 9 + elen;
  for (let k = 0; k < 3; k++) o += 2 + b.readUInt16LE(o);
  const claims = b.readUInt32LE(o);
  o += 4;
  assert.equal(claims, 2);
  const got = {};
  for (let c = 0; c < claims; c++) {
    o += 8; // partition id
    const name = b.subarray(o + 2, o + 2 + b.readUInt16LE(o)).toString();
    o += 2 + b.readUInt16LE(o);
    const start = Number(b.readBigUInt64LE(o)); const end = Number(b.readBigUInt64LE(o + 8));
    o += 16 + 4;
    const records = b.readUInt32LE(o);
    o += 4;
    got[name] = [start, end];
    for (let i = 0; i < records; i++) { o += 8 + 8 + 4 + 1; o += 4 + b.readUInt32LE(o); }
  }
  assert.deepEqual(got, { a: [5, 5], b: [1, 1] });
});

test('a namespace pop conflates per queue', async () => {
  for (const q of ['n1', 'n2']) {
    await post(node.url, '/api/v1/configure', { queue: q, namespace: 'cns', options: {} });
  }
  await pushN('n1', 'a', 0, 4);
  const r = await get(node.url, '/api/v1/pop?namespace=cns&consumerGroup=g&conflation=true&wait=false&batch=10');
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.messages.map((m) => [m.queue, m.data.v]), [['n1', 3]]);
  assert.equal(r.json.conflation, true);
  await ack(r.json.messages[0]);
  const e = await get(node.url, '/api/v1/pop?namespace=cns&consumerGroup=g&conflation=true&wait=false');
  assert.deepEqual([e.status, e.json], [200, { success: true, messages: [], conflation: true }]);
  // the answering queue's policy is echoed: h registers n2 without conflation (a plain pop of
  // it); n2 goes first (priority), so the conflating namespace pop that n2 answers says
  // conflict and delivers every record
  await post(node.url, '/api/v1/configure', { queue: 'n2', namespace: 'cns', options: { priority: 10 } });
  await pushN('n2', 'a', 0, 3);
  const plain = await pop('n2', 'consumerGroup=h&wait=false&batch=1');
  await ack(plain.json.messages[0]);
  const h = await get(node.url, '/api/v1/pop?namespace=cns&consumerGroup=h&conflation=true&wait=false&batch=10');
  assert.deepEqual(h.json.messages.map((m) => [m.queue, m.data.v]), [['n2', 1], ['n2', 2]]);
  assert.equal(h.json.conflationConflict, true);
  assert.equal('conflation' in h.json, false);
  for (const m of h.json.messages) await ack(m);
  // n2 has nothing left for h: n1 answers, and h is stored conflating there
  const h1 = await get(node.url, '/api/v1/pop?namespace=cns&consumerGroup=h&conflation=true&wait=false&batch=10');
  assert.deepEqual(h1.json.messages.map((m) => [m.queue, m.data.v]), [['n1', 3]]);
  assert.equal(h1.json.conflation, true);
  assert.equal('conflationConflict' in h1.json, false);
  await ack(h1.json.messages[0]);
  // nothing anywhere: not every queue conflates for h (n2 does not), and one conflicts
  const he = await get(node.url, '/api/v1/pop?namespace=cns&consumerGroup=h&conflation=true&wait=false');
  assert.deepEqual([he.status, he.json], [200, { success: true, messages: [], conflationConflict: true }]);
});

test('concurrent conflating pops share the partitions out, one record each', async () => {
  const names = ['p0', 'p1', 'p2', 'p3', 'p4', 'p5'];
  for (const p of names) await pushN('c9', p, 0, 3);
  const answers = await Promise.all(names.map(() => pop('c9', 'consumerGroup=g&conflation=true&wait=false')));
  const msgs = answers.flatMap((a) => (a.status === 200 ? a.json.messages : []));
  for (const a of answers) if (a.status === 200) assert.equal(a.json.conflation, true);
  const parts = msgs.map((m) => m.partition);
  assert.equal(new Set(parts).size, parts.length, 'no partition twice');
  for (const m of msgs) assert.equal(m.data.v, 2);
  // whatever the merging left, a sweep gets the rest, still the newest each
  const rest = await pop('c9', 'consumerGroup=g&conflation=true&partitions=10&batch=10&wait=false');
  const all = [...parts, ...rest.json.messages.map((m) => m.partition)].sort();
  assert.deepEqual(all, names);
});

test('an upgraded database stores the groups that already consumed as not conflating', async () => {
  const pg = await startPostgres();
  try {
    pg.psql('CREATE DATABASE cfup');
    const env = { QUEEN_PG_URL: pg.urlOf('cfup') };
    let n = await startQueen({ env });
    try {
      const r = await post(n.url, '/api/v1/push', { items: [0, 1, 2].map((v) => ({ queue: 'up', partition: 'a', payload: { v } })) });
      assert.equal(r.status, 201, r.text);
      const g = await get(n.url, '/api/v1/pop/queue/up?consumerGroup=old&batch=1&wait=false&autoAck=true');
      assert.equal(g.json.messages[0].data.v, 0);
      await get(n.url, '/api/v1/pop/queue/up?consumerGroup=subonly&subscriptionMode=new&wait=false');
    } finally { await n.stop(); }
    // back to the database before 105: no policies, no counter, 105 not recorded
    pg.psql('DROP TABLE queen.group_policies; ALTER TABLE queen.cursors DROP COLUMN conflated; '
      + 'DELETE FROM public.queen_schema_migrations WHERE version = 105', 'cfup');
    n = await startQueen({ env });
    try {
      assert.equal(pg.psql("SELECT string_agg(consumer_group || '=' || conflation, ',' ORDER BY consumer_group) FROM queen.group_policies", 'cfup'),
        'old=false,subonly=false');
      const old = await get(n.url, '/api/v1/pop/queue/up?consumerGroup=old&conflation=true&batch=10&wait=false');
      assert.deepEqual(old.json.messages.map((m) => m.data.v), [1, 2]);
      assert.equal(old.json.conflationConflict, true);
      const fresh = await get(n.url, '/api/v1/pop/queue/up?consumerGroup=fresh&conflation=true&batch=10&wait=false');
      assert.deepEqual(fresh.json.messages.map((m) => m.data.v), [2]);
      assert.equal(fresh.json.conflation, true);
    } finally { await n.stop(); }
  } finally { pg.destroy(); }
});
