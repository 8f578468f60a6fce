// The S3 sink end to end (spec/s3-sink.txt): the real queen binary with QUEEN_S3_EMBEDDED=true
// against @20minutes/s3rver (which checks SigV4 signatures), on loopback. The spec's "Try it"
// run, the objects' bytes and keys, the manifest, DuckDB reading the lake, the boot lines, and
// the bucket answering errors.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { DuckDBInstance } from '@duckdb/node-api';

import { get, post, readQueue, rmrf, runBoot, sleep, tmpDir } from './harness.mjs';
import { startFaultProxy, startS3 } from './s3harness.mjs';
import { isoUs, nodeRegistry, queueRow, s3Status, sinkEnv, waitFor, zstdDecode } from './sinkutil.mjs';

const TENANT = '00000000-0000-0000-0000-000000000001';

const SPEC_ITEMS = `{"items":[
  {"queue":"orders","partition":"cust-1","payload":{"order":1,"status":"new","total":42.00}},
  {"queue":"orders","partition":"cust-2","payload":{"order":2,"status":"new","total":17.50}},
  {"queue":"orders","partition":"cust-1","payload":{"order":1,"status":"paid","total":42.00}}
]}`;
const SPEC_PAYLOADS = {
  'cust-1': ['{"order":1,"status":"new","total":42.00}', '{"order":1,"status":"paid","total":42.00}'],
  'cust-2': ['{"order":2,"status":"new","total":17.50}'],
};

describe('the spec\'s "Try it" run', () => {
  let s3;
  let node;
  const reg = nodeRegistry(); // every node started here is stopped in after(), whatever the tests did
  let dir;
  before(async () => {
    s3 = await startS3();
    node = await reg.start({ env: sinkEnv(s3.endpoint) });
    dir = tmpDir('queen-lake-');
  });
  after(async () => {
    await reg.stopAll();
    if (s3) await s3.stop();
    if (dir) rmrf(dir);
  });

  let records;
  let dataKey;
  let manifestKey;

  test('before the first push the queue is missing', async () => {
    const row = await waitFor('orders shown missing', async () => {
      const q = await queueRow(node);
      return q && q.state === 'missing' ? q : null;
    }, 10000, node);
    assert.equal(row.ownedHere, false);
    assert.equal(row.k, 0);
    const s = await s3Status(node);
    assert.equal(s.sinks[0].tenant, TENANT);
    assert.equal(s.sinks[0].source, 'env');
    assert.ok(s.threads > 0);
  });

  test('three records to two partitions land in window 1', async () => {
    const r = await post(node.url, '/api/v1/push', SPEC_ITEMS);
    assert.equal(r.status, 201, r.text);
    const f = await readQueue(node.url, 'orders');
    records = f.records;
    assert.equal(records.length, 3);
    const row = await waitFor('window 1 committed', async () => {
      const q = await queueRow(node);
      return q && q.windowsCommitted >= 1 ? q : null;
    }, 30000, node);
    assert.equal(row.k, 1);
    assert.equal(row.records, 3);
    assert.equal(row.windowsCommitted, 1);
    assert.equal(typeof row.lagSeconds, 'number');
    assert.ok(['filling', 'intent', 'upload', 'commit'].includes(row.state), row.state);
    const s = (await s3Status(node)).sinks[0];
    assert.equal(s.phase, 'running');
    assert.equal(s.ok, true);
    assert.deepEqual(s.health, { ok: true, queues: 1 });
    assert.equal(s.bucket.reachable, true);
    assert.deepEqual(s.placement, { givingBack: null, held: 1, nodes: 1, queues: 1, share: 1 });
  });

  test('the bucket holds the data object and its manifest under the spec\'s keys', async () => {
    const keys = (await s3.list('queen/')).map((o) => o.key).sort();
    assert.equal(keys.length, 2, JSON.stringify(keys));
    const ts = records[0].ts;
    const hourStart = Math.floor(ts / 3600e6) * 3600e6;
    const d = new Date(hourStart / 1000).toISOString();
    const dt = d.slice(0, 10);
    const hh = d.slice(11, 13);
    manifestKey = `queen/_queen/tenant=${TENANT}/queue=orders/windows/0000000001.json`;
    assert.ok(keys.includes(manifestKey), JSON.stringify(keys));
    dataKey = keys.find((k) => k !== manifestKey);
    const m = dataKey.match(new RegExp(`^queen/tenant=${TENANT}/queue=orders/dt=${dt}/hour=${hh}/w-0000000001-(\\d+)-(\\d+)\\.jsonl\\.zst$`));
    assert.ok(m, dataKey);
    assert.equal(Number(m[1]), hourStart, 'the first window starts at the hour its first record falls in');
    assert.ok(Number(m[2]) > ts, 'tEnd is after the records');
  });

  test('the data object is the records, one per line, sorted, byte for byte', async () => {
    const text = zstdDecode(await s3.get(dataKey));
    const sorted = [...records].sort((a, b) => (a.partition < b.partition ? -1 : a.partition > b.partition ? 1 : a.offset - b.offset));
    const want = sorted.map((r) => `{"partition":"${r.partition}","offset":${r.offset},"transactionId":"${r.transactionId}","ts":"${isoUs(r.ts)}","payload":${SPEC_PAYLOADS[r.partition][r.offset]}}`).join('\n') + '\n';
    assert.equal(text, want);
    assert.ok(text.includes('"total":42.00'));
  });

  test('the manifest has every field of the spec\'s example', async () => {
    const raw = (await s3.get(manifestKey)).toString();
    const m = JSON.parse(raw);
    assert.deepEqual(Object.keys(m), ['sink', 'tenant', 'queue', 'k', 'tStart', 'tEnd', 'format', 'compression', 'layout', 'objects',
      'records', 'bytes', 'partitions', 'minTs', 'maxTs', 'lost', 'writer', 'committedAt']);
    assert.equal(m.sink, 'default');
    assert.equal(m.tenant, TENANT);
    assert.equal(m.queue, 'orders');
    assert.equal(m.k, 1);
    assert.equal(m.format, 'jsonl');
    assert.equal(m.compression, 'zstd');
    assert.equal(m.layout, 'merged');
    assert.equal(m.records, 3);
    assert.equal(m.partitions, 2);
    assert.equal(m.minTs, records[0].ts);
    assert.equal(m.maxTs, records[0].ts);
    assert.deepEqual(m.lost, []);
    assert.match(m.writer, /^queen-s3\/\d+\.\d+\.\d+ jsonl\+zstd$/);
    assert.match(m.committedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    assert.equal(m.objects.length, 1);
    const body = await s3.get(dataKey);
    assert.deepEqual(m.objects[0], { key: dataKey, bytes: body.length, records: 3, sha256: crypto.createHash('sha256').update(body).digest('hex') });
    assert.equal(m.bytes, body.length);
    assert.ok(dataKey.endsWith(`-${m.tStart}-${m.tEnd}.jsonl.zst`));
  });

  test('the KV documents are the commit pointer, the intent and the lease', async () => {
    const c = await get(node.url, '/api/v1/kv/queen-s3/s3:default:orders:committed');
    assert.equal(c.status, 200, c.text);
    const v = c.json.value;
    assert.equal(v.k, 1);
    assert.equal(v.manifest, manifestKey);
    const i = await get(node.url, '/api/v1/kv/queen-s3/s3:default:orders:intent');
    assert.equal(i.json.value.k, 1);
    const l = await get(node.url, '/api/v1/kv/queen-s3/s3:default:orders:lease');
    assert.equal(l.status, 200);
    assert.ok(l.json.value.instance);
  });

  test('the same documents through the public 2.x KV route, and the lease fence as a check', async () => {
    const keys = ['s3:default:orders:committed', 's3:default:orders:intent', 's3:default:orders:lease'];
    const r = await post(node.url, '/api/v1/kv', { operations: [{ op: 'getMany', ns: 'queen-s3', keys }] });
    assert.equal(r.status, 200, r.text);
    const rows = r.json.results[0].rows;
    assert.deepEqual(rows.map((x) => x.key), keys);
    assert.equal(rows[0].value.k, 1);
    assert.equal(rows[0].value.manifest, manifestKey);
    assert.equal(rows[1].value.k, 1);
    assert.ok(rows[2].value.instance);
    assert.ok(rows[2].expiresAt, 'the lease has a lifetime');
    assert.equal(rows[0].expiresAt, null, 'the pointer is forever');
    const path = await get(node.url, '/api/v1/kv/queen-s3/s3:default:orders:committed');
    assert.equal(path.json.version, rows[0].version);
  });

  test('DuckDB reads the lake with its Hive columns and gets every record once', async () => {
    for (const o of await s3.list('queen/')) {
      const file = path.join(dir, o.key);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, await s3.get(o.key));
    }
    const inst = await DuckDBInstance.create(':memory:', { autoinstall_known_extensions: 'false' });
    const db = await inst.connect();
    const rows = (await db.runAndReadAll(`SELECT tenant, queue, dt, hour, partition, "offset", transactionId, payload::VARCHAR AS payload
      FROM read_json('${dir}/queen/tenant=*/queue=*/dt=*/hour=*/*.jsonl.zst', format='newline_delimited', compression='zstd',
      hive_partitioning=true, hive_types={'hour': INTEGER}) ORDER BY partition, "offset"`)).getRowObjectsJson();
    assert.equal(rows.length, 3);
    assert.deepEqual(rows.map((r) => [r.tenant, r.queue, r.partition, Number(r.offset)]),
      [[TENANT, 'orders', 'cust-1', 0], [TENANT, 'orders', 'cust-1', 1], [TENANT, 'orders', 'cust-2', 0]]);
    assert.equal(new Set(rows.map((r) => r.transactionId)).size, 3);
    assert.equal(typeof rows[0].hour, 'number');
  });

  test('metrics carry the queen_s3 families', async () => {
    const r = await get(node.url, '/metrics/prometheus');
    for (const fam of ['queen_s3_lag_seconds', 'queen_s3_safe_lag_seconds', 'queen_s3_windows_committed_total', 'queen_s3_records_written_total',
      'queen_s3_bytes_written_total', 'queen_s3_records_lost_total', 'queen_s3_window_records', 'queen_s3_window_bytes',
      'queen_s3_buffer_bytes', 'queen_s3_fetch_calls_total', 'queen_s3_discovery_partitions', 'queen_s3_s3_requests_total',
      'queen_s3_commit_precondition_lost_total', 'queen_s3_checkpoint_age_windows', 'queen_s3_queues_given_back_total']) {
      assert.match(r.text, new RegExp(`^# TYPE ${fam} `, 'm'), fam);
    }
    assert.match(r.text, /^queen_s3_windows_committed_total\{queue="orders"\} 1$/m);
    assert.match(r.text, /^queen_s3_records_written_total\{queue="orders"\} 3$/m);
    assert.match(r.text, /^queen_s3_s3_requests_total\{operation="put",code="200"\} \d+$/m);
    assert.match(r.text, /^queen_s3_lag_seconds\{queue="orders"\} [0-9.e+-]+$/m);
  });

  test('SIGTERM drains and gives the lease back', async () => {
    // node.stop() checks the exit (0) and the sanitizers; the drain and the release are in the
    // log (s3sink-nodes.test.mjs checks the row is gone and another node takes the queue)
    await node.stop();
    assert.match(node.log, /queen-s3: stopping: no new reads/);
    assert.match(node.log, /queue=orders: lease given back/);
    node = null;
  });
});

describe('boot lines', () => {
  const base = { QUEEN_S3_EMBEDDED: 'true', QUEEN_S3_QUEUES: 'orders', QUEEN_S3_ENDPOINT: 'http://127.0.0.1:1', QUEEN_S3_REGION: 'us-east-1',
    QUEEN_S3_BUCKET: 'lake', QUEEN_S3_ACCESS_KEY: 'a', QUEEN_S3_SECRET_KEY: 'super-secret-value' };
  test('QUEEN_S3_MAX_WINDOW_MS=50 stops the boot with the spec\'s line', () => {
    const r = runBoot({ ...base, QUEEN_S3_MAX_WINDOW_MS: '50' });
    assert.notEqual(r.code, 0);
    assert.equal(r.stderr.trim(), 'ERROR boot: FATAL: QUEEN_S3_EMBEDDED=true: QUEEN_S3_MAX_WINDOW_MS=50 is outside 100..=86400000. It is how long a window may stay open; the lag SLO is about this plus the safe lag');
  });
  test('QUEEN_S3_EMBEDDED=maybe stops the boot with a sentence like the others', () => {
    const r = runBoot({ QUEEN_S3_EMBEDDED: 'maybe' });
    assert.notEqual(r.code, 0);
    assert.equal(r.stderr.trim(), 'ERROR boot: FATAL: queen: QUEEN_S3_EMBEDDED=maybe is not one of true, false. It makes this node run the S3 sink');
  });
  test('QUEEN_S3_PARTITIONS stops the boot', () => {
    const r = runBoot({ ...base, QUEEN_S3_PARTITIONS: 'orders:0..3' });
    assert.notEqual(r.code, 0);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0], /^ERROR boot: FATAL: QUEEN_S3_EMBEDDED=true: QUEEN_S3_PARTITIONS/);
  });
  test('a missing required variable names it, and no line carries the secret', () => {
    for (const v of ['QUEEN_S3_ENDPOINT', 'QUEEN_S3_REGION', 'QUEEN_S3_BUCKET', 'QUEEN_S3_ACCESS_KEY', 'QUEEN_S3_SECRET_KEY']) {
      const env = { ...base };
      delete env[v];
      const r = runBoot(env);
      assert.notEqual(r.code, 0, v);
      assert.match(r.stderr, new RegExp(`^ERROR boot: FATAL: QUEEN_S3_EMBEDDED=true: ${v}`), r.stderr);
      assert.doesNotMatch(r.stderr, /super-secret-value/);
    }
  });
  test('bad enumerations and ranges each stop the boot with one line', () => {
    for (const [k, v] of [['QUEEN_S3_COMPRESSION', 'lz4'], ['QUEEN_S3_FORMAT', 'csv'], ['QUEEN_S3_ALIGN', 'week'], ['QUEEN_S3_START', 'middle'],
      ['QUEEN_S3_LAYOUT', 'flat'], ['QUEEN_S3_TARGET_MB', '0'], ['QUEEN_S3_MEMORY_MB', 'lots'], ['QUEEN_S3_LEASE_TTL_MS', '10'],
      ['QUEEN_S3_PATH_STYLE', 'maybe'], ['QUEEN_S3_ENDPOINT', 'ftp://x'], ['QUEEN_S3_PARQUET_CODEC', 'lzo']]) {
      const r = runBoot({ ...base, [k]: v });
      assert.notEqual(r.code, 0, `${k}=${v}`);
      const lines = r.stderr.trim().split('\n');
      assert.equal(lines.length, 1, r.stderr);
      assert.match(lines[0], new RegExp(`^ERROR boot: FATAL: QUEEN_S3_EMBEDDED=true: ${k}=`), lines[0]);
    }
  });
});

describe('the start line and the leftover variables', () => {
  let s3;
  let node;
  const reg = nodeRegistry(); // every node started here is stopped in after(), whatever the tests did
  before(async () => { s3 = await startS3(); });
  after(async () => { await reg.stopAll(); if (s3) await s3.stop(); });
  test('one start line lists every setting and never the secret; QUEEN_S3_LISTEN gets one warning', async () => {
    node = await reg.start({ env: sinkEnv(s3.endpoint, { QUEEN_S3_LISTEN: '0.0.0.0:9333', QUEEN_S3_LOG_FORMAT: 'json', QUEEN_S3_SECRET_KEY: 'S3RVER' }) });
    await waitFor('the start line', async () => /queen-s3 .*tenant=/.test(node.log), 10000, node);
    const start = node.log.split('\n').filter((l) => /queen-s3 \d+\.\d+\.\d+ tenant=/.test(l));
    assert.equal(start.length, 1, node.log);
    for (const k of ['sink=default', 'queues=orders', 'bucket=lake', 'region=us-east-1', 'format=jsonl', 'compression=zstd', 'layout=merged',
      'align=hour', 'max_window_ms=1000', 'start=earliest', 'memory_mb=512', 'lease_ttl_ms=3000', 'safe_guard_ms=300']) {
      assert.ok(start[0].includes(k), `${k} in ${start[0]}`);
    }
    assert.doesNotMatch(node.log, /S3RVER.*S3RVER/, 'the secret key is never logged next to the access key');
    const warn = node.log.split('\n').filter((l) => l.includes('QUEEN_S3_LISTEN'));
    assert.equal(warn.length, 1, node.log);
    assert.ok(warn[0].includes('QUEEN_S3_LOG_FORMAT'));
  });
});

describe('the bucket answering errors, down, or refusing the credentials', () => {
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

  test('a bucket answering 500 at boot: the sink backs off, says so, and starts when it answers', async () => {
    proxy.pass(); proxy.fault('500');
    node = await reg.start({ env: sinkEnv(proxy.endpoint) });
    await post(node.url, '/api/v1/push', SPEC_ITEMS);
    const s = await waitFor('the probe error in status', async () => {
      const x = (await s3Status(node)).sinks[0];
      return x.bucket.reachable === false ? x : null;
    }, 20000, node);
    assert.equal(s.ok, false);
    assert.match(s.bucket.error, /lake/);
    proxy.pass();
    await waitFor('window 1 after the bucket came back', async () => ((await queueRow(node)) || {}).windowsCommitted >= 1, 40000, node);
  });

  test('uploads failing with 500 after the start: lastError, then catching up', async () => {
    proxy.pass(); proxy.fault('500');
    await post(node.url, '/api/v1/push', { items: [{ queue: 'orders', partition: 'cust-3', payload: { order: 3 } }] });
    const row = await waitFor('the upload error in status', async () => {
      const q = await queueRow(node);
      return q && q.lastError && /HTTP 500|500/.test(q.lastError.message) ? q : null;
    }, 30000, node);
    assert.equal(row.k, 1);
    proxy.pass(); proxy.fault('reset');
    await sleep(1000);
    proxy.pass();
    const done = await waitFor('window 2', async () => {
      const q = await queueRow(node);
      return q && q.k >= 2 ? q : null;
    }, 60000, node);
    assert.equal(done.records, 4, 'nothing lost, nothing doubled');
    const keys = (await s3.list('queen/tenant=')).map((o) => o.key);
    assert.equal(keys.length, 2, JSON.stringify(keys));
    await node.stop();
    node = null;
  });

  test('wrong credentials: 403 reported, nothing lost; the right ones catch up', async () => {
    const data = tmpDir('queen-data-');
    const bad = await reg.start({ dataDir: data, env: sinkEnv(s3.endpoint, { QUEEN_S3_SECRET_KEY: 'wrong', QUEEN_S3_QUEUES: 'creds' }) });
    await post(bad.url, '/api/v1/push', { items: [{ queue: 'creds', partition: 'p', payload: { a: 1 } }] });
    const s = await waitFor('the 403 in status', async () => {
      const x = (await s3Status(bad)).sinks[0];
      return x.bucket.reachable === false && /403|credential|Signature/i.test(x.bucket.error) ? x : null;
    }, 20000, bad);
    assert.equal(s.ok, false);
    await bad.stop();
    node = await reg.start({ dataDir: data, env: sinkEnv(s3.endpoint, { QUEEN_S3_QUEUES: 'creds' }) });
    await waitFor('the window after the credentials were fixed', async () => ((await queueRow(node, 'creds')) || {}).windowsCommitted >= 1, 30000, node);
  });
});
