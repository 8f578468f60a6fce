// bench-pop.test.mjs — bench/pop.lua counts what a pop delivered by reading the answer as
// JSON, so `make bench --url` measures any Queen-compatible broker: against queen itself (every
// pushed record counted once, in ack mode every ack accepted and nothing left), and against a
// stand-in broker that answers in another key order, pretty-printed, with payloads full of
// look-alike keys (the count is what it served, refused acks are counted). FRAMES=1 reads the
// framed answer (QPF1) instead.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { ROOT, get, post, rmrf, startQueen } from './harness.mjs';

const POP_LUA = path.join(ROOT, 'bench/pop.lua');

function wrk(url, env, seconds = 3) {
  return new Promise((resolve, reject) => {
    const p = spawn('wrk', ['-t1', '-c1', `-d${seconds}s`, '-s', POP_LUA, url], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { out += d; });
    p.on('error', reject);
    p.on('close', () => {
      const line = /^RESULT (.*)$/m.exec(out);
      if (!line) return reject(new Error(`no RESULT line from wrk:\n${out}`));
      resolve(Object.fromEntries(line[1].split(' ').map((kv) => kv.split('=')).map(([k, v]) => [k, Number(v)])));
    });
  });
}

// payloads that carry the keys the counter must not be fooled by, and JSON-hostile strings
const hostile = (i) => ({
  transactionId: `fake-${i}`,
  messages: [{ transactionId: 'x', partitionId: 'y', leaseId: 'z' }],
  text: 'quote " brace } bracket ] backslash \\ "messages":[',
  nested: { deeper: [[{ partitionId: 'no' }]], n: i },
});

let node;
before(async () => { node = await startQueen(); });
after(async () => { if (node) { await node.stop(); rmrf(node.data); } });

async function fill(queue, n) {
  for (let from = 0; from < n; from += 50) {
    const items = [];
    for (let i = from; i < Math.min(n, from + 50); i++) items.push({ queue, partition: `p${i % 5}`, payload: hostile(i) });
    const r = await post(node.url, '/api/v1/push', { items });
    assert.equal(r.status, 201, r.text);
  }
}

test('against queen, ack mode: every record counted once, every ack accepted, nothing left', async () => {
  await fill('bench_pop_ack', 250);
  const r = await wrk(node.url, { MODE: 'ack', QUEUE: 'bench_pop_ack', BATCH: '100' });
  assert.equal(r.messages, 250);
  assert.equal(r.unreadable, 0);
  assert.equal(r.ackfail, 0);
  assert.equal(r.errors + r.non2xx, 0);
  const left = await get(node.url, '/api/v1/pop/queue/bench_pop_ack?batch=100');
  assert.ok(left.status === 204 || (left.json && left.json.messages.length === 0), left.text);
});

test('against queen, autoack and fanout: the counts are the records delivered', async () => {
  await fill('bench_pop_auto', 120);
  const a = await wrk(node.url, { MODE: 'autoack', QUEUE: 'bench_pop_auto', BATCH: '100' });
  assert.equal(a.messages, 120);
  // two groups read the same records: each gets all of them
  const f = await wrk(node.url, { MODE: 'fanout', QUEUE: 'bench_pop_auto', BATCH: '100', GROUPS: '2' });
  assert.equal(f.messages, 240);
  assert.equal(f.unreadable, 0);
});

test('against queen, FRAMES=1 (QPF1): every record counted once, acked by the u64 partitionId', async () => {
  await fill('bench_pop_framed', 250);
  const r = await wrk(node.url, { MODE: 'ack', QUEUE: 'bench_pop_framed', BATCH: '100', FRAMES: '1' });
  assert.equal(r.messages, 250);
  assert.equal(r.unreadable, 0);
  assert.equal(r.ackfail, 0);
  assert.equal(r.errors + r.non2xx, 0);
  const left = await get(node.url, '/api/v1/pop/queue/bench_pop_framed?batch=100');
  assert.ok(left.status === 204 || (left.json && left.json.messages.length === 0), left.text);
  await fill('bench_pop_framed_auto', 120);
  const a = await wrk(node.url, { MODE: 'autoack', QUEUE: 'bench_pop_framed_auto', BATCH: '100', FRAMES: '1' });
  assert.equal(a.messages, 120);
  assert.equal(a.unreadable, 0);
});

test('against a broker with another key order and layout: counts what it served, counts refused acks', async () => {
  let served = 0;
  let pops = 0;
  let ackBodies = 0;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/api/v1/ack/batch') {
        ackBodies++;
        const acks = JSON.parse(body).acknowledgments;
        assert.ok(acks.every((a) => a.transactionId.startsWith('t-') && a.partitionId === 'part-1' && a.leaseId === 'lease-1'));
        // the last of each batch refused
        const answer = acks.map((a, i) => ({ index: i, transactionId: a.transactionId, success: i !== acks.length - 1, error: null }));
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify(answer));
      }
      pops++;
      res.writeHead(200, { 'content-type': 'application/json' });
      if (pops % 2 === 0) return res.end(JSON.stringify({ success: false, error: 'no_available_partition', messages: [] }));
      const messages = [0, 1, 2].map((k) => ({
        id: `id-${served + k}`, data: hostile(served + k), transactionId: `t-${served + k}`, traceId: null,
        partition: 'p', leaseId: 'lease-1', partitionId: 'part-1', createdAt: '2026-01-01T00:00:00Z', consumerGroup: '__QUEUE_MODE__',
      }));
      served += messages.length;
      // messages before the other members, pretty-printed
      res.end(JSON.stringify({ messages, decoy: { messages: [1, 2, 3] }, success: true, queue: 'q', partitionsClaimed: 1 }, null, 2));
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  try {
    const r = await wrk(`http://127.0.0.1:${server.address().port}`, { MODE: 'ack', QUEUE: 'q', BATCH: '3' }, 2);
    assert.ok(served >= 3, `served ${served}`);
    // wrk may have a pop or two in flight when it stops, whose answers it never reads
    assert.ok(r.messages <= served && r.messages >= served - 6, `counted ${r.messages} of ${served}`);
    assert.equal(r.messages % 3, 0);
    assert.ok(r.empty > 0);
    assert.equal(r.unreadable, 0);
    assert.ok(ackBodies > 0);
    assert.ok(r.ackfail >= ackBodies - 2 && r.ackfail <= ackBodies, `ackfail ${r.ackfail} for ${ackBodies} ack batches`);
  } finally {
    await new Promise((r) => server.close(r));
  }
});
