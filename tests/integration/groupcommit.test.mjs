// Group commit merges concurrent batch-1 pushes into few transactions; the dedup window
// forgets producer transactionIds after QUEEN_DEDUP_WINDOW_SECONDS.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { after, before, test } from 'node:test';

import { get, post, readQueue, rmrf, sleep, startQueen } from './harness.mjs';

let node;
before(async () => { node = await startQueen({ env: { QUEEN_DEDUP_WINDOW_SECONDS: '1' } }); });
after(async () => { if (node) { await node.stop(); rmrf(node.data); } });

function metric(text, name) {
  const m = new RegExp(`^${name} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

// Pushes as concurrent streams of one HTTP/2 connection, so they reach the node together.
async function burst(url, bodies) {
  const client = http2.connect(url);
  try {
    return await Promise.all(bodies.map((b) => new Promise((resolve, reject) => {
      const req = client.request({ ':method': 'POST', ':path': '/api/v1/push', 'content-type': 'application/json' });
      let status = 0;
      let data = '';
      req.on('response', (h) => { status = h[':status']; });
      req.setEncoding('utf8');
      req.on('data', (c) => { data += c; });
      req.on('end', () => resolve({ status, data }));
      req.on('error', reject);
      req.end(JSON.stringify(b));
    })));
  } finally {
    client.close();
  }
}

test('concurrent batch-1 pushes share commits', async () => {
  await post(node.url, '/api/v1/push', { items: [{ queue: 'gc', payload: 0 }] });
  const before1 = metric((await get(node.url, '/metrics/prometheus')).text, 'queen_push_commits_total');
  const N = 300;
  const res = await burst(node.url, [...Array(N).keys()].map((i) => ({ items: [{ queue: 'gc', partition: `p${i % 10}`, payload: { i } }] })));
  for (const r of res) assert.equal(r.status, 201, r.data);
  const after1 = metric((await get(node.url, '/metrics/prometheus')).text, 'queen_push_commits_total');
  const commits = after1 - before1;
  // one commit per request would be 300; arriving together they share a handful
  assert.ok(commits > 0 && commits <= N / 5, `${N} requests took ${commits} commits`);
  const f = await readQueue(node.url, 'gc');
  assert.equal(f.records.length, N + 1);
});

test('a transactionId older than the dedup window is a new record', async () => {
  const a = await post(node.url, '/api/v1/push', { items: [{ queue: 'win', transactionId: 'w', payload: 1 }] });
  const b = await post(node.url, '/api/v1/push', { items: [{ queue: 'win', transactionId: 'w', payload: 2 }] });
  assert.equal(a.json[0].status, 'queued');
  assert.equal(b.json[0].status, 'duplicate');
  await sleep(1300);
  const c = await post(node.url, '/api/v1/push', { items: [{ queue: 'win', transactionId: 'w', payload: 3 }] });
  assert.equal(c.json[0].status, 'queued');
  // and the window starts again from that record
  const d = await post(node.url, '/api/v1/push', { items: [{ queue: 'win', transactionId: 'w', payload: 4 }] });
  assert.equal(d.json[0].status, 'duplicate');
  assert.equal(d.json[0].message_id, c.json[0].message_id);
});

test('expired transactionIds are deleted by the background cleanup', async () => {
  const items = [];
  for (let i = 0; i < 50; i++) items.push({ queue: 'gc2', transactionId: `old-${i}`, payload: i });
  await post(node.url, '/api/v1/push', { items });
  const deadline = Date.now() + 15000;
  for (;;) {
    const n = metric((await get(node.url, '/metrics/prometheus')).text, 'queen_dedup_forgotten_total');
    if (n >= 50) break;
    assert.ok(Date.now() < deadline, `only ${n} forgotten`);
    await sleep(500);
  }
});
