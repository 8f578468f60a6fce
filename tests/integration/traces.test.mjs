// Traces (POST /api/v1/traces and its three reads) and POST /api/v1/messages/:p/:t/retry on
// the wire: shapes, the 0.15 validation messages, data kept byte for byte, tenant scoping
// through the partition, refusals (bad UUIDs, NUL, invalid UTF-8, oversized data, unknown
// fields) and the route order of /traces/by-name/:name against /traces/:p/:t.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { api, get, post, rmrf, startQueen } from './harness.mjs';
import { bearer, nowS, sign } from './jwt.mjs';

let node;
before(async () => { node = await startQueen(); });
after(async () => { if (node) { if (process.env.TRACE_LOG) console.log(node.log); await node.stop(); rmrf(node.data); } });

const push = async (items) => {
  const r = await post(node.url, '/api/v1/push', { items });
  assert.equal(r.status, 201, r.text);
  return r.json;
};
const trace = (body) => post(node.url, '/api/v1/traces', body);
const NOPE = '0190c2d4-0000-7000-8000-0000000000ff';

describe('traces', () => {
  let pid;
  before(async () => {
    const pr = await push([{ queue: 'tr1', partition: 'p', transactionId: 'm1', payload: { a: 1 } },
      { queue: 'tr1', partition: 'p', transactionId: 'm2', payload: { a: 2 } }]);
    pid = pr[0].partition_id;
  });

  test('add, read per record (oldest first), data byte for byte, defaults', async () => {
    // raw text with an odd spelling: key order, spaces, a duplicate key, an escape, 1.0e2
    const raw = `{"transactionId":"m1","partitionId":"${pid}","traceNames":["order-7","stage"],"data":{"z" : 1, "a":[1.0e2,"\\u00e9\\u0000"],"z":2}}`;
    let r = await trace(raw);
    assert.equal(r.status, 201, r.text);
    assert.equal(r.json.success, true);
    assert.match(r.json.traceId, /^[0-9a-f-]{36}$/);
    r = await trace({ transactionId: 'm1', partitionId: pid, consumerGroup: 'g1', eventType: 'error', traceNames: 'stage', data: 'text' });
    assert.equal(r.status, 201, r.text);
    r = await get(node.url, `/api/v1/traces/${pid}/m1`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.traces.length, 2);
    const [t0, t1] = r.json.traces;
    assert.deepEqual(Object.keys(t0), ['id', 'event_type', 'data', 'consumer_group', 'worker_id', 'created_at', 'trace_names']);
    assert.equal(t0.event_type, 'info');
    assert.equal(t0.consumer_group, '__QUEUE_MODE__');
    assert.deepEqual(t0.trace_names, ['order-7', 'stage']);
    assert.ok(r.text.includes('"data":{"z" : 1, "a":[1.0e2,"\\u00e9\\u0000"],"z":2}'), r.text);
    assert.equal(t1.event_type, 'error');
    assert.equal(t1.consumer_group, 'g1');
    assert.equal(t1.data, 'text');
    assert.deepEqual(t1.trace_names, ['stage']);
    assert.ok(!Number.isNaN(Date.parse(t0.created_at)));
    // another record: none
    r = await get(node.url, `/api/v1/traces/${pid}/m2`);
    assert.deepEqual(r.json, { traces: [] });
  });

  test('by name (newest first, total, pagination) and the names', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await trace({ transactionId: 'm2', partitionId: pid, traceNames: ['pg', 'only two'], data: { i } });
      assert.equal(r.status, 201, r.text);
    }
    let r = await get(node.url, '/api/v1/traces/by-name/pg?limit=2');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.total, 3);
    assert.deepEqual(r.json.pagination, { limit: 2, offset: 0 });
    assert.deepEqual(r.json.traces.map((t) => t.data.i), [2, 1]);
    const t = r.json.traces[0];
    assert.deepEqual(Object.keys(t), ['id', 'transaction_id', 'partition_id', 'event_type', 'data', 'consumer_group', 'worker_id',
      'created_at', 'queue_name', 'partition_name', 'message_payload', 'trace_names']);
    assert.equal(t.transaction_id, 'm2');
    assert.equal(t.partition_id, pid);
    assert.equal(t.queue_name, 'tr1');
    assert.equal(t.partition_name, 'p');
    // the record's payload, as the earlier release answered it (read at the offset the trace keeps)
    assert.deepEqual(t.message_payload, { a: 2 });
    r = await get(node.url, '/api/v1/traces/by-name/pg?limit=2&offset=2');
    assert.deepEqual(r.json.traces.map((x) => x.data.i), [0]);
    // a name with a space, URL-encoded
    r = await get(node.url, `/api/v1/traces/by-name/${encodeURIComponent('only two')}`);
    assert.equal(r.json.total, 3);
    r = await get(node.url, '/api/v1/traces/by-name/none-such');
    assert.deepEqual(r.json, { traces: [], total: 0, pagination: { limit: 100, offset: 0 } });
    r = await get(node.url, '/api/v1/traces/names');
    assert.equal(r.status, 200, r.text);
    const byName = Object.fromEntries(r.json.trace_names.map((n) => [n.trace_name, n]));
    assert.equal(r.json.total, 4);
    assert.equal(byName.stage.trace_count, 2);
    assert.equal(byName.stage.message_count, 1);
    assert.equal(byName.pg.trace_count, 3);
    assert.deepEqual(Object.keys(byName.pg), ['trace_name', 'trace_count', 'message_count', 'last_seen']);
    assert.deepEqual(r.json.pagination, { limit: 50, offset: 0 });
    r = await get(node.url, '/api/v1/traces/names?limit=1&offset=1');
    assert.equal(r.json.trace_names.length, 1);
  });

  test('refusals: the 0.15 messages, UUIDs, NUL, UTF-8, size, unknown fields, unknown partition', async () => {
    const bad = async (body, status, re) => {
      const r = await trace(body);
      assert.equal(r.status, status, `${JSON.stringify(body)?.slice(0, 100)} → ${r.text}`);
      assert.equal(typeof r.json.error, 'string', r.text);
      if (re) assert.match(r.json.error, re);
      return r;
    };
    await bad({ partitionId: pid, data: {} }, 400, /^transactionId and partitionId are required$/);
    await bad({ transactionId: 'm1', data: {} }, 400, /^transactionId and partitionId are required$/);
    await bad({ transactionId: 'm1', partitionId: pid }, 400, /^data is required$/);
    await bad({ transactionId: 'm1', partitionId: pid, data: null }, 400, /^data is required$/);
    await bad({ transactionId: 'm1', partitionId: 'not-a-uuid', data: {} }, 400, /partitionId must be a UUID/);
    await bad({ transactionId: 'm1', partitionId: 7, data: {} }, 400, /partitionId must be a UUID/);
    await bad({ transactionId: 'a\u0000b', partitionId: pid, data: {} }, 400, /NUL/);
    await bad({ transactionId: 'x'.repeat(256), partitionId: pid, data: {} }, 400, /transactionId/);
    await bad({ transactionId: 'm1', partitionId: pid, consumerGroup: 'g\u0000', data: {} }, 400, /NUL/);
    await bad({ transactionId: 'm1', partitionId: pid, eventType: 5, data: {} }, 400, /eventType/);
    await bad({ transactionId: 'm1', partitionId: pid, traceNames: [1], data: {} }, 400, /traceNames/);
    await bad({ transactionId: 'm1', partitionId: pid, traceNames: [''], data: {} }, 400, /trace name/);
    await bad({ transactionId: 'm1', partitionId: pid, traceNames: { a: 1 }, data: {} }, 400, /traceNames/);
    await bad({ transactionId: 'm1', partitionId: pid, traceNames: Array.from({ length: 33 }, (_, i) => `n${i}`), data: {} }, 400, /more than 32/);
    await bad({ transactionId: 'm1', partitionId: pid, data: {}, traceName: 'x' }, 400, /unknown field "traceName"/);
    const big = await bad({ transactionId: 'm1', partitionId: pid, data: 'x'.repeat(1024 * 1024) }, 413, /more than/);
    assert.equal(big.json.code, 'trace_data_too_large');
    // invalid UTF-8 in the body
    const utf = Buffer.concat([Buffer.from(`{"transactionId":"m1","partitionId":"${pid}","data":"`), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]);
    let r = await api(node.url, 'POST', '/api/v1/traces', new Uint8Array(utf));
    assert.equal(r.status, 400, r.text);
    await bad('{"transactionId":"m1",', 400, /Invalid JSON/);
    await bad('[1]', 400);
    // an unknown partition: 404 JSON, never 500
    r = await bad({ transactionId: 'm1', partitionId: NOPE, data: {} }, 404, /Partition not found/);
    assert.equal(r.json.code, 'partition_not_found');
    // reads
    r = await get(node.url, '/api/v1/traces/not-a-uuid/m1');
    assert.equal(r.status, 400, r.text);
    r = await get(node.url, `/api/v1/traces/${NOPE}/m1`);
    assert.deepEqual(r.json, { traces: [] });
    r = await get(node.url, `/api/v1/traces/${pid}/a%00b`);
    assert.equal(r.status, 400, r.text);
    r = await get(node.url, '/api/v1/traces/by-name/a%FFb');
    assert.equal(r.status, 400, r.text);
    r = await get(node.url, '/api/v1/traces/by-name/pg?limit=0');
    assert.equal(r.status, 400, r.text);
    r = await get(node.url, '/api/v1/traces/names?offset=-1');
    assert.equal(r.status, 400, r.text);
    // nothing of the refused ones was stored
    r = await get(node.url, `/api/v1/traces/${pid}/m1`);
    assert.equal(r.json.traces.length, 2);
  });

  test('the record must exist: unknown or deleted transactionIds are 404 message_not_found', async () => {
    const pr = await push([{ queue: 'tr4', partition: 'p', transactionId: 'k1', payload: { k: 1 } },
      { queue: 'tr4', partition: 'p', transactionId: 'k2', payload: { k: 2 } }]);
    const p4 = pr[0].partition_id;
    let r = await trace({ transactionId: 'never-pushed', partitionId: p4, traceNames: 'ex', data: 1 });
    assert.equal(r.status, 404, r.text);
    assert.deepEqual([r.json.code, r.json.error], ['message_not_found', 'Message not found']);
    // a message id names its record too (no dedup row for it: the lookup of GET /api/v1/messages)
    const popped = await get(node.url, '/api/v1/pop/queue/tr4?batch=2&wait=false&autoAck=true');
    const m2 = popped.json.messages[1];
    r = await trace({ transactionId: m2.id, partitionId: p4, traceNames: 'ex', data: 'by id' });
    assert.equal(r.status, 201, r.text);
    const byName = (await get(node.url, '/api/v1/traces/by-name/ex')).json;
    assert.deepEqual(byName.traces.map((t) => [t.transaction_id, t.message_payload]), [[m2.id, { k: 2 }]]);
    // a deleted record is not there any more
    assert.equal((await api(node.url, 'DELETE', `/api/v1/messages/${p4}/k1`)).json.success, true);
    r = await trace({ transactionId: 'k1', partitionId: p4, traceNames: 'ex', data: 2 });
    assert.deepEqual([r.status, r.json.code], [404, 'message_not_found']);
    assert.equal((await get(node.url, '/api/v1/traces/by-name/ex')).json.total, 1, 'nothing stored for the refused ones');
    // a consumer's trace under its lease is proven by the lease (and the framed pop's decimal id works too)
    await push([{ queue: 'tr4', partition: 'p', transactionId: 'k3', payload: { k: 3 } }]);
    const leased = await get(node.url, '/api/v1/pop/queue/tr4?consumerGroup=tg&batch=10&wait=false');
    const m3 = leased.json.messages.find((m) => m.transactionId === 'k3');
    r = await trace({ transactionId: 'k3', partitionId: m3.partitionId, consumerGroup: 'tg', traceNames: 'ex', data: 3 });
    assert.equal(r.status, 201, r.text);
  });

  test('concurrent traces share batches: each request gets its own answer', async () => {
    const pr = await push([{ queue: 'tr3', partition: 'a', transactionId: 'c1', payload: 1 },
      { queue: 'tr3b', partition: 'b', transactionId: 'c2', payload: 2 }]);
    // kind i % 4: c1 on its partition, c2 on its partition, an unknown partition, c2 on c1's
    // partition (no such record there: looked up after the batch, then 404)
    const cases = [[pr[0].partition_id, 'c1', 201], [pr[1].partition_id, 'c2', 201], [NOPE, 'c1', 404],
      [pr[0].partition_id, 'c2', 404]];
    const rs = await Promise.all([...Array(90)].map((_, i) => trace({ transactionId: cases[i % 4][1],
      partitionId: cases[i % 4][0], traceNames: ['conc'], data: { i } })));
    const ids = new Set();
    rs.forEach((r, i) => {
      assert.equal(r.status, cases[i % 4][2], r.text);
      if (i % 4 === 2) assert.equal(r.json.code, 'partition_not_found');
      else if (i % 4 === 3) assert.equal(r.json.code, 'message_not_found');
      else ids.add(r.json.traceId);
    });
    assert.equal(ids.size, 46);
    const all = (await get(node.url, '/api/v1/traces/by-name/conc?limit=1000')).json;
    assert.equal(all.total, 46);
    assert.deepEqual(new Set(all.traces.map((t) => t.id)), ids);
    // each trace is where its request put it, on its record
    for (const t of all.traces) {
      assert.deepEqual([t.partition_id, t.transaction_id], cases[t.data.i % 4].slice(0, 2));
      assert.equal(t.message_payload, t.transaction_id === 'c1' ? 1 : 2);
    }
  });

  test('traces go with their queue', async () => {
    const pr = await push([{ queue: 'tr2', transactionId: 'x1', payload: 1 }]);
    assert.equal((await trace({ transactionId: 'x1', partitionId: pr[0].partition_id, traceNames: 'gone', data: 1 })).status, 201);
    assert.equal((await get(node.url, '/api/v1/traces/by-name/gone')).json.total, 1);
    assert.equal((await api(node.url, 'DELETE', '/api/v1/resources/queues/tr2')).status, 200);
    assert.equal((await get(node.url, '/api/v1/traces/by-name/gone')).json.total, 0);
  });
});

describe('POST /api/v1/messages/:partitionId/:transactionId/retry', () => {
  test('requeues the newest dead letter, keeping its transactionId; refusals', async () => {
    const pr = await push([{ queue: 'rt1', partition: 'p', transactionId: 'r1', payload: { v: 1 } },
      { queue: 'rt1', partition: 'p', transactionId: 'r2', payload: { v: 2 } }]);
    const pid = pr[0].partition_id;
    const retry = (t, body = {}) => post(node.url, `/api/v1/messages/${pid}/${encodeURIComponent(t)}/retry`, body);
    let r = await retry('r1');
    assert.equal(r.status, 404, r.text);
    assert.equal(r.json.code, 'no_failed_message');
    const p = await get(node.url, '/api/v1/pop/queue/rt1?batch=1');
    assert.equal(p.status, 200, p.text);
    const m = p.json.messages[0];
    assert.equal(m.transactionId, 'r1');
    r = await post(node.url, '/api/v1/ack', { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'dlq' });
    assert.equal(r.status, 200, r.text);
    r = await retry('r1');
    assert.equal(r.status, 201, r.text);
    assert.equal(r.json.requeued, true);
    assert.equal(r.json.transactionId, 'r1');
    assert.equal(r.json.offset, 2);
    assert.equal(r.json.partitionId, pid);
    // once only: the dead letter is requeued
    r = await retry('r1');
    assert.equal(r.status, 404, r.text);
    // the copy is delivered after r2
    const q = await get(node.url, '/api/v1/pop/queue/rt1?batch=5');
    assert.deepEqual(q.json.messages.map((x) => [x.transactionId, x.data.v]), [['r2', 2], ['r1', 1]]);
    r = await post(node.url, `/api/v1/messages/not-a-uuid/r1/retry`, {});
    assert.equal(r.status, 400, r.text);
    r = await post(node.url, `/api/v1/messages/${NOPE}/r1/retry`, {});
    assert.equal(r.status, 404, r.text);
    assert.equal(r.json.code, 'partition_not_found');
    r = await retry('r1', { keepTransactionId: false });
    assert.equal(r.status, 400, r.text);
    r = await post(node.url, `/api/v1/messages/${pid}/a%00b/retry`, {});
    assert.equal(r.status, 400, r.text);
  });
});

describe('tenants: traces and the new admin reads see only the caller\'s tenant', () => {
  const SECRET = 'trace-tenant-secret-of-at-least-32-bytes';
  const tok = (tenant) => bearer(sign('HS256', SECRET, { sub: 's', role: 'admin', exp: nowS() + 600, tenant }));
  const A = tok('aaaaaaaa-0000-4000-8000-00000000000a'), B = tok('bbbbbbbb-0000-4000-8000-00000000000b');
  let jn;
  before(async () => { jn = await startQueen({ env: { JWT_ENABLED: 'true', JWT_SECRET: SECRET } }); });
  after(async () => { if (jn) { await jn.stop(); rmrf(jn.data); } });

  test('B cannot add to, read or retry A\'s', async () => {
    let r = await post(jn.url, '/api/v1/push', { items: [{ queue: 'tq', transactionId: 'a1', payload: 1 }] }, A);
    assert.equal(r.status, 201, r.text);
    const pid = r.json[0].partition_id;
    const body = { transactionId: 'a1', partitionId: pid, traceNames: ['secret'], data: { x: 1 } };
    assert.equal((await post(jn.url, '/api/v1/traces', body, A)).status, 201);
    r = await post(jn.url, '/api/v1/traces', body, B);
    assert.equal(r.status, 404, r.text);
    assert.deepEqual((await get(jn.url, `/api/v1/traces/${pid}/a1`, B)).json, { traces: [] });
    assert.equal((await get(jn.url, `/api/v1/traces/${pid}/a1`, A)).json.traces.length, 1);
    assert.equal((await get(jn.url, '/api/v1/traces/by-name/secret', B)).json.total, 0);
    assert.equal((await get(jn.url, '/api/v1/traces/by-name/secret', A)).json.total, 1);
    assert.deepEqual((await get(jn.url, '/api/v1/traces/names', B)).json.trace_names, []);
    assert.equal((await get(jn.url, '/api/v1/traces/names', A)).json.total, 1);
    r = await post(jn.url, `/api/v1/messages/${pid}/a1/retry`, {}, B);
    assert.equal(r.status, 404, r.text);
    assert.equal(r.json.code, 'partition_not_found');
    assert.equal((await get(jn.url, '/api/v1/resources/queues/tq/depth', B)).status, 404);
    assert.equal((await get(jn.url, '/api/v1/resources/queues/tq/depth', A)).json.pending, 1);
    assert.deepEqual((await get(jn.url, '/api/v1/resources/partitions', B)).json.partitions, []);
    const sb = (await get(jn.url, '/api/v1/status', B)).json;
    assert.deepEqual(sb.queues, []);
    assert.equal(sb.messages.total, 0);
    assert.equal(sb.throughput.reduce((n, p) => n + p.ingested, 0), 0);
    assert.equal((await get(jn.url, '/api/v1/status', A)).json.messages.total, 1);
    assert.equal((await get(jn.url, '/api/v1/status/analytics', B)).json.dataPoints.reduce((n, p) => n + p.messages, 0), 0);
    // no token: refused before anything
    assert.equal((await post(jn.url, '/api/v1/traces', body)).status, 401);
  });
});

describe('trace GC: traces of records retention removed are deleted, the others kept', () => {
  let rn;
  before(async () => { rn = await startQueen({ env: { RETENTION_INTERVAL: '300', EVICTION_INTERVAL: '300' } }); });
  after(async () => { if (rn) { await rn.stop(); rmrf(rn.data); } });

  test('after retention moves the start past the trace, the next maintenance round deletes it', async () => {
    assert.equal((await post(rn.url, '/api/v1/configure', { queue: 'gc-ret', options: { retentionEnabled: true, retentionSeconds: 1 } })).status, 200);
    const a = (await post(rn.url, '/api/v1/push', { items: [{ queue: 'gc-ret', transactionId: 'old', payload: 1 }] })).json[0];
    const k = (await post(rn.url, '/api/v1/push', { items: [{ queue: 'gc-keep', transactionId: 'kept', payload: 1 }] })).json[0];
    for (const [m, t] of [[a, 'old'], [k, 'kept']]) {
      const r = await post(rn.url, '/api/v1/traces', { transactionId: t, partitionId: m.partition_id, traceNames: 'gc', data: { t } });
      assert.equal(r.status, 201, r.text);
    }
    assert.equal((await get(rn.url, '/api/v1/traces/by-name/gc')).json.total, 2);
    // retention (1 s) removes 'old'; the first maintenance round runs 5 s after boot, then every 30 s
    const deadline = Date.now() + 50000;
    let names;
    for (;;) {
      names = (await get(rn.url, '/api/v1/traces/by-name/gc')).json;
      if (names.total === 1 || Date.now() > deadline) break;
      await new Promise((res) => setTimeout(res, 500));
    }
    assert.deepEqual(names.traces.map((t) => t.transaction_id), ['kept']);
    assert.deepEqual((await get(rn.url, `/api/v1/traces/${a.partition_id}/old`)).json, { traces: [] });
    const m = await get(rn.url, '/metrics/prometheus');
    assert.match(m.text, /queen_traces_deleted_total 1/);
  });
});
