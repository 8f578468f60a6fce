// The database going away: stopped hard under load, and connections cut. Requests answer 503
// quickly instead of hanging, /health tells the truth, the node reconnects by itself, and
// every push that was answered 2xx is still there afterwards.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { get, post, readQueue, rmrf, sleep, startPostgres, startQueen } from './harness.mjs';

let pg;
let node;
before(async () => {
  pg = await startPostgres({ fast: false }); // durable: a crash must not lose acknowledged commits
  node = await startQueen({ env: { QUEEN_PG_URL: pg.url, DB_POOL_SIZE: '4' } });
});
after(async () => {
  if (node) { await node.stop(); rmrf(node.data); }
  if (pg) pg.destroy();
});

test('a database crash under load loses nothing acknowledged', async () => {
  const acked = new Set();
  const statuses = {};
  let maxLatency = 0;
  let running = true;
  let seq = 0;
  async function pusher(k) {
    while (running) {
      const items = [];
      for (let i = 0; i < 5; i++) items.push({ queue: 'crash', partition: `p${(seq + i) % 3}`, transactionId: `t-${k}-${seq++}`, payload: { k, seq } });
      const t0 = Date.now();
      let r;
      try {
        r = await post(node.url, '/api/v1/push', { items });
      } catch (e) {
        statuses.neterr = (statuses.neterr || 0) + 1;
        await sleep(50);
        continue;
      }
      maxLatency = Math.max(maxLatency, Date.now() - t0);
      statuses[r.status] = (statuses[r.status] || 0) + 1;
      if (r.status === 201) for (const it of r.json) acked.add(it.transaction_id);
      else {
        assert.equal(r.status, 503, r.text);
        assert.match(r.json.error, /database/);
        await sleep(20);
      }
    }
  }
  const work = [pusher(1), pusher(2), pusher(3), pusher(4)];
  // a failure below must still stop the pushers, or they keep this file's process alive
  try {
    await sleep(1500);
    const before1 = acked.size;
    assert.ok(before1 > 0, 'pushes succeeded before the crash');
    pg.stop('immediate');
    await sleep(300);
    const h = await get(node.url, '/health');
    assert.equal(h.status, 503);
    assert.equal(h.json.status, 'unhealthy');
    assert.equal(h.json.database, 'disconnected');
    const st = await get(node.url, '/status');
    assert.equal(st.status, 200);
    assert.equal(st.json.database.state, 'disconnected');
    await sleep(1500);
    pg.start();
    // the node comes back by itself
    const deadline = Date.now() + 20000;
    for (;;) {
      const r = await get(node.url, '/health');
      if (r.status === 200) break;
      assert.ok(Date.now() < deadline, 'node did not reconnect');
      await sleep(100);
    }
    const afterReconnect = acked.size;
    await sleep(1500);
    running = false;
    await Promise.all(work);
    assert.ok(acked.size > afterReconnect, 'pushes succeed again after the database returns');
    assert.ok(statuses[503] > 0, `no 503 seen during the outage: ${JSON.stringify(statuses)}`);
    assert.ok(maxLatency < 10000, `a request hung for ${maxLatency} ms`);
    const f = await readQueue(node.url, 'crash');
    const stored = new Set(f.records.map((r) => r.transactionId));
    for (const t of acked) assert.ok(stored.has(t), `acknowledged ${t} is missing`);
    // offsets stay dense through the crash
    const byPart = {};
    for (const r of f.records) (byPart[r.partition] ||= []).push(r.offset);
    for (const offs of Object.values(byPart)) assert.deepEqual(offs, [...Array(offs.length).keys()]);
  } finally {
    running = false;
    await Promise.allSettled(work);
  }
});

test('cut connections are replaced without failing later requests', async () => {
  pg.psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'queen'");
  // the first requests may see the cut (503); within a moment everything works again
  const deadline = Date.now() + 10000;
  let ok = 0;
  while (ok < 20) {
    const r = await post(node.url, '/api/v1/push', { items: [{ queue: 'cut', payload: ok }] });
    if (r.status === 201) ok++;
    else assert.equal(r.status, 503, r.text);
    assert.ok(Date.now() < deadline, 'pushes did not recover after the connections were cut');
  }
  const st = await get(node.url, '/status');
  assert.equal(st.json.database.pool.connected, 4);
});
