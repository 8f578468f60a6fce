// The lease-free reads in the 2.x shape, at the wire, for the edges the 2.x client does not
// exercise: POST /api/v1/fetch (entries, budgets, limits, OFFSET_OUT_OF_RANGE after retention,
// UNKNOWN_TOPIC_OR_PARTITION) and POST /api/v1/partitions/changed (paging with next, since,
// the safeTime spelling). tests/py/test_reads.py drives both through the real client.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { isoToUs, listPartitions, post, rawPayloads, readQueue, rmrf, sleep, startQueen } from './harness.mjs';

let node;
before(async () => { node = await startQueen({ env: { RETENTION_INTERVAL: '300' } }); });
after(async () => { if (node) { await node.stop(); rmrf(node.data); } });

const ISO_US = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;
const push = async (items) => {
  const r = await post(node.url, '/api/v1/push', { items });
  assert.equal(r.status, 201, r.text);
  return r.json;
};
const fetchE = (entries, extra = {}) => post(node.url, '/api/v1/fetch', { entries, ...extra });
const changed = (entries) => post(node.url, '/api/v1/partitions/changed', { entries });

describe('fetch', () => {
  before(async () => {
    const items = [];
    for (let i = 0; i < 50; i++) items.push({ queue: 'f', partition: `p${i % 5}`, payload: { i, pad: 'x'.repeat(100) } });
    await push(items);
    await push(items.slice(0, 5));
  });

  test('one partition from an offset: the record and entry shapes', async () => {
    const r = await fetchE([{ queue: 'f', partition: 'p2', offset: 4, maxBytes: 1 << 20 }], { maxBytes: 1 << 20 });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(Object.keys(r.json), ['entries']);
    assert.equal(r.json.entries.length, 1);
    const e = r.json.entries[0];
    assert.deepEqual(Object.keys(e), ['records', 'highWatermark', 'logStartOffset']);
    assert.deepEqual(e.records.map((x) => x.offset), [4, 5, 6, 7, 8, 9, 10]);
    assert.deepEqual(Object.keys(e.records[0]), ['offset', 'transactionId', 'payload', 'ts', 'traceId', 'producerSub']);
    assert.match(e.records[0].ts, ISO_US);
    assert.ok(Math.abs(isoToUs(e.records[0].ts) - Date.now() * 1000) < 120e6);
    assert.deepEqual(e.records[0].payload, { i: 22, pad: 'x'.repeat(100) });
    assert.equal(e.highWatermark, 11);
    assert.equal(e.logStartOffset, 0);
  });

  test('exactly one entry per entry asked, in order, whatever each one names', async () => {
    const r = await fetchE([
      { queue: 'f', partition: 'p1', offset: 10 },
      { queue: 'f', partition: 'nope', offset: 0 },
      { queue: 'no-such-queue', partition: 'p1', offset: 0 },
      { queue: 'f', partition: 'p1', offset: 10 },
      { queue: 'f', partition: 'p3', offset: 11 },
      { queue: 'f', partition: 'p3', offset: 12 },
    ]);
    assert.equal(r.status, 200, r.text);
    const es = r.json.entries;
    assert.equal(es.length, 6);
    assert.deepEqual(es[0].records.map((x) => x.offset), [10]);
    for (const k of [1, 2]) {
      assert.deepEqual(es[k], { records: [], highWatermark: 0, logStartOffset: 0, error: 'UNKNOWN_TOPIC_OR_PARTITION' });
    }
    assert.deepEqual(es[3], es[0]);
    // at the high watermark: nothing yet, not an error; past it: out of range
    assert.deepEqual(es[4], { records: [], highWatermark: 11, logStartOffset: 0 });
    assert.deepEqual(es[5], { records: [], highWatermark: 11, logStartOffset: 0, error: 'OFFSET_OUT_OF_RANGE' });
  });

  test('an entry budget stops its records; the first record of a call always goes', async () => {
    const r = await fetchE([
      { queue: 'f', partition: 'p0', offset: 0, maxBytes: 1 },
      { queue: 'f', partition: 'p1', offset: 0, maxBytes: 1 },
      { queue: 'f', partition: 'p2', offset: 0, maxBytes: 250 },
    ]);
    const es = r.json.entries;
    assert.equal(es[0].records.length, 1, 'the first record of the call, over its entry budget');
    assert.equal(es[1].records.length, 0, 'over its budget and not the first: none');
    assert.equal(es[1].error, undefined);
    assert.equal(es[2].records.length, 2, 'two records of ~110 bytes fit 250');
  });

  test('the call ceiling is shared: entries after it is spent come back empty', async () => {
    const r = await fetchE([
      { queue: 'f', partition: 'p0', offset: 0 },
      { queue: 'f', partition: 'p1', offset: 0 },
      { queue: 'f', partition: 'p2', offset: 0 },
    ], { maxBytes: 600 });
    const es = r.json.entries;
    const raws = rawPayloads(r.text);
    const bytes = raws.reduce((n, t) => n + Buffer.byteLength(t), 0);
    assert.ok(bytes <= 600, `${bytes} payload bytes in a call of 600`);
    assert.equal(es[0].records.length, 5);
    assert.equal(es[1].records.length, 0);
    assert.equal(es[2].records.length, 0);
    assert.equal(es[1].highWatermark, 11, 'an empty entry still says where its log ends');
  });

  test('asking again from one past the last record reads everything, as the client loops', async () => {
    const all = await readQueue(node.url, 'f', { maxBytes: 300 });
    assert.ok(all.calls > 10, `${all.calls} calls`);
    assert.equal(all.records.length, 55);
    for (let p = 0; p < 5; p++) {
      const recs = all.records.filter((x) => x.partition === `p${p}`);
      assert.deepEqual(recs.map((x) => x.offset), [...Array(11).keys()]);
    }
  });

  test('budgets past the ceilings are clamped, not refused', async () => {
    const r = await fetchE([{ queue: 'f', partition: 'p4', offset: 0, maxBytes: 1e12 }], { maxBytes: 1e30 });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.entries[0].records.length, 11);
  });

  test('1024 entries are read, 1025 refused', async () => {
    const entries = [...Array(1024).keys()].map((i) => ({ queue: 'f', partition: `p${i % 5}`, offset: 10 }));
    const r = await fetchE(entries);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.entries.length, 1024);
    assert.ok(r.json.entries.every((e) => e.records.length === 1 && e.records[0].offset === 10));
    const big = await fetchE([...entries, { queue: 'f', partition: 'p0', offset: 0 }]);
    assert.equal(big.status, 400, big.text);
    assert.equal(big.json.code, 'too_many_entries');
  });

  test('no entries, no answers', async () => {
    const r = await fetchE([]);
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { entries: [] });
  });

  test('entries of a large call share the statement: each reads at least four segments', async () => {
    // ten pushes of one record each: ten segments of partition seg
    for (let i = 0; i < 10; i++) await push([{ queue: 'seg', partition: 'one', payload: i }]);
    const entries = [{ queue: 'seg', partition: 'one', offset: 0 }];
    for (let i = 1; i < 1024; i++) entries.push({ queue: 'seg', partition: `missing-${i}`, offset: 0 });
    const r = await fetchE(entries);
    assert.deepEqual(r.json.entries[0].records.map((x) => x.payload), [0, 1, 2, 3]);
    assert.equal(r.json.entries[0].highWatermark, 10);
    // alone, the entry gets every segment
    const one = await fetchE([entries[0]]);
    assert.equal(one.json.entries[0].records.length, 10);
  });

  test('one call answers at most 100,000 records', async () => {
    const items = [...Array(100005).keys()].map((i) => ({ queue: 'many', partition: 'm', payload: i % 10 }));
    for (let i = 0; i < items.length; i += 20000) await push(items.slice(i, i + 20000));
    const r = await fetchE([{ queue: 'many', partition: 'm', offset: 0 }]);
    assert.equal(r.status, 200);
    const e = r.json.entries[0];
    assert.equal(e.records.length, 100000);
    assert.equal(e.records[99999].offset, 99999);
    assert.equal(e.highWatermark, 100005);
    const rest = await fetchE([{ queue: 'many', partition: 'm', offset: 100000 }]);
    assert.deepEqual(rest.json.entries[0].records.map((x) => x.offset), [100000, 100001, 100002, 100003, 100004]);
  });

  test('an offset below the log start after retention: OFFSET_OUT_OF_RANGE, then read from logStartOffset', async () => {
    await post(node.url, '/api/v1/configure', { queue: 'ret', options: { retentionEnabled: true, retentionSeconds: 1 } });
    await push([...Array(5).keys()].map((i) => ({ queue: 'ret', partition: 'r', payload: { old: i } })));
    await sleep(1300);
    await push([...Array(3).keys()].map((i) => ({ queue: 'ret', partition: 'r', payload: { new: i } })));
    let e;
    for (let t = 0; t < 60; t++) {
      e = (await fetchE([{ queue: 'ret', partition: 'r', offset: 0 }])).json.entries[0];
      if (e.error) break;
      await sleep(150);
    }
    assert.deepEqual(e, { records: [], highWatermark: 8, logStartOffset: 5, error: 'OFFSET_OUT_OF_RANGE' });
    const from = (await fetchE([{ queue: 'ret', partition: 'r', offset: e.logStartOffset }])).json.entries[0];
    assert.deepEqual(from.records.map((x) => [x.offset, x.payload]), [[5, { new: 0 }], [6, { new: 1 }], [7, { new: 2 }]]);
    // the client's loop restarts there by itself
    const all = await readQueue(node.url, 'ret');
    assert.deepEqual(all.records.map((x) => x.offset), [5, 6, 7]);
  });

  const bad = [
    ['the 0.15 body', { queue: 'f', partition: 'p1', fromOffset: 0 }, /unknown field "queue"/],
    ['entries missing', {}, /entries is required/],
    ['entries not an array', { entries: { queue: 'f' } }, /entries is required/],
    ['an entry not an object', { entries: [1] }, /entries\[0\] must be an object/],
    ['an unknown entry field', { entries: [{ queue: 'f', partition: 'p', offset: 0, maxRecords: 3 }] }, /entries\[0\]: unknown field "maxRecords"/],
    ['an unknown top-level field', { entries: [], maxTs: 5 }, /unknown field "maxTs"/],
    ['queue missing', { entries: [{ partition: 'p' }] }, /entries\[0\]\.queue is required/],
    ['queue empty', { entries: [{ queue: '', partition: 'p' }] }, /queue is required/],
    ['queue not a string', { entries: [{ queue: 5, partition: 'p' }] }, /queue is required/],
    ['queue with NUL', { entries: [{ queue: 'a\u0000b', partition: 'p' }] }, /queue is required/],
    ['partition missing', { entries: [{ queue: 'f' }] }, /partition is required/],
    ['partition not a string', { entries: [{ queue: 'f', partition: 3 }] }, /partition is required/],
    ['offset negative', { entries: [{ queue: 'f', partition: 'p', offset: -1 }] }, /offset must be an integer >= 0/],
    ['offset a string', { entries: [{ queue: 'f', partition: 'p', offset: '3' }] }, /offset must be/],
    ['offset fractional', { entries: [{ queue: 'f', partition: 'p', offset: 1.5 }] }, /offset must be/],
    ['entry maxBytes 0', { entries: [{ queue: 'f', partition: 'p', maxBytes: 0 }] }, /maxBytes must be a positive integer/],
    ['call maxBytes a string', { entries: [], maxBytes: 'x' }, /maxBytes must be a positive integer/],
    ['call maxBytes negative', { entries: [], maxBytes: -5 }, /maxBytes must be a positive integer/],
  ];
  for (const [name, body, msg] of bad) {
    test(`refused: ${name}`, async () => {
      const r = await post(node.url, '/api/v1/fetch', body);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.code, 'invalid_request');
      assert.match(r.json.error, msg);
    });
  }
});

describe('partitions/changed', () => {
  test('the shapes, creation order, and paging with next', async () => {
    // created in the order c11, c10, ..., c00: the pages follow it, not the names
    for (let i = 11; i >= 0; i--) await push([{ queue: 'ch', partition: `c${String(i).padStart(2, '0')}`, payload: i }]);
    await push([{ queue: 'ch', partition: 'c05', payload: 'again' }]);
    const r = await changed([{ queue: 'ch', limit: 5 }]);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(Object.keys(r.json), ['safeTime', 'entries']);
    assert.match(r.json.safeTime, ISO_US);
    const e = r.json.entries[0];
    assert.deepEqual(Object.keys(e), ['partitions', 'next']);
    assert.deepEqual(e.partitions.map((p) => p.name), ['c11', 'c10', 'c09', 'c08', 'c07']);
    const p = e.partitions[0];
    assert.deepEqual(Object.keys(p), ['name', 'id', 'lastOffset', 'logStart', 'lastWriteAt']);
    assert.match(p.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.equal(p.lastOffset, 0);
    assert.equal(p.logStart, 0);
    assert.match(p.lastWriteAt, ISO_US);
    assert.ok(r.json.safeTime >= p.lastWriteAt, 'fixed-width stamps compare as strings');
    assert.equal(typeof e.next, 'string');
    const r2 = await changed([{ queue: 'ch', limit: 5, after: e.next }]);
    assert.deepEqual(r2.json.entries[0].partitions.map((x) => x.name), ['c06', 'c05', 'c04', 'c03', 'c02']);
    assert.equal(r2.json.entries[0].partitions[1].lastOffset, 1);
    const r3 = await changed([{ queue: 'ch', limit: 5, after: r2.json.entries[0].next }]);
    assert.deepEqual(r3.json.entries[0].partitions.map((x) => x.name), ['c01', 'c00']);
    assert.equal(r3.json.entries[0].next, null);
    // the default page holds them all; a page larger than 1000 is clamped, not refused
    const all = await changed([{ queue: 'ch' }, { queue: 'ch', limit: 100000 }]);
    assert.equal(all.status, 200, all.text);
    for (const x of all.json.entries) {
      assert.equal(x.partitions.length, 12);
      assert.equal(x.next, null);
    }
  });

  test('an exactly full page has no next: the broker looks one past it', async () => {
    await push([{ queue: 'exact', partition: 'a', payload: 1 }, { queue: 'exact', partition: 'b', payload: 1 }]);
    const r = await changed([{ queue: 'exact', limit: 2 }]);
    assert.equal(r.json.entries[0].partitions.length, 2);
    assert.equal(r.json.entries[0].next, null, 'exactly full: the broker looked one past the page');
  });

  test('since is inclusive; safeTime as the next since sees only what changed after', async () => {
    await push([{ queue: 'since', partition: 'a', payload: 1 }]);
    await sleep(20);
    await push([{ queue: 'since', partition: 'b', payload: 1 }]);
    const first = await changed([{ queue: 'since' }]);
    const [a, b] = first.json.entries[0].partitions;
    assert.ok(a.lastWriteAt < b.lastWriteAt);
    const fromB = await changed([{ queue: 'since', since: b.lastWriteAt }]);
    assert.deepEqual(fromB.json.entries[0].partitions.map((p) => p.name), ['b']);
    const s = first.json.safeTime;
    const quiet = await changed([{ queue: 'since', since: s }]);
    // nothing stamped after s; a partition last written exactly at s may be listed again
    for (const p of quiet.json.entries[0].partitions) assert.equal(p.lastWriteAt, s);
    await push([{ queue: 'since', partition: 'a', payload: 2 }]);
    const moved = await changed([{ queue: 'since', since: s }]);
    const names = moved.json.entries[0].partitions.filter((p) => p.lastWriteAt > s).map((p) => [p.name, p.lastOffset]);
    assert.deepEqual(names, [['a', 1]]);
    // other spellings of an ISO time are read too
    const off = await changed([{ queue: 'since', since: '2000-01-01T01:00:00+01:00' }]);
    assert.equal(off.json.entries[0].partitions.length, 2);
  });

  test('safeTime keeps moving on a quiet queue, always spelled with six fraction digits', async () => {
    await push([{ queue: 'quiet', payload: 1 }]);
    const a = await changed([{ queue: 'quiet' }]);
    await sleep(600);
    const b = await changed([{ queue: 'quiet' }]);
    assert.match(a.json.safeTime, ISO_US);
    assert.match(b.json.safeTime, ISO_US);
    assert.ok(isoToUs(b.json.safeTime) > isoToUs(a.json.safeTime) + 300000, `${a.json.safeTime} → ${b.json.safeTime}`);
    assert.ok(b.json.safeTime > a.json.safeTime);
    assert.ok(Date.now() * 1000 - isoToUs(b.json.safeTime) < 5e6);
    for (let i = 0; i < 20; i++) assert.match((await changed([{ queue: 'quiet' }])).json.safeTime, ISO_US);
  });

  test('an unknown queue: UNKNOWN_TOPIC_OR_PARTITION, and no safeTime of its own', async () => {
    const r = await changed([{ queue: 'nope' }]);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json, { safeTime: null, entries: [{ partitions: [], next: null, error: 'UNKNOWN_TOPIC_OR_PARTITION' }] });
    const both = await changed([{ queue: 'nope' }, { queue: 'quiet' }]);
    assert.match(both.json.safeTime, ISO_US);
    assert.equal(both.json.entries[0].error, 'UNKNOWN_TOPIC_OR_PARTITION');
    assert.equal(both.json.entries[1].partitions.length, 1);
    assert.deepEqual(await changed([]).then((x) => x.json), { safeTime: null, entries: [] });
  });

  test('the safeTime of several queues holds for each: none of their later records is stamped at or below it', async () => {
    await push([{ queue: 'm1', payload: 1 }, { queue: 'm2', payload: 1 }]);
    const r = await changed([{ queue: 'm1' }, { queue: 'm2' }]);
    const s = r.json.safeTime;
    await push([{ queue: 'm1', payload: 2 }, { queue: 'm2', payload: 2 }]);
    for (const q of ['m1', 'm2']) {
      const recs = (await readQueue(node.url, q)).records;
      assert.ok(recs[1].tsIso > s, `${q}: ${recs[1].tsIso} after ${s}`);
    }
  });

  test('1025 entries refused', async () => {
    const r = await changed([...Array(1025).keys()].map(() => ({ queue: 'ch' })));
    assert.equal(r.status, 400);
    assert.equal(r.json.code, 'too_many_entries');
  });

  const bad = [
    ['the 0.15 body', { queue: 'ch', since: 0 }, 'invalid_request', /unknown field "queue"/],
    ['since in µs', { entries: [{ queue: 'ch', since: 1791009457000000 }] }, 'invalid_time', /since must be an ISO-8601 time/],
    ['since not a time', { entries: [{ queue: 'ch', since: 'yesterday' }] }, 'invalid_time', /since/],
    ['after a number', { entries: [{ queue: 'ch', after: 3 }] }, 'invalid_cursor', /after must be a cursor/],
    ['after not a cursor', { entries: [{ queue: 'ch', after: 'c04' }] }, 'invalid_cursor', /after/],
    ['limit 0', { entries: [{ queue: 'ch', limit: 0 }] }, 'invalid_request', /limit must be a positive integer/],
    ['limit a string', { entries: [{ queue: 'ch', limit: '5' }] }, 'invalid_request', /limit/],
    ['queue missing', { entries: [{ limit: 5 }] }, 'invalid_request', /queue is required/],
    ['an unknown entry field', { entries: [{ queue: 'ch', partition: 'x' }] }, 'invalid_request', /unknown field "partition"/],
    ['maxBytes is fetch\'s', { entries: [], maxBytes: 5 }, 'invalid_request', /unknown field "maxBytes"/],
  ];
  for (const [name, body, code, msg] of bad) {
    test(`refused: ${name}`, async () => {
      const r = await post(node.url, '/api/v1/partitions/changed', body);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.code, code);
      assert.match(r.json.error, msg);
    });
  }

  test('listPartitions (the test helper) follows next to the end', async () => {
    const l = await listPartitions(node.url, 'ch');
    assert.equal(l.partitions.length, 12);
    assert.match(l.safeTime, ISO_US);
  });
});
