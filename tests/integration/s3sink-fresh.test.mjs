// A sink that starts with no commit pointer over a bucket that already holds a lake under the
// same prefix (a new or restored database, a pointer lost) must never overwrite the earlier
// lake's manifests: it finds the highest window number there and starts after it, and it does
// not write again what the earlier lake holds (docs/s3-sink.md, "A fresh start over an old lake").
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { post, startPostgres } from './harness.mjs';
import { startFaultProxy, startS3 } from './s3harness.mjs';
import { lakeRecords, nodeRegistry, queueRow, sinkEnv, TENANT, waitFor } from './sinkutil.mjs';

const MAN = (q) => `queen/_queen/tenant=${TENANT}/queue=${q}/windows/`;
const manKey = (q, k) => `${MAN(q)}${String(k).padStart(10, '0')}.json`;

// Every object under the prefix: key → etag, and every manifest's bytes.
async function snapshot(s3) {
  const objs = new Map();
  for (const o of await s3.list('queen/')) objs.set(o.key, o.etag);
  const manifests = new Map();
  for (const k of objs.keys()) if (k.includes('/windows/')) manifests.set(k, await s3.get(k));
  return { objs, manifests };
}

// Nothing of before is gone or changed in after.
async function assertKept(s3, before) {
  const now = new Map((await s3.list('queen/')).map((o) => [o.key, o.etag]));
  for (const [k, etag] of before.objs) assert.equal(now.get(k), etag, `object ${k} kept as it was`);
  for (const [k, bytes] of before.manifests) assert.deepEqual(await s3.get(k), bytes, `manifest ${k} byte for byte`);
  return now;
}

async function pushN(node, queue, from, n) {
  const items = [];
  for (let i = from; i < from + n; i++) items.push({ queue, partition: `p${i % 2}`, payload: { i } });
  assert.equal((await post(node.url, '/api/v1/push', { items })).status, 201);
}

async function windowsTo(node, queue, k) {
  return waitFor(`window ${k} of ${queue}`, async () => {
    const r = await queueRow(node, queue);
    return r && r.k >= k ? r : null;
  }, 40000, node);
}

describe('a fresh sink over an earlier lake', () => {
  let s3;
  let pg;
  let proxy;
  const reg = nodeRegistry();
  before(async () => {
    s3 = await startS3();
    proxy = await startFaultProxy(s3.endpoint);
  });
  after(async () => {
    await reg.stopAll();
    if (proxy) await proxy.stop();
    if (s3) await s3.stop();
    if (pg) pg.destroy();
  });

  test('a new database against the same bucket continues at N+1 and replaces nothing', async () => {
    const q = 'orders';
    // the earlier lake: three windows from a first database
    let node = await reg.start({ env: sinkEnv(s3.endpoint) });
    for (let w = 1; w <= 3; w++) {
      await pushN(node, q, (w - 1) * 4, 4);
      await windowsTo(node, q, w);
    }
    const n = (await queueRow(node, q)).k;
    await node.stop();
    const before = await snapshot(s3);
    assert.equal(before.manifests.size, n, [...before.manifests.keys()].join(' '));

    // a second node on a new database (its own embedded cluster), the same bucket and prefix
    node = await reg.start({ env: sinkEnv(s3.endpoint) });
    await pushN(node, q, 100, 3);
    const row = await windowsTo(node, q, n + 1);
    assert.equal(row.k, n + 1, 'the first window of the new run is N+1');
    assert.match(node.log, new RegExp(`earlier lake's windows 1\\.\\.${n}; starting at window ${n + 1}`));
    const now = await assertKept(s3, before);
    assert.ok(now.size > before.objs.size, 'the lake only grows');
    const m = JSON.parse((await s3.get(manKey(q, n + 1))).toString());
    assert.equal(m.k, n + 1);
    const firstTEnd = JSON.parse(before.manifests.get(manKey(q, n)).toString()).tEnd;
    assert.ok(m.tStart >= firstTEnd, `the new window ${m.tStart} starts after the old lake's end ${firstTEnd}`);
    // the new window's objects are new keys holding only the new records
    for (const o of m.objects) assert.ok(!before.objs.has(o.key), `${o.key} is a new key`);
    const recs = (await lakeRecords(s3, q)).map((r) => r.payload.i).sort((a, b) => a - b);
    assert.deepEqual(recs, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 100, 101, 102]);
    await node.stop();
  });

  test('a lost pointer on the same database: the log is not written again, the run goes on at N+1', async () => {
    const q = 'lostptr';
    pg = await startPostgres();
    const env = { ...sinkEnv(s3.endpoint, { QUEEN_S3_QUEUES: q }), QUEEN_PG_URL: pg.url };
    let node = await reg.start({ env });
    for (let w = 1; w <= 2; w++) {
      await pushN(node, q, (w - 1) * 3, 3);
      await windowsTo(node, q, w);
    }
    const n = (await queueRow(node, q)).k;
    await node.stop();
    const before = await snapshot(s3);
    // the sink's documents are gone (a KV purge, a restore that predates the sink), the log stays
    pg.psql(`DELETE FROM queen.kv WHERE namespace = 'queen-s3'`);
    assert.equal(pg.psql(`SELECT count(*) FROM queen.kv WHERE namespace = 'queen-s3'`), '0');

    node = await reg.start({ env });
    await pushN(node, q, 50, 2);
    const row = await windowsTo(node, q, n + 1);
    assert.equal(row.k, n + 1);
    await assertKept(s3, before);
    // earliest start, yet the records the earlier lake holds are not in the lake twice
    const recs = (await lakeRecords(s3, q)).map((r) => r.payload.i).sort((a, b) => a - b);
    assert.deepEqual(recs, [0, 1, 2, 3, 4, 5, 50, 51]);
    const m = JSON.parse((await s3.get(manKey(q, n + 1))).toString());
    assert.equal(m.records, 2);
    await node.stop();
  });

  test('the manifest PUT asks not to replace (If-None-Match: *); a 412 over another window is refused', async () => {
    // s3rver ignores the header, so the proxy answers 412 as S3 does for a key that exists; the
    // foreign manifest appears after the probe (another writer on the same prefix)
    const q = 'guarded';
    const key = manKey(q, 1);
    proxy.pass();
    proxy.fault('error', { status: 412, code: 'PreconditionFailed', message: 'At least one of the pre-conditions you specified did not hold', match: { op: 'put', key } });
    const node = await reg.start({ env: sinkEnv(proxy.endpoint, { QUEEN_S3_QUEUES: q, QUEEN_S3_MAX_WINDOW_MS: '3000', QUEEN_S3_SHUTDOWN_GRACE_MS: '1000' }) });
    await pushN(node, q, 0, 2);
    await waitFor('the probe of windows/1', async () => proxy.count({ op: 'get', key }) >= 1, 20000, node);
    const foreign = Buffer.from(JSON.stringify({ k: 1, tStart: 1, tEnd: 2, note: 'another writer' }));
    assert.equal(await s3.put(key, foreign), 200);
    await waitFor('the refusal', async () => {
      const r = await queueRow(node, q);
      return r && /already holds another window's manifest; refusing to replace it/.test((r.lastError && r.lastError.message) || '');
    }, 30000, node);
    const puts = proxy.requests.filter((r) => r.op === 'put' && r.key === key);
    assert.ok(puts.length >= 1);
    for (const r of puts) assert.equal(r.headers['if-none-match'], '*');
    assert.deepEqual(await s3.get(key), foreign, 'the other manifest is untouched');
    assert.equal((await queueRow(node, q)).k, 0, 'nothing committed over it');
    await node.stop(); // the refused window cannot drain: the grace is cut short, nothing lost
    proxy.pass();
  });
});
