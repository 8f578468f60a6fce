// The S3 sink's objects, read back by the readers the lake is for. build/asan/tools/sinkobj writes
// windows exactly as the sink does (src/sink: keys, JSONL lines, zstd/gzip, Parquet, manifests)
// into a directory laid out like the bucket; DuckDB (read_json / read_csv / read_parquet with Hive
// partitioning), hyparquet and independent decompressors (node's zlib, fzstd) read them back.
// Every record, field and type is checked, the payload byte for byte (42.00 stays 42.00), the
// Hive columns tenant, queue, dt and hour, the sidecars stay out of the data globs, manifests
// match their objects, and a rebuilt window is byte-identical.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { after, before, describe, test } from 'node:test';

import { DuckDBInstance } from '@duckdb/node-api';
import { decompress as zstdDecompress } from 'fzstd';
import { parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';

import { ROOT, rmrf, tmpDir } from './harness.mjs';

const SINKOBJ = path.join(ROOT, 'build/asan/tools/sinkobj');
const T1 = '00000000-0000-0000-0000-000000000001';
const T2 = '6f1c2a4e-9b3d-4c7a-8e21-0123456789ab';
const H = 3600000000;
const SIX = 1791007200000000; // 2026-10-03T06:00:00Z
const DAY2 = 1791072000000000; // 2026-10-04T00:00:00Z

let dir;
let db;
before(async () => {
  dir = tmpDir('queen-sinkobj-');
  const inst = await DuckDBInstance.create(':memory:', { autoinstall_known_extensions: 'false' });
  db = await inst.connect();
});
after(() => { if (dir) rmrf(dir); });
const duck = async (sql) => (await db.runAndReadAll(sql)).getRowObjectsJson();
const sqlStr = (s) => `'${s.replaceAll("'", "''")}'`;

// ---- records and what each reader must see -----------------------------------------------------

// A payload is stored text (json), empty, or sealed bytes the node could not open.
function payloadOf(i) {
  switch (i % 8) {
    case 0: return { kind: 'raw', text: `{"order":${i},"status":"new","total":42.00}` };
    case 1: return { kind: 'empty' };
    case 2: return { kind: 'text', text: `{\n  "a": 1.50,\r\n  "b": [1, 2]\n}` };
    case 3: return { kind: 'raw', text: '"caf\u00e9 \\"q\\" \\n"' };
    case 4: return { kind: 'raw', text: '[1, 2.50, -1.0e+1, true, null]' };
    case 5: return { kind: 'sealed', text: `\u0000\u00ffbin-${i}` };
    case 6: return { kind: 'raw', text: '{"emoji":"\u{1F451}","nested":{"a":[null,{}]}}' };
    default: return { kind: 'raw', text: `"${'x'.repeat(3000 + (i % 50))}"` };
  }
}

const PARTITIONS = ['cust-1', 'cust-2', 'cust/\u00e9', 'q"1', 'Z'];
const offsets = new Map(); // queue key -> partition -> next offset

// n records for a queue, stamped inside [tStart, tEnd), with dense offsets per partition.
function records(qkey, n, tStart, tEnd, seed = 0) {
  if (!offsets.has(qkey)) offsets.set(qkey, new Map());
  const next = offsets.get(qkey);
  const out = [];
  for (let i = 0; i < n; i++) {
    const partition = PARTITIONS[(i * 7 + seed) % PARTITIONS.length];
    const offset = next.get(partition) ?? 0;
    next.set(partition, offset + 1);
    const ts = tStart + Math.floor(((tEnd - tStart - 1) * i) / Math.max(1, n));
    const id = String(seed * 100000 + i).padStart(12, '0');
    out.push({ partition, offset, txn: `01a1007b-855d-7001-8107-${id}`, ts, ...payloadOf(i + seed) });
  }
  return out;
}

function toolLine(r) {
  const head = JSON.stringify({ partition: r.partition, offset: r.offset, transactionId: r.txn, ts: r.ts });
  const tail = r.kind === 'raw' ? `,"payload":${r.text}}` : r.kind === 'text' ? `,"payloadText":${JSON.stringify(r.text)}}`
    : r.kind === 'sealed' ? `,"sealed":${JSON.stringify(r.text)}}` : '}';
  return head.slice(0, -1) + tail;
}

const b64 = (r) => Buffer.from(r.text, 'utf8').toString('base64');
// The payload as JSONL writes it, and as Parquet stores it (null = SQL NULL).
function jsonlPayload(r) {
  if (r.kind === 'empty') return 'null';
  if (r.kind === 'sealed') return JSON.stringify(b64(r));
  return r.text.replace(/[\r\n]/g, ' ');
}
function parquetPayload(r) {
  if (r.kind === 'empty') return null;
  if (r.kind === 'sealed') return JSON.stringify(b64(r));
  return r.text;
}

function iso(us) {
  const ms = Math.floor(us / 1000);
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, (m, f) => `.${f}${String(us % 1000).padStart(3, '0')}Z`);
}

const jsonlLine = (r) => `{"partition":${JSON.stringify(r.partition)},"offset":${r.offset},"transactionId":${JSON.stringify(r.txn)},"ts":"${iso(r.ts)}","payload":${jsonlPayload(r)}}`;

// The sink's order: partition bytewise, then offset.
function sorted(recs) {
  return [...recs].sort((a, b) => Buffer.compare(Buffer.from(a.partition), Buffer.from(b.partition)) || a.offset - b.offset);
}

// ---- writing windows with the tool -------------------------------------------------------------

const written = []; // every window written: { root, tenant, queue, k, tStart, tEnd, format, compression, layout, align, recs, keys }

function writeWindow(root, w) {
  const args = ['--root', root, '--tenant', w.tenant, '--queue', w.queue, '--k', String(w.k), '--t-start', String(w.tStart),
    '--t-end', String(w.tEnd), '--format', w.format, '--compression', w.compression, '--layout', w.layout ?? 'merged',
    '--align', w.align ?? 'hour', '--manifest', '--committed-at', String(w.tEnd + 7000000)];
  const input = w.recs.map(toolLine).join('\n') + (w.recs.length ? '\n' : '');
  const res = spawnSync(SINKOBJ, args, { input, maxBuffer: 1 << 30 });
  assert.equal(res.status, 0, res.stderr.toString());
  const keys = res.stdout.toString().trim().split('\n');
  const entry = { root, layout: 'merged', align: 'hour', ...w, keys };
  written.push(entry);
  return entry;
}

const enc = (s) => Buffer.from(s, 'utf8').reduce((acc, c) => acc + (/[A-Za-z0-9._-]/.test(String.fromCharCode(c)) ? String.fromCharCode(c) : `%${c.toString(16).toUpperCase().padStart(2, '0')}`), '');
const pad = (k) => String(k).padStart(10, '0');
const hourOf = (us) => new Date(Math.floor(us / 1000)).toISOString().slice(11, 13);
const dayOf = (us) => new Date(Math.floor(us / 1000)).toISOString().slice(0, 10);

function decompressFile(file, compression) {
  const raw = fs.readFileSync(file);
  if (compression === 'gzip') return zlib.gunzipSync(raw);
  if (compression === 'zstd') return Buffer.from(zstdDecompress(new Uint8Array(raw)));
  return raw;
}

// ---- the lake ----------------------------------------------------------------------------------

let lake; // hour-aligned Hive tree of JSONL and Parquet objects
let dayLake; // a day-aligned tree (no hour= level)
const SPEC = [
  { partition: 'cust-1', offset: 0, txn: '01a1007b-855d-7001-8107-adfdabd3e51c', ts: 1791009457501942, kind: 'raw', text: '{"order":1,"status":"new","total":42.00}' },
  { partition: 'cust-2', offset: 0, txn: '01a1007b-855d-7002-aa32-19bf977724d0', ts: 1791009457501942, kind: 'raw', text: '{"order":2,"status":"new","total":17.50}' },
  { partition: 'cust-1', offset: 1, txn: '01a1007b-855d-7003-ab83-e480f30b0bb6', ts: 1791009457501942, kind: 'raw', text: '{"order":1,"status":"paid","total":42.00}' },
];

before(() => {
  lake = path.join(dir, 'lake');
  dayLake = path.join(dir, 'lake-day');
  // orders: the spec's window 1, then windows in the next hours and the next day (zstd)
  const w1 = { tenant: T1, queue: 'orders', k: 1, tStart: SIX, tEnd: 1791009458377855, format: 'jsonl', compression: 'zstd', recs: SPEC };
  offsets.set('orders', new Map([['cust-1', 2], ['cust-2', 1]]));
  writeWindow(lake, w1);
  writeWindow(lake, { tenant: T1, queue: 'orders', k: 2, tStart: w1.tEnd, tEnd: SIX + H, format: 'jsonl', compression: 'zstd', recs: records('orders', 400, w1.tEnd, SIX + H, 1) });
  writeWindow(lake, { tenant: T1, queue: 'orders', k: 3, tStart: SIX + H, tEnd: SIX + H + 300000000, format: 'jsonl', compression: 'zstd', recs: records('orders', 50, SIX + H, SIX + H + 300000000, 2) });
  writeWindow(lake, { tenant: T1, queue: 'orders', k: 4, tStart: DAY2, tEnd: DAY2 + 600000000, format: 'jsonl', compression: 'zstd', recs: records('orders', 30, DAY2, DAY2 + 600000000, 3) });
  // a queue whose name must be percent-encoded (gzip), one with no compression, one per partition
  writeWindow(lake, { tenant: T1, queue: 'pay ments/\u20ac', k: 1, tStart: SIX, tEnd: SIX + 1000, format: 'jsonl', compression: 'gzip', recs: records('pay', 60, SIX, SIX + 1000, 4) });
  writeWindow(lake, { tenant: T1, queue: 'plain', k: 1, tStart: SIX + 5, tEnd: SIX + 6, format: 'jsonl', compression: 'none', recs: records('plain', 9, SIX + 5, SIX + 6, 5) });
  writeWindow(lake, { tenant: T1, queue: 'perpart', k: 1, tStart: SIX, tEnd: SIX + 2 * 1000000, format: 'jsonl', compression: 'zstd', layout: 'per-partition', recs: records('perpart', 40, SIX, SIX + 2000000, 6) });
  // a second tenant with a queue of the same name
  writeWindow(lake, { tenant: T2, queue: 'orders', k: 1, tStart: SIX + 2 * H, tEnd: SIX + 2 * H + 10, format: 'jsonl', compression: 'zstd', recs: records('t2orders', 25, SIX + 2 * H, SIX + 2 * H + 10, 7) });
  // Parquet, both codecs, and a window big enough for two row groups
  writeWindow(lake, { tenant: T1, queue: 'events', k: 1, tStart: SIX, tEnd: SIX + H, format: 'parquet', compression: 'zstd', recs: records('events', 500, SIX, SIX + H, 8) });
  writeWindow(lake, { tenant: T1, queue: 'events', k: 2, tStart: SIX + H, tEnd: SIX + H + 60000000, format: 'parquet', compression: 'zstd', recs: records('events', 100, SIX + H, SIX + H + 60000000, 9) });
  writeWindow(lake, { tenant: T2, queue: 'events-snappy', k: 1, tStart: SIX, tEnd: SIX + 60000000, format: 'parquet', compression: 'snappy', recs: records('evs', 300, SIX, SIX + 60000000, 10) });
  writeWindow(lake, { tenant: T1, queue: 'perpart-pq', k: 5, tStart: SIX, tEnd: SIX + 1000, format: 'parquet', compression: 'snappy', layout: 'per-partition', recs: records('pppq', 20, SIX, SIX + 1000, 11) });
  const big = records('big', 150001, SIX + 3 * H, SIX + 4 * H, 12).map((r) => (r.kind === 'raw' && r.text.length > 1000 ? { ...r, text: '"long"' } : r));
  writeWindow(lake, { tenant: T1, queue: 'big', k: 1, tStart: SIX + 3 * H, tEnd: SIX + 4 * H, format: 'parquet', compression: 'zstd', recs: big });
  // align day: dt= only
  writeWindow(dayLake, { tenant: T1, queue: 'daily', k: 1, tStart: SIX - 6 * H, tEnd: SIX + 17 * H, format: 'jsonl', compression: 'gzip', align: 'day', recs: records('daily', 80, SIX - 6 * H, SIX + 17 * H, 13) });
  writeWindow(dayLake, { tenant: T1, queue: 'daily', k: 2, tStart: DAY2, tEnd: DAY2 + H, format: 'jsonl', compression: 'gzip', align: 'day', recs: records('daily', 20, DAY2, DAY2 + H, 14) });
});

const windowsOf = (pred) => written.filter(pred);
const dataKeys = (w) => (w.keys.length > 1 ? w.keys.slice(0, -1) : w.keys.filter((k) => !k.includes('/_queen/')));

describe('keys', () => {
  test('the spec window has the spec keys, and every key follows the layout', () => {
    const w = written.find((x) => x.queue === 'orders' && x.tenant === T1 && x.k === 1);
    assert.deepEqual(w.keys, [
      'queen/tenant=00000000-0000-0000-0000-000000000001/queue=orders/dt=2026-10-03/hour=06/w-0000000001-1791007200000000-1791009458377855.jsonl.zst',
      'queen/_queen/tenant=00000000-0000-0000-0000-000000000001/queue=orders/windows/0000000001.json',
    ]);
    for (const x of written) {
      const ext = x.format === 'parquet' ? 'parquet' : { zstd: 'jsonl.zst', gzip: 'jsonl.gz', none: 'jsonl' }[x.compression];
      const hive = `queen/tenant=${enc(x.tenant)}/queue=${enc(x.queue)}/dt=${dayOf(x.tStart)}${x.align === 'day' ? '' : `/hour=${hourOf(x.tStart)}`}`;
      const name = `w-${pad(x.k)}-${x.tStart}-${x.tEnd}`;
      const want = [];
      if (x.layout === 'per-partition') {
        const byPart = new Map();
        for (const r of sorted(x.recs)) { if (!byPart.has(r.partition)) byPart.set(r.partition, []); byPart.get(r.partition).push(r); }
        for (const [p, rs] of byPart) want.push(`${hive}/${name}-p-${enc(p)}-${rs[0].offset}-${rs.at(-1).offset}.${ext}`);
      } else {
        want.push(`${hive}/${name}.${ext}`);
      }
      want.push(`queen/_queen/tenant=${enc(x.tenant)}/queue=${enc(x.queue)}/windows/${pad(x.k)}.json`);
      assert.deepEqual(x.keys, want);
    }
    // a name cannot climb out of its level
    const pay = written.find((x) => x.queue.startsWith('pay'));
    assert.match(pay.keys[0], /\/queue=pay%20ments%2F%E2%82%AC\/dt=2026-10-03\/hour=06\//);
  });

  test('manifests name their objects with true sizes, counts and sha256', () => {
    for (const x of written) {
      const m = JSON.parse(fs.readFileSync(path.join(x.root, x.keys.at(-1)), 'utf8'));
      assert.deepEqual(Object.keys(m), ['sink', 'tenant', 'queue', 'k', 'tStart', 'tEnd', 'format', 'compression', 'layout',
        'objects', 'records', 'bytes', 'partitions', 'minTs', 'maxTs', 'lost', 'writer', 'committedAt']);
      assert.equal(m.sink, 'default');
      assert.equal(m.tenant, x.tenant);
      assert.equal(m.queue, x.queue);
      assert.equal(m.k, x.k);
      assert.equal(m.tStart, x.tStart);
      assert.equal(m.tEnd, x.tEnd);
      assert.equal(m.format, x.format);
      assert.equal(m.compression, x.compression);
      assert.equal(m.layout, x.layout);
      assert.equal(m.records, x.recs.length);
      assert.equal(m.partitions, new Set(x.recs.map((r) => r.partition)).size);
      assert.deepEqual(m.lost, []);
      assert.equal(m.writer, `queen-s3/2.0.0 ${x.format}+${x.compression}`);
      assert.equal(m.committedAt, iso(x.tEnd + 7000000));
      assert.deepEqual(m.objects.map((o) => o.key), dataKeys(x));
      let total = 0;
      for (const o of m.objects) {
        const body = fs.readFileSync(path.join(x.root, o.key));
        assert.equal(o.bytes, body.length);
        assert.equal(o.sha256, crypto.createHash('sha256').update(body).digest('hex'));
        total += o.bytes;
      }
      assert.equal(m.bytes, total);
      assert.equal(m.objects.reduce((a, o) => a + o.records, 0), x.recs.length);
      // minTs/maxTs are JSON integers above 2^53: compare their text
      const text = fs.readFileSync(path.join(x.root, x.keys.at(-1)), 'utf8');
      assert.match(text, new RegExp(`"minTs": ${x.recs.reduce((a, r) => Math.min(a, r.ts), Infinity)},`));
      assert.match(text, new RegExp(`"maxTs": ${x.recs.reduce((a, r) => Math.max(a, r.ts), 0)},`));
    }
  });

  test('a rebuilt window is byte-identical', () => {
    const again = path.join(dir, 'again');
    for (const x of written.filter((w) => w.queue !== 'big')) {
      const { keys, root, ...spec } = x; // eslint-disable-line no-unused-vars
      const y = writeWindow(again, spec);
      written.pop();
      assert.deepEqual(y.keys, x.keys);
      for (const k of x.keys) assert.ok(fs.readFileSync(path.join(x.root, k)).equals(fs.readFileSync(path.join(again, k))), k);
    }
  });
});

describe('JSONL', () => {
  const jsonl = () => windowsOf((w) => w.format === 'jsonl' && w.root === lake);

  test('independent decompressors give the lines byte for byte', () => {
    for (const x of written.filter((w) => w.format === 'jsonl')) {
      const byKey = new Map();
      if (x.layout === 'per-partition') {
        for (const r of sorted(x.recs)) {
          const key = dataKeys(x).find((k) => k.includes(`-p-${enc(r.partition)}-`));
          byKey.set(key, (byKey.get(key) ?? '') + jsonlLine(r) + '\n');
        }
      } else {
        byKey.set(x.keys[0], sorted(x.recs).map((r) => jsonlLine(r) + '\n').join(''));
      }
      for (const [key, want] of byKey) assert.equal(decompressFile(path.join(x.root, key), x.compression).toString('utf8'), want, key);
    }
    // the spec's lines, exactly
    const w1 = written.find((w) => w.queue === 'orders' && w.k === 1);
    assert.equal(decompressFile(path.join(lake, w1.keys[0]), 'zstd').toString(),
      '{"partition":"cust-1","offset":0,"transactionId":"01a1007b-855d-7001-8107-adfdabd3e51c","ts":"2026-10-03T06:37:37.501942Z","payload":{"order":1,"status":"new","total":42.00}}\n' +
      '{"partition":"cust-1","offset":1,"transactionId":"01a1007b-855d-7003-ab83-e480f30b0bb6","ts":"2026-10-03T06:37:37.501942Z","payload":{"order":1,"status":"paid","total":42.00}}\n' +
      '{"partition":"cust-2","offset":0,"transactionId":"01a1007b-855d-7002-aa32-19bf977724d0","ts":"2026-10-03T06:37:37.501942Z","payload":{"order":2,"status":"new","total":17.50}}\n');
  });

  for (const [compression, ext] of [['zstd', 'jsonl.zst'], ['gzip', 'jsonl.gz'], ['none', 'jsonl']]) {
    test(`DuckDB read_json (${compression}): every record once, with types and the Hive columns`, async () => {
      const glob = path.join(lake, `queen/tenant=*/queue=*/dt=*/hour=*/*.${ext}`);
      const rows = await duck(`SELECT partition, "offset"::VARCHAR AS o, transactionId::VARCHAR AS txn, epoch_us(ts)::VARCHAR AS us,
          typeof(ts) AS tst, typeof("offset") AS ot, payload::VARCHAR AS payload, tenant, queue, dt::VARCHAR AS dt, typeof(dt) AS dtt, hour,
          filename FROM read_json(${sqlStr(glob)}, format='newline_delimited', compression=${sqlStr(compression === 'none' ? 'uncompressed' : compression)}, hive_partitioning=true,
          hive_types={'hour': INTEGER}, filename=true,
          columns={partition: 'VARCHAR', "offset": 'BIGINT', transactionId: 'VARCHAR', ts: 'TIMESTAMP', payload: 'JSON'})`);
      const wins = jsonl().filter((w) => w.compression === compression);
      const want = wins.flatMap((w) => w.recs.map((r) => ({ w, r })));
      assert.equal(rows.length, want.length);
      assert.ok(rows.every((x) => !x.filename.includes('/_queen/')));
      const byId = new Map(rows.map((x) => [`${x.tenant}|${x.queue}|${x.partition}|${x.o}`, x]));
      assert.equal(byId.size, rows.length, 'each record once');
      for (const { w, r } of want) {
        const got = byId.get(`${w.tenant}|${w.queue}|${r.partition}|${r.offset}`);
        assert.ok(got, `${w.queue} ${r.partition} ${r.offset}`);
        assert.equal(got.txn, r.txn);
        assert.equal(got.us, String(r.ts));
        assert.equal(got.tst, 'TIMESTAMP');
        assert.equal(got.ot, 'BIGINT');
        assert.equal(got.dt, dayOf(w.tStart));
        assert.equal(got.dtt, 'DATE');
        assert.equal(got.hour, Number(hourOf(w.tStart)));
        // DuckDB re-prints JSON values (42.00 -> 42.0), so compare their meaning here and the
        // bytes through the raw lines below
        const p = jsonlPayload(r);
        assert.deepEqual(got.payload === null ? null : JSON.parse(got.payload), JSON.parse(p));
      }
    });

    test(`DuckDB reads the raw lines (${compression}): the payload text byte for byte`, async () => {
      const glob = path.join(lake, `queen/tenant=*/queue=*/dt=*/hour=*/*.${ext}`);
      const rows = await duck(`SELECT line, filename FROM read_csv(${sqlStr(glob)}, columns={'line': 'VARCHAR'}, header=false,
          delim=chr(1), quote='', escape='', compression=${sqlStr(compression)}, auto_detect=false, filename=true)`);
      const wins = jsonl().filter((w) => w.compression === compression);
      const want = new Set(wins.flatMap((w) => w.recs.map(jsonlLine)));
      assert.equal(rows.length, want.size);
      for (const { line } of rows) assert.ok(want.has(line), line.slice(0, 200));
      // per file, in the sink's order
      for (const w of wins.filter((x) => x.layout === 'merged')) {
        const got = rows.filter((x) => x.filename.endsWith(w.keys[0])).map((x) => x.line);
        assert.deepEqual(got, sorted(w.recs).map(jsonlLine));
      }
      assert.ok([...want].some((l) => l.includes('"total":42.00}')));
    });
  }

  test('DuckDB over the whole lake in one glob: tenants and queues as columns', async () => {
    const glob = path.join(lake, 'queen/tenant=*/queue=*/dt=*/hour=*/*.jsonl*');
    const rows = await duck(`SELECT tenant, queue, count(*)::INT AS n FROM read_json(${sqlStr(glob)}, format='newline_delimited',
        hive_partitioning=true, columns={partition: 'VARCHAR', "offset": 'BIGINT', transactionId: 'VARCHAR',
        ts: 'TIMESTAMP', payload: 'JSON'}) GROUP BY ALL ORDER BY ALL`);
    const want = new Map();
    for (const w of jsonl()) want.set(`${w.tenant}|${w.queue}`, (want.get(`${w.tenant}|${w.queue}`) ?? 0) + w.recs.length);
    assert.deepEqual(rows.map((r) => `${r.tenant}|${r.queue}|${r.n}`), [...want].map(([k, n]) => `${k}|${n}`).sort());
    // the spec's query shape: one day of one queue, ordered
    const day = await duck(`SELECT partition, "offset"::INT AS o FROM read_json(${sqlStr(glob)}, format='newline_delimited',
        hive_partitioning=true, columns={partition: 'VARCHAR', "offset": 'BIGINT', transactionId: 'VARCHAR',
        ts: 'TIMESTAMP', payload: 'JSON'}) WHERE dt = '2026-10-04' AND queue = 'orders' ORDER BY partition, ts, "offset"`);
    assert.equal(day.length, 30);
  });

  test('align day: dt= only, read with Hive partitioning', async () => {
    const rows = await duck(`SELECT dt::VARCHAR AS dt, count(*)::INT AS n, min(epoch_us(ts))::VARCHAR AS lo FROM read_json(${sqlStr(path.join(dayLake, 'queen/tenant=*/queue=*/dt=*/*.jsonl.gz'))},
        format='newline_delimited', compression='gzip', hive_partitioning=true, columns={partition: 'VARCHAR', "offset": 'BIGINT',
        transactionId: 'VARCHAR', ts: 'TIMESTAMP', payload: 'JSON'}) GROUP BY ALL ORDER BY ALL`);
    assert.deepEqual(rows.map((r) => [r.dt, r.n]), [['2026-10-03', 80], ['2026-10-04', 20]]);
    const cols = await duck(`DESCRIBE SELECT * FROM read_json(${sqlStr(path.join(dayLake, 'queen/tenant=*/queue=*/dt=*/*.jsonl.gz'))}, hive_partitioning=true)`);
    assert.ok(!cols.some((c) => c.column_name === 'hour'));
  });
});

describe('Parquet', () => {
  const pqs = () => windowsOf((w) => w.format === 'parquet');

  test('DuckDB read_parquet: every record, field, type and Hive column', async () => {
    const glob = path.join(lake, 'queen/tenant=*/queue=*/dt=*/hour=*/*.parquet');
    const rows = await duck(`SELECT partition, "offset"::VARCHAR AS o, transaction_id AS txn, epoch_us(ts)::VARCHAR AS us, typeof(ts) AS tst,
        payload, tenant, queue, dt::VARCHAR AS dt, hour FROM read_parquet(${sqlStr(glob)}, hive_partitioning=true, hive_types={'hour': INTEGER})`);
    const want = pqs().flatMap((w) => w.recs.map((r) => ({ w, r })));
    assert.equal(rows.length, want.length);
    const byId = new Map(rows.map((x) => [`${x.tenant}|${x.queue}|${x.partition}|${x.o}`, x]));
    assert.equal(byId.size, rows.length);
    for (const { w, r } of want) {
      const got = byId.get(`${w.tenant}|${w.queue}|${r.partition}|${r.offset}`);
      assert.ok(got);
      assert.equal(got.txn, r.txn);
      assert.equal(got.us, String(r.ts));
      assert.equal(got.tst, 'TIMESTAMP WITH TIME ZONE'); // TIMESTAMP(MICROS, isAdjustedToUTC)
      assert.equal(got.payload, parquetPayload(r)); // the stored text, line breaks and 42.00 included
      assert.equal(got.dt, dayOf(w.tStart));
      assert.equal(got.hour, Number(hourOf(w.tStart)));
    }
    // json_extract works on the payload column
    const t = await duck(`SELECT count(*)::INT AS n FROM read_parquet(${sqlStr(glob)}, hive_partitioning=true) WHERE json_extract(payload, '$.total')::DOUBLE = 42`);
    assert.equal(t[0].n, want.filter(({ r }) => r.kind === 'raw' && r.text.includes('"total":42.00')).length);
  });

  test('schema, codecs, row groups of 100,000 and the footer', async () => {
    for (const w of pqs()) {
      for (const key of dataKeys(w)) {
        const file = path.join(w.root, key);
        const schema = await duck(`SELECT name, type, converted_type, repetition_type FROM parquet_schema(${sqlStr(file)})`);
        assert.deepEqual(schema.map((s) => [s.name, s.type, s.converted_type, s.repetition_type]), [
          ['queen_record', null, null, null],
          ['partition', 'BYTE_ARRAY', 'UTF8', 'REQUIRED'],
          ['offset', 'INT64', null, 'REQUIRED'],
          ['transaction_id', 'BYTE_ARRAY', 'UTF8', 'REQUIRED'],
          ['ts', 'INT64', 'TIMESTAMP_MICROS', 'REQUIRED'],
          ['payload', 'BYTE_ARRAY', 'UTF8', 'OPTIONAL']]);
        const meta = await duck(`SELECT DISTINCT compression FROM parquet_metadata(${sqlStr(file)})`);
        assert.deepEqual(meta.map((m) => m.compression), [w.compression.toUpperCase()]);
        const kv = await duck(`SELECT decode(key) AS k, decode(value) AS v FROM parquet_kv_metadata(${sqlStr(file)})`);
        assert.deepEqual(kv, [{ k: 'queen.queue', v: w.queue }, { k: 'queen.tenant', v: w.tenant }]);
      }
    }
    const big = written.find((w) => w.queue === 'big');
    const rg = await duck(`SELECT row_group_id::INT AS g, row_group_num_rows::INT AS n FROM parquet_metadata(${sqlStr(path.join(lake, big.keys[0]))}) WHERE path_in_schema = 'offset' ORDER BY 1`);
    assert.deepEqual(rg, [{ g: 0, n: 100000 }, { g: 1, n: 50001 }]);
  });

  test('hyparquet reads every value back, in the sink order', async () => {
    for (const w of pqs().filter((x) => x.queue !== 'big')) {
      const recs = sorted(w.recs);
      const got = [];
      for (const key of dataKeys(w)) {
        const b = fs.readFileSync(path.join(w.root, key));
        const ab = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
        const meta = await parquetMetadataAsync(ab);
        assert.deepEqual(meta.key_value_metadata, [{ key: 'queen.queue', value: w.queue }, { key: 'queen.tenant', value: w.tenant }]);
        const ts = meta.schema.find((s) => s.name === 'ts');
        assert.equal(ts.logical_type.type, 'TIMESTAMP');
        assert.equal(ts.logical_type.isAdjustedToUTC, true);
        assert.equal(ts.logical_type.unit, 'MICROS');
        got.push(...await parquetReadObjects({ file: ab, compressors, utf8: true, parsers: { timestampFromMicroseconds: (us) => us } }));
      }
      assert.equal(got.length, recs.length);
      for (let i = 0; i < recs.length; i++) {
        const r = recs[i];
        assert.equal(got[i].partition, r.partition);
        assert.equal(Number(got[i].offset), r.offset);
        assert.equal(got[i].transaction_id, r.txn);
        assert.equal(BigInt(got[i].ts), BigInt(r.ts));
        assert.equal(got[i].payload ?? null, parquetPayload(r));
      }
    }
  });
});
