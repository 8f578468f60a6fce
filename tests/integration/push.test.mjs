// Push → fetch on the real binary with its embedded PostgreSQL: byte-exact payloads, dense
// offsets, one stamp per push, deduplication, and bad input that stores nothing.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { get, post, readQueue, rmrf, startQueen } from './harness.mjs';

let node;
before(async () => { node = await startQueen(); });
after(async () => { if (node) { await node.stop(); rmrf(node.data); } });

// Every record of a queue through the 2.x reads (harness.mjs): records, their raw payload
// texts (raws), the partitions' bounds.
async function fetchAll(queue) {
  const f = await readQueue(node.url, queue);
  assert.ok(f.found, `queue ${queue} not found`);
  return f;
}

describe('byte-exact payloads', () => {
  const payloads = [
    '{"order":1,"status":"new","total":42.00}',
    '{\n  "pretty" : [ 1 ,  2 ],\n\t"x": {"y" :null}\n}',
    '1e10', '-0', '0.10', '12345678901234567890123', '3.141592653589793238462643383279',
    '"caf\\u00e9 \\ud83d\\ude00 \\n \\"quoted\\""', '"raw UTF-8: café ☕ 😀"', 'null', 'true', 'false',
    '[]', '{}', '[1,"two",{"three":[3.0]}]', '"\\/slashes\\/"', '{"a":{"b":{"c":{"d":{"e":[[[[]]]]}}}}}',
  ];
  test('every payload comes back exactly as it was sent', async () => {
    const items = payloads.map((p, i) => `{"queue":"exact","partition":"p${i % 3}","payload":${p}}`);
    const body = `{"items":[${items.join(',')}]}`;
    const r = await post(node.url, '/api/v1/push', body);
    assert.equal(r.status, 201, r.text);
    assert.equal(r.json.length, payloads.length);
    for (const it of r.json) assert.equal(it.status, 'queued');
    const f = await fetchAll('exact');
    const recs = f.records;
    const raws = f.raws;
    assert.equal(raws.length, payloads.length);
    // records come sorted by partition then offset: map them back through transactionIds
    const byTxn = new Map(r.json.map((it, i) => [it.transaction_id, payloads[i]]));
    recs.forEach((rec, i) => assert.equal(raws[i], byTxn.get(rec.transactionId), `record ${i}`));
  });

  test('a missing payload reads back as null', async () => {
    const r = await post(node.url, '/api/v1/push', { items: [{ queue: 'nopayload' }] });
    assert.equal(r.status, 201, r.text);
    const f = await fetchAll('nopayload');
    assert.equal(f.records.length, 1);
    assert.equal(f.records[0].payload, null);
    assert.deepEqual(f.raws, ['null']);
  });

  test('a large payload round-trips', async () => {
    const big = JSON.stringify({ blob: 'x'.repeat(300000), n: 1.50 }).replace('"n":1.5', '"n":1.50');
    const r = await post(node.url, '/api/v1/push', `{"items":[{"queue":"big","payload":${big}}]}`);
    assert.equal(r.status, 201, r.text);
    const f = await fetchAll('big');
    assert.equal(f.raws[0], big);
  });
});

describe('offsets and stamps', () => {
  test('offsets are dense per partition and a push has one stamp', async () => {
    const items = [];
    for (let i = 0; i < 30; i++) items.push({ queue: 'dense', partition: `p${i % 3}`, payload: { i } });
    const r1 = await post(node.url, '/api/v1/push', { items });
    assert.equal(r1.status, 201);
    const r2 = await post(node.url, '/api/v1/push', { items: items.slice(0, 6) });
    assert.equal(r2.status, 201);
    const f = await fetchAll('dense');
    const byPart = {};
    for (const rec of f.records) (byPart[rec.partition] ||= []).push(rec);
    for (const [p, recs] of Object.entries(byPart)) {
      assert.deepEqual(recs.map((x) => x.offset), [...Array(recs.length).keys()], `partition ${p}`);
      // the first 10 records of each partition came from push 1, the rest from push 2
      const firstTs = new Set(recs.slice(0, 10).map((x) => x.ts));
      const secondTs = new Set(recs.slice(10).map((x) => x.ts));
      assert.equal(firstTs.size, 1);
      assert.equal(secondTs.size, 1);
      assert.ok([...secondTs][0] > [...firstTs][0]);
      // payload order within a partition is push order
      assert.deepEqual(recs.slice(0, 10).map((x) => x.payload.i), [0, 3, 6, 9, 12, 15, 18, 21, 24, 27].map((v) => v + Number(p.slice(1))));
    }
    const st = f.partitions.find((x) => x.partition === 'p0');
    assert.equal(st.endOffset, 12);
    assert.equal(st.startOffset, 0);
  });

  test('stamps are microseconds near now and never decrease in push order', async () => {
    let last = 0;
    for (let i = 0; i < 20; i++) {
      const r = await post(node.url, '/api/v1/push', { items: [{ queue: 'mono', payload: i }] });
      assert.equal(r.status, 201);
    }
    const f = await fetchAll('mono');
    const now = Date.now() * 1000;
    for (const rec of f.records) {
      assert.ok(Math.abs(rec.ts - now) < 120e6, `ts ${rec.ts} not near now ${now}`);
      assert.ok(rec.ts > last);
      last = rec.ts;
    }
  });

  test('the response shape matches the earlier release', async () => {
    const r = await post(node.url, '/api/v1/push', { items: [
      { queue: 'shape', partition: 'a', payload: 1, traceId: '0190C2D4-0000-7000-8000-000000000001' },
      { queue: 'shape', partition: 'a', payload: 2 }] });
    assert.equal(r.status, 201);
    const [a, b] = r.json;
    assert.deepEqual(Object.keys(a), ['index', 'transaction_id', 'status', 'message_id', 'partition_id', 'trace_id', 'queueName']);
    assert.equal(a.index, 0);
    assert.equal(b.index, 1);
    assert.equal(a.trace_id, '0190c2d4-0000-7000-8000-000000000001');
    assert.equal(b.trace_id, null);
    assert.equal(a.queueName, 'shape');
    assert.match(a.message_id, /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.match(a.transaction_id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.notEqual(a.message_id, b.message_id);
    assert.equal(a.partition_id, b.partition_id);
    const f = await fetchAll('shape');
    assert.equal(f.records[0].traceId, '0190c2d4-0000-7000-8000-000000000001');
  });

  test('an empty items array answers 201 []', async () => {
    const r = await post(node.url, '/api/v1/push', { items: [] });
    assert.equal(r.status, 201);
    assert.deepEqual(r.json, []);
  });
});

describe('deduplication', () => {
  test('a transactionId seen again answers duplicate and stores nothing', async () => {
    const r1 = await post(node.url, '/api/v1/push', { items: [{ queue: 'dd', partition: 'x', transactionId: 'order-1', payload: { v: 1 } }] });
    assert.equal(r1.json[0].status, 'queued');
    const r2 = await post(node.url, '/api/v1/push', { items: [{ queue: 'dd', partition: 'x', transactionId: 'order-1', payload: { v: 2 } }] });
    assert.equal(r2.status, 201);
    assert.equal(r2.json[0].status, 'duplicate');
    assert.equal(r2.json[0].message_id, r1.json[0].message_id);
    assert.equal(r2.json[0].transaction_id, 'order-1');
    const f = await fetchAll('dd');
    assert.equal(f.records.length, 1);
    assert.deepEqual(f.records[0].payload, { v: 1 });
  });

  test('the same transactionId in another partition is a different record', async () => {
    const r = await post(node.url, '/api/v1/push', { items: [
      { queue: 'dd2', partition: 'a', transactionId: 't', payload: 1 },
      { queue: 'dd2', partition: 'b', transactionId: 't', payload: 2 },
      { queue: 'dd2b', partition: 'a', transactionId: 't', payload: 3 }] });
    assert.deepEqual(r.json.map((x) => x.status), ['queued', 'queued', 'queued']);
  });

  test('repeats inside one request: the first wins', async () => {
    const r = await post(node.url, '/api/v1/push', { items: [
      { queue: 'dd3', transactionId: 'k', payload: 'first' },
      { queue: 'dd3', transactionId: 'other', payload: 'x' },
      { queue: 'dd3', transactionId: 'k', payload: 'second' }] });
    assert.deepEqual(r.json.map((x) => x.status), ['queued', 'queued', 'duplicate']);
    assert.equal(r.json[2].message_id, r.json[0].message_id);
    const f = await fetchAll('dd3');
    assert.deepEqual(f.records.map((x) => x.payload), ['first', 'x']);
    assert.deepEqual(f.records.map((x) => x.offset), [0, 1]);
  });

  test('a request mixing new and known ids stores only the new ones, densely', async () => {
    await post(node.url, '/api/v1/push', { items: [{ queue: 'dd4', transactionId: 'a', payload: 1 }] });
    const r = await post(node.url, '/api/v1/push', { items: [
      { queue: 'dd4', transactionId: 'b', payload: 2 },
      { queue: 'dd4', transactionId: 'a', payload: 99 },
      { queue: 'dd4', transactionId: 'c', payload: 3 }] });
    assert.deepEqual(r.json.map((x) => x.status), ['queued', 'duplicate', 'queued']);
    const f = await fetchAll('dd4');
    assert.deepEqual(f.records.map((x) => [x.offset, x.payload]), [[0, 1], [1, 2], [2, 3]]);
  });

  test('concurrent pushes of one transactionId: exactly one is queued', async () => {
    const reqs = [];
    for (let i = 0; i < 20; i++) {
      reqs.push(post(node.url, '/api/v1/push', { items: [{ queue: 'race', transactionId: 'same', payload: i }] }));
    }
    const res = await Promise.all(reqs);
    const statuses = res.map((r) => r.json[0].status);
    assert.equal(statuses.filter((s) => s === 'queued').length, 1, statuses.join());
    assert.equal(new Set(res.map((r) => r.json[0].message_id)).size, 1);
    const f = await fetchAll('race');
    assert.equal(f.records.length, 1);
  });
});

describe('bad input answers 4xx and stores nothing', () => {
  const cases = [
    ['malformed JSON', '{"items":[{"queue":"bad1","payload":{]}', 400, /^Invalid JSON: /],
    ['trailing garbage', '{"items":[]} x', 400, /^Invalid JSON: /],
    ['empty body', '', 400, /^Empty request body$/],
    ['not an object', '[1,2]', 400, /JSON object/],
    ['items missing', '{"item":[]}', 400, /^items array is required$/],
    ['items not an array', '{"items":{"queue":"bad1"}}', 400, /^items array is required$/],
    ['item not an object', '{"items":[1]}', 400, /must be an object/],
    ['queue missing', '{"items":[{"payload":1}]}', 400, /^Queue must be a string$/],
    ['queue not a string', '{"items":[{"queue":5}]}', 400, /^Queue must be a string$/],
    ['queue empty', '{"items":[{"queue":""}]}', 400, /Queue name/],
    ['queue too long', JSON.stringify({ items: [{ queue: 'q'.repeat(256) }] }), 400, /Queue name/],
    ['partition not a string', '{"items":[{"queue":"bad1","partition":1}]}', 400, /^Partition must be a string$/],
    ['transactionId not a string', '{"items":[{"queue":"bad1","transactionId":7}]}', 400, /^TransactionId must be a string$/],
    ['transactionId too long', JSON.stringify({ items: [{ queue: 'bad1', transactionId: 't'.repeat(256) }] }), 400, /TransactionId/],
    ['traceId not a string', '{"items":[{"queue":"bad1","traceId":true}]}', 400, /^TraceId must be a string$/],
    ['traceId not a UUID', '{"items":[{"queue":"bad1","traceId":"nope"}]}', 400, /TraceId must be a UUID/],
    ['NUL in a queue name', '{"items":[{"queue":"bad\\u0000x"}]}', 400, /Queue name/],
    ['invalid UTF-8', Buffer.from([0x7b, 0x22, 0x69, 0x74, 0x65, 0x6d, 0x73, 0x22, 0x3a, 0x5b, 0x7b, 0x22, 0x71, 0x75, 0x65, 0x75, 0x65, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d, 0x5d, 0x7d]), 400, /^Invalid JSON: invalid UTF-8/],
  ];
  for (const [name, body, status, msg] of cases) {
    test(name, async () => {
      const r = await post(node.url, '/api/v1/push', body);
      assert.equal(r.status, status, r.text);
      assert.equal(typeof r.json.error, 'string');
      assert.match(r.json.error, msg);
    });
  }

  test('one bad item rejects the whole request', async () => {
    const r = await post(node.url, '/api/v1/push', { items: [{ queue: 'bad1', payload: 1 }, { queue: 'bad1', partition: 3 }] });
    assert.equal(r.status, 400);
  });

  test('after all of it, queue bad1 does not exist', async () => {
    const r = await post(node.url, '/api/v1/partitions/changed', { entries: [{ queue: 'bad1' }] });
    assert.equal(r.json.entries[0].error, 'UNKNOWN_TOPIC_OR_PARTITION', r.text);
    assert.equal((await readQueue(node.url, 'bad1')).found, false);
  });

  test('an oversized body gets 413 with a JSON error', async () => {
    const small = await startQueen({ env: { QUEEN_MAX_BODY_BYTES: '4096' } });
    try {
      for (const size of [5000, 200000]) {
        const body = JSON.stringify({ items: [{ queue: 'toolarge', payload: 'x'.repeat(size) }] });
        const r = await post(small.url, '/api/v1/push', body);
        assert.equal(r.status, 413);
        assert.match(r.json.error, /larger than the limit of 4096 bytes/);
      }
      assert.equal((await readQueue(small.url, 'toolarge')).found, false);
      const ok = await post(small.url, '/api/v1/push', { items: [{ queue: 'fits', payload: 1 }] });
      assert.equal(ok.status, 201);
    } finally {
      await small.stop();
      rmrf(small.data);
    }
  });
});

test('unknown routes and methods answer JSON errors', async () => {
  const a = await get(node.url, '/api/v1/nope');
  assert.equal(a.status, 404);
  assert.deepEqual(a.json, { error: 'Not found', code: 'not_found' });
  const b = await get(node.url, '/api/v1/push');
  assert.equal(b.status, 405);
  assert.match(b.json.error, /not allowed/);
});
