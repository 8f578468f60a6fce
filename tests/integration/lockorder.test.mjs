// Lock order under load (docs/lock-order.md): retention rounds every 100 ms while group commits
// span partitions of several queues, and pops whose lease store races acks of the same group on
// many partitions. PostgreSQL breaks a wait cycle by aborting one transaction with "deadlock
// detected" (40P01): the test counts those in the cluster's log, and every 5xx answer. Before the
// lock order of retention_v1 and lease_store_v1 was fixed (016_lockorder.sql) both loads made
// PostgreSQL report deadlocks within seconds (2-6, and about 6, in 12 s). A round never waits
// for a commit: the last test holds a partition's lock and checks that the round skips it and
// comes back to it at the next tick once the lock is gone.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { get, post, rmrf, sleep, startPostgres, startQueen } from './harness.mjs';

let pg;
let node;
before(async () => {
  pg = await startPostgres();
  node = await startQueen({ env: { QUEEN_PG_URL: pg.url, RETENTION_INTERVAL: '100', EVICTION_INTERVAL: '100', DB_POOL_SIZE: '16' } });
});
after(async () => {
  if (node) { await node.stop(); rmrf(node.data); }
  if (pg) pg.destroy();
});

// the cluster's log from byte `from` on
const pgLog = (from = 0) => fs.readFileSync(path.join(pg.dir, 'log')).subarray(from).toString('utf8');
const pgLogSize = () => fs.statSync(path.join(pg.dir, 'log')).size;
const deadlocks = (text) => text.split('\n').filter((l) => /deadlock detected/.test(l)).length;
// what PostgreSQL said about each cycle (who waited for whom, which statement it aborted)
const cycles = (text) => text.split('\n').filter((l) => /deadlock detected|DETAIL|Process \d+|CONTEXT|STATEMENT/.test(l)).slice(0, 40).join('\n');

function metricSum(text, re) {
  let n = 0;
  for (const line of text.split('\n')) {
    const m = re.exec(line);
    if (m) n += Number(m[1]);
  }
  return n;
}

// Runs `workers` loops of `step` for `ms`; returns the answers' status counts.
async function load(workers, ms, step) {
  const statuses = {};
  const end = Date.now() + ms;
  await Promise.all([...Array(workers).keys()].map(async (w) => {
    for (let k = 0; Date.now() < end; k++) {
      for (const s of await step(w, k)) statuses[s] = (statuses[s] || 0) + 1;
    }
  }));
  return statuses;
}
const fivexx = (statuses) => Object.entries(statuses).filter(([s]) => Number(s) >= 500).reduce((n, [, c]) => n + c, 0);

test('retention rounds and group commits over several queues do not deadlock', async () => {
  // Queues configured in id order; their partitions created round-robin so that partition ids
  // interleave across queues: a round that works queue by queue meets the commits' global
  // partition-id order backwards.
  const Q = 4;
  const P = 6;
  const queues = [...Array(Q).keys()].map((i) => `lo${i}`);
  for (const [i, q] of queues.entries()) {
    const options = i % 2 ? { retentionEnabled: true, retentionSeconds: 1 } : { maxWaitTimeSeconds: 1 };
    assert.equal((await post(node.url, '/api/v1/configure', { queue: q, options })).status, 200);
  }
  for (let p = 0; p < P; p++) {
    for (const q of queues) assert.equal((await post(node.url, '/api/v1/push', { items: [{ queue: q, partition: `p${p}`, payload: 0 }] })).status, 201);
  }
  const from = pgLogSize();
  let rnd = 12345;
  const rand = (n) => { rnd = (rnd * 1103515245 + 12345) % 2147483648; return rnd % n; };
  const statuses = await load(24, 12000, async () => {
    // items of three queues (random partitions) in one request: one group commit locks them
    // together, in partition-id order
    const items = [];
    const first = rand(Q);
    for (let j = 0; j < 3; j++) {
      const queue = queues[(first + j) % Q];
      for (let r = 0; r < 2; r++) items.push({ queue, partition: `p${rand(P)}`, payload: { j, r } });
    }
    const res = await post(node.url, '/api/v1/push', { items });
    return [res.status];
  });
  const text = pgLog(from);
  const found = deadlocks(text);
  const m = (await get(node.url, '/metrics/prometheus')).text;
  const deleted = metricSum(m, /^queen_retention_deleted_records_total\{queue="lo\d",kind="(?:retention|eviction)"\} (\d+)$/);
  assert.ok((statuses[201] || 0) > 200, `pushes: ${JSON.stringify(statuses)}`);
  // the rounds really ran against the load (records older than 1 s deleted all along)
  assert.ok(deleted > 100, `retention deleted only ${deleted} records`);
  console.log(`${found} deadlocks, answers ${JSON.stringify(statuses)}`);
  assert.equal(found, 0, `${found} deadlocks in the PostgreSQL log (answers ${JSON.stringify(statuses)}):\n${cycles(text)}`);
  assert.equal(fivexx(statuses), 0, `5xx answers: ${JSON.stringify(statuses)}`);
});

test('lease stores and acks of one group over many partitions do not deadlock', async () => {
  // 24 partitions; pops claim up to 8 of them per lease in the order the node's hints (or the
  // scan by least recent claim) give, not partition-id order. Acks come late as well as on
  // time, the way a client whose lease expired, or that retries an ack after a timeout, sends
  // them: a late ack (its lease settled or gone) still locks the group's cursors, in
  // partition-id order, while other pops claim those partitions and store their leases.
  const P = 24;
  const q = 'lease-race';
  assert.equal((await post(node.url, '/api/v1/configure', { queue: q, options: { leaseTime: 2 } })).status, 200);
  const fill = async () => {
    const items = [];
    for (let p = 0; p < P; p++) for (let r = 0; r < 3; r++) items.push({ queue: q, partition: `p${(p * 7) % P}`, payload: r });
    return (await post(node.url, '/api/v1/push', { items })).status;
  };
  assert.equal(await fill(), 201);
  const from = pgLogSize();
  const seen = new Map(); // partitionId -> an acknowledgment delivered earlier
  let acked = 0;
  const statuses = await load(12, 12000, async (w) => {
    if (w < 2) {
      await sleep(20);
      return [await fill()];
    }
    if (w < 5) {
      // late acks: one per partition, every partition in one request
      await sleep(5);
      if (seen.size < 2) return [];
      const r = await post(node.url, '/api/v1/ack/batch', { consumerGroup: 'g', acknowledgments: [...seen.values()] });
      return [r.status];
    }
    const p = await get(node.url, `/api/v1/pop/queue/${q}?batch=16&partitions=8&consumerGroup=g&wait=false`);
    if (p.status !== 200) return [p.status];
    const acknowledgments = p.json.messages.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed' }));
    for (const a of acknowledgments) seen.set(a.partitionId, a);
    const r = await post(node.url, '/api/v1/ack/batch', { consumerGroup: 'g', acknowledgments });
    acked += acknowledgments.length;
    return [p.status, r.status];
  });
  const text = pgLog(from);
  const found = deadlocks(text);
  assert.ok(acked > 500, `only ${acked} acks: ${JSON.stringify(statuses)}`);
  console.log(`${found} deadlocks, answers ${JSON.stringify(statuses)}`);
  assert.equal(found, 0, `${found} deadlocks in the PostgreSQL log (answers ${JSON.stringify(statuses)}):\n${cycles(text)}`);
  assert.equal(fivexx(statuses), 0, `5xx answers: ${JSON.stringify(statuses)}`);
});

test('a round skips a partition a commit holds and comes back to it at the next tick, not a period later', async () => {
  // a node of its own whose rounds run once a minute (the first 5 s after boot)
  const pg2 = await startPostgres();
  const node2 = await startQueen({ env: { QUEEN_PG_URL: pg2.url, RETENTION_INTERVAL: '60000', EVICTION_INTERVAL: '60000' } });
  const asRoot = process.getuid && process.getuid() === 0;
  const args = ['-h', pg2.sock, '-p', String(pg2.port), '-U', 'postgres', '-d', 'postgres', '-At'];
  const holder = spawn(asRoot ? 'runuser' : 'psql', asRoot ? ['-u', 'postgres', '--', 'psql', ...args] : args, { cwd: '/', stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  holder.stdout.on('data', (d) => { out += d; });
  holder.stderr.on('data', (d) => { out += d; });
  const segs = (partition) => Number(pg2.psql(`SELECT count(*) FROM queen.segments s JOIN queen.partitions p ON p.id = s.partition_id
    JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'busyq' AND p.name = '${partition}'`));
  const until = async (fn, ms, what) => {
    const end = Date.now() + ms;
    while (!fn()) {
      if (Date.now() > end) throw new Error(`${what} not in ${ms} ms; psql: ${out}`);
      await sleep(100);
    }
  };
  try {
    assert.equal((await post(node2.url, '/api/v1/configure', { queue: 'busyq', options: { maxWaitTimeSeconds: 1 } })).status, 200);
    for (const partition of ['hot', 'cold']) {
      assert.equal((await post(node2.url, '/api/v1/push', { items: [{ queue: 'busyq', partition, payload: 1 }] })).status, 201);
    }
    // a commit in flight on 'hot' (as push_v1 step 3 holds it), kept open
    holder.stdin.write(`BEGIN;
SELECT 'held' FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'busyq' AND p.name = 'hot' FOR NO KEY UPDATE OF p;
`);
    await until(() => /held/.test(out), 5000, 'the partition lock');
    // the first round (5 s after boot) evicts 'cold' and skips 'hot' without waiting for it
    await until(() => segs('cold') === 0, 10000, "'cold' evicted");
    await sleep(1500);
    assert.equal(segs('hot'), 1, "'hot' is held: the rounds leave it");
    holder.stdin.write('COMMIT;\n');
    const released = Date.now();
    // the rounds that follow a busy one run at the next tick (1 s), not 60 s later
    await until(() => segs('hot') === 0, 4000, "'hot' evicted after the commit");
    console.log(`'hot' evicted ${Date.now() - released} ms after the commit released it`);
  } finally {
    holder.stdin.end();
    await node2.stop();
    rmrf(node2.data);
    pg2.destroy();
  }
});
