// POST /api/v1/transaction: acks and pushes in one transaction, all or nothing.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { get, post, readQueue, rmrf, startQueen } from './harness.mjs';

let node;
before(async () => { node = await startQueen(); });
after(async () => { if (node) { await node.stop(); rmrf(node.data); } });

const push = (items) => post(node.url, '/api/v1/push', { items });
const popq = async (q, extra = '') => {
  const r = await get(node.url, `/api/v1/pop/queue/${q}?batch=10${extra}`);
  return r.status === 200 ? r.json.messages : [];
};
const fetchAll = async (q) => (await readQueue(node.url, q)).records;

test('ack a message and push its result atomically', async () => {
  await push([{ queue: 'orders-t', payload: { order: 1 } }]);
  const [m] = await popq('orders-t');
  // sent as text so that 42.00 reaches the broker as written
  const r = await post(node.url, '/api/v1/transaction', `{"operations":[
    {"type":"ack","transactionId":"${m.transactionId}","partitionId":"${m.partitionId}","leaseId":"${m.leaseId}","status":"completed"},
    {"type":"push","items":[{"queue":"invoices-t","partition":"c1","payload":{"invoice":1,"total":42.00},"transactionId":"inv-1"}]}
  ],"requiredLeases":["${m.leaseId}"]}`);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.success, true);
  assert.match(r.json.transactionId, /^[0-9a-f-]{36}$/);
  assert.equal(r.json.results.length, 2);
  assert.deepEqual(r.json.results[0], { index: 0, type: 'ack', success: true, transactionId: m.transactionId, error: null, dlq: false });
  assert.equal(r.json.results[1].type, 'push');
  assert.equal(r.json.results[1].transactionId, 'inv-1');
  assert.equal(r.json.results[1].queueName, 'invoices-t');
  const raw = await readQueue(node.url, 'invoices-t');
  assert.deepEqual(raw.raws, ['{"invoice":1,"total":42.00}'], 'the payload is stored byte for byte');
  const inv = await fetchAll('invoices-t');
  assert.equal(inv.length, 1);
  assert.deepEqual(inv[0].payload, { invoice: 1, total: 42 });
  // the source message is done
  assert.deepEqual(await popq('orders-t'), []);
});

test('a failing ack rolls the pushes back', async () => {
  await push([{ queue: 'src-t2', payload: 1 }]);
  const [m] = await popq('src-t2');
  const r = await post(node.url, '/api/v1/transaction', { operations: [
    { type: 'push', items: [{ queue: 'dst-t2', payload: 'must not exist' }] },
    { type: 'ack', transactionId: 'no-such-message', partitionId: m.partitionId, leaseId: m.leaseId },
  ] });
  assert.equal(r.status, 200);
  assert.equal(r.json.success, false);
  assert.match(r.json.error, /^ACK operation failed: Message not found/);
  assert.deepEqual(await fetchAll('dst-t2'), []);
  // nothing was acked either: the real message still completes
  const a = await post(node.url, '/api/v1/ack', { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId });
  assert.equal(a.json[0].success, true);
});

test('a lease no longer held aborts the transaction', async () => {
  await push([{ queue: 'src-t3', payload: 1 }]);
  const [m] = await popq('src-t3');
  await post(node.url, '/api/v1/ack', { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'retry' });
  const r = await post(node.url, '/api/v1/transaction', { operations: [
    { type: 'push', items: [{ queue: 'dst-t3', payload: 1 }] }], requiredLeases: [m.leaseId] });
  assert.equal(r.json.success, false);
  assert.match(r.json.error, /is not held/);
  assert.deepEqual(await fetchAll('dst-t3'), []);
});

test('a known transactionId aborts the transaction; failed acks dead-letter at once', async () => {
  await push([{ queue: 'dst-t4', transactionId: 'dup-1', payload: 1 }, { queue: 'src-t4', payload: 'x' }]);
  const [m] = await popq('src-t4');
  const dup = await post(node.url, '/api/v1/transaction', { operations: [
    { type: 'ack', transactionId: m.transactionId, partitionId: m.partitionId, status: 'failed', error: 'boom' },
    { type: 'push', items: [{ queue: 'dst-t4', transactionId: 'dup-1', payload: 2 }] }] });
  assert.equal(dup.json.success, false);
  assert.match(dup.json.error, /already pushed/);
  const ok = await post(node.url, '/api/v1/transaction', { operations: [
    { type: 'ack', transactionId: m.transactionId, partitionId: m.partitionId, status: 'failed', error: 'boom' }] });
  assert.equal(ok.json.success, true);
  assert.equal(ok.json.results[0].dlq, true);
});

test('bad transactions answer 400 and change nothing', async () => {
  const cases = [
    [{}, /^operations array required$/],
    [{ operations: [] }, /^operations array cannot be empty$/],
    [{ operations: [{ type: 'bogus' }] }, /^Unknown operation type: bogus$/],
    [{ operations: [{ type: 'push', items: [] }] }, /items/],
    [{ operations: [{ type: 'push', items: [{ payload: 1 }] }] }, /^Queue must be a string$/],
    [{ operations: [{ type: 'ack', partitionId: '00000000-0000-4000-8000-000000000000' }] }, /transactionId is required/],
    [{ operations: [{ type: 'push', items: [{ queue: 'x5' }] }], requiredLeases: ['nope'] }, /requiredLeases/],
  ];
  for (const [body, msg] of cases) {
    const r = await post(node.url, '/api/v1/transaction', body);
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    assert.match(r.json.error, msg);
  }
  assert.equal((await readQueue(node.url, 'x5')).found, false);
});

test('a pushed record wakes a waiting consumer', async () => {
  const waiting = get(node.url, '/api/v1/pop/queue/woken-t?wait=true&timeout=5000');
  await new Promise((r) => setTimeout(r, 200));
  await post(node.url, '/api/v1/transaction', { operations: [{ type: 'push', items: [{ queue: 'woken-t', payload: 1 }] }] });
  const r = await waiting;
  assert.equal(r.status, 200);
});

// ---- the kv and timers riders (tests/py/test_transaction_riders.py drives them through the client) ----

test('a rider whose required precondition is lost rolls back the pushes, the acks and the other riders', async () => {
  await push([{ queue: 'src-r1', payload: 1 }]);
  const [m] = await popq('src-r1');
  const fence = await post(node.url, '/api/v1/kv', { operations: [{ op: 'put', ns: 'r1', key: 'fence', value: { owner: 'b' }, forever: true }] });
  const version = fence.json.results[0].version;
  const r = await post(node.url, '/api/v1/transaction', {
    operations: [
      { type: 'push', items: [{ queue: 'dst-r1', payload: 'a' }, { queue: 'dst-r1', payload: 'b' }] },
      { type: 'ack', transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed' },
    ],
    requiredLeases: [m.leaseId],
    kv: [
      { op: 'put', ns: 'r1', key: 'side', value: 1, forever: true },
      { op: 'check', ns: 'r1', key: 'fence', expect: version + 1, required: true },
    ],
    timers: [{ op: 'schedule', queue: 'dst-r1', timerKey: 'tk', payload: Buffer.from('{"t":1}').toString('base64'), delayMs: 3600000 }],
  });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.success, false);
  assert.equal(r.json.reason, 'kv_precondition');
  assert.equal(r.json.kvReason, 'version');
  assert.equal(r.json.failedIndex, 4); // two pushed items, one ack, then kv[1]
  assert.equal(r.json.version, version);
  assert.deepEqual(r.json.value, { owner: 'b' });
  assert.deepEqual(await fetchAll('dst-r1'), []);
  const side = await post(node.url, '/api/v1/kv', { operations: [{ op: 'get', ns: 'r1', key: 'side' }] });
  assert.equal(side.json.results[0].found, false);
  assert.equal((await get(node.url, '/api/v1/timers/dst-r1/tk')).json.found, false);
  // the ack was rolled back: the lease still holds and a plain ack completes the message
  const a = await post(node.url, '/api/v1/ack', { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId });
  assert.equal(a.json[0].success, true);
});

test('riders commit with the pushes; results are flat: operations, then kv, then timers', async () => {
  const r = await post(node.url, '/api/v1/transaction', {
    operations: [{ type: 'push', items: [{ queue: 'dst-r2', payload: 'x', transactionId: 'r2-1' }] }],
    kv: [{ op: 'putIfAbsent', ns: 'r2', key: 'once', value: true, ttlSeconds: 60, required: true },
      { op: 'incr', ns: 'r2', key: 'n', forever: true }],
    timers: [{ op: 'schedule', queue: 'dst-r2', timerKey: 'later', payload: Buffer.from('2').toString('base64'), delayMs: 3600000 }],
  });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.success, true, r.text);
  assert.deepEqual(r.json.results.map((x) => [x.index, x.type]), [[0, 'push'], [1, 'kv'], [2, 'kv'], [3, 'timer']]);
  assert.equal(r.json.results[1].op, 'putIfAbsent');
  assert.equal(r.json.results[1].applied, true);
  assert.equal(r.json.results[2].value, 1);
  assert.equal(r.json.results[3].status, 'scheduled');
  assert.equal((await fetchAll('dst-r2')).length, 1);
  // the same gate again: nothing applied, the push's transactionId is not even looked at
  const again = await post(node.url, '/api/v1/transaction', {
    operations: [{ type: 'push', items: [{ queue: 'dst-r2', payload: 'y', transactionId: 'r2-2' }] }],
    kv: [{ op: 'putIfAbsent', ns: 'r2', key: 'once', value: true, ttlSeconds: 60, required: true }],
  });
  assert.equal(again.json.reason, 'kv_precondition');
  assert.equal(again.json.kvReason, 'exists');
  assert.equal(again.json.failedIndex, 1);
  assert.equal((await fetchAll('dst-r2')).length, 1);
});

test('a kv-only bundle, and riders refused before anything runs', async () => {
  const ok = await post(node.url, '/api/v1/transaction', { operations: [], kv: [{ op: 'put', ns: 'r3', key: 'k', value: 1, forever: true }] });
  assert.equal(ok.json.success, true, ok.text);
  const cases = [
    [{ operations: [], kv: [{ op: 'put', ns: 'r3', key: 'k', value: 1 }] }, 'kv_expiry_not_specified'],
    [{ operations: [], kv: {} }, 'kv_invalid_body'],
    [{ operations: [], kv: [{ op: 'getPrefix', ns: 'r3', prefix: 'k' }] }, 'kv_invalid_op'],
    [{ operations: [], timers: [{ op: 'schedule', queue: 'q', timerKey: 'k', delayMs: 1 }] }, 'timer_invalid_payload'],
    [{ operations: [{ type: 'push', items: [{ queue: 'dst-r3', payload: 1 }] }], kvv: [] }, 'unknown_field'],
    [{ operations: [{ type: 'push', items: [{ queue: 'dst-r3', payload: 1 }] }], transactionId: 'x' }, 'unknown_field'],
  ];
  for (const [body, code] of cases) {
    const r = await post(node.url, '/api/v1/transaction', body);
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.json.code, code, r.text);
  }
  assert.equal((await readQueue(node.url, 'dst-r3')).found, false);
});

test('a lost rider gate whose key holds a big value answers without the value', async () => {
  const big = 'y'.repeat(10000);
  await post(node.url, '/api/v1/kv', { operations: [{ op: 'put', ns: 'r4', key: 'big', value: big, forever: true }] });
  const r = await post(node.url, '/api/v1/transaction', {
    operations: [{ type: 'push', items: [{ queue: 'dst-r4', payload: 1 }] }],
    kv: [{ op: 'check', ns: 'r4', key: 'big', expect: 0, required: true }],
  });
  assert.equal(r.status, 200, r.text.slice(0, 300));
  assert.equal(r.json.reason, 'kv_precondition');
  assert.equal(r.json.kvReason, 'exists');
  assert.ok(r.json.version > 0);
  assert.equal(r.json.value, null);
  assert.equal((await readQueue(node.url, 'dst-r4')).found, false);
  // the standalone batch answers the whole verdict
  const s = await post(node.url, '/api/v1/kv', { operations: [{ op: 'check', ns: 'r4', key: 'big', expect: 0, required: true }] });
  assert.equal(s.json.results[0].value, big);
});
