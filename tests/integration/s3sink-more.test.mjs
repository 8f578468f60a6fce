// The S3 sink beyond the spec's first run: per-partition layout, QUEEN_S3_QUEUES=* with the
// latest start, records retention removed before the sink read them (the manifest's "lost"),
// the retention hold reading the commit pointer, and two nodes sharing one database (one writer
// per queue, hand-over on SIGTERM and after kill -9).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { after, before, describe, test } from 'node:test';

import { DuckDBInstance } from '@duckdb/node-api';
import { parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';

import { api, get, post, readQueue, rmrf, sleep, startPostgres, tmpDir } from './harness.mjs';
import { startFaultProxy, startS3 } from './s3harness.mjs';
import { nodeRegistry, queueRow, s3Status, sinkEnv, waitFor, zstdDecode } from './sinkutil.mjs';

const TENANT = '00000000-0000-0000-0000-000000000001';

async function lake(s3, queue) {
  const out = [];
  for (const o of await s3.list(`queen/tenant=${TENANT}/queue=${encodeURIComponent(queue)}/`)) {
    for (const line of zstdDecode(await s3.get(o.key)).split('\n')) if (line) out.push({ key: o.key, ...JSON.parse(line) });
  }
  return out;
}

describe('layouts, discovery and starts', () => {
  let s3;
  let node;
  const reg = nodeRegistry(); // every node started here is stopped in after(), whatever the tests did
  before(async () => {
    s3 = await startS3();
  });
  after(async () => {
    await reg.stopAll();
    if (s3) await s3.stop();
  });

  test('per-partition layout writes one object per partition with its offsets in the key', async () => {
    node = await reg.start({ env: sinkEnv(s3.endpoint, { QUEEN_S3_QUEUES: 'pp', QUEEN_S3_LAYOUT: 'per-partition' }) });
    const items = [];
    for (let i = 0; i < 9; i++) items.push({ queue: 'pp', partition: i % 3 === 0 ? 'a/b' : `p${i % 3}`, payload: { i } });
    assert.equal((await post(node.url, '/api/v1/push', { items })).status, 201);
    await waitFor('window 1', async () => ((await queueRow(node, 'pp')) || {}).k >= 1, 30000, node);
    const keys = (await s3.list(`queen/tenant=${TENANT}/queue=pp/`)).map((o) => o.key).sort();
    assert.equal(keys.length, 3, JSON.stringify(keys));
    for (const [name, enc] of [['a/b', 'a%2Fb'], ['p1', 'p1'], ['p2', 'p2']]) {
      const k = keys.find((x) => x.includes(`-p-${enc}-`));
      assert.ok(k, `${name} in ${keys}`);
      assert.match(k, new RegExp(`/w-0000000001-\\d+-\\d+-p-${enc.replace('%', '%')}-0-2\\.jsonl\\.zst$`));
      const lines = zstdDecode(await s3.get(k)).trim().split('\n').map((l) => JSON.parse(l));
      assert.deepEqual(lines.map((l) => [l.partition, l.offset]), [[name, 0], [name, 1], [name, 2]]);
    }
    const m = JSON.parse((await s3.get(`queen/_queen/tenant=${TENANT}/queue=pp/windows/0000000001.json`)).toString());
    assert.equal(m.layout, 'per-partition');
    assert.equal(m.objects.length, 3);
    const ab = m.objects.find((o) => o.partition === 'a/b');
    assert.deepEqual([ab.firstOffset, ab.lastOffset, ab.records], [0, 2, 3]);
    await node.stop();
    node = null;
  });

  test('a pretty-printed payload stays on one line: its line breaks become spaces, nothing else changes', async () => {
    node = await reg.start({ env: sinkEnv(s3.endpoint, { QUEEN_S3_QUEUES: 'pretty' }) });
    const payload = '{\n  "a": 1.50,\r\n  "b": [1,\n    2],\n  "s": "x\\ny"\n}';
    assert.equal((await post(node.url, '/api/v1/push', `{"items":[{"queue":"pretty","partition":"p","payload":${payload}}]}`)).status, 201);
    await waitFor('window 1 of pretty', async () => ((await queueRow(node, 'pretty')) || {}).k >= 1, 30000, node);
    const [o] = await s3.list(`queen/tenant=${TENANT}/queue=pretty/`);
    const text = zstdDecode(await s3.get(o.key));
    assert.equal(text.split('\n').length, 2, 'one line and the final newline');
    assert.ok(text.includes(`"payload":${payload.replace(/[\r\n]/g, ' ')}}`), text);
    await node.stop();
    node = null;
  });

  test('QUEEN_S3_QUEUES=* finds queues created later; latest starts after what existed', async () => {
    node = await reg.start({ env: sinkEnv(s3.endpoint, { QUEEN_S3_QUEUES: '*', QUEEN_S3_START: 'latest' }) });
    // created before the sink finds it: with latest, these are not in the lake
    await post(node.url, '/api/v1/push', { items: [{ queue: 'late', partition: 'p', payload: { before: true } }] });
    await waitFor('the late queue claimed', async () => {
      const q = await queueRow(node, 'late');
      return q && q.ownedHere && q.state === 'filling';
    }, 30000, node);
    await post(node.url, '/api/v1/push', { items: [{ queue: 'late', partition: 'p', payload: { after: 1 } }, { queue: 'late', partition: 'p', payload: { after: 2 } }] });
    await waitFor('window 1 of late', async () => ((await queueRow(node, 'late')) || {}).k >= 1, 30000, node);
    const recs = await lake(s3, 'late');
    assert.deepEqual(recs.map((r) => [r.offset, r.payload]), [[1, { after: 1 }], [2, { after: 2 }]]);
    // a queue created now is listed within the next relisting (5 s)
    await post(node.url, '/api/v1/push', { items: [{ queue: 'later-still', partition: 'p', payload: 1 }] });
    await waitFor('a row for later-still', async () => (await s3Status(node)).sinks[0].queues.some((q) => q.queue === 'later-still'), 15000, node);
    await node.stop();
    node = null;
  });
});

describe('records retention removed before the sink read them', () => {
  let s3;
  let proxy;
  let node;
  const reg = nodeRegistry(); // every node started here is stopped in after(), whatever the tests did
  before(async () => {
    s3 = await startS3();
    proxy = await startFaultProxy(s3.endpoint);
  });
  after(async () => {
    await reg.stopAll();
    if (proxy) await proxy.stop();
    if (s3) await s3.stop();
  });

  test('are recorded in the manifest and counted, never silent', async () => {
    proxy.pass(); proxy.fault('500');
    // evgap: QUEEN_S3_START=earliest meets the gap before any record it can read, so its first
    // window holds only the lost range
    node = await reg.start({ env: { ...sinkEnv(proxy.endpoint, { QUEEN_S3_QUEUES: 'ev,evgap' }), RETENTION_INTERVAL: '200', EVICTION_INTERVAL: '200' } });
    let gapTs;
    for (const q of ['ev', 'evgap']) {
      assert.equal((await post(node.url, '/api/v1/configure', { queue: q, options: { maxWaitTimeSeconds: 1 } })).status, 200);
      const items = [];
      for (let i = 0; i < 5; i++) items.push({ queue: q, partition: 'p', payload: { gone: i } });
      await post(node.url, '/api/v1/push', { items });
      if (q === 'evgap') gapTs = (await readQueue(node.url, q)).records[4].ts;
      await waitFor(`eviction of ${q}`, async () => {
        const f = await readQueue(node.url, q);
        return f.records.length === 0;
      }, 20000, node);
    }
    // the kept record must outlive eviction until the sink reads it: on a loaded machine the
    // sink can take longer than maxWaitTimeSeconds (1 s) to get to it, and eviction then removed
    // it too (lost 0..5, counted: right, but not what this case checks)
    assert.equal((await post(node.url, '/api/v1/configure', { queue: 'ev', options: { maxWaitTimeSeconds: 0 } })).status, 200);
    await post(node.url, '/api/v1/push', { items: [{ queue: 'ev', partition: 'p', payload: { kept: true } }] });
    proxy.pass();
    await waitFor('window 1 of ev', async () => ((await queueRow(node, 'ev')) || {}).k >= 1, 30000, node);
    await waitFor('window 1 of evgap', async () => ((await queueRow(node, 'evgap')) || {}).k >= 1, 30000, node);
    const g = JSON.parse((await s3.get(`queen/_queen/tenant=${TENANT}/queue=evgap/windows/0000000001.json`)).toString());
    assert.deepEqual(g.lost, [{ partition: 'p', from: 0, to: 4 }]);
    assert.equal(g.records, 0);
    assert.deepEqual(g.objects, []);
    // its bounds hold the stamps involved, not the first hour of 1970
    assert.ok(g.tStart <= gapTs && gapTs < g.tEnd, `[${g.tStart}, ${g.tEnd}) holds ${gapTs}`);
    assert.equal(g.tStart, Math.floor(gapTs / 3600e6) * 3600e6);
    assert.match(node.log, /window committed queue=evgap k=1 records=0 /);
    const m = JSON.parse((await s3.get(`queen/_queen/tenant=${TENANT}/queue=ev/windows/0000000001.json`)).toString());
    assert.deepEqual(m.lost, [{ partition: 'p', from: 0, to: 4 }]);
    assert.equal(m.records, 1);
    const metrics = (await get(node.url, '/metrics/prometheus')).text;
    assert.match(metrics, /^queen_s3_records_lost_total\{queue="ev"\} 5$/m);
    assert.match(node.log, /retention removed before the sink read them/);
    assert.match(node.log, /queue=ev: window 1 is missing 5 records retention removed before the sink read them \(see "lost" in queen\/_queen\/tenant=[0-9a-f-]+\/queue=ev\/windows\/0000000001\.json\)/);
    const row = await queueRow(node, 'ev');
    assert.equal(row.recordsLost, 5);
  });
});

describe('two nodes on one database', () => {
  let pg;
  let s3;
  const reg = nodeRegistry(); // every node started here is stopped in after(), whatever the tests did
  const nodes = reg.nodes;
  before(async () => {
    pg = await startPostgres();
    s3 = await startS3();
  });
  after(async () => {
    await reg.stopAll();
    if (s3) await s3.stop();
    if (pg) pg.destroy();
  });

  const env = (id) => ({ ...sinkEnv(s3.endpoint, { QUEEN_S3_QUEUES: 'orders,clicks' }), QUEEN_PG_URL: pg.url, QUEEN_NODE_ID: id });

  test('one writer per queue, the other node shows it held; the hold reads the pointer', async () => {
    (await reg.start({ env: env('node-a') }));
    (await reg.start({ env: env('node-b') }));
    const [a, b] = nodes;
    for (const q of ['orders', 'clicks']) await post(a.url, '/api/v1/push', { items: [{ queue: q, partition: 'p', payload: { n: 0 } }] });
    await waitFor('both queues committed', async () => {
      const rows = [...(await s3Status(a)).sinks[0].queues, ...(await s3Status(b)).sinks[0].queues];
      return ['orders', 'clicks'].every((q) => rows.some((r) => r.queue === q && r.ownedHere && r.k >= 1));
    }, 40000, a);
    // the node that did not win looks again within a third of the TTL (5 s while it saw the
    // queue missing)
    await waitFor('the other node shows both queues held', async () => {
      for (const q of ['orders', 'clicks']) {
        const ra = await queueRow(a, q);
        const rb = await queueRow(b, q);
        if (!((ra.ownedHere && rb.state === 'held') || (rb.ownedHere && ra.state === 'held'))) return false;
      }
      return true;
    }, 15000, b);
    for (const q of ['orders', 'clicks']) {
      const ra = await queueRow(a, q);
      const rb = await queueRow(b, q);
      assert.notEqual(ra.ownedHere, rb.ownedHere, `${q}: exactly one owner`);
      const other = ra.ownedHere ? rb : ra;
      const owner = ra.ownedHere ? 'node-a' : 'node-b';
      assert.equal(other.state, 'held');
      assert.equal(other.heldBy, owner);
    }
    const m = JSON.parse((await s3.get(`queen/_queen/tenant=${TENANT}/queue=orders/windows/0000000001.json`)).toString());
    assert.equal(pg.psql(`SELECT queen.sink_hold_ts_v1('${TENANT}', 'orders', 'default')`), String(m.tEnd));
    assert.equal(pg.psql(`SELECT coalesce(queen.sink_hold_ts_v1('${TENANT}', 'orders', 'other'), -1)`), '-1');
  });

  test('SIGTERM on the owner hands the queue over; kill -9 moves it after the TTL; every record once', async () => {
    const [a, b] = nodes;
    let n = 1;
    const pushSome = async (node, count) => {
      const items = [];
      for (let i = 0; i < count; i++) items.push({ queue: 'orders', partition: `p${n % 4}`, payload: { n: n++ } });
      assert.equal((await post(node.url, '/api/v1/push', { items })).status, 201);
    };
    const ownerOf = async () => ((await queueRow(a, 'orders')).ownedHere ? a : b);
    let owner = await ownerOf();
    let other = owner === a ? b : a;
    await pushSome(owner, 20);
    await owner.stop();
    await waitFor('the other node takes orders', async () => ((await queueRow(other, 'orders')) || {}).ownedHere, 20000, other);
    await pushSome(other, 20);
    const third = await reg.start({ env: env(owner === a ? 'node-a' : 'node-b') });
    await sleep(500);
    await pushSome(third, 20);
    owner = other;
    other = third;
    await owner.kill9();
    await waitFor('the restarted node takes orders after the TTL', async () => ((await queueRow(other, 'orders')) || {}).ownedHere, 30000, other);
    await pushSome(other, 20);
    const total = n - 1 + 1; // the first test's record (n: 0) plus these
    await waitFor('every record in the lake', async () => (await lake(s3, 'orders')).length >= total, 60000, other);
    const recs = await lake(s3, 'orders');
    const ids = recs.map((r) => `${r.partition}/${r.offset}`);
    assert.equal(new Set(ids).size, ids.length, 'no record twice');
    assert.equal(recs.length, total);
    assert.deepEqual([...new Set(recs.map((r) => r.payload.n))].sort((x, y) => x - y), [...Array(total).keys()]);
  });
});

describe('memory, codecs, checkpoints, the fence and the drain', () => {
  let s3;
  let node;
  const reg = nodeRegistry(); // every node started here is stopped in after(), whatever the tests did
  before(async () => { s3 = await startS3(); });
  after(async () => {
    await reg.stopAll();
    if (s3) await s3.stop();
  });

  test('the sink runs on threads named queen-s3', async () => {
    // latest: the window starts when the queue is claimed, so it is young and only memory
    // pressure can close it within the test
    node = await reg.start({ env: sinkEnv(s3.endpoint, { QUEEN_S3_QUEUES: 'mem', QUEEN_S3_MEMORY_MB: '1', QUEEN_S3_MAX_WINDOW_MS: '300000',
      QUEEN_S3_COMPRESSION: 'gzip', QUEEN_S3_CHECKPOINT_EVERY: '1', QUEEN_S3_START: 'latest' }) });
    const names = fs.readdirSync(`/proc/${node.proc.pid}/task`).map((t) => fs.readFileSync(`/proc/${node.proc.pid}/task/${t}/comm`, 'utf8').trim());
    assert.ok(names.filter((n) => n === 'queen-s3').length >= 2, names.join(','));
  });

  test('past QUEEN_S3_MEMORY_MB the queue holding the most closes its window (gzip, with a checkpoint)', async () => {
    await post(node.url, '/api/v1/configure', { queue: 'mem', options: {} });
    await waitFor('mem claimed', async () => ((await queueRow(node, 'mem')) || {}).state === 'filling', 20000, node);
    const pad = 'y'.repeat(1000);
    const items = [];
    for (let i = 0; i < 1500; i++) items.push({ queue: 'mem', partition: `p${i % 2}`, payload: { i, pad } });
    assert.equal((await post(node.url, '/api/v1/push', { items })).status, 201);
    await waitFor('a window closed by memory pressure', async () => ((await queueRow(node, 'mem')) || {}).k >= 1, 30000, node);
    assert.match(node.log, /window committed queue=mem k=1 .*reason=memory/);
    const keys = (await s3.list(`queen/tenant=${TENANT}/queue=mem/`)).map((o) => o.key);
    assert.ok(keys.length >= 1 && keys.every((k) => k.endsWith('.jsonl.gz')), JSON.stringify(keys));
    const lines = zlib.gunzipSync(await s3.get(keys[0])).toString().trim().split('\n');
    assert.equal(JSON.parse(lines[0]).payload.pad, pad);
    const ck = await s3.get(`queen/_queen/tenant=${TENANT}/queue=mem/checkpoint/0000000001.json.zst`);
    assert.ok(ck, 'a checkpoint after window 1 (QUEEN_S3_CHECKPOINT_EVERY=1)');
    const c = JSON.parse(zstdDecode(ck));
    assert.equal(c.k, 1);
    // every partition: p0, p1 and the Default partition configure created
    assert.deepEqual(c.positions.map((p) => p[0]), ['Default', 'p0', 'p1']);
    const m = JSON.parse((await s3.get(`queen/_queen/tenant=${TENANT}/queue=mem/windows/0000000001.json`)).toString());
    assert.equal(m.compression, 'gzip');
    const got = new Map(c.positions.map((p) => [p[0], p[1]]));
    const inWindow = lines.map((l) => JSON.parse(l)).filter((r) => r.partition === 'p0').length;
    assert.equal(got.get('p0'), inWindow, 'the next offset of p0 after window 1');
  });

  test('a lease taken over under the node stops the queue there (fenced, counted)', async () => {
    const key = 's3:default:mem:lease';
    const r = await api(node.url, 'PUT', `/api/v1/kv/queen-s3/${encodeURIComponent(key)}`, { value: { instance: 'intruder', incarnation: 'x', sinceMs: 0 } });
    assert.equal(r.status, 200, r.text);
    const row = await waitFor('the queue fenced, then held by the intruder', async () => {
      const q = await queueRow(node, 'mem');
      return q && q.state === 'held' && q.heldBy === 'intruder' ? q : null;
    }, 30000, node);
    assert.match(row.lastError.message, /fenced/);
    const metrics = (await get(node.url, '/metrics/prometheus')).text;
    assert.match(metrics, /^queen_s3_commit_precondition_lost_total\{queue="mem"\} [1-9]\d*$/m);
    assert.doesNotMatch(metrics, /^queen_s3_lag_seconds\{queue="mem"\}/m, 'no gauges for a queue this node does not run');
    await api(node.url, 'DELETE', `/api/v1/kv/queen-s3/${encodeURIComponent(key)}`);
    await node.stop();
    node = null;
  });

  test('SIGTERM commits the window being filled when it is worth it, then gives the lease back', async () => {
    node = await reg.start({ env: sinkEnv(s3.endpoint, { QUEEN_S3_QUEUES: 'drain', QUEEN_S3_MAX_WINDOW_MS: '300000', QUEEN_S3_START: 'latest' }) });
    await post(node.url, '/api/v1/configure', { queue: 'drain', options: {} });
    await waitFor('drain claimed', async () => ((await queueRow(node, 'drain')) || {}).state === 'filling', 20000, node);
    const pad = 'z'.repeat(1000);
    const items = [];
    for (let i = 0; i < 1200; i++) items.push({ queue: 'drain', partition: 'p', payload: { i, pad } });
    assert.equal((await post(node.url, '/api/v1/push', { items })).status, 201);
    await waitFor('1 MiB buffered', async () => ((await queueRow(node, 'drain')) || {}).bufferedBytes >= 1 << 20, 30000, node);
    assert.equal((await queueRow(node, 'drain')).k, 0, 'nothing committed before the signal (the window is young)');
    await node.stop();
    assert.match(node.log, /window committed queue=drain k=1 records=1200 .*reason=drain/);
    assert.match(node.log, /queue=drain: lease given back/);
    node = null;
    const keys = (await s3.list(`queen/tenant=${TENANT}/queue=drain/`)).map((o) => o.key);
    assert.equal(keys.length, 1);
  });
});

describe('QUEEN_S3_FETCH_CONCURRENCY', () => {
  let s3;
  let data;
  const reg = nodeRegistry(); // every node started here is stopped in after(), whatever the tests did
  before(async () => {
    s3 = await startS3();
    data = tmpDir('queen-data-');
  });
  after(async () => {
    await reg.stopAll();
    if (s3) await s3.stop();
    if (data) rmrf(data);
  });
  const QUEUES = ['fc1', 'fc2', 'fc3', 'fc4'];
  const PER_QUEUE = 3000;

  test('a backlog of four queues: at most that many log reads at once, and more workers above four', async () => {
    // the backlog is written with the sink off, then drained twice by sinks of their own names
    const w = await reg.start({ dataDir: data });
    const pad = 'f'.repeat(1000);
    for (const q of QUEUES) {
      for (let from = 0; from < PER_QUEUE; from += 500) {
        const items = [];
        for (let i = from; i < from + 500; i++) items.push({ queue: q, partition: `p${i % 4}`, payload: { i, pad } });
        assert.equal((await post(w.url, '/api/v1/push', { items })).status, 201);
      }
    }
    // lease rows under the draining node's own name, as an earlier life of it would leave:
    // it takes every queue back at once (no claim pacing), so the four drain side by side
    for (const fc of [1, 8]) {
      for (const q of QUEUES) {
        const r = await api(w.url, 'PUT', `/api/v1/kv/queen-s3/${encodeURIComponent(`s3:fc${fc}:${q}:lease`)}`,
          { value: { instance: 'fc-node', incarnation: 'earlier', sinceMs: 0 }, ttlMs: 60000 });
        assert.equal(r.status, 200, r.text);
      }
    }
    await w.stop();
    for (const fc of [1, 8]) {
      const node = await reg.start({ dataDir: data, env: { ...sinkEnv(s3.endpoint, { QUEEN_S3_QUEUES: QUEUES.join(','), QUEEN_S3_SINK: `fc${fc}`,
        QUEEN_S3_PREFIX: `fc${fc}`, QUEEN_S3_TARGET_MB: '1', QUEEN_S3_FETCH_CONCURRENCY: String(fc) }), QUEEN_NODE_ID: 'fc-node' } });
      await waitFor(`the backlog drained with QUEEN_S3_FETCH_CONCURRENCY=${fc}`, async () => {
        const rows = (await s3Status(node)).sinks[0].queues;
        return QUEUES.every((q) => (rows.find((r) => r.queue === q) || {}).records === PER_QUEUE);
      }, 60000, node);
      const st = await s3Status(node);
      assert.equal(st.reads.limit, fc);
      assert.equal(st.threads, Math.max(4, fc) + 1, 'the workers and the keeper');
      if (fc === 1) {
        assert.equal(st.reads.peak, 1, JSON.stringify(st.reads));
        assert.ok(st.reads.waited > 0, `four queues contended for the one slot: ${JSON.stringify(st.reads)}`);
      } else {
        assert.ok(st.reads.peak >= 2, `reads ran side by side: ${JSON.stringify(st.reads)}`);
        assert.ok(st.reads.peak <= fc);
      }
      assert.match(node.log, new RegExp(`fetch_concurrency=${fc} `));
      await node.stop();
    }
  });
});

describe('Parquet objects', () => {
  let s3;
  let node;
  const reg = nodeRegistry(); // every node started here is stopped in after(), whatever the tests did
  let dir;
  before(async () => {
    s3 = await startS3();
    dir = tmpDir('queen-lake-pq-');
  });
  after(async () => {
    await reg.stopAll();
    if (s3) await s3.stop();
    if (dir) rmrf(dir);
  });

  test('QUEEN_S3_FORMAT=parquet: DuckDB and hyparquet read the lake, payload text exact', async () => {
    node = await reg.start({ env: sinkEnv(s3.endpoint, { QUEEN_S3_QUEUES: 'pq', QUEEN_S3_FORMAT: 'parquet', QUEEN_S3_PARQUET_CODEC: 'snappy' }) });
    const body = '{"items":[{"queue":"pq","partition":"a","payload":{"total":42.00}},{"queue":"pq","partition":"b","payload":null},'
      + '{"queue":"pq","partition":"a","payload":[1, 2]}]}';
    assert.equal((await post(node.url, '/api/v1/push', body)).status, 201);
    await waitFor('window 1 of pq', async () => ((await queueRow(node, 'pq')) || {}).k >= 1, 30000, node);
    const objs = await s3.list(`queen/tenant=${TENANT}/queue=pq/`);
    assert.equal(objs.length, 1);
    assert.match(objs[0].key, /\/w-0000000001-\d+-\d+\.parquet$/);
    const file = path.join(dir, objs[0].key);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, await s3.get(objs[0].key));
    const inst = await DuckDBInstance.create(':memory:', { autoinstall_known_extensions: 'false' });
    const db = await inst.connect();
    const rows = (await db.runAndReadAll(`SELECT tenant, queue, partition, "offset"::INT AS o, payload FROM read_parquet('${dir}/queen/tenant=*/queue=*/dt=*/hour=*/*.parquet', hive_partitioning=true, hive_types={'hour': INTEGER}) ORDER BY partition, o`)).getRowObjectsJson();
    assert.deepEqual(rows, [
      { tenant: TENANT, queue: 'pq', partition: 'a', o: 0, payload: '{"total":42.00}' },
      { tenant: TENANT, queue: 'pq', partition: 'a', o: 1, payload: '[1, 2]' },
      { tenant: TENANT, queue: 'pq', partition: 'b', o: 0, payload: 'null' }, // the JSON text of a null payload
    ]);
    const kv = (await db.runAndReadAll(`SELECT decode(key) AS k, decode(value) AS v FROM parquet_kv_metadata('${file}') ORDER BY 1`)).getRowObjectsJson();
    assert.deepEqual(kv.filter((r) => r.k.startsWith('queen.')), [{ k: 'queen.queue', v: 'pq' }, { k: 'queen.tenant', v: TENANT }]);
    const buf = fs.readFileSync(file);
    const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length);
    const got = await parquetReadObjects({ file: ab, compressors });
    assert.deepEqual(got.map((r) => [r.partition, r.payload]), [['a', '{"total":42.00}'], ['a', '[1, 2]'], ['b', 'null']]);
    const m = JSON.parse((await s3.get(`queen/_queen/tenant=${TENANT}/queue=pq/windows/0000000001.json`)).toString());
    assert.equal(m.format, 'parquet');
    assert.equal(m.compression, 'snappy');
    assert.match(m.writer, /^queen-s3\/\S+ parquet\+snappy$/);
  });
  test('row groups of 100,000 records through the broker: DuckDB and hyparquet read every record back', async () => {
    // the records are in the log before the sink starts, so one window holds them all
    const data = tmpDir('queen-data-');
    const w = await reg.start({ dataDir: data });
    const N = 150000;
    const PARTS = 7;
    for (let from = 0; from < N; from += 5000) {
      const items = [];
      for (let i = from; i < from + 5000; i++) items.push({ queue: 'pqbig', partition: `part-${i % PARTS}`, payload: { i } });
      assert.equal((await post(w.url, '/api/v1/push', { items })).status, 201);
    }
    await w.stop();
    node = await reg.start({ dataDir: data, env: sinkEnv(s3.endpoint, { QUEEN_S3_QUEUES: 'pqbig', QUEEN_S3_FORMAT: 'parquet', QUEEN_S3_ALIGN: 'none' }) });
    await waitFor('the window of pqbig', async () => ((await queueRow(node, 'pqbig')) || {}).records >= N, 120000, node);
    const objs = await s3.list(`queen/tenant=${TENANT}/queue=pqbig/`);
    assert.equal(objs.length, 1, JSON.stringify(objs));
    const file = path.join(dir, 'big', objs[0].key);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, await s3.get(objs[0].key));
    const inst = await DuckDBInstance.create(':memory:', { autoinstall_known_extensions: 'false' });
    const db = await inst.connect();
    const duck = async (sql) => (await db.runAndReadAll(sql)).getRowObjectsJson();
    const groups = await duck(`SELECT row_group_id::INT AS rg, row_group_num_rows::INT AS n, stats_min_value AS lo, stats_max_value AS hi
      FROM parquet_metadata('${file}') WHERE path_in_schema = 'partition' ORDER BY 1`);
    // sorted by partition and offset: the first row group holds part-0 .. part-4 and some of part-4
    const perPart = Math.ceil(N / PARTS);
    assert.deepEqual(groups.map((g) => g.n), [100000, 50000]);
    assert.deepEqual(groups.map((g) => [g.lo, g.hi]), [['part-0', `part-${Math.floor(99999 / perPart)}`], [`part-${Math.floor(100000 / perPart)}`, `part-${PARTS - 1}`]]);
    const agg = await duck(`SELECT count(*)::INT AS c, count(DISTINCT partition)::INT AS p, sum((payload::JSON->>'i')::BIGINT)::BIGINT::VARCHAR AS s,
      bool_and(payload = '{"i":' || ((payload::JSON->>'i')) || '}') AS exact FROM read_parquet('${file}')`);
    assert.deepEqual(agg, [{ c: N, p: PARTS, s: String((N * (N - 1)) / 2), exact: true }]);
    const offs = await duck(`SELECT partition, min("offset")::INT AS lo, max("offset")::INT AS hi, count(*)::INT AS n FROM read_parquet('${file}') GROUP BY 1 ORDER BY 1`);
    for (const o of offs) assert.deepEqual([o.lo, o.hi], [0, o.n - 1], `${o.partition}: offsets 0..n-1`);
    const buf = fs.readFileSync(file);
    const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length);
    const rows = await parquetReadObjects({ file: ab, compressors });
    assert.equal(rows.length, N);
    const seen = new Uint8Array(N);
    let prev = null;
    for (const r of rows) {
      const i = JSON.parse(r.payload).i;
      assert.equal(r.partition, `part-${i % PARTS}`);
      assert.equal(Number(r.offset), Math.floor(i / PARTS));
      seen[i]++;
      const key = `${r.partition}/${String(r.offset).padStart(8, '0')}`;
      if (prev !== null) assert.ok(prev < key, `sorted: ${prev} then ${key}`);
      prev = key;
    }
    assert.ok(seen.every((x) => x === 1), 'every record once');
    rmrf(data);
  });
});

describe('encrypted queues', () => {
  let s3;
  let node;
  const reg = nodeRegistry(); // every node started here is stopped in after(), whatever the tests did
  let data;
  before(async () => { s3 = await startS3(); });
  after(async () => {
    await reg.stopAll();
    if (s3) await s3.stop();
    if (data) rmrf(data);
  });
  const K1 = 'a'.repeat(64);
  const K2 = 'b'.repeat(64);

  test('the lake is plaintext; a payload this node cannot open is a JSON string of its stored bytes', async () => {
    data = tmpDir('queen-data-');
    // written under K1 by a node without the sink
    const a = await reg.start({ dataDir: data, env: { QUEEN_ENCRYPTION_KEY: K1 } });
    assert.equal((await post(a.url, '/api/v1/configure', { queue: 'sealed1', options: { encryptionEnabled: true } })).status, 200);
    assert.equal((await post(a.url, '/api/v1/push', '{"items":[{"queue":"sealed1","partition":"p","payload":{"secret":42.00}}]}')).status, 201);
    await a.stop();
    // read by a node holding another key
    node = await reg.start({ dataDir: data, env: { ...sinkEnv(s3.endpoint, { QUEEN_S3_QUEUES: 'sealed1,sealed2' }), QUEEN_ENCRYPTION_KEY: K2 } });
    assert.equal((await post(node.url, '/api/v1/configure', { queue: 'sealed2', options: { encryptionEnabled: true } })).status, 200);
    assert.equal((await post(node.url, '/api/v1/push', '{"items":[{"queue":"sealed2","partition":"p","payload":{"secret":17.50}}]}')).status, 201);
    await waitFor('both windows', async () => ((await queueRow(node, 'sealed1')) || {}).k >= 1 && ((await queueRow(node, 'sealed2')) || {}).k >= 1, 30000, node);
    const [r1] = await lake(s3, 'sealed1');
    assert.equal(typeof r1.payload, 'string', JSON.stringify(r1));
    const env = Buffer.from(r1.payload, 'base64');
    assert.equal(env.length, 33 + '{"secret":42.00}'.length, 'the envelope: version, fingerprint, nonce, ciphertext, tag');
    assert.equal(env[0], 1);
    assert.doesNotMatch(env.toString('latin1'), /secret/);
    const objs = await s3.list(`queen/tenant=${TENANT}/queue=sealed2/`);
    const text = zstdDecode(await s3.get(objs[0].key));
    assert.ok(text.includes('"payload":{"secret":17.50}'), text);
  });
});

describe('placement: the queues spread over the nodes', () => {
  let pg;
  let s3;
  const reg = nodeRegistry(); // every node started here is stopped in after(), whatever the tests did
  const nodes = reg.nodes;
  before(async () => {
    pg = await startPostgres();
    s3 = await startS3();
  });
  after(async () => {
    await reg.stopAll();
    if (s3) await s3.stop();
    if (pg) pg.destroy();
  });
  const QUEUES = ['q1', 'q2', 'q3', 'q4'];
  const env = (id) => ({ ...sinkEnv(s3.endpoint, { QUEEN_S3_QUEUES: QUEUES.join(',') }), QUEEN_PG_URL: pg.url, QUEEN_NODE_ID: id });
  const placement = async (node) => (await s3Status(node)).sinks[0].placement;
  const metric = async (node, name) => {
    const m = new RegExp(`^${name} (\\d+)$`, 'm').exec((await get(node.url, '/metrics/prometheus')).text);
    return m ? Number(m[1]) : null;
  };

  test('a node that joins gets its share; the one above it gives queues back one at a time; then nothing moves', async () => {
    const a = await reg.start({ env: env('node-a') });
    let n = 0;
    const pushAll = async (node) => {
      for (const q of QUEUES) assert.equal((await post(node.url, '/api/v1/push', { items: [{ queue: q, partition: `p${n % 2}`, payload: { n: n++ } }] })).status, 201);
    };
    await pushAll(a);
    await waitFor('node-a holds every queue', async () => (await placement(a)).held === 4, 40000, a);
    const b = await reg.start({ env: env('node-b') });
    const pusher = setInterval(() => { pushAll(a).catch(() => {}); }, 700);
    try {
      await waitFor('two queues each', async () => {
        const pa = await placement(a);
        const pb = await placement(b);
        return pa.held === 2 && pb.held === 2 && pa.nodes === 2 && pb.share === 2 && pa.givingBack === null;
      }, 60000, a);
      assert.equal(await metric(a, 'queen_s3_queues_given_back_total'), 2);
      assert.match(a.log, /giving back q\d/);
      // steady state: nothing moves for two more TTLs
      await sleep(6500);
      const [pa, pb] = [await placement(a), await placement(b)];
      assert.deepEqual([pa.held, pb.held], [2, 2]);
      assert.equal(await metric(a, 'queen_s3_queues_given_back_total'), 2);
      assert.equal(await metric(b, 'queen_s3_queues_given_back_total'), 0);
    } finally {
      clearInterval(pusher);
    }
    await sleep(300);
    const pushed = n;
    await waitFor('every record in the lake', async () => {
      let all = 0;
      for (const q of QUEUES) all += (await lake(s3, q)).length;
      return all >= pushed;
    }, 60000, a);
    let all = 0;
    for (const q of QUEUES) {
      const recs = await lake(s3, q);
      const ids = recs.map((r) => `${r.partition}/${r.offset}`);
      assert.equal(new Set(ids).size, ids.length, `${q}: no record twice`);
      all += recs.length;
    }
    assert.equal(all, pushed);
  });
});
