// SIGTERM: the node stops accepting, answers what is in flight, stops its embedded
// PostgreSQL and exits 0; what it acknowledged is there when it starts again.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';

import { post, readQueue, rmrf, sleep, startQueen } from './harness.mjs';

function postgresRunningIn(dir) {
  const r = spawnSync('pgrep', ['-f', `postgres -D ${dir}/pg`], { encoding: 'utf8' });
  return r.stdout.trim().length > 0;
}

test('SIGTERM under load answers everything in flight and exits 0', async () => {
  const node = await startQueen();
  const acked = new Set();
  let running = true;
  let answered = 0;
  let refused = 0;
  let seq = 0;
  const inflight = [];
  async function pusher(k) {
    while (running) {
      const items = [];
      for (let i = 0; i < 20; i++) items.push({ queue: 'term', partition: `p${i % 4}`, transactionId: `s-${k}-${seq++}`, payload: { k } });
      try {
        const r = await post(node.url, '/api/v1/push', { items });
        answered++;
        if (r.status === 201) r.json.forEach((x) => acked.add(x.transaction_id));
        else { assert.equal(r.status, 503, r.text); refused++; }
      } catch {
        // the listener is closed: new connections are refused once the node exits
        break;
      }
    }
  }
  for (let k = 0; k < 8; k++) inflight.push(pusher(k));
  await sleep(1000);
  const res = await node.stop('SIGTERM');
  running = false;
  await Promise.all(inflight);
  assert.equal(res.code, 0);
  assert.match(node.log, /signal 15: no longer accepting/);
  assert.match(node.log, /PostgreSQL stopped/);
  assert.ok(!postgresRunningIn(node.data), 'the embedded PostgreSQL is still running');
  assert.ok(acked.size > 0);
  // start again on the same data directory: everything acknowledged is there
  const again = await startQueen({ dataDir: node.data });
  try {
    const f = await readQueue(again.url, 'term');
    const stored = new Set(f.records.map((r) => r.transactionId));
    for (const t of acked) assert.ok(stored.has(t), `acknowledged ${t} missing after restart`);
  } finally {
    await again.stop();
    rmrf(node.data);
  }
});

test('kill -9 of the node: a restart adopts the running PostgreSQL and loses nothing', async () => {
  const node = await startQueen();
  const r = await post(node.url, '/api/v1/push', { items: [{ queue: 'k9', transactionId: 'x1', payload: 1 }] });
  assert.equal(r.status, 201);
  await node.kill9();
  const again = await startQueen({ dataDir: node.data });
  try {
    assert.match(again.log, /adopting the PostgreSQL server already running/);
    const f = await readQueue(again.url, 'k9');
    assert.deepEqual(f.records.map((x) => x.transactionId), ['x1']);
  } finally {
    await again.stop();
    rmrf(node.data);
  }
});

test('two nodes cannot share one embedded data directory', async () => {
  const node = await startQueen();
  try {
    let failed = null;
    try {
      const second = await startQueen({ dataDir: node.data, timeoutMs: 15000 });
      await second.stop();
    } catch (e) {
      failed = e;
    }
    assert.ok(failed, 'a second node started on the same data directory');
    assert.match(String(failed), /another queen process is using/);
  } finally {
    await node.stop();
    rmrf(node.data);
  }
});
