// The admin surface, part 2: dead letters (paging with a total, filters, decoded data,
// requeue, delete) and resources (exact counts from offsets, queue and partition deletion).
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
const del = (p) => api(node.url, 'DELETE', p);
async function pop(queue, params = {}, partition) {
  const qs = new URLSearchParams(Object.fromEntries(Object.entries(params).map(([k, v]) => [k, String(v)]))).toString();
  const p = partition ? `/api/v1/pop/queue/${encodeURIComponent(queue)}/partition/${encodeURIComponent(partition)}` : `/api/v1/pop/queue/${encodeURIComponent(queue)}`;
  return get(node.url, `${p}${qs ? '?' + qs : ''}`);
}
const msgsOf = (r) => (r.status === 200 && r.json && r.json.messages) || [];
const ack = (msgs, status = 'completed', group, error) => post(node.url, '/api/v1/ack/batch', {
  consumerGroup: group ?? null,
  acknowledgments: msgs.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status, error })),
});
const dlq = (qs) => get(node.url, `/api/v1/dlq?${qs}`);

// Dead-letters n records of a queue for a group (pops until n were delivered, acks each batch
// with status dlq); returns the messages.
async function deadLetter(queue, n, group, partition) {
  const all = [];
  while (all.length < n) {
    const r = await pop(queue, { batch: n - all.length, ...(group ? { consumerGroup: group } : {}) }, partition);
    const ms = msgsOf(r);
    assert.ok(ms.length > 0, r.text);
    const a = await ack(ms, 'dlq', group, 'poison');
    assert.ok(a.json.every((x) => x.dlq), a.text);
    all.push(...ms);
  }
  return all;
}

describe('dead letters', () => {
  test('paging applies limit and offset to rows, newest first, with a total on every page', async () => {
    await push([...Array(7).keys()].map((i) => ({ queue: 'dl1', partition: `p${i % 2}`, payload: { i } })));
    await deadLetter('dl1', 7);
    const seen = [];
    for (const offset of [0, 3, 6]) {
      const r = await dlq(`queue=dl1&limit=3&offset=${offset}`);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.total, 7);
      assert.deepEqual(r.json.pagination, { limit: 3, offset, total: 7, hasMore: offset + 3 < 7 });
      assert.equal(r.json.messages.length, Math.min(3, 7 - offset));
      seen.push(...r.json.messages);
    }
    assert.equal(new Set(seen.map((m) => m.dlqId)).size, 7);
    // failedAt desc, then dlqId desc
    for (let i = 1; i < seen.length; i++) {
      const a = seen[i - 1], b = seen[i];
      assert.ok(a.failedAt > b.failedAt || (a.failedAt === b.failedAt && a.dlqId > b.dlqId), `${a.dlqId} before ${b.dlqId}`);
    }
    assert.deepEqual(seen.map((m) => m.data.i).sort(), [0, 1, 2, 3, 4, 5, 6]);
    const beyond = await dlq('queue=dl1&limit=3&offset=50');
    assert.deepEqual(beyond.json.messages, []);
    assert.equal(beyond.json.total, 7);
  });

  test('the shape of a dead letter; data is the record decoded byte for byte', async () => {
    // a raw body: the payload's spelling (42.00) must survive
    const pushed = await post(node.url, '/api/v1/push', '{"items":[{"queue":"dl2","partition":"x","transactionId":"order-1",'
      + '"traceId":"0190c2d4-0000-7000-8000-000000000001","payload":{"total":42.00,"note":"é"}}]}');
    assert.equal(pushed.status, 201, pushed.text);
    const ms = await deadLetter('dl2', 1);
    const r = await dlq('queue=dl2');
    const m = r.json.messages[0];
    assert.deepEqual(Object.keys(m).filter((k) => ['id', 'transactionId', 'partitionId', 'queue', 'partition', 'consumerGroup', 'errorMessage', 'retryCount', 'data', 'producerSub', 'createdAt', 'failedAt'].includes(k)).length, 12);
    assert.equal(m.id, ms[0].id); // the message id of the record
    assert.equal(m.transactionId, 'order-1');
    assert.equal(m.partitionId, ms[0].partitionId);
    assert.equal(m.queue, 'dl2');
    assert.equal(m.partition, 'x');
    assert.equal(m.consumerGroup, '__QUEUE_MODE__');
    assert.equal(m.errorMessage, 'poison');
    assert.equal(m.traceId, '0190c2d4-0000-7000-8000-000000000001');
    assert.equal(m.producerSub, null);
    assert.equal(m.offset, 0);
    assert.equal(m.requeuedAt, null);
    assert.match(m.createdAt, /\.\d{6}Z$/);
    assert.match(m.failedAt, /Z$/);
    assert.match(r.text, /"data":\{"total":42\.00,"note":"é"\}/);
  });

  test('filters: consumerGroup, partition, from/to, requeued; an unknown queue is 404', async () => {
    await push([1, 2, 3].map((i) => ({ queue: 'dl3', partition: i === 3 ? 'b' : 'a', payload: i })));
    await deadLetter('dl3', 3, 'G1');
    await deadLetter('dl3', 3);
    assert.equal((await dlq('queue=dl3')).json.total, 6);
    assert.equal((await dlq('queue=dl3&consumerGroup=G1')).json.total, 3);
    assert.ok((await dlq('queue=dl3&consumerGroup=G1')).json.messages.every((m) => m.consumerGroup === 'G1'));
    assert.equal((await dlq('queue=dl3&partition=b')).json.total, 2);
    assert.equal((await dlq('queue=dl3&from=2999-01-01T00:00:00Z')).json.total, 0);
    assert.equal((await dlq('queue=dl3&to=2000-01-01T00:00:00Z')).json.total, 0);
    assert.equal((await dlq('queue=dl3&from=2000-01-01T00:00:00Z&to=2999-01-01T00:00:00Z')).json.total, 6);
    assert.equal((await dlq('queue=dl3&requeued=true')).json.total, 0);
    const nf = await dlq('queue=no-such-queue');
    assert.equal(nf.status, 404);
    assert.match(nf.json.error, /queue not found/);
  });

  const bad = ['limit=0', 'limit=abc', 'limit=1001', 'offset=-1', 'offset=x', 'from=yesterday', 'to=2020-13-01T00:00:00Z', 'requeued=perhaps'];
  for (const qs of bad) {
    test(`GET /api/v1/dlq?${qs} → 400`, async () => {
      const r = await dlq(qs);
      assert.equal(r.status, 400, r.text);
      assert.equal(typeof r.json.error, 'string');
    });
  }

  test('requeue: the record comes back through pop; once only; then it can be deleted', async () => {
    await push([{ queue: 'dl4', partition: 'q', payload: { v: 1.0 }, transactionId: 'keep-me' }, { queue: 'dl4', partition: 'q', payload: 'other' }]);
    await deadLetter('dl4', 2);
    const list = (await dlq('queue=dl4')).json.messages;
    const one = list.find((m) => m.transactionId === 'keep-me');
    const other = list.find((m) => m.transactionId !== 'keep-me');
    assert.equal((await pop('dl4')).status, 204);

    let r = await post(node.url, `/api/v1/dlq/${one.dlqId}/requeue`);
    assert.equal(r.status, 201, r.text);
    assert.equal(r.json.requeued, true);
    assert.equal(r.json.dlqId, one.dlqId);
    assert.equal(r.json.queue, 'dl4');
    assert.equal(r.json.partition, 'q');
    assert.equal(r.json.offset, 2);
    assert.notEqual(r.json.transactionId, 'keep-me'); // a fresh transactionId by default
    const got = msgsOf(await pop('dl4'));
    assert.equal(got.length, 1);
    assert.deepEqual(got[0].data, { v: 1.0 });
    assert.equal(got[0].transactionId, r.json.transactionId);
    assert.equal(got[0].id, r.json.messageId);
    await ack(got);

    // the original transactionId when asked (and not refused as a duplicate)
    r = await post(node.url, `/api/v1/dlq/${other.dlqId}/requeue`, { keepTransactionId: true });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.json.transactionId, other.transactionId);
    assert.equal(r.json.status, 'queued');
    const got2 = msgsOf(await pop('dl4'));
    assert.deepEqual(got2.map((m) => [m.data, m.transactionId]), [['other', other.transactionId]]);

    r = await post(node.url, `/api/v1/dlq/${one.dlqId}/requeue`);
    assert.equal(r.status, 409);
    assert.match(r.json.error, /already requeued/);
    const requeued = (await dlq('queue=dl4&requeued=true')).json;
    assert.equal(requeued.total, 2);
    assert.ok(requeued.messages.every((m) => /Z$/.test(m.requeuedAt)));
    assert.equal((await dlq('queue=dl4&requeued=false')).json.total, 0);

    r = await del(`/api/v1/dlq/${one.dlqId}`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { deleted: true, dlqId: one.dlqId });
    assert.equal((await del(`/api/v1/dlq/${one.dlqId}`)).status, 404);
    assert.equal((await dlq('queue=dl4')).json.total, 1);
  });

  test('requeue and delete: bad and unknown ids', async () => {
    for (const [method, path, body, status] of [
      ['POST', '/api/v1/dlq/abc/requeue', undefined, 400],
      ['POST', '/api/v1/dlq/0/requeue', undefined, 400],
      ['POST', '/api/v1/dlq/99999999/requeue', undefined, 404],
      ['POST', '/api/v1/dlq/1/requeue', { keepTransactionId: 'yes' }, 400],
      ['POST', '/api/v1/dlq/1/requeue', '{', 400],
      ['DELETE', '/api/v1/dlq/-3', undefined, 400],
      ['DELETE', '/api/v1/dlq/99999999', undefined, 404],
    ]) {
      const r = await api(node.url, method, path, body);
      assert.equal(r.status, status, `${method} ${path}: ${r.text}`);
      assert.equal(typeof r.json.error, 'string');
    }
  });
});

describe('resources', () => {
  test('counts come from offsets: total, pending, processing, completed, dead letters', async () => {
    // 6 on p0, 4 on p1; queue mode leases 3 of p0 and acks the first 2, dead-letters 1 of p1
    await push([...Array(10).keys()].map((i) => ({ queue: 'ns1.task1', partition: i < 6 ? 'p0' : 'p1', payload: i })));
    const leased = msgsOf(await pop('ns1.task1', { batch: 3 }, 'p0'));
    await ack(leased.slice(0, 2));
    const one = msgsOf(await pop('ns1.task1', { batch: 1 }, 'p1'));
    await ack(one, 'dlq');

    const r = await get(node.url, '/api/v1/resources/queues/ns1.task1');
    assert.equal(r.status, 200, r.text);
    const q = r.json;
    assert.equal(q.name, 'ns1.task1');
    assert.equal(q.namespace, 'ns1');
    assert.equal(q.task, 'task1');
    assert.match(q.id, /^[0-9a-f-]{36}$/);
    const byName = Object.fromEntries(q.partitions.map((p) => [p.name, p]));
    assert.deepEqual(byName.p0.stats, { total: 6, pending: 3, processing: 1, completed: 2, failed: 0, deadLetter: 0 });
    assert.deepEqual(byName.p1.stats, { total: 4, pending: 3, processing: 0, completed: 1, failed: 1, deadLetter: 1 });
    assert.deepEqual(q.totals, { total: 10, pending: 6, processing: 1, completed: 3, failed: 1, deadLetter: 1 });
    assert.equal(byName.p0.startOffset, 0);
    assert.equal(byName.p0.endOffset, 6);
    assert.match(byName.p0.oldestMessage, /Z$/);
    assert.match(byName.p0.newestMessage, /Z$/);
    assert.match(byName.p0.leaseExpiresAt, /Z$/);
    const qm = byName.p0.consumerGroups.find((g) => g.name === '__QUEUE_MODE__');
    assert.equal(qm.nextOffset, 2);
    assert.equal(qm.offsetLag, 4);
    assert.equal(qm.leaseActive, true);
    assert.equal(q.consumerGroups.find((g) => g.name === '__QUEUE_MODE__').totalLag, 7);

    const list = (await get(node.url, '/api/v1/resources/queues')).json.queues;
    const e = list.find((x) => x.name === 'ns1.task1');
    assert.equal(e.partitions, 2);
    assert.deepEqual(e.messages, { total: 10, pending: 6, processing: 1, completed: 3, deadLetter: 1 });
    for (const k of ['id', 'name', 'namespace', 'task', 'createdAt', 'partitions', 'messages']) assert.ok(k in e, k);

    const ns = (await get(node.url, '/api/v1/resources/namespaces')).json.namespaces.find((x) => x.namespace === 'ns1');
    assert.deepEqual(ns, { namespace: 'ns1', queues: 1, partitions: 2, messages: { total: 10, pending: 6, processing: 1, completed: 3 } });
    const task = (await get(node.url, '/api/v1/resources/tasks')).json.tasks.find((x) => x.task === 'task1');
    assert.equal(task.queues, 1);
    assert.equal(task.messages.total, 10);

    const ov = (await get(node.url, '/api/v1/resources/overview')).json;
    for (const k of ['queues', 'partitions', 'namespaces', 'tasks', 'messages', 'lag', 'throughput', 'timestamp', 'statsAge']) assert.ok(k in ov, k);
    assert.ok(ov.messages.total >= 10);
    assert.ok(ov.messages.processing >= 1);
    assert.ok(ov.throughput.ingestedPerSecond > 0);
    for (const k of ['avg', 'median', 'min', 'max']) {
      assert.equal(typeof ov.lag.time[k], 'number');
      assert.equal(typeof ov.lag.offset[k], 'number');
    }

    // the dashboard's views of the same numbers
    const sq = (await get(node.url, '/api/v1/status/queues?limit=500')).json;
    assert.equal(sq.pagination.limit, 500);
    assert.equal(sq.queues.find((x) => x.name === 'ns1.task1').messages.total, 10);
    const sd = (await get(node.url, '/api/v1/status/queues/ns1.task1')).json;
    assert.equal(sd.queue.name, 'ns1.task1');
    assert.equal(sd.queue.config.leaseTime, 300);
    assert.equal(sd.totals.total, 10);
    assert.deepEqual(sd.totals.messages, q.totals);
    assert.equal(sd.partitions.find((p) => p.name === 'p0').cursor.nextOffset, 2);
  });

  test('queue list paging and filters', async () => {
    await post(node.url, '/api/v1/configure', { queue: 'rq-a', namespace: 'zz', task: 't1' });
    await post(node.url, '/api/v1/configure', { queue: 'rq-b', namespace: 'zz', task: 't2' });
    const both = (await get(node.url, '/api/v1/resources/queues?namespace=zz')).json;
    assert.deepEqual(both.queues.map((x) => x.name), ['rq-b', 'rq-a']); // newest first
    assert.equal(both.pagination.total, 2);
    assert.deepEqual((await get(node.url, '/api/v1/resources/queues?namespace=zz&limit=1&offset=1')).json.queues.map((x) => x.name), ['rq-a']);
    assert.deepEqual((await get(node.url, '/api/v1/resources/queues?namespace=zz&task=t2')).json.queues.map((x) => x.name), ['rq-b']);
    const one = (await get(node.url, '/api/v1/resources/queues/rq-a')).json;
    assert.equal(one.configured, true);
    assert.equal(one.options.leaseTime, 300);
    assert.deepEqual(one.partitions.map((p) => [p.name, p.stats.total]), [['Default', 0]]);
    assert.equal(one.partitions[0].oldestMessage, null);
    for (const qs of ['limit=0', 'limit=x', 'offset=-1']) {
      assert.equal((await get(node.url, `/api/v1/resources/queues?${qs}`)).status, 400, qs);
      assert.equal((await get(node.url, `/api/v1/status/queues?${qs}`)).status, 400, qs);
    }
  });

  test('unknown queue → 404', async () => {
    for (const p of ['/api/v1/resources/queues/nope', '/api/v1/status/queues/nope']) {
      const r = await get(node.url, p);
      assert.equal(r.status, 404);
      assert.deepEqual(r.json, { error: 'Queue not found', code: 'not_found' });
    }
  });

  test('deleting a partition removes its records and cursors; a push creates it again from 0', async () => {
    await push([1, 2, 3].flatMap((i) => [{ queue: 'delp', partition: 'keep', payload: i }, { queue: 'delp', partition: 'gone', payload: i }]));
    await pop('delp', { batch: 1, autoAck: true, consumerGroup: 'g' }, 'gone');
    await deadLetter('delp', 1, null, 'gone');
    await deadLetter('delp', 1, null, 'keep');
    assert.equal((await dlq('queue=delp')).json.total, 2);
    let r = await del('/api/v1/resources/queues/delp/partitions/gone');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.deleted, true);
    assert.equal(r.json.partition, 'gone');
    assert.equal(r.json.records, 3);
    assert.equal((await readQueue(node.url, 'delp', { partitions: ['gone'] })).found, false);
    const p = await pop('delp', {}, 'gone');
    assert.equal(p.status, 204); // an empty pop, as for a partition not created yet
    const q = (await get(node.url, '/api/v1/resources/queues/delp')).json;
    assert.deepEqual(q.partitions.map((x) => x.name), ['keep']);
    assert.equal(q.totals.total, 3);
    // the dead letters and cursors of that partition went with it: g read only 'gone'
    const left = (await dlq('queue=delp')).json;
    assert.equal(left.total, 1);
    assert.equal(left.messages[0].partition, 'keep');
    assert.deepEqual((await get(node.url, '/api/v1/consumer-groups/g')).json, {});
    // again: 404; the queue or partition unknown: 404
    assert.equal((await del('/api/v1/resources/queues/delp/partitions/gone')).status, 404);
    r = await del('/api/v1/resources/queues/nope/partitions/gone');
    assert.equal(r.status, 404);
    assert.match(r.json.error, /queue not found/);
    // a new push starts the partition over at offset 0
    await push([{ queue: 'delp', partition: 'gone', payload: 'again' }]);
    const f = await readQueue(node.url, 'delp', { partitions: ['gone'] });
    assert.deepEqual(f.records.map((x) => [x.offset, x.payload]), [[0, 'again']]);
  });

  test('deleting a queue removes everything under it', async () => {
    await push([1, 2].map((i) => ({ queue: 'delq', partition: `p${i}`, payload: i })));
    await pop('delq', { batch: 1, autoAck: true, consumerGroup: 'gq' });
    let r = await del('/api/v1/resources/queues/delq');
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { deleted: true, queue: 'delq', existed: true, partitions: 2, records: 2 });
    assert.equal((await readQueue(node.url, 'delq')).found, false);
    assert.equal((await pop('delq')).status, 204);
    assert.equal((await get(node.url, '/api/v1/resources/queues/delq')).status, 404);
    assert.equal((await get(node.url, '/api/v1/consumer-groups')).json.find((g) => g.queueName === 'delq'), undefined);
    r = await del('/api/v1/resources/queues/delq');
    assert.deepEqual(r.json, { deleted: true, queue: 'delq', existed: false, partitions: 0, records: 0 });
  });
});
