// Consuming: pop with leases, ack, retries and dead letters, lease expiry and extension,
// consumer groups and subscriptions, long-poll wake-ups, visibility options.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { get, post, readQueue, rmrf, sleep, startQueen } from './harness.mjs';

let node;
before(async () => { node = await startQueen(); });
after(async () => { if (node) { await node.stop(); rmrf(node.data); } });

const push = (items) => post(node.url, '/api/v1/push', { items });
async function pop(queue, params = {}, partition) {
  const qs = new URLSearchParams(Object.fromEntries(Object.entries(params).map(([k, v]) => [k, String(v)]))).toString();
  const p = partition ? `/api/v1/pop/queue/${encodeURIComponent(queue)}/partition/${encodeURIComponent(partition)}` : `/api/v1/pop/queue/${encodeURIComponent(queue)}`;
  const r = await get(node.url, `${p}${qs ? '?' + qs : ''}`);
  return r;
}
const msgsOf = (r) => (r.status === 200 && r.json && r.json.messages) || [];
function ackBody(msgs, status = 'completed', group) {
  return { consumerGroup: group ?? null, acknowledgments: msgs.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status })) };
}
const ack = (msgs, status, group) => post(node.url, '/api/v1/ack/batch', ackBody(msgs, status, group));

describe('pop and ack', () => {
  test('queue mode: a batch in order, the message shape, ack completes it', async () => {
    await push([1, 2, 3, 4].map((i) => ({ queue: 'c1', partition: 'p', payload: { i } })));
    const r = await pop('c1', { batch: 3 });
    assert.equal(r.status, 200, r.text);
    const b = r.json;
    assert.equal(b.success, true);
    assert.equal(b.queue, 'c1');
    assert.equal(b.partition, 'p');
    assert.equal(b.consumerGroup, '__QUEUE_MODE__');
    assert.equal(b.partitionsClaimed, 1);
    assert.match(b.leaseId, /^[0-9a-f-]{36}$/);
    assert.deepEqual(b.messages.map((m) => m.data.i), [1, 2, 3]);
    assert.deepEqual(Object.keys(b.messages[0]), ['id', 'transactionId', 'traceId', 'data', 'producerSub', 'createdAt', 'partitionId', 'partition', 'leaseId', 'consumerGroup']);
    assert.match(b.messages[0].createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    // the partition is leased: nothing more until the ack
    assert.equal((await pop('c1')).status, 204);
    const a = await ack(b.messages);
    assert.equal(a.status, 200);
    assert.deepEqual(a.json.map((x) => x.success), [true, true, true]);
    assert.deepEqual(Object.keys(a.json[0]), ['index', 'transactionId', 'success', 'error', 'queueName', 'partitionName', 'leaseReleased', 'dlq']);
    const r2 = await pop('c1', { batch: 10 });
    assert.deepEqual(msgsOf(r2).map((m) => m.data.i), [4]);
    await ack(msgsOf(r2));
    assert.equal((await pop('c1')).status, 204);
  });

  test('single ack route answers a one-element array', async () => {
    await push([{ queue: 'c2', payload: 'x' }]);
    const m = msgsOf(await pop('c2'))[0];
    const a = await post(node.url, '/api/v1/ack', { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed' });
    assert.equal(a.status, 200);
    assert.equal(a.json.length, 1);
    assert.equal(a.json[0].success, true);
    assert.equal(a.json[0].queueName, 'c2');
  });

  test('a partial ack moves the cursor over the done prefix; the rest comes back in order', async () => {
    await push([0, 1, 2, 3, 4].map((i) => ({ queue: 'c3', partition: 'p', payload: i })));
    const r = await pop('c3', { batch: 5 }, 'p');
    const ms = msgsOf(r);
    // ack 0, 1 and 3: the cursor stops before 2
    await ack([ms[0], ms[1], ms[3]]);
    const a = await ack([ms[2]], 'retry');
    assert.equal(a.json[0].leaseReleased, true);
    const again = msgsOf(await pop('c3', { batch: 5 }, 'p'));
    assert.deepEqual(again.map((m) => m.data), [2, 3, 4]);
  });

  test('autoAck moves the cursor at delivery and holds no lease', async () => {
    await push([1, 2, 3].map((i) => ({ queue: 'c4', payload: i })));
    const r = await pop('c4', { batch: 2, autoAck: true });
    assert.equal(r.json.leaseId, '');
    assert.deepEqual(r.json.messages.map((m) => m.data), [1, 2]);
    assert.equal(r.json.messages[0].leaseId, '');
    const r2 = await pop('c4', { batch: 2, autoAck: true });
    assert.deepEqual(r2.json.messages.map((m) => m.data), [3]);
  });

  test('a specific partition: unknown → an empty pop (204, as the earlier release), leased → lease_held', async () => {
    await push([{ queue: 'c5', partition: 'x', payload: 1 }]);
    const nf = await pop('c5', {}, 'nope');
    assert.equal(nf.status, 204, nf.text);
    assert.equal(nf.text, '');
    // an unknown queue too
    assert.equal((await pop('c5-never', {}, 'nope')).status, 204);
    assert.equal(msgsOf(await pop('c5', {}, 'x')).length, 1);
    const held = await pop('c5', {}, 'x');
    assert.equal(held.status, 200);
    assert.deepEqual(held.json, { success: false, error: 'lease_held', messages: [] });
  });

  test('a long-poll on a partition that does not exist yet is woken by the push that creates it', async () => {
    await push([{ queue: 'c5w', partition: 'other', payload: 0 }]);
    for (const q of ['c5w', 'c5w-new']) { // a known queue, and a queue the push creates too
      const t0 = Date.now();
      const waiting = pop(q, { wait: true, timeout: 20000 }, 'later');
      await sleep(300);
      assert.equal((await push([{ queue: q, partition: 'later', payload: { q } }])).status, 201);
      const r = await waiting;
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.json.messages.map((m) => m.data), [{ q }]);
      assert.equal(r.json.partition, 'later');
      assert.ok(Date.now() - t0 < 5000, `woken after ${Date.now() - t0} ms`);
    }
    // and a long-poll that nothing wakes ends empty at its timeout
    const t0 = Date.now();
    const r = await pop('c5w', { wait: true, timeout: 400 }, 'never');
    assert.equal(r.status, 204);
    assert.ok(Date.now() - t0 >= 350, `answered after ${Date.now() - t0} ms`);
  });

  test('an unknown queue pops nothing (204)', async () => {
    assert.equal((await pop('never-pushed')).status, 204);
  });

  test('acks that do not match answer per item', async () => {
    await push([{ queue: 'c6', payload: 1 }]);
    const m = msgsOf(await pop('c6'))[0];
    const a = await post(node.url, '/api/v1/ack/batch', { acknowledgments: [
      { transactionId: 'nope', partitionId: m.partitionId },
      { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: '00000000-0000-7000-8000-000000000000' },
      { transactionId: m.transactionId, partitionId: '00000000-0000-4000-8000-000000000000' },
      { transactionId: m.transactionId, partitionId: m.partitionId, status: 'bogus' },
    ] });
    assert.equal(a.status, 200);
    assert.deepEqual(a.json.map((x) => [x.success, x.error]), [
      [false, 'Message not found'], [false, 'Invalid or expired lease'], [false, 'Message not found'], [false, 'Unknown status: bogus']]);
  });

  const bad = [
    ['/api/v1/ack', {}, /^transactionId is required$/],
    ['/api/v1/ack', { transactionId: 't' }, /^partitionId is required to ensure message uniqueness$/],
    ['/api/v1/ack', { transactionId: 't', partitionId: 'not-a-uuid' }, /partitionId must be a UUID/],
    ['/api/v1/ack', { transactionId: 't', partitionId: '00000000-0000-4000-8000-000000000000', leaseId: 'x' }, /leaseId must be a UUID/],
    ['/api/v1/ack/batch', {}, /^acknowledgments array is required$/],
    ['/api/v1/ack/batch', { acknowledgments: [{ partitionId: 'x' }] }, /^Each acknowledgment must have a valid transactionId string$/],
    ['/api/v1/ack/batch', { acknowledgments: [{ transactionId: 't' }] }, /^Each acknowledgment must have a valid partitionId string to ensure message uniqueness$/],
  ];
  for (const [path, body, msg] of bad) {
    test(`${path} ${JSON.stringify(body)} → 400`, async () => {
      const r = await post(node.url, path, body);
      assert.equal(r.status, 400, r.text);
      assert.match(r.json.error, msg);
    });
  }

  test('bad pop parameters → 400', async () => {
    for (const q of ['batch=0', 'batch=abc', 'timeout=-1', 'wait=maybe', 'subscriptionFrom=yesterday']) {
      const r = await get(node.url, `/api/v1/pop/queue/c1?${q}`);
      assert.equal(r.status, 400, q);
      assert.equal(typeof r.json.error, 'string');
    }
  });
});

describe('retries, dead letters, leases', () => {
  test('failed retries up to retryLimit, then the record is dead-lettered and the partition moves on', async () => {
    await post(node.url, '/api/v1/configure', { queue: 'r1', options: { retryLimit: 2, retryDelay: 0 } });
    await push([{ queue: 'r1', payload: 'poison' }, { queue: 'r1', payload: 'next' }]);
    const deliveries = [];
    for (let i = 0; i < 3; i++) {
      const ms = msgsOf(await pop('r1', { batch: 1 }));
      assert.equal(ms.length, 1);
      deliveries.push(ms[0].data);
      const a = await ack(ms, 'failed');
      if (i < 2) assert.equal(a.json[0].dlq, false);
      else assert.equal(a.json[0].dlq, true);
    }
    assert.deepEqual(deliveries, ['poison', 'poison', 'poison']);
    const ms = msgsOf(await pop('r1'));
    assert.deepEqual(ms.map((m) => m.data), ['next']);
  });

  test('dlq status dead-letters at once', async () => {
    await push([{ queue: 'r2', payload: 1 }, { queue: 'r2', payload: 2 }]);
    const ms = msgsOf(await pop('r2', { batch: 2 }));
    const a = await ack([ms[0]], 'dlq');
    assert.equal(a.json[0].dlq, true);
    await ack([ms[1]]);
    assert.equal((await pop('r2')).status, 204);
  });

  test('an expired lease makes its records available again, in order; its acks are refused', async () => {
    await post(node.url, '/api/v1/configure', { queue: 'r3', options: { leaseTime: 1 } });
    await push([1, 2, 3].map((i) => ({ queue: 'r3', payload: i })));
    const first = msgsOf(await pop('r3', { batch: 3 }));
    await ack([first[0]]);
    await sleep(1300);
    const late = await ack([first[1]]);
    assert.equal(late.json[0].success, false);
    assert.equal(late.json[0].error, 'Invalid or expired lease');
    const second = msgsOf(await pop('r3', { batch: 3 }));
    assert.deepEqual(second.map((m) => m.data), [2, 3]);
    assert.notEqual(second[0].leaseId, first[0].leaseId);
  });

  test('extending a lease keeps the records; unknown and expired leases are reported', async () => {
    await post(node.url, '/api/v1/configure', { queue: 'r4', options: { leaseTime: 1 } });
    await push([{ queue: 'r4', payload: 1 }]);
    const m = msgsOf(await pop('r4'))[0];
    const e = await post(node.url, `/api/v1/lease/${m.leaseId}/extend`, { seconds: 5 });
    assert.equal(e.status, 200);
    assert.equal(e.json[0].success, true);
    assert.match(e.json[0].expiresAt, /Z$/);
    await sleep(1300);
    assert.equal((await pop('r4')).status, 204);
    const a = await ack([m]);
    assert.equal(a.json[0].success, true);
    const nf = await post(node.url, '/api/v1/lease/00000000-0000-7000-8000-000000000009/extend', {});
    assert.deepEqual([nf.json[0].success, nf.json[0].error], [false, 'Lease not found']);
    const bad = await post(node.url, '/api/v1/lease/xyz/extend', {});
    assert.equal(bad.status, 400);
  });
});

describe('consumer groups', () => {
  test('two groups each see every record once; queue mode is independent', async () => {
    const items = [];
    for (let i = 0; i < 20; i++) items.push({ queue: 'g1', partition: `p${i % 4}`, payload: i });
    await push(items);
    for (const group of ['A', 'B']) {
      const seen = [];
      for (;;) {
        const r = await pop('g1', { consumerGroup: group, batch: 7 });
        if (r.status === 204) break;
        seen.push(...r.json.messages.map((m) => m.data));
        assert.equal(r.json.consumerGroup, group);
        await ack(r.json.messages, 'completed', group);
      }
      assert.deepEqual(seen.sort((a, b) => a - b), [...Array(20).keys()]);
    }
    const q = msgsOf(await pop('g1', { batch: 100 }));
    assert.equal(q.length, 5);
  });

  test('subscriptionMode=new skips what was there; subscriptionFrom starts at a time', async () => {
    await push([{ queue: 'g2', payload: 'old' }]);
    await sleep(20);
    const mid = new Date().toISOString();
    await sleep(20);
    assert.equal((await pop('g2', { consumerGroup: 'fresh', subscriptionMode: 'new' })).status, 204);
    await push([{ queue: 'g2', payload: 'new' }]);
    assert.deepEqual(msgsOf(await pop('g2', { consumerGroup: 'fresh', autoAck: true })).map((m) => m.data), ['new']);
    assert.deepEqual(msgsOf(await pop('g2', { consumerGroup: 'from', subscriptionFrom: mid, batch: 10, autoAck: true })).map((m) => m.data), ['new']);
    assert.deepEqual(msgsOf(await pop('g2', { consumerGroup: 'all', batch: 10, autoAck: true })).map((m) => m.data), ['old', 'new']);
  });
});

describe('long-poll', () => {
  test('a waiting pop returns as soon as a push lands', async () => {
    const t0 = Date.now();
    const waiting = pop('lp1', { wait: true, timeout: 10000 });
    await sleep(300);
    await push([{ queue: 'lp1', payload: 'hello' }]);
    const r = await waiting;
    const dt = Date.now() - t0;
    assert.equal(r.status, 200);
    assert.deepEqual(r.json.messages.map((m) => m.data), ['hello']);
    assert.ok(dt < 2000, `took ${dt} ms`);
  });

  test('the timeout answers 204', async () => {
    const t0 = Date.now();
    const r = await pop('lp2', { wait: true, timeout: 500 });
    assert.equal(r.status, 204);
    const dt = Date.now() - t0;
    assert.ok(dt >= 450 && dt < 3000, `took ${dt} ms`);
  });

  test('an expiring lease wakes a waiting pop', async () => {
    await post(node.url, '/api/v1/configure', { queue: 'lp3', options: { leaseTime: 1 } });
    await push([{ queue: 'lp3', payload: 1 }]);
    assert.equal(msgsOf(await pop('lp3')).length, 1);
    const t0 = Date.now();
    const r = await pop('lp3', { wait: true, timeout: 8000 });
    assert.equal(r.status, 200);
    assert.ok(Date.now() - t0 < 3000);
  });

  test('a retry ack wakes a waiting pop of another consumer', async () => {
    await push([{ queue: 'lp4', payload: 1 }]);
    const m = msgsOf(await pop('lp4'));
    const waiting = pop('lp4', { wait: true, timeout: 8000 });
    await sleep(200);
    await ack(m, 'retry');
    const r = await waiting;
    assert.equal(r.status, 200);
    assert.deepEqual(r.json.messages.map((x) => x.data), [1]);
  });
});

describe('visibility options', () => {
  test('delayedProcessing hides records younger than the delay', async () => {
    await post(node.url, '/api/v1/configure', { queue: 'v1', options: { delayedProcessing: 1 } });
    await push([{ queue: 'v1', payload: 1 }]);
    assert.equal((await pop('v1')).status, 204);
    const r = await pop('v1', { wait: true, timeout: 5000 });
    assert.equal(r.status, 200);
  });

  test('windowBuffer holds a partition until it has been quiet', async () => {
    await post(node.url, '/api/v1/configure', { queue: 'v2', options: { windowBuffer: 1 } });
    await push([{ queue: 'v2', partition: 'w', payload: 1 }]);
    assert.equal((await pop('v2')).status, 204);
    const specific = await pop('v2', {}, 'w');
    assert.equal(specific.json.windowBufferActive, true);
    await sleep(1200);
    assert.equal(msgsOf(await pop('v2')).length, 1);
  });
});

describe('merged pops', () => {
  // Pops that arrive together are merged into one claim call; the ones that get no partition
  // are answered at once while the others wait for their lease to be recorded. (Regression:
  // the early answers were freed and then touched again.)
  test('more concurrent consumers than partitions: each partition to one, the rest 204', async () => {
    const { default: http2 } = await import('node:http2');
    await push([0, 1, 2, 3].map((i) => ({ queue: 'm1', partition: `p${i % 2}`, payload: i })));
    const client = http2.connect(node.url);
    try {
      const one = () => new Promise((resolve, reject) => {
        const req = client.request({ ':path': '/api/v1/pop/queue/m1?batch=10' });
        let status = 0;
        let data = '';
        req.on('response', (h) => { status = h[':status']; });
        req.setEncoding('utf8');
        req.on('data', (c) => { data += c; });
        req.on('end', () => resolve({ status, json: data ? JSON.parse(data) : null }));
        req.on('error', reject);
        req.end();
      });
      for (let round = 0; round < 3; round++) {
        const res = await Promise.all([...Array(12).keys()].map(one));
        const got = res.filter((r) => r.status === 200);
        assert.ok(got.length <= 2, `${got.length} pops got partitions`);
        assert.equal(res.filter((r) => r.status === 204).length, 12 - got.length);
        const parts = got.map((r) => r.json.partition);
        assert.equal(new Set(parts).size, parts.length, 'one partition went to two pops');
        const leases = got.map((r) => r.json.leaseId);
        assert.equal(new Set(leases).size, leases.length, 'two pops share a lease');
        // give everything back for the next round
        for (const r of got) await ack(r.json.messages, 'retry');
      }
    } finally {
      client.close();
    }
  });
});

describe('options enforced', () => {
  test('retryDelay holds a failed batch back for that long', async () => {
    await post(node.url, '/api/v1/configure', { queue: 'o1', options: { retryDelay: 800 } });
    await push([{ queue: 'o1', payload: 1 }]);
    const m = msgsOf(await pop('o1'));
    await ack(m, 'failed');
    assert.equal((await pop('o1')).status, 204, 'available before retryDelay');
    const t0 = Date.now();
    const r = await pop('o1', { wait: true, timeout: 5000 });
    assert.equal(r.status, 200);
    assert.ok(Date.now() - t0 >= 500, 'redelivered too early');
  });

  test('deadLetterQueue=false drops a record past its retries instead of dead-lettering it', async () => {
    await post(node.url, '/api/v1/configure', { queue: 'o2', options: { retryLimit: 0, retryDelay: 0, deadLetterQueue: false } });
    await push([{ queue: 'o2', payload: 'bad' }, { queue: 'o2', payload: 'good' }]);
    const m = msgsOf(await pop('o2', { batch: 1 }));
    const a = await ack(m, 'failed');
    assert.equal(a.json[0].dlq, false);
    assert.deepEqual(msgsOf(await pop('o2')).map((x) => x.data), ['good']);
  });

  test('the defaults dead-letter after retryLimit; ttl is stored and reported, not enforced', async () => {
    const r = await post(node.url, '/api/v1/configure', { queue: 'o3' });
    assert.equal(r.json.options.deadLetterQueue, true);
    assert.equal(r.json.options.dlqAfterMaxRetries, true);
    assert.equal(r.json.options.ttl, 3600);
    const t = await post(node.url, '/api/v1/configure', { queue: 'o3', options: { ttl: 1 } });
    assert.equal(t.status, 200, t.text);
    assert.equal(t.json.options.ttl, 1);
    assert.equal((await get(node.url, '/api/v1/resources/queues/o3')).json.options.ttl, 1);
    assert.equal((await get(node.url, '/api/v1/status/queues/o3')).json.queue.config.ttl, 1);
    // a legacy option: a record older than ttl is still delivered
    assert.equal((await push([{ queue: 'o3', payload: 'old' }])).status, 201);
    await sleep(1500);
    assert.deepEqual(msgsOf(await pop('o3', { autoAck: true })).map((x) => x.data), ['old']);
    const bad = await post(node.url, '/api/v1/configure', { queue: 'o3', options: { ttl: -1 } });
    assert.equal(bad.status, 400);
    assert.match(bad.json.error, /options\.ttl must be an integer between 0 and 315360000 seconds/);
  });

  test('maxSize refuses pushes that would pass it, and only those', async () => {
    await post(node.url, '/api/v1/configure', { queue: 'o4', options: { maxSize: 3 } });
    assert.equal((await push([1, 2].map((i) => ({ queue: 'o4', payload: i })))).status, 201);
    const full = await push([3, 4].map((i) => ({ queue: 'o4', payload: i })));
    assert.equal(full.status, 409);
    assert.match(full.json.error, /queue o4 is full: it holds 3 records at most/);
    assert.equal((await push([{ queue: 'o4', payload: 3 }])).status, 201);
    assert.equal((await push([{ queue: 'other-o4', payload: 1 }])).status, 201);
  });
});

describe('namespace and task pops', () => {
  test('pop over a namespace, highest priority first, each message naming its queue', async () => {
    await post(node.url, '/api/v1/configure', { queue: 'billing.low', namespace: 'billing', task: 'low', options: { priority: 1 } });
    await post(node.url, '/api/v1/configure', { queue: 'billing.high', namespace: 'billing', task: 'high', options: { priority: 9 } });
    await push([{ queue: 'billing.low', payload: 'low' }, { queue: 'billing.high', payload: 'high' }]);
    const a = await get(node.url, '/api/v1/pop?namespace=billing&autoAck=true');
    assert.equal(a.status, 200);
    assert.equal(a.json.queue, 'billing.high');
    assert.equal(a.json.messages[0].queue, 'billing.high');
    const b = await get(node.url, '/api/v1/pop?namespace=billing&autoAck=true');
    assert.equal(b.json.messages[0].queue, 'billing.low');
    assert.equal((await get(node.url, '/api/v1/pop?namespace=billing')).status, 204);
    await push([{ queue: 'billing.low', payload: 'again' }]);
    const c = await get(node.url, '/api/v1/pop?namespace=billing&task=high&autoAck=true');
    assert.equal(c.status, 204);
    const d = await get(node.url, '/api/v1/pop?namespace=billing&task=low&autoAck=true');
    assert.deepEqual(d.json.messages.map((m) => m.data), ['again']);
    assert.equal((await get(node.url, '/api/v1/pop')).status, 400);
  });

  test('a waiting namespace pop wakes on a push to any of its queues', async () => {
    await post(node.url, '/api/v1/configure', { queue: 'ns2.q', namespace: 'ns2' });
    const waiting = get(node.url, '/api/v1/pop?namespace=ns2&wait=true&timeout=5000');
    await sleep(200);
    await push([{ queue: 'ns2.q', payload: 'hi' }]);
    const r = await waiting;
    assert.equal(r.status, 200);
    assert.equal(r.json.messages[0].queue, 'ns2.q');
  });
});

describe('timers and full queues', () => {
  // Regression: push_v1 writes nothing for a full queue (kind 2); a firing round used to delete
  // such timers as if they had fired.
  test('a timer for a full queue waits until there is room, then fires once', async () => {
    await post(node.url, '/api/v1/configure', { queue: 'tfull', options: { maxSize: 1 } });
    await push([{ queue: 'tfull', payload: 'first' }]);
    const t = await post(node.url, '/api/v1/timers', { operations: [{ op: 'schedule', queue: 'tfull', timerKey: 'later',
      payload: Buffer.from('"later"').toString('base64'), delayMs: 0 }] });
    assert.equal(t.status, 200, t.text);
    assert.equal(t.json.results[0].status, 'scheduled', t.text);
    await sleep(1500);
    let f = await readQueue(node.url, 'tfull');
    assert.equal(f.records.length, 1, 'the timer fired into a full queue');
    const still = await get(node.url, '/api/v1/timers/tfull/later');
    assert.equal(still.json.found, true, 'the timer was dropped instead of waiting');
    // each round that could not deliver it counts an attempt
    assert.ok(still.json.attempts >= 1, still.text);
    await post(node.url, '/api/v1/configure', { queue: 'tfull', options: { maxSize: 10 } });
    const end = Date.now() + 5000;
    for (;;) {
      f = await readQueue(node.url, 'tfull');
      if (f.records.length === 2) break;
      assert.ok(Date.now() < end, 'the timer did not fire after room was made');
      await sleep(200);
    }
    assert.deepEqual(f.records.map((r) => r.payload), ['first', 'later']);
  });
});
