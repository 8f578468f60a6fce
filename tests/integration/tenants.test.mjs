// Tenant isolation with JWT on: tenants A and B (and the default tenant, for tokens without a
// tenant claim) use the same queue, KV and timer names. Nothing of one is visible to or
// changeable by another: push, pop, fetch, partitions/changed, configure, ack, lease extend,
// transaction (acks and requiredLeases), KV, timers, consumer groups and seeks, dead letters,
// messages, resources, deletions, /status. The same queue name in two tenants is two queues.
// Tenants are created on first use, once, also when many first requests race on two nodes.
// /metrics/prometheus labels every per-queue series of a non-default tenant with tenant="…".
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { api, get, post, readQueue, rmrf, sleep, startPostgres, startQueen } from './harness.mjs';
import { bearer, nowS, sign } from './jwt.mjs';

const SECRET = 'tenant-test-secret-of-at-least-32-bytes';
const TA = 'aaaaaaaa-0000-4000-8000-00000000000a';
const TB = 'bbbbbbbb-0000-4000-8000-00000000000b';
const TC = 'cccccccc-0000-4000-8000-00000000000c';
const DEFAULT = '00000000-0000-0000-0000-000000000001';

const tok = (tenant, role = 'admin', sub = `svc-${tenant ? tenant.slice(0, 1) : 'd'}`) =>
  bearer(sign('HS256', SECRET, { sub, role, exp: nowS() + 600, ...(tenant ? { tenant } : {}) }));
const A = tok(TA), B = tok(TB), D = tok(null);

let pg, n1, n2;
before(async () => {
  pg = await startPostgres();
  const env = { QUEEN_PG_URL: pg.url, JWT_ENABLED: 'true', JWT_SECRET: SECRET };
  n1 = await startQueen({ env });
  n2 = await startQueen({ env });
});
after(async () => {
  for (const n of [n1, n2]) if (n) { await n.stop(); rmrf(n.data); }
  if (pg) pg.destroy();
});

const as = (h) => ({
  get: (p) => get(n1.url, p, h),
  post: (p, b) => post(n1.url, p, b, h),
  put: (p, b) => api(n1.url, 'PUT', p, b, h),
  del: (p) => api(n1.url, 'DELETE', p, undefined, h),
  read: (q, o = {}) => readQueue(n1.url, q, { headers: h, ...o }),
});
const a = as(A), b = as(B), d = as(D);

async function push(who, items) {
  const r = await who.post('/api/v1/push', { items });
  assert.equal(r.status, 201, r.text);
  return r.json;
}

describe('tenants', () => {
  let leaseA, msgA;

  test('the same queue name in two tenants is two queues', async () => {
    await push(a, [{ queue: 'shared', partition: 'p', payload: 'a1' }, { queue: 'shared', partition: 'p', payload: 'a2' }]);
    await push(b, [{ queue: 'shared', partition: 'p', payload: 'b1' }]);
    await push(a, [{ queue: 'only-a', payload: 'x' }]);
    const fa = await a.read('shared');
    const fb = await b.read('shared');
    assert.deepEqual(fa.records.map((r) => [r.offset, r.payload]), [[0, 'a1'], [1, 'a2']]);
    assert.deepEqual(fb.records.map((r) => [r.offset, r.payload]), [[0, 'b1']]);
    assert.notEqual(fa.partitions[0].partitionId, fb.partitions[0].partitionId);
    const qa = (await a.get('/api/v1/resources/queues')).json.queues.map((q) => [q.name, q.messages.total]).sort();
    const qb = (await b.get('/api/v1/resources/queues')).json.queues.map((q) => [q.name, q.messages.total]).sort();
    assert.deepEqual(qa, [['only-a', 1], ['shared', 2]]);
    assert.deepEqual(qb, [['shared', 1]]);
    assert.deepEqual((await d.get('/api/v1/resources/queues')).json.queues, []);
  });

  test('reads: B cannot fetch, list, see changes of, or look up A\'s queues', async () => {
    const entry = { queue: 'only-a', partition: 'Default', offset: 0 };
    let r = await b.post('/api/v1/fetch', { entries: [entry] });
    assert.equal(r.json.entries[0].error, 'UNKNOWN_TOPIC_OR_PARTITION', r.text);
    assert.deepEqual(r.json.entries[0].records, []);
    r = await a.post('/api/v1/fetch', { entries: [entry] });
    assert.deepEqual(r.json.entries[0].records.map((x) => x.payload), ['x'], r.text);
    r = await b.post('/api/v1/partitions/changed', { entries: [{ queue: 'only-a' }] });
    assert.equal(r.json.entries[0].error, 'UNKNOWN_TOPIC_OR_PARTITION', r.text);
    assert.equal(r.json.safeTime, null);
    r = await a.post('/api/v1/partitions/changed', { entries: [{ queue: 'only-a' }] });
    assert.equal(r.json.entries[0].error, undefined, r.text);
    assert.deepEqual(r.json.entries[0].partitions.map((x) => x.name), ['Default']);
    assert.equal((await b.get('/api/v1/resources/queues/only-a')).status, 404);
    assert.equal((await b.get('/api/v1/status/queues/only-a')).status, 404);
    assert.equal((await a.get('/api/v1/resources/queues/only-a')).status, 200);
    r = await b.get('/api/v1/resources/overview');
    assert.equal(r.status, 200);
    assert.equal(r.json.queues, 1);
    assert.equal(r.json.messages.total, 1);
    assert.equal((await a.get('/api/v1/resources/overview')).json.queues, 2);
    const nsB = (await b.get('/api/v1/resources/namespaces')).json.namespaces.map((n) => n.namespace);
    assert.deepEqual(nsB, ['shared']);
    assert.equal((await b.get('/api/v1/messages?queue=only-a')).status, 404);
    const listed = (await b.get('/api/v1/messages')).json.messages;
    assert.ok(listed.every((m) => m.queue === 'shared') && listed.length === 1, JSON.stringify(listed));
  });

  test('pop: each tenant gets its own records only', async () => {
    let r = await a.get('/api/v1/pop/queue/shared/partition/p?batch=1&wait=false');
    assert.equal(r.status, 200, r.text);
    [msgA] = r.json.messages;
    leaseA = msgA.leaseId;
    assert.equal(msgA.data, 'a1');
    assert.equal(msgA.producerSub, 'svc-a');
    r = await b.get('/api/v1/pop/queue/shared?batch=10&wait=false');
    assert.deepEqual(r.json.messages.map((m) => m.data), ['b1']);
    r = await b.get('/api/v1/pop/queue/only-a?wait=false');
    assert.equal(r.status, 204);
    r = await d.get('/api/v1/pop/queue/only-a?wait=false');
    assert.equal(r.status, 204);
    r = await b.get('/api/v1/pop?namespace=only-a&wait=false');
    assert.equal(r.status, 204);
  });

  test('ack, lease extend and transactions of B do not touch A\'s lease', async () => {
    const ackBody = { transactionId: msgA.transactionId, partitionId: msgA.partitionId, leaseId: leaseA, status: 'completed' };
    let r = await b.post('/api/v1/ack', ackBody);
    assert.equal(r.status, 200);
    assert.equal(r.json[0].success, false);
    assert.equal(r.json[0].error, 'Message not found');
    r = await b.post(`/api/v1/lease/${leaseA}/extend`, { seconds: 600 });
    assert.equal(r.json[0].success, false);
    assert.equal(r.json[0].error, 'Lease not found');
    r = await b.post('/api/v1/transaction', { operations: [{ type: 'push', items: [{ queue: 'tx-b', payload: 1 }] }], requiredLeases: [leaseA] });
    assert.equal(r.json.success, false, r.text);
    r = await b.post('/api/v1/transaction', { operations: [{ type: 'ack', ...ackBody }] });
    assert.equal(r.json.success, false, r.text);
    assert.equal((await b.read('tx-b')).found, false);
    // A's lease is intact: extend and ack work for A
    r = await a.post(`/api/v1/lease/${leaseA}/extend`, { seconds: 120 });
    assert.equal(r.json[0].success, true, r.text);
    r = await a.post('/api/v1/transaction', { operations: [{ type: 'push', items: [{ queue: 'tx-a', payload: 1 }] }], requiredLeases: [leaseA] });
    assert.equal(r.json.success, true, r.text);
    r = await a.post('/api/v1/ack', ackBody);
    assert.equal(r.json[0].success, true, r.text);
  });

  test('configure: B\'s configure of a name makes B\'s queue, A\'s options stay', async () => {
    let r = await a.post('/api/v1/configure', { queue: 'cfg', options: { leaseTime: 11, retryLimit: 1 } });
    assert.equal(r.status, 200, r.text);
    r = await b.post('/api/v1/configure', { queue: 'cfg', options: { leaseTime: 99 } });
    assert.equal(r.status, 200, r.text);
    const oa = (await a.get('/api/v1/resources/queues/cfg')).json.options;
    const ob = (await b.get('/api/v1/resources/queues/cfg')).json.options;
    assert.equal(oa.leaseTime, 11);
    assert.equal(oa.retryLimit, 1);
    assert.equal(ob.leaseTime, 99);
  });

  test('KV on the 2.x wire: one key name, two values, no prefix page across tenants', async () => {
    const kv = (c, operations) => c.post('/api/v1/kv', { operations });
    let r = await kv(a, [{ op: 'put', ns: 'ns2', key: 'k', value: { owner: 'a' }, forever: true }]);
    assert.equal(r.json.results[0].applied, true, r.text);
    r = await kv(b, [{ op: 'get', ns: 'ns2', key: 'k' }, { op: 'getPrefix', ns: 'ns2', prefix: 'k' },
      { op: 'check', ns: 'ns2', key: 'k', expect: 0 }, { op: 'putIfAbsent', ns: 'ns2', key: 'k', value: { owner: 'b' }, forever: true }]);
    assert.equal(r.json.results[0].found, false, r.text);
    assert.deepEqual(r.json.results[1].rows, []);
    assert.equal(r.json.results[2].applied, true);
    assert.equal(r.json.results[3].applied, true);
    r = await kv(a, [{ op: 'get', ns: 'ns2', key: 'k' }]);
    assert.deepEqual(r.json.results[0].value, { owner: 'a' });
  });

  test('KV: one key name, two values', async () => {
    assert.equal((await a.put('/api/v1/kv/ns/k', { value: { owner: 'a' } })).status, 200);
    assert.equal((await b.get('/api/v1/kv/ns/k')).status, 404);
    assert.deepEqual((await b.get('/api/v1/kv/ns')).json.keys, []);
    assert.deepEqual((await a.get('/api/v1/kv/ns')).json.keys.map((k) => k.key), ['k']);
    assert.equal((await b.del('/api/v1/kv/ns/k')).json.deleted, false);
    assert.equal((await b.post('/api/v1/kv/ns/k/putIfAbsent', { value: { owner: 'b' } })).status, 200);
    assert.equal((await b.post('/api/v1/kv/ns/c/incr', {})).json.value, 1);
    let r = await b.post('/api/v1/kv/batch', { namespace: 'ns', ops: [{ op: 'put', key: 'k', value: { owner: 'b2' } }] });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual((await a.get('/api/v1/kv/ns/k')).json.value, { owner: 'a' });
    assert.deepEqual((await b.get('/api/v1/kv/ns/k')).json.value, { owner: 'b2' });
    assert.equal((await a.get('/api/v1/kv/ns/c')).status, 404);
    r = await d.get('/api/v1/kv/ns/k');
    assert.equal(r.status, 404);
  });

  test('timers: B cannot list, peek, reschedule or cancel A\'s', async () => {
    const op = (o) => ({ operations: [o] });
    const sched = (payload, delayMs) => ({ op: 'schedule', queue: 'tq', timerKey: 'k', payload: Buffer.from(payload).toString('base64'), delayMs });
    let r = await a.post('/api/v1/timers', op(sched('"later"', 3600000)));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.results[0].status, 'scheduled');
    assert.deepEqual((await b.get('/api/v1/timers/tq')).json.rows, []);
    assert.deepEqual((await b.get('/api/v1/timers/tq/k')).json, { found: false });
    assert.equal((await b.del('/api/v1/timers/tq/k')).json.status, 'absent');
    assert.equal((await a.get('/api/v1/timers/tq/k')).json.found, true);
    assert.equal((await a.get('/api/v1/timers/tq')).json.rows.length, 1);
    // the same key in B is B's own timer, which fires into B's queue
    r = await b.post('/api/v1/timers', op(sched('"now-b"', 0)));
    assert.equal(r.json.results[0].status, 'scheduled', r.text);
    let recs = [];
    for (let i = 0; i < 100 && !recs.length; i++) {
      recs = (await b.read('tq')).records;
      if (!recs.length) await sleep(100);
    }
    assert.deepEqual(recs.map((x) => x.payload), ['now-b']);
    assert.equal((await a.read('tq')).found, false);
    // A's timer is still pending, untouched by B's
    const mine = (await a.get('/api/v1/timers/tq/k')).json;
    assert.equal(mine.found, true);
    assert.notEqual(mine.txn, r.json.results[0].txn);
    assert.equal((await a.del('/api/v1/timers/tq/k')).json.status, 'cancelled');
  });

  test('consumer groups: listing, detail, seek, subscription and deletion stay in the tenant', async () => {
    let r = await a.get('/api/v1/pop/queue/only-a?consumerGroup=g1&autoAck=true&wait=false');
    assert.equal(r.status, 200, r.text);
    r = await b.get('/api/v1/pop/queue/shared?consumerGroup=g1&autoAck=true&wait=false');
    assert.equal(r.status, 200, r.text);
    const ga = (await a.get('/api/v1/consumer-groups')).json.filter((g) => g.name === 'g1').map((g) => g.queueName);
    const gb = (await b.get('/api/v1/consumer-groups')).json.filter((g) => g.name === 'g1').map((g) => g.queueName);
    assert.deepEqual(ga, ['only-a']);
    assert.deepEqual(gb, ['shared']);
    assert.deepEqual(Object.keys((await b.get('/api/v1/consumer-groups/g1')).json ?? {}).filter((k) => k === 'only-a'), []);
    r = await b.post('/api/v1/consumer-groups/g1/queues/only-a/seek', { toStart: true });
    assert.equal(r.status, 404, r.text);
    r = await b.post('/api/v1/consumer-groups/g1/subscription', { subscriptionTimestamp: '2030-01-01T00:00:00Z' });
    assert.ok(r.status < 300, r.text);
    assert.equal((await b.del('/api/v1/consumer-groups/g1/queues/only-a')).status, 404);
    r = await b.del('/api/v1/consumer-groups/g1?deleteMetadata=true');
    assert.ok(r.status < 300, r.text);
    const after = (await a.get('/api/v1/consumer-groups')).json.filter((g) => g.name === 'g1');
    assert.equal(after.length, 1);
    assert.equal(after[0].subscriptionMode, null);
    assert.equal(after[0].totalLag, 0);
    assert.deepEqual((await b.get('/api/v1/consumer-groups')).json.filter((g) => g.name === 'g1'), []);
  });

  test('dead letters: B sees, requeues and deletes none of A\'s', async () => {
    await push(a, [{ queue: 'dlq-a', payload: 'poison' }]);
    const m = (await a.get('/api/v1/pop/queue/dlq-a?wait=false')).json.messages[0];
    let r = await a.post('/api/v1/ack', { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'dlq', error: 'bad' });
    assert.equal(r.json[0].dlq, true, r.text);
    const la = (await a.get('/api/v1/dlq')).json;
    assert.equal(la.total, 1);
    const id = la.messages[0].dlqId;
    assert.equal((await b.get('/api/v1/dlq')).json.total, 0);
    assert.equal((await b.get('/api/v1/dlq?queue=dlq-a')).status, 404);
    assert.equal((await b.post(`/api/v1/dlq/${id}/requeue`)).status, 404);
    assert.equal((await b.del(`/api/v1/dlq/${id}`)).status, 404);
    assert.equal((await a.get('/api/v1/dlq')).json.total, 1);
    // messages: B cannot read or delete A's record
    assert.equal((await b.get(`/api/v1/messages/${m.partitionId}/${m.transactionId}`)).status, 404);
    r = await b.del(`/api/v1/messages/${m.partitionId}/${m.transactionId}`);
    assert.equal(r.json.success, false, r.text);
    r = await a.get(`/api/v1/messages/${m.partitionId}/${m.transactionId}`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.status, 'dead_letter');
    assert.equal((await a.post(`/api/v1/dlq/${id}/requeue`)).status, 201);
  });

  test('/status and /metrics/prometheus', async () => {
    const sa = (await a.get('/status')).json.queues;
    const sb = (await b.get('/status')).json.queues;
    assert.ok(sa.length > 0 && sa.every((q) => q.tenant === TA), JSON.stringify(sa));
    assert.ok(sb.length > 0 && sb.every((q) => q.tenant === TB), JSON.stringify(sb));
    assert.ok(!sb.some((q) => q.queue === 'only-a'));
    await push(d, [{ queue: 'shared', payload: 'd1' }, { queue: 'shared', payload: 'd2' }]);
    assert.equal((await d.get('/api/v1/pop/queue/shared?wait=false')).status, 200);
    const sd = (await d.get('/status')).json.queues;
    assert.deepEqual(sd.map((q) => [q.tenant, q.queue]), [[DEFAULT, 'shared']]);
    const t = (await get(n1.url, '/metrics/prometheus')).text;
    // the same queue name in three tenants: three series, labelled but for the default tenant
    const lag = t.split('\n').filter((l) => l.startsWith('queen_queue_lag_records{queue="shared",group="__QUEUE_MODE__"'));
    assert.deepEqual(lag.map((l) => l.replace(/ \d+$/, '')).sort(), [
      'queen_queue_lag_records{queue="shared",group="__QUEUE_MODE__"}',
      `queen_queue_lag_records{queue="shared",group="__QUEUE_MODE__",tenant="${TA}"}`,
      `queen_queue_lag_records{queue="shared",group="__QUEUE_MODE__",tenant="${TB}"}`,
    ].sort());
    assert.match(t, new RegExp(`^queen_queue_lag_seconds\\{queue="shared",group="__QUEUE_MODE__",tenant="${TA}"\\} `, 'm'));
    // (its one dead letter was requeued above: none left, but the series is there, labelled)
    assert.match(t, new RegExp(`^queen_dead_letters\\{queue="dlq-a",tenant="${TA}"\\} 0$`, 'm'));
    assert.match(t, /^queen_dead_letters\{queue="shared"\} 0$/m);
  });

  test('deletions: B cannot delete A\'s queue or partition', async () => {
    let r = await b.del('/api/v1/resources/queues/only-a');
    assert.equal(r.json.existed, false, r.text);
    assert.equal((await b.del('/api/v1/resources/queues/only-a/partitions/Default')).status, 404);
    assert.equal((await b.del('/api/v1/resources/queues/shared/partitions/nope')).status, 404);
    r = await b.del('/api/v1/resources/queues/shared');
    assert.equal(r.json.existed, true, r.text);
    assert.equal((await b.read('shared')).found, false);
    assert.equal((await a.read('shared')).records.length, 2);
    assert.equal((await a.get('/api/v1/resources/queues/only-a')).status, 200);
  });

  test('tenant rows are made on first use, once, even when first requests race on two nodes', async () => {
    assert.equal(pg.psql(`SELECT count(*) FROM queen.tenants WHERE id IN ('${TA}', '${TB}')`), '2');
    assert.equal(pg.psql(`SELECT count(*) FROM queen.tenants WHERE id = '${TC}'`), '0');
    const c = tok(TC, 'read-write');
    const reqs = [];
    for (let i = 0; i < 24; i++) {
      const n = i % 2 ? n2 : n1;
      reqs.push(i % 3 === 0
        ? api(n.url, 'PUT', `/api/v1/kv/race/k${i}`, { value: i }, c)
        : post(n.url, '/api/v1/push', { items: [{ queue: `race-${i % 4}`, payload: i }] }, c));
    }
    const rs = await Promise.all(reqs);
    for (const r of rs) assert.ok(r.status === 200 || r.status === 201, r.text);
    assert.equal(pg.psql(`SELECT count(*) FROM queen.tenants WHERE id = '${TC}'`), '1');
    assert.equal(pg.psql(`SELECT count(*) FROM queen.queues q WHERE q.tenant_id = '${TC}'`), '4');
    // a read-only first request of a new tenant reads an empty tenant
    const fresh = tok('dddddddd-0000-4000-8000-00000000000d', 'read-only');
    const r = await get(n2.url, '/api/v1/resources/queues', fresh);
    assert.deepEqual(r.json.queues, []);
  });
});
