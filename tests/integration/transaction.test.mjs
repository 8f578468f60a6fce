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
