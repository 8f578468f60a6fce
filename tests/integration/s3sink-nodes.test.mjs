// The S3 sink's leases and verdicts across nodes on one database (spec "One writer per queue",
// "The fence", "Status", "Stopping"): SIGTERM gives the lease back (the row is gone) and another
// node takes the queue at its next look, not after the TTL; a node restarted within the TTL
// takes its queues back at once; three nodes hand queues over under continuous pushes, SIGTERM
// and kill -9 mixed, with every record once in the lake; a node stalled (SIGSTOP) past the TTL
// is fenced when it comes back; the health verdict turns red past three windows (30 s at
// least) and back; a queue whose log cannot be decoded crashes (state crashed, lease given back).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { get, post, sleep, startPostgres } from './harness.mjs';
import { startFaultProxy, startS3 } from './s3harness.mjs';
import { lakeRecords, nodeRegistry, queueRow, s3Status, sinkEnv, TENANT, waitFor } from './sinkutil.mjs';

let pg;
let s3;
let proxy;
before(async () => {
  pg = await startPostgres();
  s3 = await startS3();
  proxy = await startFaultProxy(s3.endpoint);
});
after(async () => {
  if (proxy) await proxy.stop();
  if (s3) await s3.stop();
  if (pg) pg.destroy();
});

const env = (id, queues, extra = {}, endpoint = s3.endpoint) => ({
  ...sinkEnv(endpoint, { QUEEN_S3_QUEUES: queues, ...extra }), QUEEN_PG_URL: pg.url, QUEEN_NODE_ID: id,
});
const leaseOf = async (node, queue) => {
  const r = await get(node.url, `/api/v1/kv/queen-s3/s3:default:${encodeURIComponent(queue)}:lease`);
  return r.status === 404 ? null : r.json.value;
};
const metric = async (node, name, queue) => {
  const m = new RegExp(`^${name}\\{queue="${queue}"\\} (\\d+)$`, 'm').exec((await get(node.url, '/metrics/prometheus')).text);
  return m ? Number(m[1]) : null;
};
// Every record once: no partition/offset twice, and exactly the payloads pushed.
function exactlyOnce(recs, pushed, what) {
  const ids = recs.map((r) => `${r.partition}/${r.offset}`);
  assert.equal(new Set(ids).size, ids.length, `${what}: no record twice`);
  assert.deepEqual(recs.map((r) => r.payload.n).sort((x, y) => x - y), [...pushed].sort((x, y) => x - y), `${what}: every record`);
}

describe('SIGTERM and restarts hand leases over at once', () => {
  const reg = nodeRegistry();
  after(() => reg.stopAll());
  // a long TTL, so "at once" and "after the TTL" are far apart
  const TTL = 12000;
  const e = (id) => env(id, 'hand', { QUEEN_S3_LEASE_TTL_MS: String(TTL) });
  const pushed = [];
  let n = 0;
  const push = async (node, count) => {
    const items = [];
    for (let i = 0; i < count; i++) { items.push({ queue: 'hand', partition: `p${n % 3}`, payload: { n } }); pushed.push(n++); }
    assert.equal((await post(node.url, '/api/v1/push', { items })).status, 201);
  };

  test('after SIGTERM the lease row is gone and another node takes the queue at its next look', async () => {
    const a = await reg.start({ env: e('st-a') });
    await push(a, 5);
    await waitFor('st-a holds hand', async () => ((await queueRow(a, 'hand')) || {}).ownedHere, 20000, a);
    const b = await reg.start({ env: e('st-b') });
    await waitFor('st-b shows hand held by st-a', async () => {
      const q = await queueRow(b, 'hand');
      return q && q.state === 'held' && q.heldBy === 'st-a';
    }, 20000, b);
    assert.equal((await leaseOf(b, 'hand')).instance, 'st-a');
    await push(b, 5);
    await sleep(500); // the drain commits what is buffered when it is worth it; the rest stays in the log
    await a.stop();
    const stoppedAt = Date.now();
    assert.match(a.log, /queue=hand: lease given back/);
    // the row is deleted, not left to expire: absent now, or already b's
    const l = await leaseOf(b, 'hand');
    assert.ok(l === null || l.instance === 'st-b', JSON.stringify(l));
    await waitFor('st-b takes hand', async () => ((await queueRow(b, 'hand')) || {}).ownedHere, TTL, b);
    const took = Date.now() - stoppedAt;
    assert.ok(took < TTL / 2, `taken ${took} ms after the stop: at the next look (TTL/3), not after the TTL (${TTL} ms)`);
    assert.equal((await leaseOf(b, 'hand')).instance, 'st-b');
    await waitFor('st-a\'s presence row gone', async () => (await s3Status(b)).sinks[0].placement.nodes === 1, TTL, b);
    await push(b, 5);
    await waitFor('every record in the lake', async () => (await lakeRecords(s3, 'hand')).length >= pushed.length, 30000, b);
    exactlyOnce(await lakeRecords(s3, 'hand'), pushed, 'hand');
  });

  test('a node restarted within the TTL takes its queues back at once', async () => {
    const b = reg.nodes.find((x) => !x.exited);
    await b.kill9();
    const killedAt = Date.now();
    const c = await reg.start({ env: e('st-b') });
    // the old life's row is still live: nothing expired
    const l = await leaseOf(c, 'hand');
    assert.ok(l && l.instance === 'st-b', JSON.stringify(l));
    await waitFor('the restarted st-b holds hand', async () => ((await queueRow(c, 'hand')) || {}).ownedHere, TTL, c);
    const took = Date.now() - killedAt;
    assert.ok(took < TTL, `taken back ${took} ms after the kill, within the TTL (${TTL} ms)`);
    assert.match(c.log, /queue=hand: lease taken \(instance st-b\)/);
    await push(c, 5);
    await waitFor('every record in the lake', async () => (await lakeRecords(s3, 'hand')).length >= pushed.length, 30000, c);
    exactlyOnce(await lakeRecords(s3, 'hand'), pushed, 'hand');
  });
});

describe('three nodes, continuous pushes, SIGTERM and kill -9 mixed', () => {
  const reg = nodeRegistry();
  after(() => reg.stopAll());
  const QUEUES = ['t1', 't2', 't3'];
  const e = (id) => env(id, QUEUES.join(','));

  test('every queue keeps a writer and every record lands once', async () => {
    const live = new Map();
    for (const id of ['n1', 'n2', 'n3']) live.set(id, await reg.start({ env: e(id) }));
    const pushed = new Map(QUEUES.map((q) => [q, []]));
    let n = 0;
    let target = live.get('n1');
    let inflight = Promise.resolve();
    let pushing = true;
    const pushOnce = async () => {
      const items = [];
      const batch = [];
      for (const q of QUEUES) for (let i = 0; i < 3; i++) { items.push({ queue: q, partition: `p${n % 4}`, payload: { n } }); batch.push([q, n++]); }
      const r = await post(target.url, '/api/v1/push', { items });
      assert.equal(r.status, 201, r.text);
      for (const [q, v] of batch) pushed.get(q).push(v);
    };
    const loop = (async () => {
      while (pushing) {
        inflight = pushOnce();
        await inflight;
        await sleep(150);
      }
    })();
    // pushes go to a node that survives the next step; the in-flight one is awaited first
    const retarget = async (id) => { target = live.get(id); await inflight; };
    const allHeld = async (what) => waitFor(what, async () => {
      const owners = new Map();
      for (const node of live.values()) {
        for (const q of (await s3Status(node)).sinks[0].queues) if (q.ownedHere) owners.set(q.queue, (owners.get(q.queue) || 0) + 1);
      }
      return QUEUES.every((q) => owners.get(q) === 1);
    }, 40000, target);
    try {
      await allHeld('every queue held once');
      await sleep(1500);
      await retarget('n2');
      await live.get('n1').stop();
      live.delete('n1');
      await allHeld('every queue held once after n1\'s SIGTERM');
      await sleep(1500);
      await retarget('n3');
      await live.get('n2').kill9();
      live.delete('n2');
      await allHeld('every queue held once after n2\'s kill -9');
      live.set('n1', await reg.start({ env: e('n1') }));
      await sleep(1500);
      await retarget('n1');
      await live.get('n3').stop();
      live.delete('n3');
      await allHeld('every queue held once after n3\'s SIGTERM');
      live.set('n2', await reg.start({ env: e('n2') }));
      await sleep(1500);
      await retarget('n2');
      await live.get('n1').kill9();
      live.delete('n1');
      await allHeld('every queue held once after n1\'s kill -9');
      await sleep(1500);
    } finally {
      pushing = false;
      await loop;
    }
    for (const q of QUEUES) {
      await waitFor(`every record of ${q} in the lake`, async () => (await lakeRecords(s3, q)).length >= pushed.get(q).length, 60000, target);
      exactlyOnce(await lakeRecords(s3, q), pushed.get(q), q);
    }
  });
});

describe('the fence by a stalled node', () => {
  const reg = nodeRegistry();
  after(() => reg.stopAll());

  test('SIGSTOP past the TTL, a takeover, SIGCONT: the stalled node cannot commit; no second copy', async () => {
    // a writes through the proxy, which holds its first data upload: a stalls inside the commit
    // sequence of window 1, with the intent written
    proxy.pass();
    proxy.clear();
    const a = await reg.start({ env: env('fa', 'fq', {}, proxy.endpoint) });
    await post(a.url, '/api/v1/configure', { queue: 'fq', options: {} });
    await waitFor('fa holds fq', async () => ((await queueRow(a, 'fq')) || {}).ownedHere, 20000, a);
    proxy.fault('delay', { delayMs: 6000, times: 1, match: (r) => r.op === 'put' && r.key.includes('/queue=fq/dt=') });
    const pushed = [];
    const items = [];
    for (let i = 0; i < 12; i++) { items.push({ queue: 'fq', partition: `p${i % 3}`, payload: { n: i } }); pushed.push(i); }
    assert.equal((await post(a.url, '/api/v1/push', { items })).status, 201);
    await waitFor('fa uploading window 1', async () => proxy.count((r) => r.fault === 'delay') === 1, 20000, a);
    const intent = (await get(a.url, '/api/v1/kv/queen-s3/s3:default:fq:intent')).json.value;
    assert.equal(intent.k, 1);
    process.kill(a.proc.pid, 'SIGSTOP');
    try {
      const b = await reg.start({ env: env('fb', 'fq') });
      // the lease expires (TTL 3 s) and b redoes window 1 from fa's intent
      await waitFor('fb commits window 1', async () => ((await queueRow(b, 'fq')) || {}).k >= 1, 30000, b);
      assert.match(b.log, /queue=fq: rebuilding window 1 /);
      const before = (await get(b.url, '/api/v1/kv/queen-s3/s3:default:fq:committed')).json;
      process.kill(a.proc.pid, 'SIGCONT');
      const row = await waitFor('fa fenced, fq held by fb', async () => {
        const q = await queueRow(a, 'fq');
        return q && !q.ownedHere && (q.state === 'fenced' || (q.state === 'held' && q.heldBy === 'fb')) ? q : null;
      }, 30000, a);
      assert.match(row.lastError.message, /fenced/);
      assert.ok(await metric(a, 'queen_s3_commit_precondition_lost_total', 'fq') >= 1);
      assert.equal(await metric(a, 'queen_s3_windows_committed_total', 'fq'), 0, 'fa committed nothing');
      assert.match(a.log, /queue=fq: fenced while/);
      // the pointer is fb's, untouched by fa's late attempt
      const now = (await get(b.url, '/api/v1/kv/queen-s3/s3:default:fq:committed')).json;
      assert.ok(now.version >= before.version && now.value.k >= 1);
      assert.equal((await leaseOf(b, 'fq')).instance, 'fb');
      const more = [];
      for (let i = 12; i < 15; i++) { more.push({ queue: 'fq', partition: 'p0', payload: { n: i } }); pushed.push(i); }
      assert.equal((await post(b.url, '/api/v1/push', { items: more })).status, 201);
      await waitFor('every record in the lake', async () => (await lakeRecords(s3, 'fq')).length >= pushed.length, 30000, b);
      const recs = await lakeRecords(s3, 'fq');
      exactlyOnce(recs, pushed, 'fq');
      // window 1 is one object, with fa's intent's bounds
      const w1 = [...new Set(recs.map((r) => r.key))].filter((k) => k.includes('/w-0000000001-'));
      assert.deepEqual(w1.length, 1, JSON.stringify(w1));
      assert.ok(w1[0].endsWith(`-${intent.tStart}-${intent.tEnd}.jsonl.zst`), w1[0]);
      const m = JSON.parse((await s3.get(`queen/_queen/tenant=${TENANT}/queue=fq/windows/0000000001.json`)).toString());
      assert.equal(m.records, 12);
    } finally {
      try { process.kill(a.proc.pid, 'SIGCONT'); } catch { /* gone */ }
      proxy.pass();
    }
  });
});

describe('the health verdict', () => {
  const reg = nodeRegistry();
  after(() => reg.stopAll());

  test('turns red past three windows (30 s at least) and back to green', async () => {
    proxy.pass();
    const a = await reg.start({ env: env('ha', 'hq', {}, proxy.endpoint) });
    await post(a.url, '/api/v1/push', { items: [{ queue: 'hq', partition: 'p', payload: { n: 0 } }] });
    await waitFor('window 1', async () => ((await queueRow(a, 'hq')) || {}).k >= 1, 30000, a);
    let s = (await s3Status(a)).sinks[0];
    assert.deepEqual(s.health, { ok: true, queues: 1 });
    // the next window's upload hangs for 36 s: the queue lags, the verdict turns red at 30 s
    // (three 1-second windows are less than the 30 s floor)
    proxy.fault('delay', { delayMs: 36000, times: 1, match: (r) => r.op === 'put' && r.key.includes('/queue=hq/dt=') });
    const pushedAt = Date.now();
    await post(a.url, '/api/v1/push', { items: [{ queue: 'hq', partition: 'p', payload: { n: 1 } }] });
    await sleep(20000);
    s = (await s3Status(a)).sinks[0];
    assert.equal(s.health.ok, true, `still green after 20 s: ${JSON.stringify(s.health)}`);
    s = await waitFor('red', async () => {
      const x = (await s3Status(a)).sinks[0];
      return x.health.ok === false ? x : null;
    }, 20000, a);
    const redAfter = Date.now() - pushedAt;
    assert.equal(s.ok, false);
    assert.equal(s.health.queue, 'hq');
    assert.equal(s.health.limitMs, 30000);
    assert.ok(s.health.staleMs > 30000, JSON.stringify(s.health));
    assert.ok(redAfter >= 28000, `red after ${redAfter} ms`);
    // the upload goes through: green again
    s = await waitFor('green again', async () => {
      const x = (await s3Status(a)).sinks[0];
      return x.health.ok === true ? x : null;
    }, 30000, a);
    assert.deepEqual(s.health, { ok: true, queues: 1 });
    assert.equal(s.ok, true);
    assert.ok(((await queueRow(a, 'hq')) || {}).k >= 2);
  });
});

describe('a queue whose log cannot be read back', () => {
  const reg = nodeRegistry();
  after(() => reg.stopAll());

  test('crashes: state crashed with the reason, its lease given back', async () => {
    // the bucket refuses the probe, so nothing is read before the segment is damaged
    proxy.pass();
    proxy.fault('500', { match: { op: 'head_bucket' } });
    const a = await reg.start({ env: env('ca', 'cq', {}, proxy.endpoint) });
    try {
      assert.equal((await post(a.url, '/api/v1/push', { items: [{ queue: 'cq', partition: 'p', payload: { n: 0 } }] })).status, 201);
      pg.psql(`UPDATE queen.segments s SET data = '\\xff'::bytea FROM queen.partitions p, queen.queues q
                WHERE s.partition_id = p.id AND p.queue_id = q.id AND q.name = 'cq'`);
    } finally {
      proxy.pass();
    }
    const row = await waitFor('cq crashed', async () => {
      const q = await queueRow(a, 'cq');
      return q && q.state === 'crashed' ? q : null;
    }, 30000, a);
    assert.equal(row.ownedHere, false);
    assert.match(row.lastError.message, /^crashed: reading the log: a segment could not be decoded/);
    assert.equal(await leaseOf(a, 'cq'), null, 'the lease is given back at once');
    assert.match(a.log, /queue=cq: the queue's run crashed \(reading the log: a segment could not be decoded\); its lease is given back/);
    assert.equal((await s3.list(`queen/tenant=${TENANT}/queue=cq/`)).length, 0);
  });
});
