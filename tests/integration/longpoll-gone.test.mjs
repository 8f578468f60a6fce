// A long-polling pop whose client goes away while it waits must take nothing: h2o reads no more
// of an HTTP/1 connection while its request is being answered, so the broker looks at the socket
// before it claims (durable pop) or hands out (ephemeral pop) anything. Without that look, a
// push arriving within the dead pop's timeout was claimed under a lease nobody held (durable:
// invisible to the group for leaseTime) or committed at delivery into a closed socket
// (ephemeral autoAck: lost). Found by a stream runner that stopped mid-poll and was resumed by
// another runtime.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';

import { get, post, rmrf, sleep, startQueen } from './harness.mjs';

let node;
before(async () => { node = await startQueen(); });
after(async () => { if (node) { await node.stop(); rmrf(node.data); } });

// starts a GET and destroys its socket once the request is parked (after `ms`)
function abandoned(path, ms) {
  return new Promise((resolve) => {
    const req = http.get(node.url + path, { agent: false }, (res) => { res.resume(); resolve('answered'); });
    req.on('error', () => resolve('destroyed'));
    setTimeout(() => { req.destroy(); }, ms);
  });
}

test('a durable long poll whose client left claims nothing pushed afterwards', async () => {
  const q = 'gone-durable';
  await post(node.url, '/api/v1/configure', { queue: q, options: { leaseTime: 300 } });
  const gone = abandoned(`/api/v1/pop/queue/${q}?consumerGroup=g&batch=10&wait=true&timeout=5000`, 300);
  assert.equal(await gone, 'destroyed');
  await sleep(100);
  assert.equal((await post(node.url, '/api/v1/push', { items: [{ queue: q, payload: { n: 1 } }] })).status, 201);
  await sleep(300); // the parked pop was woken by the push and looked at its socket
  const r = await get(node.url, `/api/v1/pop/queue/${q}?consumerGroup=g&batch=10&wait=false`);
  assert.equal(r.status, 200, `the message went to the departed client's lease: ${r.status} ${r.text}`);
  assert.deepEqual(r.json.messages.map((m) => m.data), [{ n: 1 }]);
});

test('an ephemeral long poll whose client left takes nothing, even with autoAck', async () => {
  const q = 'gone-eph';
  const gone = abandoned(`/api/v1/ephemeral/pop?queue=${q}&batch=10&wait=true&timeout=5000&autoAck=true`, 300);
  assert.equal(await gone, 'destroyed');
  await sleep(100);
  assert.equal((await post(node.url, '/api/v1/ephemeral/push', { queue: q, messages: [{ payload: 7 }] })).status, 200);
  await sleep(300);
  const r = await get(node.url, `/api/v1/ephemeral/pop?queue=${q}&batch=10&autoAck=true`);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.messages.map((m) => m.payload), [7], 'the message was committed into a closed socket');
});

test('SIGTERM answers a parked ephemeral pop at once (docs/ephemeral.md)', async () => {
  const own = await startQueen();
  try {
    const t0 = Date.now();
    const parked = get(own.url, '/api/v1/ephemeral/pop?queue=term&wait=true&timeout=30000');
    await sleep(300);
    const stopping = own.stop();
    const r = await parked;
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.messages, []);
    assert.ok(Date.now() - t0 < 10000, `answered after ${Date.now() - t0} ms`);
    await stopping;
  } finally {
    rmrf(own.data);
  }
});
