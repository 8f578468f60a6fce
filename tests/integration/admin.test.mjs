// The admin surface, part 1: consumer groups (listing with real lag, lagging partitions, one
// group's positions, deletion, subscription start), seeks (end, start, timestamp, offset, one
// partition) and the lag gauges of /metrics/prometheus.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { api, get, post, readQueue, rmrf, sleep, startQueen } from './harness.mjs';

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
const ack = (msgs, status = 'completed', group) => post(node.url, '/api/v1/ack/batch', {
  consumerGroup: group ?? null,
  acknowledgments: msgs.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status })),
});
// Drains a queue for a group with autoAck; returns the payloads in delivery order.
async function drain(queue, group, extra = {}) {
  const seen = [];
  for (;;) {
    const r = await pop(queue, { batch: 100, autoAck: true, ...(group ? { consumerGroup: group } : {}), ...extra });
    if (r.status === 204) return seen;
    assert.equal(r.status, 200, r.text);
    seen.push(...r.json.messages.map((m) => m.data));
  }
}
const groupsOf = async () => (await get(node.url, '/api/v1/consumer-groups')).json;
const groupEntry = async (group, queue) => (await groupsOf()).find((g) => g.name === group && g.queueName === queue);
const seek = (group, queue, body) => post(node.url, `/api/v1/consumer-groups/${encodeURIComponent(group)}/queues/${encodeURIComponent(queue)}/seek`, body);
// µs stamp → ISO-8601 with microseconds
const isoUs = (ts) => `${new Date(Math.floor(ts / 1000)).toISOString().slice(0, -1)}${String(ts % 1000).padStart(3, '0')}Z`;
const stampsOf = async (queue) => (await readQueue(node.url, queue)).records;

describe('consumer groups: lag from offsets', () => {
  test('push N, consume M with a group: lag is N − M, per partition and in total', async () => {
    // 6 records on p0, 4 on p1; the group consumes 3 of p0
    await push([...Array(10).keys()].map((i) => ({ queue: 'lag1', partition: i < 6 ? 'p0' : 'p1', payload: i })));
    const r = await pop('lag1', { consumerGroup: 'G', batch: 3, autoAck: true }, 'p0');
    assert.deepEqual(msgsOf(r).map((m) => m.data), [0, 1, 2]);

    const g = await groupEntry('G', 'lag1');
    assert.ok(g, JSON.stringify(await groupsOf()));
    assert.deepEqual(g.topics, ['lag1']);
    assert.equal(g.totalLag, 7);
    assert.equal(g.members, 1); // partitions with a cursor row
    assert.equal(g.partitions, 2);
    assert.equal(g.partitionsWithLag, 2);
    assert.equal(g.state, 'Stable');
    assert.equal(typeof g.maxTimeLag, 'number');
    assert.equal(g.subscriptionMode, null);
    for (const k of ['name', 'topics', 'queueName', 'members', 'partitionsWithLag', 'totalLag', 'maxTimeLag', 'state',
      'subscriptionMode', 'subscriptionTimestamp', 'subscriptionCreatedAt']) assert.ok(k in g, k);

    const d = (await get(node.url, '/api/v1/consumer-groups/G')).json;
    const parts = Object.fromEntries(d.lag1.partitions.map((p) => [p.partition, p]));
    assert.equal(parts.p0.offsetLag, 3);
    assert.equal(parts.p0.totalConsumed, 3);
    assert.equal(parts.p0.nextOffset, 3);
    assert.equal(parts.p0.hasCursor, true);
    assert.equal(parts.p1.offsetLag, 4);
    assert.equal(parts.p1.hasCursor, false);
    assert.equal(parts.p1.leaseActive, false);
    assert.equal(d.lag1.totalLag, 7);
    for (const k of ['partition', 'workerId', 'lastConsumedAt', 'totalConsumed', 'offsetLag', 'timeLagSeconds', 'leaseActive']) {
      assert.ok(k in parts.p0, k);
    }

    // consume the rest: no lag left
    await pop('lag1', { consumerGroup: 'G', batch: 10, autoAck: true }, 'p0');
    await pop('lag1', { consumerGroup: 'G', batch: 10, autoAck: true }, 'p1');
    const g2 = await groupEntry('G', 'lag1');
    assert.equal(g2.totalLag, 0);
    assert.equal(g2.partitionsWithLag, 0);
    assert.equal(g2.maxTimeLag, 0);
    assert.equal(g2.members, 2);
  });

  test('time lag is the age of the first record not done; the lagging listing filters on it', async () => {
    await push([{ queue: 'lag2', partition: 'x', payload: 1 }]);
    await pop('lag2', { consumerGroup: 'T', batch: 1, autoAck: true }, 'x');
    await push([{ queue: 'lag2', partition: 'x', payload: 2 }]);
    await sleep(1200);
    const g = await groupEntry('T', 'lag2');
    assert.equal(g.totalLag, 1);
    assert.ok(g.maxTimeLagMs >= 1100 && g.maxTimeLagMs < 60000, JSON.stringify(g));
    assert.equal(g.maxTimeLag, Math.floor(g.maxTimeLagMs / 1000));

    const lagging = (await get(node.url, '/api/v1/consumer-groups/lagging?minLagSeconds=1')).json;
    const row = lagging.find((x) => x.consumer_group === 'T' && x.queue_name === 'lag2');
    assert.ok(row, JSON.stringify(lagging));
    assert.equal(row.partition_name, 'x');
    assert.equal(row.offset_lag, 1);
    assert.ok(row.time_lag_seconds >= 1);
    assert.match(row.oldest_unconsumed_at, /Z$/);
    for (const k of ['consumer_group', 'queue_name', 'partition_name', 'partition_id', 'worker_id', 'offset_lag',
      'time_lag_seconds', 'lag_hours', 'oldest_unconsumed_at', 'last_consumed_at']) assert.ok(k in row, k);
    // sorted by lag, most lagging first
    for (let i = 1; i < lagging.length; i++) assert.ok(lagging[i - 1].time_lag_seconds >= lagging[i].time_lag_seconds);
    // the default threshold is an hour
    const none = (await get(node.url, '/api/v1/consumer-groups/lagging')).json;
    assert.equal(none.find((x) => x.consumer_group === 'T'), undefined);
  });

  test('queue mode is listed as __QUEUE_MODE__; a live lease shows as workerId and counts in lag', async () => {
    await push([1, 2, 3].map((i) => ({ queue: 'lag3', payload: i })));
    const r = await pop('lag3', { batch: 2 });
    const ms = msgsOf(r);
    const g = await groupEntry('__QUEUE_MODE__', 'lag3');
    assert.equal(g.totalLag, 3); // leased is not done
    assert.equal(g.activeLeases, 1);
    const d = (await get(node.url, '/api/v1/consumer-groups/__QUEUE_MODE__')).json;
    assert.equal(d.lag3.partitions[0].workerId, r.json.leaseId);
    assert.equal(d.lag3.partitions[0].leaseActive, true);
    await ack(ms);
    assert.equal((await groupEntry('__QUEUE_MODE__', 'lag3')).totalLag, 1);
  });

  test('subscription fields come from the subscription; a group that never consumed is Dead', async () => {
    await push([{ queue: 'lag4', payload: 'old' }]);
    assert.equal((await pop('lag4', { consumerGroup: 'fresh', subscriptionMode: 'new' })).status, 204);
    const g = await groupEntry('fresh', 'lag4');
    assert.equal(g.subscriptionMode, 'new');
    assert.match(g.subscriptionTimestamp, /^\d{4}-\d\d-\d\dT.*Z$/);
    assert.match(g.subscriptionCreatedAt, /Z$/);
    assert.equal(g.totalLag, 0); // 'old' is before the subscription
    assert.equal(g.state, 'Dead');
    await push([{ queue: 'lag4', payload: 'new' }]);
    assert.equal((await groupEntry('fresh', 'lag4')).totalLag, 1);
  });

  test('an unknown group is {}', async () => {
    const r = await get(node.url, '/api/v1/consumer-groups/nobody');
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, {});
  });
});

describe('seek', () => {
  // Two pushes per partition: batch A then batch B; the group has read everything.
  async function setup(queue, group) {
    await push([0, 1, 2].flatMap((i) => [{ queue, partition: 'p0', payload: `A${i}` }, { queue, partition: 'p1', payload: `A${i}` }]));
    await sleep(5);
    await push([0, 1].flatMap((i) => [{ queue, partition: 'p0', payload: `B${i}` }, { queue, partition: 'p1', payload: `B${i}` }]));
    assert.equal((await drain(queue, group)).length, 10);
    return stampsOf(queue);
  }
  const sorted = (xs) => [...xs].sort();

  test('to a timestamp: the next pops return exactly the records stamped at or after it', async () => {
    const recs = await setup('sk1', 'R');
    const tB = recs.find((x) => x.payload === 'B0').ts;
    const r = await seek('R', 'sk1', { timestamp: isoUs(tB) });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.success, true);
    assert.equal(r.json.consumerGroup, 'R');
    assert.equal(r.json.queueName, 'sk1');
    assert.equal(r.json.seekToEnd, false);
    assert.equal(r.json.partitionsUpdated, 2);
    assert.match(r.json.targetTimestamp, /Z$/);
    assert.deepEqual(r.json.partitions.map((p) => p.nextOffset), [3, 3]);
    assert.deepEqual(sorted(await drain('sk1', 'R')), ['B0', 'B0', 'B1', 'B1']);
    // a time before everything replays the whole log; after everything, nothing
    await seek('R', 'sk1', { timestamp: '2000-01-01T00:00:00Z' });
    assert.equal((await drain('sk1', 'R')).length, 10);
    await seek('R', 'sk1', { timestamp: '2999-01-01T00:00:00Z' });
    assert.equal((await pop('sk1', { consumerGroup: 'R' })).status, 204);
  });

  test('to an offset, to the start, to the end', async () => {
    await setup('sk2', 'R');
    let r = await seek('R', 'sk2', { offset: 4 });
    assert.equal(r.json.targetOffset, 4);
    assert.deepEqual(await drain('sk2', 'R'), ['B1', 'B1']);
    // past the end is clamped to the end
    r = await seek('R', 'sk2', { offset: 999 });
    assert.deepEqual(r.json.partitions.map((p) => p.nextOffset), [5, 5]);
    assert.equal((await pop('sk2', { consumerGroup: 'R' })).status, 204);
    r = await seek('R', 'sk2', { toStart: true });
    assert.equal(r.json.seekToStart, true);
    const all = await drain('sk2', 'R');
    assert.equal(all.length, 10);
    r = await seek('R', 'sk2', { toStart: true });
    r = await seek('R', 'sk2', { toEnd: true });
    assert.equal(r.json.seekToEnd, true);
    assert.equal((await pop('sk2', { consumerGroup: 'R' })).status, 204);
    assert.equal((await groupEntry('R', 'sk2')).totalLag, 0);
  });

  test('queue mode seeks too, and in order: offsets within a partition come back in order', async () => {
    await setup('sk3', null);
    await seek('__QUEUE_MODE__', 'sk3', { offset: 1 });
    const r = await pop('sk3', { batch: 10, autoAck: true }, 'p0');
    assert.deepEqual(msgsOf(r).map((m) => m.data), ['A1', 'A2', 'B0', 'B1']);
  });

  test('a group with no cursor yet gets one on every partition, so a seek is never a no-op', async () => {
    await push([1, 2].flatMap((i) => [{ queue: 'sk4', partition: 'a', payload: i }, { queue: 'sk4', partition: 'b', payload: i }]));
    const r = await seek('newcomer', 'sk4', { toEnd: true });
    assert.equal(r.json.partitionsUpdated, 2);
    const g = await groupEntry('newcomer', 'sk4');
    assert.equal(g.members, 2);
    assert.equal(g.totalLag, 0);
    assert.equal((await pop('sk4', { consumerGroup: 'newcomer' })).status, 204);
    await push([{ queue: 'sk4', partition: 'a', payload: 3 }]);
    assert.deepEqual(await drain('sk4', 'newcomer'), [3]);
  });

  test('a seek clears leases: the old lease is refused, the records come again', async () => {
    await push([1, 2, 3].map((i) => ({ queue: 'sk5', payload: i })));
    const first = msgsOf(await pop('sk5', { batch: 3 }));
    assert.equal(first.length, 3);
    await seek('__QUEUE_MODE__', 'sk5', { toStart: true });
    const late = await ack([first[0]]);
    assert.equal(late.json[0].success, false);
    const again = msgsOf(await pop('sk5', { batch: 3 }));
    assert.deepEqual(again.map((m) => m.data), [1, 2, 3]);
    assert.notEqual(again[0].leaseId, first[0].leaseId);
  });

  test('one partition: no body moves it to the end; a body may say otherwise', async () => {
    await push([1, 2, 3].flatMap((i) => [{ queue: 'sk6', partition: 'a', payload: i }, { queue: 'sk6', partition: 'b', payload: i }]));
    let r = await post(node.url, '/api/v1/consumer-groups/P/queues/sk6/partitions/a/seek');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.success, true);
    assert.equal(r.json.partitionName, 'a');
    assert.equal(r.json.updated, true);
    assert.equal(r.json.nextOffset, 3);
    assert.match(r.json.cursorMovedTo, /^[0-9a-f-]{36}$/);
    assert.deepEqual(await drain('sk6', 'P'), [1, 2, 3]); // only b
    r = await post(node.url, '/api/v1/consumer-groups/P/queues/sk6/partitions/a/seek', { offset: 1 });
    assert.equal(r.json.nextOffset, 1);
    assert.equal(r.json.previousOffset, 3);
    assert.deepEqual(await drain('sk6', 'P'), [2, 3]);
    r = await post(node.url, '/api/v1/consumer-groups/P/queues/sk6/partitions/a/seek', { toStart: true });
    assert.equal(r.json.cursorMovedTo, null);
    r = await post(node.url, '/api/v1/consumer-groups/P/queues/sk6/partitions/nope/seek');
    assert.equal(r.status, 404);
    assert.deepEqual(r.json, { success: false, error: 'Partition not found', code: 'not_found' });
  });

  const bad = [
    [{}, /Must specify either 'toEnd': true/],
    [{ toEnd: false }, /Must specify either/],
    [{ toEnd: 'yes' }, /toEnd must be true or false/],
    [{ toEnd: true, timestamp: '2020-01-01T00:00:00Z' }, /Specify only one/],
    [{ timestamp: 'yesterday' }, /timestamp must be an ISO-8601 timestamp/],
    [{ timestamp: 5 }, /timestamp must be an ISO-8601 timestamp/],
    [{ offset: -1 }, /offset must be an integer >= 0/],
    [{ offset: 1.5 }, /offset must be an integer >= 0/],
    ['not json', /^Invalid JSON/],
  ];
  for (const [body, msg] of bad) {
    test(`seek ${JSON.stringify(body)} → 400`, async () => {
      const r = await seek('R', 'sk1', body);
      assert.equal(r.status, 400, r.text);
      assert.match(r.json.error, msg);
    });
  }

  test('seek on an unknown queue → 404', async () => {
    const r = await seek('R', 'no-such-queue', { toEnd: true });
    assert.equal(r.status, 404);
    assert.equal(r.json.success, false);
  });
});

describe('deleting a group, the subscription start', () => {
  async function setup(queue) {
    await push([{ queue, payload: 'A' }]);
    await sleep(5);
    await push([{ queue, payload: 'B' }]);
    return stampsOf(queue);
  }

  test('deleting the cursors but not the subscription restarts the group from its subscription', async () => {
    const recs = await setup('dg1');
    const tB = isoUs(recs[1].ts);
    assert.deepEqual(await drain('dg1', 'S', { subscriptionFrom: tB }), ['B']);
    let r = await del('/api/v1/consumer-groups/S/queues/dg1?deleteMetadata=false');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json, { success: true, consumerGroup: 'S', queueName: 'dg1', deletedPartitions: 1, metadataDeleted: false, subscriptionsDeleted: 0 });
    assert.deepEqual(await drain('dg1', 'S'), ['B']);
    // with the subscription gone too, the group reads from the beginning
    r = await del('/api/v1/consumer-groups/S?deleteMetadata=true');
    assert.equal(r.json.metadataDeleted, true);
    assert.equal(r.json.deletedPartitions, 1);
    assert.equal(r.json.subscriptionsDeleted, 1);
    assert.equal(await groupEntry('S', 'dg1'), undefined);
    assert.deepEqual(await drain('dg1', 'S'), ['A', 'B']);
  });

  test('the default deletes the subscription; deleting everywhere covers every queue', async () => {
    await setup('dg2');
    await setup('dg3');
    await drain('dg2', 'W');
    await drain('dg3', 'W');
    const r = await del('/api/v1/consumer-groups/W');
    assert.equal(r.status, 200);
    assert.equal(r.json.deletedPartitions, 2);
    assert.equal(r.json.metadataDeleted, true);
    assert.deepEqual(await drain('dg2', 'W'), ['A', 'B']);
    assert.deepEqual(await drain('dg3', 'W'), ['A', 'B']);
  });

  test('a new subscription timestamp applies where the group has no cursor', async () => {
    const recs = await setup('dg4');
    await drain('dg4', 'U');
    const r = await post(node.url, '/api/v1/consumer-groups/U/subscription', { subscriptionTimestamp: isoUs(recs[1].ts) });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.success, true);
    assert.equal(r.json.consumerGroup, 'U');
    assert.equal(r.json.rowsUpdated, 1);
    assert.match(r.json.newTimestamp, /Z$/);
    // existing cursors are untouched
    assert.equal((await pop('dg4', { consumerGroup: 'U' })).status, 204);
    await del('/api/v1/consumer-groups/U/queues/dg4?deleteMetadata=false');
    assert.deepEqual(await drain('dg4', 'U'), ['B']);
    assert.equal((await groupEntry('U', 'dg4')).subscriptionMode, 'timestamp');
  });

  const bad = [
    ['POST', '/api/v1/consumer-groups/U/subscription', {}, 400, /^Missing subscriptionTimestamp in request body$/],
    ['POST', '/api/v1/consumer-groups/U/subscription', { subscriptionTimestamp: 'soon' }, 400, /ISO-8601/],
    ['POST', '/api/v1/consumer-groups/U/subscription', { subscriptionTimestamp: 7 }, 400, /ISO-8601/],
    ['POST', '/api/v1/consumer-groups/U/subscription', undefined, 400, /^Empty request body$/],
    ['POST', '/api/v1/consumer-groups/__QUEUE_MODE__/subscription', { subscriptionTimestamp: '2020-01-01T00:00:00Z' }, 400, /queue mode/],
    ['DELETE', '/api/v1/consumer-groups/U?deleteMetadata=maybe', undefined, 400, /deleteMetadata must be true or false/],
    ['DELETE', '/api/v1/consumer-groups/U/queues/no-such-queue', undefined, 404, /queue not found: no-such-queue/],
    ['GET', '/api/v1/consumer-groups/lagging?minLagSeconds=abc', undefined, 400, /minLagSeconds must be an integer/],
    ['GET', '/api/v1/consumer-groups/lagging?minLagSeconds=-5', undefined, 400, /minLagSeconds must be an integer/],
    ['GET', '/api/v1/consumer-groups/lagging?limit=0', undefined, 400, /limit must be an integer/],
  ];
  for (const [method, path, body, status, msg] of bad) {
    test(`${method} ${path} ${JSON.stringify(body)} → ${status}`, async () => {
      const r = await api(node.url, method, path, body);
      assert.equal(r.status, status, r.text);
      assert.match(r.json.error, msg);
    });
  }
});

describe('admin writes under load', () => {
  test('seeks, group deletions and partition deletions while consumers pop and ack: no errors', async () => {
    await push([...Array(200).keys()].map((i) => ({ queue: 'busy', partition: `p${i % 8}`, payload: i })));
    const failures = [];
    const check = (what, r, ok = [200, 201, 204]) => { if (!ok.includes(r.status)) failures.push(`${what}: ${r.status} ${r.text}`); };
    let running = true;
    async function consumer(group) {
      while (running) {
        const r = await pop('busy', { consumerGroup: group, batch: 5 });
        check('pop', r);
        if (r.status === 200) check('ack', await ack(r.json.messages, 'completed', group));
      }
    }
    async function producer() {
      let k = 0;
      while (running) check('push', await post(node.url, '/api/v1/push', { items: [{ queue: 'busy', partition: `p${k++ % 10}`, payload: k }] }));
    }
    async function admin() {
      for (let k = 0; running; k++) {
        check('seek', await seek('c1', 'busy', k % 2 ? { toStart: true } : { offset: k % 7 }));
        check('partition seek', await post(node.url, '/api/v1/consumer-groups/c2/queues/busy/partitions/p1/seek', { toStart: true }));
        check('delete group', await del('/api/v1/consumer-groups/c2/queues/busy'));
        check('delete partition', await del('/api/v1/resources/queues/busy/partitions/p9'), [200, 404]);
        check('groups', await get(node.url, '/api/v1/consumer-groups'));
        check('queue', await get(node.url, '/api/v1/resources/queues/busy'));
        check('messages', await get(node.url, '/api/v1/messages?queue=busy&limit=50&offset=10'));
        await sleep(20);
      }
    }
    const work = [consumer('c1'), consumer('c1'), consumer('c2'), consumer(null), producer(), admin()];
    await sleep(3000);
    running = false;
    await Promise.all(work);
    assert.deepEqual(failures, []);
  });
});

describe('metrics', () => {
  test('per-queue lag and dead-letter gauges', async () => {
    await push([...Array(5).keys()].map((i) => ({ queue: 'mq', payload: i })));
    await pop('mq', { consumerGroup: 'mg', batch: 2, autoAck: true });
    const ms = msgsOf(await pop('mq', { batch: 1 }));
    await ack(ms, 'dlq');
    const r = await get(node.url, '/metrics/prometheus');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /^text\/plain/);
    const t = r.text;
    assert.match(t, /# TYPE queen_queue_lag_records gauge/);
    assert.match(t, /^queen_queue_lag_records\{queue="mq",group="mg"\} 3$/m);
    assert.match(t, /^queen_queue_lag_records\{queue="mq",group="__QUEUE_MODE__"\} 4$/m);
    assert.match(t, /^queen_queue_lag_seconds\{queue="mq",group="mg"\} [0-9.e+-]+$/m);
    assert.match(t, /^queen_dead_letters\{queue="mq"\} 1$/m);
    // the default tenant carries no tenant label
    assert.doesNotMatch(t, /tenant="/);
    // every family's samples are contiguous (one HELP/TYPE each)
    assert.equal(t.match(/# TYPE queen_queue_lag_records /g).length, 1);
  });
});
