// The admin surface, part 3: browsing records (filters, statuses, paging that works) and
// one record by transactionId or message id, with its payload decoded.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { get, post, rmrf, sleep, startQueen } from './harness.mjs';

let node;
before(async () => { node = await startQueen(); });
after(async () => { if (node) { await node.stop(); rmrf(node.data); } });

const push = async (items) => {
  const r = await post(node.url, '/api/v1/push', { items });
  assert.equal(r.status, 201, r.text);
  return r.json;
};
async function pop(queue, params = {}, partition) {
  const qs = new URLSearchParams(Object.fromEntries(Object.entries(params).map(([k, v]) => [k, String(v)]))).toString();
  const p = partition ? `/api/v1/pop/queue/${encodeURIComponent(queue)}/partition/${encodeURIComponent(partition)}` : `/api/v1/pop/queue/${encodeURIComponent(queue)}`;
  return get(node.url, `${p}${qs ? '?' + qs : ''}`);
}
const msgsOf = (r) => (r.status === 200 && r.json && r.json.messages) || [];
const ack = (msgs, status = 'completed') => post(node.url, '/api/v1/ack/batch', {
  acknowledgments: msgs.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status })),
});
const list = (qs) => get(node.url, `/api/v1/messages?${qs}`);
// Every page of a listing, `limit` at a time.
async function allPages(qs, limit) {
  const out = [];
  for (let offset = 0; ; offset += limit) {
    const r = await list(`${qs}&limit=${limit}&offset=${offset}`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.pagination, { limit, offset, hasMore: r.json.pagination.hasMore });
    out.push(...r.json.messages);
    if (!r.json.pagination.hasMore) {
      assert.ok(r.json.messages.length <= limit);
      return out;
    }
    assert.equal(r.json.messages.length, limit);
  }
}

describe('GET /api/v1/messages', () => {
  test('newest first; paging returns every record exactly once', async () => {
    // five pushes (five segments per partition), two partitions
    for (let k = 0; k < 5; k++) {
      await push([0, 1, 2, 3, 4].map((i) => ({ queue: 'br1', partition: `p${i % 2}`, payload: { k, i } })));
      await sleep(3);
    }
    const full = await list('queue=br1&limit=1000');
    assert.equal(full.status, 200);
    const all = full.json.messages;
    assert.equal(all.length, 25);
    assert.equal(full.json.pagination.hasMore, false);
    // newest first: by stamp, then partition, then offset descending
    for (let i = 1; i < all.length; i++) assert.ok(all[i - 1].createdAt >= all[i].createdAt);
    // the newest push: p0 got offsets 12..14 and p1 8..9; same stamp, so partition then offset desc
    assert.deepEqual(all.slice(0, 5).map((m) => [m.partition, m.offset]), [['p0', 14], ['p0', 13], ['p0', 12], ['p1', 9], ['p1', 8]]);
    assert.equal(all.filter((m) => m.createdAt === all[0].createdAt).length, 5);
    for (const size of [1, 4, 7, 25, 30]) {
      const pages = await allPages('queue=br1', size);
      assert.deepEqual(pages.map((m) => m.id), all.map((m) => m.id), `page size ${size}`);
    }
    const m = all[0];
    for (const k of ['id', 'transactionId', 'partitionId', 'queuePath', 'queue', 'partition', 'namespace', 'task', 'status',
      'queueStatus', 'busStatus', 'traceId', 'producerSub', 'queuePriority', 'createdAt', 'leaseExpiresAt']) assert.ok(k in m, k);
    assert.equal(m.queuePath, `br1/${m.partition}`);
    assert.equal(m.status, 'pending');
    assert.equal(full.json.mode.type, 'none');
  });

  test('statuses from cursors and leases; a status filter pages correctly too', async () => {
    for (let k = 0; k < 4; k++) await push([0, 1, 2].map((i) => ({ queue: 'br2', partition: 'p', payload: k * 3 + i })));
    // queue mode: 4 completed (acked), 1 dead letter, 3 leased (processing), 4 pending
    const a = msgsOf(await pop('br2', { batch: 4 }, 'p'));
    await ack(a.slice(0, 3));
    await ack([a[3]], 'dlq');
    const b = msgsOf(await pop('br2', { batch: 4 }, 'p'));
    await ack([b[0]]);
    const all = (await list('queue=br2&limit=1000')).json.messages;
    const status = Object.fromEntries(all.map((m) => [m.offset, m.status]));
    assert.deepEqual(status, {
      0: 'completed', 1: 'completed', 2: 'completed', 3: 'dead_letter', 4: 'completed',
      5: 'processing', 6: 'processing', 7: 'processing', 8: 'pending', 9: 'pending', 10: 'pending', 11: 'pending',
    });
    assert.match(all.find((m) => m.offset === 5).leaseExpiresAt, /Z$/);
    assert.equal(all.find((m) => m.offset === 8).leaseExpiresAt, null);
    for (const st of ['pending', 'processing', 'completed', 'dead_letter']) {
      const want = all.filter((m) => m.status === st).map((m) => m.id);
      for (const size of [1, 2, 3]) {
        const got = await allPages(`queue=br2&status=${st}`, size);
        assert.deepEqual(got.map((m) => m.id), want, `${st} by ${size}`);
      }
    }
    const r = await list('queue=br2&limit=1');
    assert.equal(r.json.mode.hasQueueMode, true);
    assert.equal(r.json.mode.type, 'queue');
  });

  test('consumer groups only: completed when every group is past it; busStatus counts them', async () => {
    await push([1, 2, 3].map((i) => ({ queue: 'br3', payload: i })));
    await pop('br3', { consumerGroup: 'g1', batch: 2, autoAck: true });
    await pop('br3', { consumerGroup: 'g2', batch: 1, autoAck: true });
    const all = (await list('queue=br3')).json;
    const by = Object.fromEntries(all.messages.map((m) => [m.offset, m]));
    assert.equal(by[0].status, 'completed');
    assert.deepEqual(by[0].busStatus, { consumedBy: 2, totalGroups: 2 });
    assert.equal(by[1].status, 'pending');
    assert.deepEqual(by[1].busStatus, { consumedBy: 1, totalGroups: 2 });
    assert.equal(all.mode.type, 'bus');
    assert.equal(all.mode.busGroupsCount, 2);
  });

  test('filters: partition, namespace, task, time window', async () => {
    await push([{ queue: 'shop.orders', partition: 'eu', payload: 1 }, { queue: 'shop.orders', partition: 'us', payload: 2 },
      { queue: 'shop.refunds', partition: 'eu', payload: 3 }]);
    const ids = (r) => r.json.messages.map((m) => m.queuePath).sort();
    assert.deepEqual(ids(await list('ns=shop')), ['shop.orders/eu', 'shop.orders/us', 'shop.refunds/eu']);
    assert.deepEqual(ids(await list('namespace=shop&task=refunds')), ['shop.refunds/eu']);
    assert.deepEqual(ids(await list('queue=shop.orders&partition=eu')), ['shop.orders/eu']);
    assert.deepEqual(ids(await list('ns=shop&partition=eu')), ['shop.orders/eu', 'shop.refunds/eu']);
    assert.equal((await list('ns=shop&from=2999-01-01T00:00:00Z')).json.messages.length, 0);
    assert.equal((await list('ns=shop&from=2000-01-01T00:00:00Z&to=2000-01-02T00:00:00Z')).json.messages.length, 0);
    assert.equal((await list('ns=shop&from=2000-01-01T00:00:00Z&to=2999-01-02T00:00:00Z')).json.messages.length, 3);
  });

  const bad = [
    ['status=bogus', 400, /status must be one of/],
    ['limit=0', 400, /limit must be an integer between 1 and 1000/],
    ['limit=5000', 400, /limit/],
    ['offset=-1', 400, /offset must be an integer/],
    ['offset=abc', 400, /offset/],
    ['from=yesterday', 400, /from must be an ISO-8601 timestamp/],
    ['to=2020-02-30T00:00:00Z', 400, /to must be an ISO-8601 timestamp/],
    ['from=2020-01-02T00:00:00Z&to=2020-01-01T00:00:00Z', 400, /from must not be after to/],
    ['queue=no-such-queue', 404, /queue not found: no-such-queue/],
  ];
  for (const [qs, st, msg] of bad) {
    test(`GET /api/v1/messages?${qs} → ${st}`, async () => {
      const r = await list(qs);
      assert.equal(r.status, st, r.text);
      assert.match(r.json.error, msg);
    });
  }
});

describe('GET /api/v1/messages/:partitionId/:transactionId', () => {
  test('by producer transactionId, by message id, by server transactionId; payload byte for byte', async () => {
    const raw = '{"items":[{"queue":"one","partition":"p","transactionId":"order-7","payload":{"n":1.50,"s":"ü"}},'
      + '{"queue":"one","partition":"p","payload":[1, 2]}]}';
    const pr = await post(node.url, '/api/v1/push', raw);
    assert.equal(pr.status, 201, pr.text);
    const [a, b] = pr.json;
    for (const key of ['order-7', a.message_id]) {
      const r = await get(node.url, `/api/v1/messages/${a.partition_id}/${encodeURIComponent(key)}`);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.transactionId, 'order-7');
      assert.equal(r.json.id, a.message_id);
      assert.equal(r.json.offset, 0);
      assert.match(r.text, /"payload":\{"n":1\.50,"s":"ü"\}/);
      assert.equal(r.json.status, 'pending');
      assert.equal(r.json.queuePath, 'one/p');
      for (const k of ['id', 'transactionId', 'partitionId', 'queuePath', 'queue', 'partition', 'namespace', 'task', 'status',
        'payload', 'isEncrypted', 'traceId', 'producerSub', 'createdAt', 'errorMessage', 'retryCount', 'leaseExpiresAt',
        'queueConfig', 'mode', 'consumerGroups']) assert.ok(k in r.json, k);
    }
    const r = await get(node.url, `/api/v1/messages/${b.partition_id}/${b.transaction_id}`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.offset, 1);
    assert.match(r.text, /"payload":\[1, 2\]/);
  });

  test('status, lease and dead letter of one record; consumer groups', async () => {
    await push([1, 2].map((i) => ({ queue: 'one2', payload: i })));
    const ms = msgsOf(await pop('one2', { batch: 2 }));
    await ack([ms[0]], 'dlq');
    await pop('one2', { consumerGroup: 'gg', batch: 1, autoAck: true });
    const d = (await get(node.url, `/api/v1/messages/${ms[0].partitionId}/${ms[0].transactionId}`)).json;
    assert.equal(d.status, 'dead_letter');
    assert.equal(d.errorMessage, 'Moved to the dead letters');
    assert.equal(d.deadLetters.length, 1);
    assert.deepEqual(d.consumerGroups.map((g) => [g.name, g.consumed]), [['__QUEUE_MODE__', true], ['gg', true]]);
    assert.equal(d.mode.type, 'hybrid');
    const p = (await get(node.url, `/api/v1/messages/${ms[1].partitionId}/${ms[1].id}`)).json;
    assert.equal(p.status, 'processing');
    assert.match(p.leaseExpiresAt, /Z$/);
    assert.deepEqual(p.consumerGroups.map((g) => [g.name, g.consumed]), [['__QUEUE_MODE__', false], ['gg', false]]);
    assert.equal(p.queueConfig.leaseTime, 300);
  });

  test('a server transactionId is found among many segments', async () => {
    for (let k = 0; k < 30; k++) await push([{ queue: 'one3', payload: k }]);
    const target = (await push([{ queue: 'one3', payload: 'needle' }]))[0];
    for (let k = 0; k < 30; k++) await push([{ queue: 'one3', payload: k }]);
    const r = await get(node.url, `/api/v1/messages/${target.partition_id}/${target.transaction_id}`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.payload, 'needle');
    assert.equal(r.json.offset, 30);
  });

  test('unknown → 404; bad partition id → 400', async () => {
    const pr = await push([{ queue: 'one4', payload: 1 }]);
    let r = await get(node.url, `/api/v1/messages/${pr[0].partition_id}/nope`);
    assert.equal(r.status, 404);
    assert.deepEqual(r.json, { error: 'Message not found', code: 'not_found' });
    // a message id of another partition is not this partition's record
    r = await get(node.url, `/api/v1/messages/${pr[0].partition_id}/00000000-ffff-8000-8000-000000000000`);
    assert.equal(r.status, 404);
    r = await get(node.url, '/api/v1/messages/00000000-0000-4000-8000-000000000000/x');
    assert.equal(r.status, 404);
    assert.match(r.json.error, /partition not found/);
    r = await get(node.url, '/api/v1/messages/not-a-uuid/x');
    assert.equal(r.status, 400);
    assert.match(r.json.error, /partitionId must be a UUID/);
  });
});
