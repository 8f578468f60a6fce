// The Parquet writer (src/parquet) read back by two independent readers: DuckDB and hyparquet.
// build/asan/tools/pqtool writes the sink's queen_record file from JSON lines; every value,
// null, codec, row group, logical type and footer key must come back as written.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { DuckDBInstance } from '@duckdb/node-api';
import { parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';

import { ROOT, rmrf, tmpDir } from './harness.mjs';

const PQTOOL = path.join(ROOT, 'build/asan/tools/pqtool');
let dir;
let db;
before(async () => {
  dir = tmpDir('queen-pq-');
  const inst = await DuckDBInstance.create(':memory:', { autoinstall_known_extensions: 'false' });
  db = await inst.connect();
});
after(() => { if (dir) rmrf(dir); });

function write(name, rows, codec, rowGroup, kv = {}) {
  const file = path.join(dir, name);
  const input = rows.map((r) => JSON.stringify({ partition: r.partition, offset: r.offset, transactionId: r.txn, ts: r.ts })
    .replace(/}$/, r.payload === null ? ',"payload":null}' : `,"payload":${r.payload}}`)).join('\n') + (rows.length ? '\n' : '');
  const args = [codec, String(rowGroup), file, ...Object.entries(kv).map(([k, v]) => `${k}=${v}`)];
  const res = spawnSync(PQTOOL, args, { input, maxBuffer: 1 << 30 });
  assert.equal(res.status, 0, res.stderr.toString());
  return file;
}

const duck = async (sql) => (await db.runAndReadAll(sql)).getRowObjectsJson();

// Rows of every shape: names with quotes and unicode, payloads of every JSON kind (kept as
// their text, e.g. 42.00), nulls, long payloads that fill several pages, negative offsets never.
function rows(n) {
  const out = [];
  const base = 1791009457501942;
  for (let i = 0; i < n; i++) {
    let payload;
    switch (i % 7) {
      case 0: payload = `{"order":${i},"total":42.00,"name":"caf\u00e9 \\"q\\""}`; break;
      case 1: payload = null; break;
      case 2: payload = `"${'x'.repeat(3000 + (i % 100))}"`; break;
      case 3: payload = '[1, 2, 3]'; break;
      case 4: payload = 'true'; break;
      case 5: payload = `-${i}.5e3`; break;
      default: payload = '{"emoji":"\u{1F451}","nested":{"a":[null,{}]}}';
    }
    out.push({ partition: `p-${i % 13}/\u00fc"'`, offset: Math.floor(i / 13), txn: `0190c2d4-0000-7000-8000-${String(i).padStart(12, '0')}`, ts: base + Math.floor(i / 5), payload });
  }
  return out;
}

for (const codec of ['zstd', 'snappy', 'none']) {
  describe(`codec ${codec}`, () => {
    const N = 2600;
    const RG = 1000;
    let file;
    let input;
    before(() => {
      input = rows(N);
      file = write(`t-${codec}.parquet`, input, codec, RG, { 'queen.queue': 'orders', 'queen.tenant': '00000000-0000-0000-0000-000000000001' });
    });

    test('DuckDB reads every value back, in order', async () => {
      const got = await duck(`SELECT partition, "offset"::BIGINT::VARCHAR AS o, transaction_id, epoch_us(ts)::VARCHAR AS ts, payload FROM read_parquet('${file}')`);
      assert.equal(got.length, N);
      for (let i = 0; i < N; i++) {
        const r = input[i];
        assert.deepEqual(got[i], { partition: r.partition, o: String(r.offset), transaction_id: r.txn, ts: String(r.ts), payload: r.payload }, `row ${i}`);
      }
    });

    test('DuckDB sees the schema, codec, row groups, statistics and footer', async () => {
      const schema = await duck(`SELECT name, type, converted_type, repetition_type, logical_type FROM parquet_schema('${file}')`);
      assert.deepEqual(schema.map((s) => [s.name, s.type, s.converted_type, s.repetition_type]), [
        ['queen_record', null, null, null],
        ['partition', 'BYTE_ARRAY', 'UTF8', 'REQUIRED'],
        ['offset', 'INT64', null, 'REQUIRED'],
        ['transaction_id', 'BYTE_ARRAY', 'UTF8', 'REQUIRED'],
        ['ts', 'INT64', 'TIMESTAMP_MICROS', 'REQUIRED'],
        ['payload', 'BYTE_ARRAY', 'UTF8', 'OPTIONAL']]);
      assert.match(schema[4].logical_type, /TimestampType\(isAdjustedToUTC=1.*MICROS=MicroSeconds\(\)/);
      assert.match(schema[1].logical_type, /StringType/);
      const meta = await duck(`SELECT row_group_id::INT AS rg, row_group_num_rows::INT AS n, path_in_schema AS col, compression, stats_null_count::INT AS nulls, stats_min, stats_max FROM parquet_metadata('${file}')`);
      const want = { zstd: 'ZSTD', snappy: 'SNAPPY', none: 'UNCOMPRESSED' }[codec];
      assert.ok(meta.every((m) => m.compression === want));
      assert.deepEqual([...new Set(meta.map((m) => m.rg))], [0, 1, 2]);
      assert.deepEqual(meta.filter((m) => m.col === 'offset').map((m) => m.n), [1000, 1000, 600]);
      const nullsRg0 = input.slice(0, 1000).filter((r) => r.payload === null).length;
      assert.equal(meta.find((m) => m.rg === 0 && m.col === 'payload').nulls, nullsRg0);
      const off1 = meta.find((m) => m.rg === 1 && m.col === 'offset');
      assert.equal(Number(off1.stats_min), Math.min(...input.slice(1000, 2000).map((r) => r.offset)));
      assert.equal(Number(off1.stats_max), Math.max(...input.slice(1000, 2000).map((r) => r.offset)));
      // byte-array statistics (unsigned byte order): exact for partition and transaction_id,
      // compact bounds for long payloads; readers can prune on partition
      const bytesMin = (v) => v.reduce((a, b) => (Buffer.compare(Buffer.from(a), Buffer.from(b)) <= 0 ? a : b));
      const bytesMax = (v) => v.reduce((a, b) => (Buffer.compare(Buffer.from(a), Buffer.from(b)) >= 0 ? a : b));
      const sm = await duck(`SELECT row_group_id::INT AS rg, path_in_schema AS col, stats_min_value AS lo, stats_max_value AS hi,
        min_is_exact AS lx, max_is_exact AS hx, stats_min AS dlo, stats_max AS dhi FROM parquet_metadata('${file}')`);
      for (let rg = 0; rg < 3; rg++) {
        const part = input.slice(rg * RG, (rg + 1) * RG);
        for (const [col, key] of [['partition', 'partition'], ['transaction_id', 'txn']]) {
          const m = sm.find((x) => x.rg === rg && x.col === col);
          assert.deepEqual([m.lo, m.hi, m.lx, m.hx], [bytesMin(part.map((r) => r[key])), bytesMax(part.map((r) => r[key])), true, true], `${col} rg ${rg}`);
          assert.deepEqual([m.dlo, m.dhi], [null, null], 'no deprecated (signed) min/max for strings');
        }
        const m = sm.find((x) => x.rg === rg && x.col === 'payload');
        const vals = part.map((r) => r.payload).filter((v) => v !== null);
        assert.ok(Buffer.byteLength(m.lo) <= 64 && Buffer.byteLength(m.hi) <= 65, JSON.stringify(m));
        assert.ok(Buffer.compare(Buffer.from(m.lo), Buffer.from(bytesMin(vals))) <= 0, 'min_value is a lower bound');
        assert.ok(Buffer.compare(Buffer.from(m.hi), Buffer.from(bytesMax(vals))) >= 0, 'max_value is an upper bound');
        assert.equal(m.lx, m.lo === bytesMin(vals));
        assert.equal(m.hx, m.hi === bytesMax(vals));
      }
      const onePart = input[0].partition;
      const pc = await duck(`SELECT count(*)::INT AS c FROM read_parquet('${file}') WHERE partition = '${onePart.replace(/'/g, "''")}'`);
      assert.equal(pc[0].c, input.filter((r) => r.partition === onePart).length);
      const kv = await duck(`SELECT decode(key) AS k, decode(value) AS v FROM parquet_kv_metadata('${file}')`);
      assert.deepEqual(kv, [{ k: 'queen.queue', v: 'orders' }, { k: 'queen.tenant', v: '00000000-0000-0000-0000-000000000001' }]);
      const fm = await duck(`SELECT created_by, num_rows::INT AS n, num_row_groups::INT AS g FROM parquet_file_metadata('${file}')`);
      assert.deepEqual(fm, [{ created_by: 'queen-s3 version 2.0.0', n: N, g: 3 }]);
      // statistics are usable for pruning: a filter on ts answers from the right rows
      const cnt = await duck(`SELECT count(*)::INT AS c FROM read_parquet('${file}') WHERE ts >= make_timestamp(${input[2000].ts})`);
      assert.equal(cnt[0].c, input.filter((r) => r.ts >= input[2000].ts).length);
    });

    test('hyparquet reads every value back, with the metadata', async () => {
      const buf = fs.readFileSync(file);
      const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
      const meta = await parquetMetadataAsync(ab);
      assert.equal(Number(meta.num_rows), N);
      assert.equal(meta.row_groups.length, 3);
      assert.deepEqual(meta.key_value_metadata, [{ key: 'queen.queue', value: 'orders' }, { key: 'queen.tenant', value: '00000000-0000-0000-0000-000000000001' }]);
      for (const [i, rg] of meta.row_groups.entries()) {
        const col = rg.columns.find((c) => c.meta_data.path_in_schema[0] === 'partition');
        const st = col.meta_data.statistics;
        const names = input.slice(i * RG, (i + 1) * RG).map((r) => r.partition).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
        assert.deepEqual([st.min_value, st.max_value, st.is_min_value_exact, st.is_max_value_exact, Number(st.null_count)],
          [names[0], names[names.length - 1], true, true, 0], `partition statistics of row group ${i}`);
      }
      const ts = meta.schema.find((s) => s.name === 'ts');
      assert.equal(ts.logical_type.type, 'TIMESTAMP');
      assert.equal(ts.logical_type.isAdjustedToUTC, true);
      assert.equal(ts.logical_type.unit, 'MICROS');
      const got = await parquetReadObjects({ file: ab, compressors, utf8: true, parsers: { timestampFromMicroseconds: (us) => us } });
      assert.equal(got.length, N);
      for (let i = 0; i < N; i++) {
        const r = input[i];
        assert.equal(got[i].partition, r.partition, `row ${i}`);
        assert.equal(Number(got[i].offset), r.offset);
        assert.equal(got[i].transaction_id, r.txn);
        assert.equal(BigInt(got[i].ts), BigInt(r.ts));
        assert.equal(got[i].payload ?? null, r.payload);
      }
    });
  });
}

test('the same rows give the same bytes', () => {
  const input = rows(500);
  const a = fs.readFileSync(write('same-a.parquet', input, 'zstd', 100));
  const b = fs.readFileSync(write('same-b.parquet', input, 'zstd', 100));
  assert.ok(a.equals(b));
});

test('an empty file is valid', async () => {
  const file = write('empty.parquet', [], 'zstd', 100);
  const got = await duck(`SELECT count(*)::INT AS c FROM read_parquet('${file}')`);
  assert.equal(got[0].c, 0);
});
