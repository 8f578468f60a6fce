// DELETE /api/v1/messages/:partitionId/:transactionId: the record is gone for every reader
// (get, list, fetch, pop with and without autoAck, the dead letters) while offsets stay dense
// and no cursor moves; a consumer walks past it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { api, get, post, readQueue, rmrf, startQueen } from './harness.mjs';

let node;
before(async () => { node = await startQueen(); });
after(async () => { if (node) { await node.stop(); rmrf(node.data); } });

const push = async (items) => {
  const r = await post(node.url, '/api/v1/push', { items });
  assert.equal(r.status, 201, r.text);
  return r.json;
};
const del = (pid, key) => api(node.url, 'DELETE', `/api/v1/messages/${pid}/${encodeURIComponent(key)}`);
const pop = (queue, qs = '') => get(node.url, `/api/v1/pop/queue/${queue}${qs ? '?' + qs : ''}`);
const ack = (msgs, status = 'completed') => post(node.url, '/api/v1/ack/batch', {
  acknowledgments: msgs.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status })),
});
const fetchAll = (queue) => readQueue(node.url, queue);

describe('DELETE /api/v1/messages/:partitionId/:transactionId', () => {
  test('by transactionId and by message id; every reader skips it; the response shape', async () => {
    const pr = await push([0, 1, 2, 3].map((i) => ({ queue: 'del1', partition: 'p', transactionId: `t${i}`, payload: { i } })));
    const pid = pr[0].partition_id;
    let r = await del(pid, 't1');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json, { success: true, partitionId: pid, transactionId: 't1', message: 'Message deleted successfully' });
    r = await del(pid, pr[2].message_id);
    assert.equal(r.json.success, true, r.text);
    // twice: nothing left to delete
    r = await del(pid, 't1');
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { success: false, partitionId: pid, transactionId: 't1', message: 'Message not found' });
    assert.equal((await get(node.url, `/api/v1/messages/${pid}/t1`)).status, 404);
    assert.equal((await get(node.url, `/api/v1/messages/${pid}/${pr[2].message_id}`)).status, 404);
    assert.equal((await get(node.url, `/api/v1/messages/${pid}/t3`)).status, 200);
    // fetch: offsets stay what they were, the deleted ones are not there
    const f = await fetchAll('del1');
    assert.deepEqual(f.records.map((x) => [x.offset, x.transactionId, x.payload.i]), [[0, 't0', 0], [3, 't3', 3]]);
    assert.equal(f.partitions[0].endOffset, 4);
    // the listing
    const l = await get(node.url, '/api/v1/messages?queue=del1');
    assert.deepEqual(l.json.messages.map((m) => m.transactionId).sort(), ['t0', 't3']);
    // a pop delivers the two left, acks them, and the partition is drained
    const p = await pop('del1', 'batch=10');
    assert.equal(p.status, 200, p.text);
    assert.deepEqual(p.json.messages.map((m) => m.transactionId), ['t0', 't3']);
    assert.equal((await ack(p.json.messages)).status, 200);
    assert.equal((await pop('del1', 'batch=10')).status, 204);
    const s = await get(node.url, '/api/v1/resources/queues/del1');
    assert.equal(s.status, 200, s.text);
  });

  test('a lease whose records were all deleted moves the consumer past them', async () => {
    const pr = await push([0, 1].map((i) => ({ queue: 'del2', transactionId: `d2-${i}`, payload: i })));
    for (const x of pr) assert.equal((await del(x.partition_id, x.transaction_id)).json.success, true);
    assert.equal((await pop('del2', 'batch=10')).status, 204);
    await push([{ queue: 'del2', transactionId: 'd2-2', payload: 2 }]);
    const p = await pop('del2', 'batch=10');
    assert.equal(p.status, 200, p.text);
    assert.deepEqual(p.json.messages.map((m) => m.transactionId), ['d2-2']);
    assert.equal((await ack(p.json.messages)).json[0].success, true);
  });

  test('inside a lease: the ones left are acked and the cursor walks over the deleted one', async () => {
    const pr = await push([0, 1, 2].map((i) => ({ queue: 'del3', transactionId: `d3-${i}`, payload: i })));
    assert.equal((await del(pr[1].partition_id, 'd3-1')).json.success, true);
    const p = await pop('del3', 'batch=10');
    assert.deepEqual(p.json.messages.map((m) => m.transactionId), ['d3-0', 'd3-2']);
    // acking in reverse order: the done prefix only covers all three once d3-0 is done
    assert.equal((await ack([p.json.messages[1]])).status, 200);
    assert.equal((await ack([p.json.messages[0]])).status, 200);
    await push([{ queue: 'del3', transactionId: 'd3-3', payload: 3 }]);
    const q = await pop('del3', 'batch=10');
    assert.deepEqual(q.json.messages.map((m) => m.transactionId), ['d3-3']);
  });

  test('autoAck pops and consumer groups skip it', async () => {
    const pr = await push([0, 1, 2].map((i) => ({ queue: 'del4', transactionId: `d4-${i}`, payload: i })));
    assert.equal((await del(pr[0].partition_id, 'd4-0')).json.success, true);
    const a = await pop('del4', 'batch=10&autoAck=true');
    assert.deepEqual(a.json.messages.map((m) => m.transactionId), ['d4-1', 'd4-2']);
    const g = await pop('del4', 'batch=10&consumerGroup=g1');
    assert.deepEqual(g.json.messages.map((m) => m.transactionId), ['d4-1', 'd4-2']);
  });

  test('a deleted transactionId may be pushed again (not a duplicate)', async () => {
    const pr = await push([{ queue: 'del5', transactionId: 'same', payload: 1 }]);
    assert.equal((await push([{ queue: 'del5', transactionId: 'same', payload: 1 }]))[0].status, 'duplicate');
    assert.equal((await del(pr[0].partition_id, 'same')).json.success, true);
    const again = await push([{ queue: 'del5', transactionId: 'same', payload: 2 }]);
    assert.equal(again[0].status, 'queued');
    const f = await fetchAll('del5');
    assert.deepEqual(f.records.map((x) => [x.offset, x.payload]), [[1, 2]]);
  });

  test('its dead letters go with it', async () => {
    await push([{ queue: 'del6', transactionId: 'dead-1', payload: 1 }]);
    const p = await pop('del6', 'batch=1');
    await ack(p.json.messages, 'dlq');
    let d = await get(node.url, '/api/v1/dlq?queue=del6');
    assert.equal(d.json.messages.length, 1);
    assert.equal((await del(p.json.messages[0].partitionId, 'dead-1')).json.success, true);
    d = await get(node.url, '/api/v1/dlq?queue=del6');
    assert.equal(d.json.messages.length, 0);
  });

  test('bad input and other tenants\' or unknown partitions', async () => {
    let r = await del('not-a-uuid', 'x');
    assert.equal(r.status, 400);
    assert.match(r.json.error, /partitionId must be a UUID/);
    r = await del('00000000-0000-4000-8000-000000000000', 'x');
    assert.equal(r.status, 200);
    assert.equal(r.json.success, false);
    assert.equal(r.json.message, 'Message not found');
  });
});
