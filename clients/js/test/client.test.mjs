// The broker client against the real broker: push (transactionIds, dedup), pop/ack, consume with
// lease renewal, consumer groups, transactions, fetch, partitions/changed, timers, failover, and
// KV and locks where the node serves the 2.x routes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { broker, uniq, waitFor, client, sleep } from './_broker.mjs';
import { Queen, QueenHttpError, Stream } from '../index.js';

test('broker client on the real broker', async (t) => {
  const node = await broker(t);
  const queen = client(node);

  await t.test('push with transactionIds (a repeat is a duplicate), pop, ack', async () => {
    const q = uniq('q');
    const r1 = await queen.queue(q).partition('p1').push([{ data: { n: 1 }, transactionId: 'tx-1' }, { data: { n: 2 } }]);
    assert.deepEqual(r1.map((r) => r.status), ['queued', 'queued']);
    const r2 = await queen.queue(q).partition('p1').push([{ data: { n: 1 }, transactionId: 'tx-1' }]);
    assert.equal(r2[0].status, 'duplicate');
    const msgs = await queen.queue(q).batch(10).wait(false).pop();
    assert.deepEqual(msgs.map((m) => m.data.n), [1, 2]);
    assert.equal(msgs[0].transactionId, 'tx-1');
    assert.equal((await queen.ack(msgs[0], true)).success, true);
    assert.equal((await queen.ack([msgs[1]], true)).success, true);
    assert.deepEqual(await queen.queue(q).batch(10).wait(false).pop(), []);
  });

  await t.test('consumer groups each see every message; consume acks, a throw nacks; renew extends', async () => {
    const q = uniq('cg');
    await queen.queue(q).create();
    await queen.queue(q).push([{ data: { n: 1 } }, { data: { n: 2 } }, { data: { n: 3 } }]);
    const seen = { a: [], b: [] };
    for (const g of ['a', 'b']) {
      const c = queen.queue(q).group(g).batch(10).each().timeoutMillis(500).limit(3).renewLease(true, 200)
        .consume(async (m) => { seen[g].push(m.data.n); await sleep(50); });
      await c.done;
    }
    assert.deepEqual(seen, { a: [1, 2, 3], b: [1, 2, 3] });
    // a fresh pop of a group that consumed everything finds nothing
    assert.deepEqual(await queen.queue(q).group('a').wait(false).pop(), []);
    // batch mode: the handler gets the array; `await consume()` ends with the limit
    await queen.queue(q).push([{ data: { n: 5 } }, { data: { n: 6 } }]);
    const batches = [];
    await queen.queue(q).group('batchers').subscriptionMode('all').batch(10).timeoutMillis(500).limit(5)
      .consume(async (ms) => { batches.push(ms.map((m) => m.data.n)); });
    assert.deepEqual(batches.flat(), [1, 2, 3, 5, 6]);
    // a handler that throws nacks: the message comes back (retryLimit 3)
    let tries = 0;
    await queen.queue(q).group('flaky').batch(1).timeoutMillis(500).limit(2)
      .consume(async (m) => { tries++; if (tries === 1) throw new Error('boom'); assert.equal(m.data.n, 1); });
    assert.equal(tries, 2);
    // renew
    await queen.queue(q).push([{ data: { n: 4 } }]);
    const [m] = await queen.queue(q).group('c').subscriptionMode('all').batch(1).wait(false).pop();
    const r = await queen.renew(m);
    assert.equal(r.success, true);
    assert.ok(r.expiresAt);
    // a failed ack (nack) makes it come back
    assert.equal((await queen.ack(m, false, { error: 'boom' })).success, true);
  });

  await t.test('transaction: ack one message and push two, atomically', async () => {
    const q = uniq('tx'), out = uniq('tx-out');
    await queen.queue(q).push([{ data: { n: 1 } }]);
    const [m] = await queen.queue(q).wait(false).pop();
    const res = await queen.transaction().ack(m).queue(out).partition('x').push([{ data: { a: 1 } }, { data: { a: 2 } }]).commit();
    assert.notEqual(res?.success, false);
    const got = await queen.queue(out).partition('x').batch(10).wait(false).pop();
    assert.deepEqual(got.map((g) => g.data.a), [1, 2]);
    assert.deepEqual(await queen.queue(q).wait(false).pop(), [], 'the source message was acked');
    await assert.rejects(queen.transaction().commit(), /at least one operation/);
  });

  await t.test('fetch reads a partition to the end; changedSince lists partitions with a safeTime', async () => {
    const q = uniq('rd');
    await queen.queue(q).partition('a').push([{ data: 1 }, { data: 2 }, { data: 3 }]);
    await queen.queue(q).partition('b').push([{ data: 9 }]);
    const f = await queen.queue(q).fetch({ partition: 'a' });
    assert.deepEqual(f.records.map((r) => r.payload), [1, 2, 3]);
    assert.equal(f.highWatermark, 3);
    const f2 = await queen.queue(q).fetch({ partition: 'a', offset: 2 });
    assert.deepEqual(f2.records.map((r) => r.payload), [3]);
    const c = await queen.queue(q).changedSince();
    assert.deepEqual(c.partitions.map((p) => [p.name, p.lastOffset]).sort(), [['a', 2], ['b', 0]]);
    assert.match(c.safeTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    await sleep(300);
    const c2 = await queen.queue(q).changedSince();
    await queen.queue(q).partition('a').push([{ data: 4 }]);
    const later = await queen.queue(q).changedSince(c2.safeTime);
    assert.deepEqual(later.partitions.map((p) => p.name), ['a'], 'only what was written at or after the safeTime');
    assert.ok(later.partitions.every((p) => p.lastWriteAt >= c2.safeTime));
    const none = await queen.queue(uniq('nope')).fetch({ partition: 'x' });
    assert.deepEqual(none.records, []);
  });

  await t.test('timers: schedule, peek, list, reschedule, cancel, fire', async () => {
    const q = uniq('tm');
    const s = await queen.timers.schedule({ queue: q, timerKey: 'k/1', payload: { hello: 'world' }, delayMs: 60000 });
    assert.equal(s.status, 'scheduled');
    const p = await queen.timers.peek(q, 'k/1');
    assert.equal(p.found, true);
    assert.deepEqual(JSON.parse(Buffer.from(p.payload, 'base64').toString()), { hello: 'world' });
    assert.equal((await queen.timers.list(q)).rows.length, 1);
    assert.equal((await queen.timers.reschedule({ queue: q, timerKey: 'k/1', payload: { v: 2 }, delayMs: 0, txn: 'fire-1' })).status, 'rescheduled');
    const fired = await waitFor(async () => { const m = await queen.queue(q).wait(false).pop(); return m.length ? m : null; }, 10000, 'the timer to fire');
    assert.deepEqual(fired[0].data, { v: 2 });
    assert.equal(fired[0].transactionId, 'fire-1');
    await queen.timers.schedule({ queue: q, timerKey: 'k2', payload: 1, delayMs: 60000 });
    assert.equal((await queen.timers.cancel(q, 'k2')).status, 'cancelled');
    assert.equal((await queen.timers.cancel(q, 'k2')).status, 'absent');
    await assert.rejects(queen.timers.schedule({ queue: q, timerKey: 'x', payload: 1, deliverAt: 'now' }), /server-owned/);
  });

  await t.test('several URLs: a dead first backend fails over to the live one', async () => {
    const q2 = new Queen({ urls: ['http://127.0.0.1:9', node.url], loadBalancingStrategy: 'round-robin', retryBaseMillis: 20 });
    const q = uniq('fo');
    for (let i = 0; i < 3; i++) await q2.queue(q).push([{ data: i }]);
    assert.equal((await q2.queue(q).batch(10).wait(false).pop()).length, 3);
  });

  await t.test('refusals surface as QueenHttpError with the stable code, never retried', async () => {
    await assert.rejects(queen.http.request('POST', '/api/v1/fetch', { body: { entries: [{ queue: '' }] } }),
      (e) => e instanceof QueenHttpError && e.status === 400 && typeof e.code === 'string');
  });

  // KV and locks are the 2.x routes POST /api/v1/kv and /api/v1/locks (branch kv); a node without
  // them answers 404, and these checks say so instead of passing
  const kvProbe = await queen.http.request('POST', '/api/v1/kv', { body: { operations: [] } }).then(() => 200, (e) => e.status);
  await t.test('KV: put/get/putIfAbsent/incr with max/delete', { skip: kvProbe === 404 ? 'this node has no POST /api/v1/kv (the 2.x KV route, branch kv)' : false }, async () => {
    const ns = uniq('ns');
    assert.equal((await queen.kv.put(ns, 'a', { v: 1 }, { forever: true })).applied, true);
    const g = await queen.kv.get(ns, 'a');
    assert.equal(g.found, true); assert.deepEqual(g.value, { v: 1 });
    assert.equal((await queen.kv.putIfAbsent(ns, 'a', 2, { ttlSeconds: 60 })).applied, false);
    assert.equal((await queen.kv.incr(ns, 'c', { delta: 2, max: 3, ttlSeconds: 60 })).applied, true);
    assert.equal((await queen.kv.incr(ns, 'c', { delta: 2, max: 3, ttlSeconds: 60 })).applied, false);
    assert.equal((await queen.kv.delete(ns, 'a')).applied, true);
    assert.equal((await queen.kv.get(ns, 'a')).found, false);
    await assert.rejects(queen.kv.put(ns, 'x', 1), /kv_expiry_not_specified/);
  });
  const lockProbe = await queen.http.request('POST', '/api/v1/locks', { body: { operations: [] } }).then(() => 200, (e) => e.status);
  await t.test('locks: acquire, contended, release', { skip: lockProbe === 404 ? 'this node has no POST /api/v1/locks (the 2.x locks route, branch kv)' : false }, async () => {
    const name = uniq('lk');
    const a = queen.lock(name, { ttlSeconds: 5 });
    assert.equal((await a.acquire()).acquired, true);
    const b = queen.lock(name, { ttlSeconds: 5 });
    assert.equal((await b.acquire()).acquired, false);
    assert.equal((await a.release()).released, true);
    assert.equal((await b.acquire()).acquired, true);
    await b.release();
  });
});

test('bearer token: a node with JWT authentication takes the client\'s token, refuses none', async (t) => {
  const { startQueen } = await import('../../../tests/integration/harness.mjs');
  const { sign, nowS } = await import('../../../tests/integration/jwt.mjs');
  const SECRET = 'sdk-js-bearer-secret-0123456789abcdef';
  const node = await startQueen({ env: { JWT_ENABLED: 'true', JWT_SECRET: SECRET } });
  t.after(() => node.stop());
  const token = sign('HS256', SECRET, { exp: nowS() + 300, sub: 'sdk-js', role: 'admin' });
  const q = uniq('auth');
  const ok = new Queen({ url: node.url, bearerToken: token });
  assert.equal((await ok.queue(q).push([{ data: 1 }]))[0].status, 'queued');
  assert.equal((await ok.queue(q).wait(false).pop()).length, 1);
  const none = new Queen({ url: node.url });
  await assert.rejects(none.queue(q).push([{ data: 2 }]), (e) => e instanceof QueenHttpError && e.status === 401);
  const h = await Stream.from(ok.queue(q)).map((m) => m.data).to(ok.queue(`${q}-out`)).run({ queryId: uniq('qa'), maxWait: 200 });
  await ok.queue(q).push([{ data: 3 }]);
  const got = await waitFor(async () => { const r = (await ok.queue(`${q}-out`).fetch({ partition: 'Default' })).records; return r.length >= 2 ? r : null; }, 10000, 'the stream to pass the records with the token');
  assert.deepEqual(got.map((r) => r.payload), [{ value: 1 }, { value: 3 }]);
  await h.stop();
});
