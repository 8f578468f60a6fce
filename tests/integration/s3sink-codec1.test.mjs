// The S3 sink over codec-1 segments (docs/storage.md, "Codec 1"): records pushed as the 2.x
// client's producer-compressed frames (QPB1 flags 4+8) are stored as the producer's zstd frames,
// and the sink must write the spec's bytes exactly as for the same records pushed as JSON:
// JSON lines byte for byte, Parquet's columns value for value. A framed pop first shows that the
// records really are stored as frames (it hands a covered frame out as QPF1 codec 1).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';

import { api, readQueue, rmrf, tmpDir } from './harness.mjs';
import { startS3 } from './s3harness.mjs';
import { isoUs, nodeRegistry, queueRow, sinkEnv, waitFor, zstdDecode } from './sinkutil.mjs';

const TENANT = '00000000-0000-0000-0000-000000000001';
// payload texts as a producer would send them (the 2.x client sends compact JSON; these keep
// spacing and number spellings that a re-serialiser would change)
const PARTS = {
  'cust-1': ['{"order":1,"status":"new","total":42.00}', '{"order":1,"status":"paid","total":42.00}', '[1,"héllo",null]'],
  'cust-2': ['{"order":2,"status":"new","total":17.50}', '"x"'],
};

function v7() {
  const b = crypto.randomBytes(16);
  b[6] = 0x70 | (b[6] & 0x0f);
  b[8] = 0x80 | (b[8] & 0x3f);
  return b;
}

function u16(n) { const b = Buffer.alloc(2); b.writeUInt16LE(n); return b; }
function u32(n) { const b = Buffer.alloc(4); b.writeUInt32LE(n); return b; }

// one zstd frame with its content size (the zstd tool records it for a file input)
function zstd(raw, dir) {
  const f = path.join(dir, `frames-${crypto.randomBytes(4).toString('hex')}`);
  fs.writeFileSync(f, raw);
  const z = execFileSync('zstd', ['-q', '-1', '-c', f]);
  fs.rmSync(f);
  return z;
}

// QPB1 flags 4+8: per partition one group, its frames `u32 len | 0 | id | u16 txn | payload`
function qpbFrames(queue, dir) {
  const parts = [u32(Object.keys(PARTS).length)];
  for (const [p, payloads] of Object.entries(PARTS)) {
    const frames = payloads.map((pl, i) => {
      const txn = Buffer.from(`${p}-t${i}`);
      const body = Buffer.concat([Buffer.from([0]), v7(), u16(txn.length), txn, Buffer.from(pl)]);
      return Buffer.concat([u32(body.length), body]);
    });
    const z = zstd(Buffer.concat(frames), dir);
    parts.push(u16(queue.length), Buffer.from(queue), u16(p.length), Buffer.from(p), u32(payloads.length), u32(z.length), z);
  }
  return Buffer.concat([Buffer.from('QPB1'), Buffer.from([12]), ...parts]);
}

async function pushFrames(node, queue, dir) {
  const r = await api(node.url, 'POST', '/api/v1/push', new Uint8Array(qpbFrames(queue, dir)),
    { 'content-type': 'application/x-queen-push' });
  assert.equal(r.status, 201, r.text);
  assert.deepEqual(r.json.map((x) => x.status), Array(5).fill('queued'));
}

// the codec byte of every record of framed pops (autoAck, a group of its own: the sink's reads
// are not touched), one partition a pop, until nothing is left
async function framedCodecs(node, queue) {
  const all = [];
  for (let i = 0; i < 10; i++) {
    const c = await framedPop(node, queue);
    if (c === null) break;
    all.push(...c);
  }
  return all;
}

async function framedPop(node, queue) {
  const r = await fetch(`${node.url}/api/v1/pop/queue/${queue}?batch=100&wait=false&autoAck=true&consumerGroup=probe&frames=true`);
  if (r.status === 204) return null;
  assert.equal(r.status, 200);
  const b = Buffer.from(await r.arrayBuffer());
  assert.equal(b.subarray(0, 4).toString(), 'QPF1');
  let at = 5;
  at += 4 + b.readUInt32LE(at);
  for (let i = 0; i < 3; i++) at += 2 + b.readUInt16LE(at);
  const claims = b.readUInt32LE(at); at += 4;
  const codecs = [];
  for (let c = 0; c < claims; c++) {
    at += 8; at += 2 + b.readUInt16LE(at); at += 8 + 8 + 4;
    const records = b.readUInt32LE(at); at += 4;
    for (let k = 0; k < records; k++) {
      at += 8 + 8 + 4;
      codecs.push(b[at]); at += 1;
      at += 4 + b.readUInt32LE(at);
    }
  }
  return codecs;
}

function expectedLines(records) {
  const sorted = [...records].sort((a, b) => (a.partition < b.partition ? -1 : a.partition > b.partition ? 1 : a.offset - b.offset));
  return sorted.map((r) => `{"partition":"${r.partition}","offset":${r.offset},"transactionId":"${r.partition}-t${r.offset}",`
    + `"ts":"${isoUs(r.ts)}","payload":${PARTS[r.partition][r.offset]}}`).join('\n') + '\n';
}

describe('the S3 sink over producer frames kept as sent (codec 1)', () => {
  let s3;
  let dir;
  const reg = nodeRegistry();
  before(async () => {
    s3 = await startS3();
    dir = tmpDir('queen-codec1-');
  });
  after(async () => {
    await reg.stopAll();
    if (s3) await s3.stop();
    if (dir) rmrf(dir);
  });

  test('JSON lines: the spec\'s bytes, as for the same records pushed as JSON', async () => {
    const node = await reg.start({ env: sinkEnv(s3.endpoint, { QUEEN_S3_QUEUES: 'zorders' }) });
    await pushFrames(node, 'zorders', dir);
    assert.deepEqual(await framedCodecs(node, 'zorders'), [1, 1], 'each partition\'s frame is stored and handed out as sent');
    const { records } = await readQueue(node.url, 'zorders');
    assert.equal(records.length, 5);
    await waitFor('window 1 of zorders', async () => ((await queueRow(node, 'zorders')) || {}).k >= 1, 30000, node);
    const objs = (await s3.list(`queen/tenant=${TENANT}/queue=zorders/`)).filter((o) => o.key.endsWith('.jsonl.zst'));
    assert.equal(objs.length, 1);
    const text = zstdDecode(await s3.get(objs[0].key));
    assert.equal(text, expectedLines(records));
    assert.ok(text.includes('"total":42.00') && text.includes('[1,"héllo",null]'));
    await node.stop();
  });

  test('Parquet: every column as for JSON-pushed records, payload text exact', async () => {
    const node = await reg.start({ env: sinkEnv(s3.endpoint, { QUEEN_S3_QUEUES: 'zpq', QUEEN_S3_FORMAT: 'parquet', QUEEN_S3_PARQUET_CODEC: 'snappy' }) });
    await pushFrames(node, 'zpq', dir);
    assert.deepEqual(await framedCodecs(node, 'zpq'), [1, 1]);
    const { records } = await readQueue(node.url, 'zpq');
    await waitFor('window 1 of zpq', async () => ((await queueRow(node, 'zpq')) || {}).k >= 1, 30000, node);
    const objs = await s3.list(`queen/tenant=${TENANT}/queue=zpq/`);
    assert.equal(objs.length, 1);
    const buf = await s3.get(objs[0].key);
    const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length);
    const got = await parquetReadObjects({ file: ab, compressors });
    const byKey = new Map(records.map((r) => [`${r.partition}/${r.offset}`, r]));
    assert.deepEqual(got.map((r) => [r.partition, Number(r.offset), r.transaction_id, r.payload]),
      Object.entries(PARTS).flatMap(([p, pls]) => pls.map((pl, i) => [p, i, `${p}-t${i}`, pl])));
    for (const r of got) assert.ok(byKey.has(`${r.partition}/${Number(r.offset)}`));
    await node.stop();
  });
});
