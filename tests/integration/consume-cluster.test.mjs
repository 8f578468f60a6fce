// Many consumers on two nodes drain a queue across many partitions: every record is delivered
// and acked exactly once per group (no lease expires here, so no redelivery is allowed), and
// no two consumers of a group ever hold one partition at once. Then kill -9 of a node that
// holds leases: its partitions come back after the lease time, nothing acked is redelivered,
// nothing unacked is lost.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { get, post, rmrf, sleep, startPostgres, startQueen } from './harness.mjs';

let pg;
let nodes = [];
before(async () => {
  pg = await startPostgres();
  nodes = [
    await startQueen({ env: { QUEEN_PG_URL: pg.url, QUEEN_NODE_ID: 'a' } }),
    await startQueen({ env: { QUEEN_PG_URL: pg.url, QUEEN_NODE_ID: 'b' } }),
  ];
});
after(async () => {
  for (const n of nodes) { if (!n.exited) await n.stop(); rmrf(n.data); }
  if (pg) pg.destroy();
});

async function pop(url, queue, params) {
  const qs = new URLSearchParams(params).toString();
  return get(url, `/api/v1/pop/queue/${queue}?${qs}`);
}

test('two groups drain 3000 records over 40 partitions from two nodes, exactly once each', async () => {
  const N = 3000;
  const P = 40;
  for (let i = 0; i < N; i += 500) {
    const items = [];
    for (let k = i; k < i + 500; k++) items.push({ queue: 'drain', partition: `p${k % P}`, transactionId: `t${k}`, payload: { k } });
    assert.equal((await post(nodes[i % 2].url, '/api/v1/push', { items })).status, 201);
  }
  for (const group of ['g1', 'g2']) {
    const delivered = new Map();
    const holding = new Map(); // partition → consumer currently holding it
    let violations = 0;
    let idle = 0;
    async function consumer(id) {
      const url = nodes[id % 2].url;
      for (;;) {
        const r = await pop(url, 'drain', { consumerGroup: group, batch: 17, wait: 'true', timeout: 300 });
        if (r.status === 204) {
          if (delivered.size >= N || ++idle > 50) return;
          continue;
        }
        assert.equal(r.status, 200, r.text);
        const ms = r.json.messages;
        const part = ms[0].partition;
        if (holding.has(part)) violations++;
        holding.set(part, id);
        for (const m of ms) {
          assert.equal(m.partition, part);
          delivered.set(m.transactionId, (delivered.get(m.transactionId) || 0) + 1);
        }
        // order within a partition: offsets k increase by P
        for (let i = 1; i < ms.length; i++) assert.equal(ms[i].data.k, ms[i - 1].data.k + P);
        holding.delete(part);
        const a = await post(url, '/api/v1/ack/batch', { consumerGroup: group, acknowledgments: ms.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId })) });
        assert.equal(a.status, 200);
        assert.ok(a.json.every((x) => x.success), JSON.stringify(a.json.filter((x) => !x.success)));
      }
    }
    await Promise.all([...Array(12).keys()].map(consumer));
    assert.equal(violations, 0, 'two consumers held one partition at once');
    assert.equal(delivered.size, N, `group ${group}: ${delivered.size} of ${N} delivered`);
    const dups = [...delivered.entries()].filter(([, c]) => c > 1);
    assert.deepEqual(dups, [], `group ${group} got duplicates`);
  }
});

test('kill -9 of a node holding leases: its partitions return after the lease time', async () => {
  await post(nodes[0].url, '/api/v1/configure', { queue: 'k9', options: { leaseTime: 2 } });
  const items = [];
  for (let k = 0; k < 60; k++) items.push({ queue: 'k9', partition: `p${k % 3}`, transactionId: `k${k}`, payload: { k } });
  await post(nodes[0].url, '/api/v1/push', { items });
  // node b leases every partition; one batch is acked first
  const acked = new Set();
  const first = await pop(nodes[1].url, 'k9', { batch: 5 });
  for (const m of first.json.messages) acked.add(m.transactionId);
  await post(nodes[1].url, '/api/v1/ack/batch', { acknowledgments: first.json.messages.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId })) });
  const leased = [];
  for (let i = 0; i < 3; i++) {
    const r = await pop(nodes[1].url, 'k9', { batch: 5 });
    if (r.status === 200) leased.push(...r.json.messages);
  }
  assert.ok(leased.length > 0);
  await nodes[1].kill9();
  // right away, node a cannot get the leased partitions
  const t0 = Date.now();
  const seen = new Map();
  for (;;) {
    const r = await pop(nodes[0].url, 'k9', { batch: 10, wait: 'true', timeout: 1000 });
    if (r.status === 204) {
      if (seen.size + acked.size >= 60) break;
      assert.ok(Date.now() - t0 < 15000, 'records did not come back');
      continue;
    }
    for (const m of r.json.messages) {
      assert.ok(!acked.has(m.transactionId), `acked ${m.transactionId} delivered again`);
      seen.set(m.transactionId, (seen.get(m.transactionId) || 0) + 1);
      if (leased.some((x) => x.transactionId === m.transactionId)) {
        assert.ok(Date.now() - t0 >= 1000, 'a leased record came back before its lease expired');
      }
    }
    await post(nodes[0].url, '/api/v1/ack/batch', { acknowledgments: r.json.messages.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId })) });
  }
  assert.equal(seen.size + acked.size, 60, 'some records were lost');
  for (const [t, c] of seen) assert.equal(c, 1, `${t} delivered ${c} times after the kill`);
});
