// Pop's 2.x knobs at the wire, for what the 2.x client does not show: the exact echo and
// refusal bodies, that an autopilot pop answers 200 with a body when empty while a plain pop
// keeps 204, that conflation's refusals touch nothing (no lease, no subscription, no wait),
// frames=true answering QPF1 (JSON when empty), and the bounds. tests/py/test_pop_knobs.py drives the client.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { get, post, rmrf, startQueen } from './harness.mjs';

let node;
before(async () => { node = await startQueen(); });
after(async () => { if (node) { await node.stop(); rmrf(node.data); } });

const push = async (items) => assert.equal((await post(node.url, '/api/v1/push', { items })).status, 201);
const pop = (q, qs) => get(node.url, `/api/v1/pop/queue/${q}?${qs}`);

test('the echo on a full answer and on an empty one', async () => {
  await push([0, 1, 2].map((i) => ({ queue: 'ap', payload: i })));
  const r = await pop('ap', 'autopilot=true&wait=false&timeout=30000&autoAck=true');
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.messages.length, 3);
  assert.deepEqual(r.json.autopilot, { partitions: 8, batch: 200, waitMs: 0 });
  assert.deepEqual(Object.keys(r.json).slice(-2), ['messages', 'autopilot']);
  const e = await pop('ap', 'autopilot=true&wait=false');
  assert.equal(e.status, 200, 'an empty autopilot pop has a body for its echo');
  assert.deepEqual(e.json, { success: true, messages: [], autopilot: { partitions: 8, batch: 200, waitMs: 100 } });
  // without autopilot: 204 and no echo, as before
  assert.equal((await pop('ap', 'wait=false')).status, 204);
  // the pinned knob is what the echo says
  await push([0, 1, 2].map((i) => ({ queue: 'ap', payload: i })));
  const pinned = await pop('ap', 'autopilot=true&batch=2&wait=false&autoAck=true');
  assert.equal(pinned.json.messages.length, 2);
  assert.deepEqual(pinned.json.autopilot, { partitions: 2, batch: 2, waitMs: 0 });
  const wide = await pop('ap', 'autopilot=true&partitions=30&wait=false&autoAck=true');
  assert.deepEqual(wide.json.autopilot, { partitions: 30, batch: 200, waitMs: 0 });
});

test('waitMs says when a held lease frees records', async () => {
  await post(node.url, '/api/v1/configure', { queue: 'apw', options: { leaseTime: 1 } });
  await push([{ queue: 'apw', payload: 1 }]);
  const leased = await pop('apw', 'wait=false');
  assert.equal(leased.status, 200);
  const e = await pop('apw', 'autopilot=true&wait=false');
  assert.equal(e.json.messages.length, 0);
  // the lease ends in about a second: the advice is that, capped at 1000 ms (not the idle 100)
  assert.ok(e.json.autopilot.waitMs > 500 && e.json.autopilot.waitMs <= 1000, JSON.stringify(e.json));
});

test('conflation: the refusals touch nothing; conflation=false is an ordinary pop', async () => {
  await push([0, 1].map((i) => ({ queue: 'cf', payload: i })));
  // requests that can never conflate: 400 at once (no long poll), nothing leased or stored
  const t0 = Date.now();
  const noGroup = await pop('cf', 'conflation=true&wait=true&timeout=10000');
  assert.deepEqual([noGroup.status, noGroup.json.code], [400, 'conflation_needs_group']);
  const autoAck = await pop('cf', 'conflation=true&consumerGroup=g1&autoAck=true&wait=true&timeout=10000&subscriptionMode=new');
  assert.deepEqual([autoAck.status, autoAck.json.code], [400, 'conflation_with_auto_ack']);
  assert.ok(Date.now() - t0 < 5000, 'answered without the long poll');
  // no subscription (mode new) and no policy were stored for g1: it reads from the start, every record
  const g = await pop('cf', 'consumerGroup=g1&batch=10&wait=false&autoAck=true');
  assert.deepEqual(g.json.messages.map((m) => m.data), [0, 1]);
  assert.equal('conflation' in g.json, false);
  // the echo beside autopilot's on an empty answer (conflation itself: conflation.test.mjs)
  const withAp = await pop('cf', 'conflation=true&consumerGroup=g2&autopilot=true&wait=false&subscriptionMode=new');
  assert.deepEqual(withAp.json, { success: true, messages: [], autopilot: { partitions: 8, batch: 200, waitMs: 100 },
    conflation: true });
  // conflation=false is an ordinary pop
  await push([{ queue: 'cf', payload: 2 }]);
  const off = await pop('cf', 'conflation=false&consumerGroup=g1&batch=10&wait=false&autoAck=true');
  assert.deepEqual(off.json.messages.map((m) => m.data), [2]);
  assert.equal('conflation' in off.json, false);
});

test('frames=true answers QPF1 when it delivers, JSON when empty or by namespace', async () => {
  await push([{ queue: 'fr', payload: { x: 1.50 } }]);
  const r = await fetch(`${node.url}/api/v1/pop/queue/fr?frames=true&wait=false&autoAck=true`);
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'application/x-queen-pop');
  const b = Buffer.from(await r.arrayBuffer());
  assert.equal(b.subarray(0, 4).toString(), 'QPF1');
  assert.equal(b[4], 1);
  const extra = JSON.parse(b.subarray(9, 9 + b.readUInt32LE(5)).toString());
  assert.deepEqual(extra, { frames: true });
  // the payload is the stored JSON text, as the JSON answer's
  assert.ok(b.includes(Buffer.from('"x":1.5')), b.toString('latin1'));
  const e = await pop('fr', 'frames=true&wait=false');
  assert.equal(e.status, 204);
  const ea = await pop('fr', 'frames=true&autopilot=true&wait=false');
  assert.equal(ea.status, 200);
  assert.match(ea.headers.get('content-type'), /application\/json/);
  assert.deepEqual(ea.json.messages, []);
});

test('bad knobs are refused', async () => {
  for (const [qs, code] of [['autopilot=yes-please', 'invalid_request'], ['frames=2', 'invalid_request'],
    ['conflation=maybe', 'invalid_request']]) {
    const r = await pop('fr', `${qs}&wait=false`);
    assert.equal(r.status, 400, qs);
    assert.equal(r.json.code, code);
  }
  for (const qs of ['batch=0', 'batch=10001', 'partitions=0', 'partitions=101', 'autopilot=true&batch=-1']) {
    const r = await pop('fr', `${qs}&wait=false`);
    assert.equal(r.status, 400, qs);
  }
});

test('POST /api/v1/stats/refresh, with no body', async () => {
  const r = await post(node.url, '/api/v1/stats/refresh');
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { skipped: true, reason: 'stats_are_live' });
});
