// Every queue option default has one home (src/queue/options.c, written into
// queen.option_defaults at boot): a queue created by its first push, which stores no options,
// behaves exactly as one configured with none, and both as the documented defaults. Each check
// runs on both queues: the lease a pop takes (leaseTime), how long a failed batch waits
// (retryDelay), how many deliveries before the dead letters (retryLimit, deadLetterQueue,
// dlqAfterMaxRetries), the namespace pop order (priority), records visible at once
// (delayedProcessing, windowBuffer), no size limit (maxSize), plaintext stored
// (encryptionEnabled), and what /api/v1/resources and /api/v1/messages show.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { get, post, rmrf, sleep, startPostgres, startQueen } from './harness.mjs';

// docs/http-api.md, POST /api/v1/configure
const DOCUMENTED = { leaseTime: 300, retryLimit: 3, retryDelay: 1000, priority: 0, maxSize: 0, ttl: 3600,
  delayedProcessing: 0, windowBuffer: 0, retentionSeconds: 0, completedRetentionSeconds: 0, retentionEnabled: false,
  encryptionEnabled: false, maxWaitTimeSeconds: 0, retentionSinkHold: null, retentionSinkHoldMaxSeconds: 604800 };

let pg;
let node;
let DEF; // what configure answers for no options
before(async () => {
  pg = await startPostgres();
  node = await startQueen({ env: { QUEEN_PG_URL: pg.url } });
  const c = await post(node.url, '/api/v1/configure', { queue: 'configured' });
  assert.equal(c.status, 200, c.text);
  DEF = c.json.options;
  await post(node.url, '/api/v1/push', { items: [{ queue: 'pushed', payload: { i: 0 } }] });
  await post(node.url, '/api/v1/push', { items: [{ queue: 'configured', payload: { i: 0 } }] });
});
after(async () => {
  if (node) { await node.stop(); rmrf(node.data); }
  if (pg) pg.destroy();
});

const QUEUES = ['pushed', 'configured'];
const popQ = (q, qs = '') => get(node.url, `/api/v1/pop/queue/${q}?batch=10${qs}`);
const ack = (msgs, status) => post(node.url, '/api/v1/ack/batch', {
  acknowledgments: msgs.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status })),
});
const leaseAtUs = (q) => Number(pg.psql(`SELECT c.lease_expires_at FROM queen.cursors c
  JOIN queen.queues q ON q.id = c.queue_id WHERE q.name = '${q}' AND c.consumer_group = '__QUEUE_MODE__'`));
const leaseUs = (q) => Number(pg.psql(`SELECT c.lease_expires_at - queen.now_us() FROM queen.cursors c
  JOIN queen.queues q ON q.id = c.queue_id WHERE q.name = '${q}' AND c.consumer_group = '__QUEUE_MODE__'`));

test('configure with no options answers the documented defaults', () => {
  for (const [k, v] of Object.entries(DOCUMENTED)) assert.deepEqual(DEF[k], v, k);
  // the two whose default another change decides: whatever they are, both queues must agree
  assert.equal(typeof DEF.deadLetterQueue, 'boolean');
  assert.equal(typeof DEF.dlqAfterMaxRetries, 'boolean');
});

test('the database holds the same defaults the node answers', () => {
  assert.deepEqual(JSON.parse(pg.psql('SELECT options::text FROM queen.option_defaults')), DEF);
  // a queue its push created stores nothing; its effective options are the defaults
  assert.equal(pg.psql("SELECT options::text FROM queen.queues WHERE name = 'pushed'"), '{}');
  assert.deepEqual(JSON.parse(pg.psql("SELECT queen.queue_options_v1(options)::text FROM queen.queues WHERE name = 'pushed'")), DEF);
});

test('resources and status show the same options for both queues', async () => {
  for (const q of QUEUES) {
    const r = await get(node.url, `/api/v1/resources/queues/${q}`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.options, DEF, q);
    const s = await get(node.url, `/api/v1/status/queues/${q}`);
    assert.equal(s.status, 200, s.text);
    assert.deepEqual(s.json.queue.config, { leaseTime: DEF.leaseTime, retryLimit: DEF.retryLimit, retryDelay: DEF.retryDelay,
      ttl: DEF.ttl, maxQueueSize: DEF.maxSize, deadLetterQueue: DEF.deadLetterQueue }, q);
    assert.equal(s.json.queue.priority, DEF.priority, q);
  }
});

test('a pop leases for leaseTime; the record is visible at once; /messages shows the config', async () => {
  for (const q of QUEUES) {
    const r = await popQ(q);
    assert.equal(r.status, 200, `${q}: delayedProcessing/windowBuffer 0 make a new record visible at once`);
    const left = leaseUs(q) / 1e6;
    assert.ok(left > DEF.leaseTime - 5 && left <= DEF.leaseTime, `${q}: lease of ${left} s, want ${DEF.leaseTime}`);
    const m = r.json.messages[0];
    const d = await get(node.url, `/api/v1/messages/${m.partitionId}/${m.transactionId}`);
    assert.equal(d.status, 200, d.text);
    assert.deepEqual(d.json.queueConfig, { leaseTime: DEF.leaseTime, retryLimit: DEF.retryLimit,
      retryDelay: DEF.retryDelay, ttl: DEF.ttl, priority: DEF.priority }, q);
    assert.equal((await ack(r.json.messages, 'completed')).status, 200);
  }
});

test('a failed batch waits retryDelay, and goes to the dead letters after retryLimit retries', async () => {
  await Promise.all(QUEUES.map(async (q) => {
    await post(node.url, '/api/v1/push', { items: [{ queue: q, payload: 'poison' }] });
    let deliveries = 0;
    let last;
    for (;;) {
      const r = await popQ(q, '&wait=true&timeout=5000');
      assert.equal(r.status, 200, `${q}: delivery ${deliveries + 1}`);
      deliveries++;
      const sentUs = Date.now() * 1000; // the ack commits after this instant...
      const a = await ack(r.json.messages, 'failed');
      const ackedUs = (Date.now() + 1) * 1000; // ...and before this one
      last = a.json[0];
      if (!last.leaseReleased) break;
      // released for a retry: the partition waits retryDelay ms from the ack's commit, which lies
      // between the request and its answer (bounds on both sides, so a loaded machine that delays
      // the answer, or psql, cannot shift the verdict)
      const leaseUs = leaseAtUs(q);
      const fromSent = (leaseUs - sentUs) / 1e3, fromAnswer = (leaseUs - ackedUs) / 1e3;
      assert.ok(fromSent >= DEF.retryDelay && fromAnswer <= DEF.retryDelay,
        `${q}: waits ${fromAnswer}..${fromSent} ms after the ack, want ${DEF.retryDelay}`);
      assert.equal((await popQ(q)).status, 204, `${q}: redelivered before retryDelay`);
      assert.ok(deliveries <= DEF.retryLimit, `${q}: more than retryLimit retries`);
    }
    assert.equal(deliveries, DEF.retryLimit + 1, q);
    assert.equal(last.dlq, DEF.deadLetterQueue && DEF.dlqAfterMaxRetries, q);
    await sleep(50);
    assert.equal((await popQ(q)).status, 204, `${q}: the record moved on`);
  }));
});

test('priority orders a namespace pop the same for both', async () => {
  // ns.pushed is created by its push (namespace "ns"); the others are configured around the default
  await post(node.url, '/api/v1/configure', { queue: 'ns.high', namespace: 'ns', options: { priority: DEF.priority + 1 } });
  await post(node.url, '/api/v1/configure', { queue: 'ns.low', namespace: 'ns', options: { priority: DEF.priority - 1 } });
  await post(node.url, '/api/v1/configure', { queue: 'ns.configured', namespace: 'ns' });
  for (const q of ['ns.low', 'ns.pushed', 'ns.configured', 'ns.high']) {
    await post(node.url, '/api/v1/push', { items: [{ queue: q, payload: q }] });
  }
  const order = [];
  for (let i = 0; i < 4; i++) {
    const r = await get(node.url, '/api/v1/pop?namespace=ns&batch=1');
    assert.equal(r.status, 200, r.text);
    order.push(r.json.messages[0].data);
    await ack(r.json.messages, 'completed');
  }
  assert.equal(order[0], 'ns.high');
  assert.deepEqual(order.slice(1, 3).sort(), ['ns.configured', 'ns.pushed']);
  assert.equal(order[3], 'ns.low');
});

test('no size limit, plaintext kept', async () => {
  const items = Array.from({ length: 2000 }, (_, i) => ({ queue: 'pushed', partition: 'big', payload: i }));
  assert.equal((await post(node.url, '/api/v1/push', { items })).status, 201, 'maxSize 0 is no limit');
  const flags = pg.psql(`SELECT get_byte(s.data, 1) & 8 FROM queen.segments s JOIN queen.partitions p ON p.id = s.partition_id
    WHERE p.name = 'big' LIMIT 1`);
  assert.equal(flags, '0', 'encryptionEnabled false: stored unsealed');
});
