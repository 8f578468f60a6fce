// The 2.x admin reads on the wire: a queue's depth (queue level and per group), the partition
// listing, the dashboard status page, the analytics page and this node's system and worker
// metrics: shapes, figures against what was pushed, popped and acked, refusals.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { get, post, rmrf, startQueen } from './harness.mjs';

let node;
before(async () => { node = await startQueen(); });
after(async () => { if (node) { await node.stop(); rmrf(node.data); } });

const push = async (items) => {
  const r = await post(node.url, '/api/v1/push', { items });
  assert.equal(r.status, 201, r.text);
  return r.json;
};
const ok = async (p) => {
  const r = await get(node.url, p);
  assert.equal(r.status, 200, `${p}: ${r.text}`);
  return r.json;
};
const ack = (msgs, extra = {}) => post(node.url, '/api/v1/ack/batch', {
  ...extra, acknowledgments: msgs.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed' })),
});

describe('admin reads', () => {
  before(async () => {
    await push([...Array(5)].map((_, i) => ({ queue: 'dq', partition: 'a', payload: i })));
    await push([...Array(3)].map((_, i) => ({ queue: 'dq', partition: 'b', payload: i })));
    await post(node.url, '/api/v1/configure', { queue: 'dq', namespace: 'ns1', task: 'tk1' });
    await push([{ queue: 'other', partition: 'x', payload: 1 }]);
  });

  test('depth: queue level, per group, a group the queue never saw, unknown queue', async () => {
    let d = await ok('/api/v1/resources/queues/dq/depth');
    // (configure made the Default partition)
    assert.deepEqual(d, { queue: 'dq', group: null, pending: 8, partitionsPending: 2, conflation: false, effectivePending: 8,
      partitions: [{ partition: 'Default', pending: 0 }, { partition: 'a', pending: 5 }, { partition: 'b', pending: 3 }] });
    // queue mode takes 2 of a and acks them
    const p = await get(node.url, '/api/v1/pop/queue/dq/partition/a?batch=2');
    assert.equal(p.status, 200, p.text);
    assert.equal((await ack(p.json.messages)).status, 200);
    // group g1 drains b
    const g = await get(node.url, '/api/v1/pop/queue/dq/partition/b?batch=10&consumerGroup=g1&autoAck=true');
    assert.equal(g.json.messages.length, 3);
    d = await ok('/api/v1/resources/queues/dq/depth');
    // the worst cursor of each partition: queue mode on a, g1 on b
    assert.deepEqual(d.partitions, [{ partition: 'Default', pending: 0 }, { partition: 'a', pending: 3 }, { partition: 'b', pending: 0 }]);
    assert.equal(d.pending, 3);
    assert.equal(d.partitionsPending, 1);
    d = await ok('/api/v1/resources/queues/dq/depth?group=g1');
    assert.equal(d.group, 'g1');
    assert.deepEqual(d.partitions, [{ partition: 'Default', pending: 0 }, { partition: 'a', pending: 5 }, { partition: 'b', pending: 0 }]);
    assert.equal(d.pending, 5);
    assert.equal(d.partitionsPending, 1);
    assert.equal(d.effectivePending, 5);
    d = await ok('/api/v1/resources/queues/dq/depth?group=never');
    assert.equal(d.pending, 8);
    let r = await get(node.url, '/api/v1/resources/queues/nope/depth');
    assert.equal(r.status, 404, r.text);
    assert.equal(r.json.code, 'queue_not_found');
    r = await get(node.url, `/api/v1/resources/queues/dq/depth?group=${'g'.repeat(256)}`);
    assert.equal(r.status, 400, r.text);
    r = await get(node.url, '/api/v1/resources/queues/dq/depth?group=a%00b');
    assert.equal(r.status, 400, r.text);
  });

  test('partitions: all, filtered, paged', async () => {
    let r = await ok('/api/v1/resources/partitions');
    assert.deepEqual(r.partitions.map((p) => `${p.queue}/${p.name}`), ['dq/Default', 'dq/a', 'dq/b', 'other/x']);
    assert.equal(r.pagination.total, 4);
    const a = r.partitions[1];
    for (const k of ['id', 'name', 'queue', 'namespace', 'task', 'createdAt', 'messages', 'startOffset', 'endOffset',
      'totalConsumed', 'lastActivity', 'leaseExpiresAt']) assert.ok(k in a, k);
    assert.equal(a.messages.total, 5);
    assert.equal(a.endOffset, 5);
    assert.equal(a.namespace, 'ns1');
    r = await ok('/api/v1/resources/partitions?queue=other');
    assert.deepEqual(r.partitions.map((p) => p.name), ['x']);
    r = await ok('/api/v1/resources/partitions?namespace=ns1&limit=1&offset=2');
    assert.deepEqual(r.partitions.map((p) => p.name), ['b']);
    assert.equal(r.pagination.total, 3);
    r = await ok('/api/v1/resources/partitions?queue=none');
    assert.deepEqual(r.partitions, []);
    assert.equal((await get(node.url, '/api/v1/resources/partitions?limit=0')).status, 400);
  });

  test('status: the dashboard shape, figures from the log', async () => {
    const s = await ok('/api/v1/status');
    for (const k of ['timeRange', 'bucketMinutes', 'pointCount', 'throughput', 'queues', 'messages', 'leases', 'deadLetterQueue',
      'workers', 'errors', 'statsAge']) assert.ok(k in s, k);
    assert.equal(s.bucketMinutes, 1);
    assert.equal(s.pointCount, s.throughput.length);
    assert.ok(s.pointCount >= 60 && s.pointCount <= 62, String(s.pointCount));
    assert.equal(s.throughput.reduce((n, p) => n + p.ingested, 0), 9);
    for (const k of ['timestamp', 'ingested', 'processed', 'popMessages', 'ingestedPerSecond', 'processedPerSecond', 'popPerSecond',
      'avgLagMs', 'maxLagMs', 'avgEventLoopLagMs', 'maxEventLoopLagMs', 'minFreeSlots', 'dbErrors', 'ackFailed', 'dlqCount',
      'queenCpuUserPct', 'queenCpuSysPct', 'queenRssMb', 'dbPoolActive', 'dbPoolIdle', 'dbPoolSize']) assert.ok(k in s.throughput[0], k);
    assert.deepEqual(s.queues.map((q) => [q.name, q.partitions]), [['dq', 3], ['other', 1]]);
    assert.equal(s.queues[0].totalConsumed, 2);
    assert.deepEqual(s.messages, { total: 9, pending: 7, processing: 0, completed: 2, failed: 0, deadLetter: 0 });
    assert.equal(s.workers.length, 1);
    assert.ok(s.workers[0].messagesProcessed >= 5);
    assert.equal(s.deadLetterQueue.totalMessages, 0);
    assert.deepEqual(s.deadLetterQueue.topErrors, []);
    const f = await ok('/api/v1/status?queue=other');
    assert.equal(f.messages.total, 1);
    assert.equal(f.throughput.reduce((n, p) => n + p.ingested, 0), 1);
    const week = await ok(`/api/v1/status?from=${new Date(Date.now() - 5 * 86400e3).toISOString()}`);
    assert.equal(week.bucketMinutes, 60);
    assert.equal((await get(node.url, '/api/v1/status?from=yesterday')).status, 400);
    assert.equal((await get(node.url, '/api/v1/status?from=2020-01-01T00:00:00Z')).status, 400);
  });

  test('analytics: message counts per bucket', async () => {
    const a = await ok('/api/v1/status/analytics');
    assert.equal(a.interval, 'hour');
    assert.equal(a.dataPoints.reduce((n, p) => n + p.messages, 0), 9);
    assert.ok(a.dataPoints.length >= 24 && a.dataPoints.length <= 26);
    assert.ok(typeof a.from === 'string' && typeof a.to === 'string');
    const m = await ok('/api/v1/status/analytics?interval=minute&queue=dq&from=' + new Date(Date.now() - 600e3).toISOString());
    assert.equal(m.dataPoints.reduce((n, p) => n + p.messages, 0), 8);
    assert.equal((await get(node.url, '/api/v1/status/analytics?interval=week')).status, 400);
  });

  test('system and worker metrics: this node, one point', async () => {
    const s = await ok('/api/v1/analytics/system-metrics');
    assert.equal(s.replicas.length, 1);
    const rp = s.replicas[0];
    assert.equal(rp.timeSeries.length, 1);
    assert.ok(rp.timeSeries[0].metrics.memory.rss_mb.last > 0);
    assert.ok(rp.timeSeries[0].metrics.database.pool_size.last > 0);
    assert.deepEqual((await ok('/api/v1/analytics/system-metrics?workerId=someone-else')).replicas, []);
    const w = await ok('/api/v1/analytics/worker-metrics');
    assert.equal(w.workers.length, 1);
    assert.ok(w.workers[0].timeSeries[0].popMessages >= 5);
    assert.equal(w.workers[0].workerId, rp.workerId);
    assert.deepEqual((await ok('/api/v1/analytics/worker-metrics?from=2020-01-01T00:00:00Z&to=2020-01-02T00:00:00Z')).workers, []);
    assert.equal((await get(node.url, '/api/v1/analytics/worker-metrics?to=2020-01-01T00:00:00Z&from=2021-01-01T00:00:00Z')).status, 400);
  });
});
