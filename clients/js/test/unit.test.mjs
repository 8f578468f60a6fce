// Unit tests of queen-mq with no broker: config_hash vectors, chain rules, windows, aggregate,
// the HTTP policy (retries, Retry-After, failover, bearer) against a local fake server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { Queen, Stream, StreamBuildError, canonicalChain, assignWindows, isoToUs, tokenBucketGate, HttpClient } from '../index.js';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const queen = new Queen({ url: 'http://127.0.0.1:9' });
const q = (n) => queen.queue(n);
const fn = () => 1;

function build(steps) {
  let s = Stream.from(q('src'));
  for (const { op, args = {} } of steps) {
    switch (op) {
      case 'map': case 'filter': case 'flatMap': case 'keyBy': case 'gate': case 'foreach': s = s[op](fn); break;
      case 'windowTumbling': case 'windowSliding': case 'windowSession': case 'windowCron':
        s = s[op]({ ...args, ...(args.eventTime ? { eventTime: (m) => m.createdAt } : {}) }); break;
      case 'aggregate': s = s.aggregate(Object.fromEntries(args.fields.map((f) => [f, fn]))); break;
      case 'reduce': s = 'initial' in args ? s.reduce(fn, args.initial) : s.reduce(fn); break;
      case 'to': s = s.to(q(args.queue)); break;
      default: throw new Error(`vector op ${op}`);
    }
  }
  return s;
}

test('config_hash: every shared vector of clients/vectors/config_hash.json (the real 2.x Python SDK)', () => {
  const file = fileURLToPath(new URL('../../vectors/config_hash.json', import.meta.url));
  const { vectors } = JSON.parse(fs.readFileSync(file, 'utf8'));
  assert.ok(vectors.length >= 9, 'the vectors file lost entries');
  for (const v of vectors) {
    const s = build(v.steps);
    assert.equal(canonicalChain(s.ops), v.canonical, JSON.stringify(v.steps));
    assert.equal(s.configHash(), v.config_hash, JSON.stringify(v.steps));
  }
});

test('config_hash: the spec example and the reference vectors', () => {
  const spec = Stream.from(q('orders')).filter(fn).windowTumbling({ seconds: 60, idleFlushMs: 5000 })
    .aggregate({ count: fn, sum: fn }).to(q('orders.per_minute'));
  assert.equal(spec.configHash(), 'aa1c66b06b17594a0046c5faa37bdd78bdfa746b9161cae537d99aca02fa3a28');
  assert.equal(Stream.from(q('s')).gate(fn).to(q('api-allowed')).configHash(), '69bc39cc7c242aa227969fc1e9df867a55ef6f1449583c7a025aa51869eb2f30');
  assert.equal(Stream.from(q('s')).keyBy(fn).windowSession({ gap: 1800 }).reduce(fn, 0).foreach(fn).configHash(),
    '47b21fbfe0ae787104aae64f4adc4b07af6d5aa161ba307db00f3f6d9793d658');
  assert.equal(Stream.from(q('s')).windowSliding({ size: 3600, slide: 60, gracePeriod: 5, eventTime: fn, allowedLateness: 30, onLate: 'include' })
    .aggregate({ avg: fn, max: fn }).to(q('sink')).configHash(), '9fdd2bbf0b6a509182a4f446e2647f9aa5108a6ffcdd620d1aa890ab27414203');
  assert.equal(Stream.from(q('s')).windowCron({ every: 'day' }).aggregate({ count: fn }).to(q('sink')).configHash(),
    '4a62e84c757e72806026edf5758c7379c3a857d861ea30b03b3714420404d014');
});

test('chain rules are enforced as the chain is built, with clear errors', () => {
  const s = Stream.from(q('s'));
  const bad = [
    [() => s.gate(fn).gate(fn), /only one \.gate\(\)/],
    [() => s.windowTumbling({ seconds: 1 }).aggregate({ count: fn }).gate(fn), /incompatible/],
    [() => s.gate(fn).windowTumbling({ seconds: 1 }), /incompatible with \.gate\(\)/],
    [() => s.gate(fn).keyBy(fn), /keyBy\(\) must come before the gate/],
    [() => s.reduce(fn, 0), /requires a preceding window/],
    [() => s.windowTumbling({ seconds: 1 }).windowSession({ gap: 1 }), /only one window/],
    [() => s.windowTumbling({ seconds: 1 }).aggregate({ count: fn }).reduce(fn, 0), /only one reduce/],
    [() => s.to(q('x')).map(fn), /must be the last/],
    [() => s.keyBy(fn).keyBy(fn), /only one \.keyBy/],
    [() => s.windowSliding({ size: 10, slide: 3 }), /multiple of slide/],
    [() => s.windowCron({ every: 'month' }), /every must be one of/],
    [() => s.windowTumbling({ seconds: 1, onLate: 'keep' }), /onLate/],
    [() => s.windowTumbling({ seconds: 0 }), /seconds must be/],
    [() => s.windowTumbling({ seconds: 1, idelFlushMs: 5 }), /unknown option idelFlushMs/],
    [() => s.windowTumbling({ seconds: 1 }).to(q('x')).compile(), /needs a reduce/],
    [() => s.map(fn).compile(), /terminal \.to/],
    [() => s.aggregate({ __x: fn }), /reserved/],
  ];
  for (const [f, re] of bad) assert.throws(f, (e) => e instanceof StreamBuildError && re.test(e.message), String(re));
  // idleFlushMs defaults: 5000 tumbling/sliding, 1000 session, 30000 cron
  assert.equal(s.windowTumbling({ seconds: 1 }).ops[0].config.idleFlushMs, 5000);
  assert.equal(s.windowSliding({ size: 2, slide: 1 }).ops[0].config.idleFlushMs, 5000);
  assert.equal(s.windowSession({ gap: 1 }).ops[0].config.idleFlushMs, 1000);
  assert.equal(s.windowCron({ every: 'hour' }).ops[0].config.idleFlushMs, 30000);
});

test('window assignment: tumbling, sliding, cron (weeks start Monday 00:00 UTC)', () => {
  const t = Date.parse('2026-12-02T10:00:07.500Z');
  const tumb = Stream.from(q('s')).windowTumbling({ seconds: 5 }).ops[0].window;
  assert.deepEqual(assignWindows(tumb, t), [{ start: Date.parse('2026-12-02T10:00:05Z'), end: Date.parse('2026-12-02T10:00:10Z') }]);
  const sl = Stream.from(q('s')).windowSliding({ size: 10, slide: 5 }).ops[0].window;
  assert.deepEqual(assignWindows(sl, t).map((w) => new Date(w.start).toISOString()), ['2026-12-02T10:00:00.000Z', '2026-12-02T10:00:05.000Z']);
  const wk = Stream.from(q('s')).windowCron({ every: 'week' }).ops[0].window;
  assert.equal(new Date(assignWindows(wk, t)[0].start).toISOString(), '2026-11-30T00:00:00.000Z'); // a Monday
  const day = Stream.from(q('s')).windowCron({ every: 'day' }).ops[0].window;
  assert.equal(new Date(assignWindows(day, t)[0].start).toISOString(), '2026-12-02T00:00:00.000Z');
  assert.equal(isoToUs('2026-12-01T10:00:00.501942Z'), Date.parse('2026-12-01T10:00:00Z') * 1000 + 501942);
});

test('aggregate: count, sum, min, max, avg and no internal field in the result', () => {
  const r = Stream.from(q('s')).windowTumbling({ seconds: 1 }).aggregate({ count: () => 1, sum: (m) => m.v, min: (m) => m.v, max: (m) => m.v, avg: (m) => m.v, total: (m) => m.v }).ops[1].reducer;
  let acc = r.init();
  for (const v of [3, 1, 8]) acc = r.fold(acc, { v });
  assert.deepEqual(r.finish(JSON.parse(JSON.stringify(acc))), { count: 3, sum: 12, min: 1, max: 8, avg: 4, total: 12 });
});

test('tokenBucketGate refills on streamTimeMs', () => {
  const g = tokenBucketGate({ capacity: 2, refillPerSec: 1 });
  const state = {};
  const at = (ms) => g({}, { state, streamTimeMs: ms });
  assert.equal(at(0), true); assert.equal(at(0), true); assert.equal(at(100), false);
  assert.equal(at(1100), true); assert.equal(at(1100), false);
});

function fakeServer(handler) {
  return new Promise((resolve) => {
    const srv = http.createServer(handler);
    srv.listen(0, '127.0.0.1', () => resolve({ srv, url: `http://127.0.0.1:${srv.address().port}` }));
  });
}

test('http: 429 honours Retry-After, 5xx retried with back-off, 4xx not retried, bearer sent', async () => {
  let n = 0; const seen = [];
  const { srv, url } = await fakeServer((req, res) => {
    seen.push([req.url, req.headers.authorization, Date.now()]);
    n++;
    if (req.url === '/rl' && n === 1) { res.writeHead(429, { 'Retry-After': '0.3', 'Content-Type': 'application/json' }); return res.end('{"error":"slow down","code":"rate_limited"}'); }
    if (req.url === '/e5' && n <= 3) { res.writeHead(503); return res.end('{"error":"down","code":"database_unavailable"}'); }
    if (req.url === '/e4') { res.writeHead(400, { 'Content-Type': 'application/json' }); return res.end('{"error":"bad","code":"invalid_request"}'); }
    res.writeHead(200, { 'Content-Type': 'application/json' }); res.end('{"ok":true}');
  });
  try {
    const h = new HttpClient({ urls: [url], bearerToken: 'tok', retryBaseMillis: 50 });
    const t0 = Date.now();
    assert.deepEqual(await h.request('GET', '/rl'), { ok: true });
    assert.ok(Date.now() - t0 >= 280, 'Retry-After was not honoured');
    assert.equal(seen[0][1], 'Bearer tok');
    n = 0;
    assert.deepEqual(await h.request('GET', '/e5'), { ok: true });
    assert.equal(n, 4);
    n = 0;
    await assert.rejects(h.request('GET', '/e4'), (e) => e.status === 400 && e.code === 'invalid_request');
    assert.equal(n, 1);
    n = 0;
    await assert.rejects(new HttpClient({ urls: [url], retryAttempts: 1, retryBaseMillis: 10 }).request('GET', '/e5'), (e) => e.status === 503 && e.code === 'database_unavailable');
    assert.equal(n, 2, 'retryAttempts 1 = two tries');
  } finally { srv.close(); }
});

test('http: several URLs fail over to the next backend and mark the dead one unhealthy', async () => {
  const { srv, url } = await fakeServer((req, res) => { res.writeHead(200, { 'Content-Type': 'application/json' }); res.end('{"who":"live"}'); });
  try {
    const dead = 'http://127.0.0.1:9';
    const h = new HttpClient({ urls: [dead, url], loadBalancingStrategy: 'round-robin', retryBaseMillis: 10 });
    for (let i = 0; i < 4; i++) assert.deepEqual(await h.request('GET', '/x'), { who: 'live' });
    assert.ok(h.unhealthyUntil.get(dead) > Date.now());
    assert.equal(h.order()[0], url, 'the unhealthy backend is tried last');
  } finally { srv.close(); }
});

test('transaction body: riders are top-level siblings, omitted when unused; guards first; requiredLeases', () => {
  const m = { transactionId: 't1', partitionId: 'p-1', leaseId: 'L1', consumerGroup: 'g' };
  const plain = queen.transaction().ack(m).queue('out').partition('x').push([{ data: 1, transactionId: 'o1' }]).body();
  assert.deepEqual(plain, {
    operations: [{ type: 'ack', transactionId: 't1', partitionId: 'p-1', status: 'completed', consumerGroup: 'g', leaseId: 'L1' },
      { type: 'push', items: [{ queue: 'out', payload: 1, transactionId: 'o1', partition: 'x' }] }],
    requiredLeases: ['L1'],
  });
  const lock = queen.lock('job');
  lock.token = 7;
  const tx = queen.transaction().ack(m).once('dedup', 'k', { ttlSeconds: 60 }).guard(lock)
    .kv.incr('rl', 'u', { delta: 1, max: 5, ttlSeconds: 60 })
    .timers.schedule({ queue: 'q', timerKey: 'k', payload: { a: 1 }, delayMs: 1500.7, txn: 'tt' });
  const b = tx.body();
  assert.deepEqual(b.kv, [
    { op: 'check', ns: 'queen-locks', key: 'job', expect: 7, required: true },
    { op: 'putIfAbsent', ns: 'dedup', key: 'k', value: true, ttlSeconds: 60, required: true },
    { op: 'incr', ns: 'rl', key: 'u', ttlSeconds: 60, delta: 1, max: 5 },
  ]);
  assert.deepEqual(b.timers, [{ op: 'schedule', queue: 'q', timerKey: 'k', payload: Buffer.from('{"a":1}').toString('base64'), delayMs: 1500, txn: 'tt' }]);
  assert.throws(() => queen.transaction().kv.getPrefix('ns', 'p'), /not allowed inside a transaction/);
  assert.throws(() => queen.transaction().kv.put('ns', 'k', 1, { ttlSeconds: 5, forever: true }), /kv_expiry_not_specified/);
  assert.throws(() => queen.transaction().kv.put('ns', 'k', 1, { forever: true, expect: null }), /expect must be an integer/);
});

test('locks: acquire, background renew with the new token, release, against a fake /api/v1/locks', async () => {
  const calls = [];
  let token = 100;
  const { srv, url } = await fakeServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      const ops = JSON.parse(body).operations;
      calls.push(...ops);
      const results = ops.map((op) => {
        if (op.op === 'acquire') return { acquired: true, slot: 0, token: ++token, owner: op.owner, guard: { op: 'check', ns: 'queen-locks', key: op.name, expect: token } };
        if (op.op === 'renew') return op.token === token ? { renewed: true, slot: 0, token: ++token, guard: { op: 'check', ns: 'queen-locks', key: op.name, expect: token } } : { renewed: false, reason: 'lost' };
        if (op.op === 'release') return { released: op.token === token };
        return {};
      });
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ results }));
    });
  });
  try {
    const qn = new Queen({ url });
    const l = qn.lock('nightly', { ttlSeconds: 0.3 });
    assert.equal((await l.acquire()).acquired, true);
    assert.match(l.owner, /^.+:\d+:[0-9a-f]{12}$/);
    await sleep(250); // ttl/3 = 100 ms: renewed at least once
    assert.ok(calls.some((c) => c.op === 'renew'));
    assert.equal(l.guardOp().expect, token);
    assert.equal((await l.release()).released, true);
    assert.deepEqual(calls[0], { op: 'acquire', name: 'nightly', ttlSeconds: 0.3, owner: l.owner });
  } finally { srv.close(); }
});

test('row versions: a state read remembers what it saw, the commit sends it on the first op of each key', async () => {
  const { Runner } = await import('../src/streams/runner.js');
  const r = Object.create(Runner.prototype);
  r.reads = new Map();
  r.serverQueryId = 'q';
  const sent = [];
  r.post = async (path, body) => {
    sent.push([path, body]);
    if (path === '/streams/v1/state/get') {
      return { success: true, rows: (body.keys.length ? [] : [{ key: 'w1', value: {}, version: 17 }]) };
    }
    return { success: true };
  };
  r.stats = { stateOpsTotal: 0, pushItemsTotal: 0, cyclesTotal: 0, flushCyclesTotal: 0 };
  // a filtered read: only what it returned or named is known
  await r.stateGet('p', { key_prefix: 'tumb' });
  assert.equal(sent[0][1].versions, true);
  await r.commit({ partition_id: 'p', state_ops: [{ type: 'delete', key: 'w1' }, { type: 'upsert', key: 'w2' }], push_items: [] });
  assert.deepEqual(sent[1][1].state_ops, [{ type: 'delete', key: 'w1', version: 17 }, { type: 'upsert', key: 'w2' }]);
  // a read of every row: a key it did not return was absent (0); a second op of a key carries none
  await r.stateGet('p');
  await r.stateGet('p', { keys: ['__wm__'] });
  await r.commit({ partition_id: 'p', push_items: [], state_ops: [{ type: 'delete', key: 'w1' }, { type: 'upsert', key: 'w1' },
    { type: 'upsert', key: 'w3' }, { type: 'upsert', key: '__wm__' }] });
  assert.deepEqual(sent[4][1].state_ops, [{ type: 'delete', key: 'w1', version: 17 }, { type: 'upsert', key: 'w1' },
    { type: 'upsert', key: 'w3', version: 0 }, { type: 'upsert', key: '__wm__', version: 0 }]);
  // a commit consumes its reads: the next one without a read sends no version
  await r.commit({ partition_id: 'p', push_items: [], state_ops: [{ type: 'upsert', key: 'w1' }] });
  assert.deepEqual(sent[5][1].state_ops, [{ type: 'upsert', key: 'w1' }]);
});
