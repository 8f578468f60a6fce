// Hostile input beyond hostile.test.mjs: the embedded proxy's port — the control plane's routes
// (routes.mjs CP_ROUTES, checked against src/api/api_cp.c) and the clusters' data plane under a
// cluster's token — swept the same way (bad path segments and query values, one-leaf body
// mutations, malformed bodies, no or a wrong credential). Nothing may answer 5xx,
// every refusal is the JSON error shape with a code, nothing is stored, the node stays up.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { ROOT, api, freePort, rmrf, startPostgres, startQueen } from './harness.mjs';
import { checkAnswer, mutations, runAll, storedSince, tableCounts } from './hostile-lib.mjs';
import { CP_ROUTES, ROUTES, fillPath } from './routes.mjs';

const CP = 'hostile2-cp-token-0123456789';
const KEY = 'a'.repeat(64);
let pg, node, pport, proxy, token;
const cpH = { 'x-queen-cp-token': CP };
before(async () => {
  pg = await startPostgres();
  pport = await freePort();
  node = await startQueen({
    env: {
      QUEEN_PG_URL: pg.url, QUEEN_PROXY_CP_TOKEN: CP, QUEEN_PROXY_PORT: String(pport), QUEEN_ENCRYPTION_KEY: KEY,
      QUEEN_S3_EMBEDDED: 'true', QUEEN_MAX_BODY_BYTES: '65536',
    },
  });
  proxy = `http://127.0.0.1:${pport}`;
  // one cluster whose token the data-plane sweep uses (made before any count is taken)
  const r = await api(proxy, 'POST', '/api/cp/clusters', { name: 'hostile', tenant: '0190c2d4-0000-7000-8000-0000000000aa' }, cpH);
  assert.equal(r.status, 201, r.text);
  token = r.json.token;
});
after(async () => {
  const early = node && node.exited;
  if (node) { await node.stop(); rmrf(node.data); }
  if (pg) pg.destroy();
  if (early) throw new Error(`the node exited during the tests: ${JSON.stringify(early)}\n${node.log}`);
});

let nreq = 0;
const send = (base, method, p, body, headers) => { nreq++; return api(base, method, p, body, headers); };
const paramsOf = (pattern) => [...pattern.matchAll(/[:*]([A-Za-z]+)/g)].map((m) => m[1]);
const BAD_ENCODED = { invalidByte: '%ff%fe', overlongSlash: '%c0%af', surrogate: '%ed%a0%80', nul: 'a%00b', badEscape: 'a%zzb', cutEscape: 'ab%f' };
const RAW_BODIES = ['[]', '"x"', '1', 'null', '{', '{"a":}', '{"a":"\\ud800"}', '\u00ff\u00fe', '{"a":1}{"b":2}', ' ', '{"a":1,"a":2}',
  `{"a":${'['.repeat(2000)}${']'.repeat(2000)}}`];

test('the control-plane route table here is the broker\'s (src/api/api_cp.c)', () => {
  const src = fs.readFileSync(path.join(ROOT, 'src/api/api_cp.c'), 'utf8');
  const registered = [...src.matchAll(/http_route\(s, "(\w+)", "([^"]+)"/g)].map((m) => `${m[1]} ${m[2]}`).sort();
  assert.ok(registered.length >= 10, `only ${registered.length} routes found`);
  assert.deepEqual(CP_ROUTES.map(([m, p]) => `${m} ${p}`).sort(), registered);
});

describe('the control plane (proxy port, x-queen-cp-token)', () => {
  test('no token, a wrong one, a near miss: 401 unauthorized on every route, nothing stored', async () => {
    const before = tableCounts(pg);
    const jobs = [];
    for (const [method, pattern, body] of CP_ROUTES) {
      for (const h of [{}, { 'x-queen-cp-token': 'nope' }, { 'x-queen-cp-token': CP.slice(0, -1) }, { 'x-queen-cp-token': `${CP}x` },
        { 'x-queen-cp-token': CP.toUpperCase() }, { authorization: `Bearer ${CP}` }, { authorization: `Bearer ${token}` }]) {
        jobs.push(async () => {
          const r = await send(proxy, method, fillPath(pattern), body, h);
          checkAnswer(r, `${method} ${pattern} ${JSON.stringify(h)}`, { status: 401, code: 'unauthorized' });
        });
      }
    }
    await runAll(jobs);
    assert.deepEqual(storedSince(pg, before), []);
  });

  test('invalid UTF-8, NUL and bad escapes in :cluster, and very long names: 400 naming it or 404', async () => {
    const before = tableCounts(pg);
    const jobs = [];
    for (const [method, pattern, body] of CP_ROUTES) {
      for (const p of paramsOf(pattern)) {
        for (const [kind, enc] of Object.entries(BAD_ENCODED)) {
          jobs.push(async () => {
            const r = await send(proxy, method, fillPath(pattern, { [p]: enc }), body, cpH);
            checkAnswer(r, `${method} ${pattern} :${p}=${kind}`, { status: 400, code: 'invalid_parameter', parameter: p });
          });
        }
        for (const v of ['x'.repeat(70000), 'UPPER', '-lead', 'a_b', 'a.b', '%20', '..']) {
          jobs.push(async () => {
            const r = await send(proxy, method, fillPath(pattern, { [p]: v }), body, cpH);
            checkAnswer(r, `${method} ${pattern} :${p}=${v.slice(0, 20)}`);
            assert.ok(r.status >= 400, `${method} ${pattern} :${p}=${v.slice(0, 20)} → ${r.status} ${r.text}`);
            assert.ok(typeof r.json.code === 'string', r.text);
          });
        }
      }
      for (const [kind, enc] of Object.entries(BAD_ENCODED)) {
        jobs.push(async () => {
          const r = await send(proxy, method, `${fillPath(pattern)}?x=${enc}`, body, cpH);
          checkAnswer(r, `${method} ${pattern}?x=${kind}`, { status: 400, code: 'invalid_parameter', parameter: 'x' });
        });
      }
    }
    await runAll(jobs);
    assert.deepEqual(storedSince(pg, before), []);
  });

  test('wrong JSON types, NUL, long strings and malformed JSON in every body field: refused with a code, nothing stored', async () => {
    const before = tableCounts(pg);
    const jobs = [];
    const accepted = [];
    for (const [method, pattern, body] of CP_ROUTES) {
      const p = fillPath(pattern);
      if (!body && method === 'GET') continue;
      const bodies = body ? [...mutations(body)] : [['a body on a route that takes none', { a: 1 }]];
      for (const [where, mutated] of bodies) {
        jobs.push(async () => {
          const r = await send(proxy, method, p, mutated, cpH);
          checkAnswer(r, `${method} ${pattern} ${where}`);
          if (r.status < 300) accepted.push(`${method} ${pattern} ${where} → ${r.status} ${r.text.slice(0, 200)}`);
          else assert.ok(typeof r.json.code === 'string', `${method} ${pattern} ${where}: ${r.text}`);
        });
      }
      for (const raw of RAW_BODIES) {
        jobs.push(async () => {
          const r = await send(proxy, method, p, raw, cpH);
          checkAnswer(r, `${method} ${pattern} body ${JSON.stringify(raw).slice(0, 40)}`);
          assert.ok(r.status >= 400, `${method} ${pattern} body ${JSON.stringify(raw).slice(0, 40)} → ${r.status} ${r.text}`);
          assert.ok(typeof r.json.code === 'string', r.text);
        });
      }
    }
    await runAll(jobs);
    assert.deepEqual(storedSince(pg, before), [], `accepted:\n${accepted.join('\n')}`);
    assert.deepEqual(accepted, []);
  });
});

describe('the clusters\' data plane (proxy port, a cluster token)', () => {
  const auth = () => ({ authorization: `Bearer ${token}` });

  test('no credential, a wrong one, the control-plane token, a malformed bearer: 401 on every route', async () => {
    const jobs = [];
    for (const [method, pattern, body] of ROUTES) {
      for (const h of [{}, { authorization: 'Bearer qcp_' + '0'.repeat(64) }, { authorization: `Bearer ${CP}` }, { 'x-queen-cp-token': CP },
        { authorization: `bearer${token}` }, { authorization: `Basic ${Buffer.from(`x:${token}`).toString('base64')}` },
        { authorization: `Bearer ${token} ` + 'x'.repeat(5000) }]) {
        jobs.push(async () => {
          const r = await send(proxy, method, fillPath(pattern), body, h);
          checkAnswer(r, `${method} ${pattern} ${JSON.stringify(h).slice(0, 60)}`);
          // /health is public; the node-wide views are not on this port
          if (pattern === '/health') assert.equal(r.status, 200);
          else if (['/status', '/metrics', '/metrics/prometheus'].includes(pattern)) assert.equal(r.status, 404, r.text);
          else assert.equal(r.status, 401, `${method} ${pattern} ${JSON.stringify(h).slice(0, 60)} → ${r.status} ${r.text}`);
        });
      }
    }
    await runAll(jobs);
  });

  test('bad path segments and one-leaf body mutations under a cluster token: no 5xx, the JSON error shape, nothing stored', async () => {
    const before = tableCounts(pg);
    const jobs = [];
    const statuses = {};
    const seen = (s) => { statuses[s] = (statuses[s] || 0) + 1; };
    for (const [method, pattern, body] of ROUTES) {
      for (const p of paramsOf(pattern)) {
        for (const [kind, enc] of Object.entries(BAD_ENCODED)) {
          jobs.push(async () => {
            const r = await send(proxy, method, fillPath(pattern, { [p]: enc }), body, auth());
            checkAnswer(r, `${method} ${pattern} :${p}=${kind}`, { status: 400, code: 'invalid_parameter', parameter: p });
          });
        }
      }
      if (!body) continue;
      for (const [where, mutated] of mutations(body)) {
        jobs.push(async () => {
          const r = await send(proxy, method, fillPath(pattern), mutated, auth());
          checkAnswer(r, `${method} ${pattern} ${where}`);
          seen(r.status);
        });
      }
      for (const raw of RAW_BODIES) {
        jobs.push(async () => {
          const r = await send(proxy, method, fillPath(pattern), raw, auth());
          checkAnswer(r, `${method} ${pattern} body ${JSON.stringify(raw).slice(0, 40)}`);
          seen(r.status);
        });
      }
    }
    await runAll(jobs);
    assert.deepEqual(storedSince(pg, before), []);
    // the token was honoured: the answers are the routes' own, never the gate's
    assert.equal(statuses[401] || 0, 0, JSON.stringify(statuses));
    assert.ok((statuses[400] || 0) > 500, JSON.stringify(statuses));
  });
});

// A NUL escape inside a JSON value is legal JSON and is kept where the broker stores the text
// (payloads, KV values: docs/http-api.md); PostgreSQL's jsonb cannot hold it. Every path that
// reads such a text as jsonb, or stores a value as jsonb, must answer without a 5xx.
describe('a NUL (\\u0000) inside a JSON value', () => {
  const B = () => node.url;
  test('a stream cycle whose state value holds one: 400 with a code, nothing of the cycle applied', async () => {
    const reg = await api(B(), 'POST', '/streams/v1/queries', { name: 'nul-q', source_queue: 'nul-src', sink_queue: 'nul-sink', config_hash: 'h', reset: false });
    assert.equal(reg.status, 200, reg.text);
    assert.equal((await api(B(), 'POST', '/api/v1/push', { items: [{ queue: 'nul-src', partition: 'p', payload: { n: 1 } }] })).status, 201);
    const pop = await api(B(), 'GET', '/api/v1/pop/queue/nul-src?batch=10&wait=false&consumerGroup=streams.nul-q');
    assert.equal(pop.status, 200, pop.text);
    const m = pop.json.messages[0];
    const cycle = (value) => ({
      query_id: reg.json.query_id, partition_id: m.partitionId, consumer_group: 'streams.nul-q',
      state_ops: [{ type: 'upsert', key: 'ok', value: 1 }, { type: 'upsert', key: 'k', value }],
      push_items: [{ queue: 'nul-sink', partition: 'p', payload: { out: 1 } }],
      ack: { transactionId: m.transactionId, leaseId: m.leaseId, status: 'completed', count: 1 }, release_lease: true,
    });
    for (const value of ['a\u0000b', { deep: [{ x: '\u0000' }] }, { 'key\u0000': 1 }]) {
      const r = await api(B(), 'POST', '/streams/v1/cycle', cycle(value));
      checkAnswer(r, `cycle value ${JSON.stringify(value)}`, { status: 400, code: 'bad_request' });
      assert.match(r.json.error, /state_ops\[1\]\.value must not hold a NUL character/, r.text);
      const arr = await api(B(), 'POST', '/streams/v1/cycle', [cycle(1), cycle(value)]);
      checkAnswer(arr, 'cycle array', { status: 400, code: 'bad_request' });
    }
    const st = await api(B(), 'POST', '/streams/v1/state/get', { query_id: reg.json.query_id, partition_id: m.partitionId, keys: [] });
    assert.deepEqual(st.json.rows, []);
    assert.equal(pg.psql("SELECT count(*) FROM queen.queues WHERE name = 'nul-sink'"), '0');
    // the lease was not touched: the same cycle with a storable value goes through
    const ok = await api(B(), 'POST', '/streams/v1/cycle', cycle('a\\u0000b'));
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.json.success, true, ok.text);
  });

  test('a KV value that holds one, past 3800 bytes, under a lost required precondition of a transaction: the verdict, not a 500', async () => {
    const value = { a: '\u0000', pad: 'x'.repeat(5000) };
    let r = await api(B(), 'POST', '/api/v1/kv', { operations: [{ op: 'put', ns: 'nul', key: 'big', value, forever: true }] });
    assert.equal(r.status, 200, r.text);
    const version = r.json.results[0].version;
    for (const op of [{ op: 'put', ns: 'nul', key: 'big', value: 1, forever: true, expect: version + 100, required: true },
      { op: 'check', ns: 'nul', key: 'big', expect: version + 100, required: true },
      { op: 'putIfAbsent', ns: 'nul', key: 'big', value: 1, forever: true, required: true }]) {
      r = await api(B(), 'POST', '/api/v1/transaction', { operations: [{ type: 'push', items: [{ queue: 'nul-kvq', payload: 1 }] }], kv: [op] });
      checkAnswer(r, `transaction kv ${op.op}`, { status: 200 });
      assert.equal(r.json.success, false, r.text);
      assert.equal(r.json.reason, 'kv_precondition', r.text);
      assert.equal(r.json.version, version, r.text);
      r = await api(B(), 'POST', '/api/v1/kv', { operations: [op] });
      checkAnswer(r, `kv ${op.op}`, { status: 200 });
      assert.equal(r.json.results[0].applied ?? r.json.results[0].ok, false, r.text);
    }
    assert.equal(pg.psql("SELECT count(*) FROM queen.queues WHERE name = 'nul-kvq'"), '0');
  });

  test('a permit row in queen-locks that holds one, or a key that is no slot (written through the KV API): lock verdicts, not 500s', async () => {
    for (const [key, value] of [['held#0', 'a\u0000'], ['held2#0', { owner: 'me\u0000' }], ['held3#0', [1, 2]],
      // and keys that are no slot of the lock: written through the KV API, they are no permits
      ['slot#x', { owner: 'a' }], ['slot2#99999999999', { owner: 'a' }], ['slot3#', { owner: 'a' }], ['slot4#007', { owner: 'a' }]]) {
      const r = await api(B(), 'POST', '/api/v1/kv', { operations: [{ op: 'put', ns: 'queen-locks', key, value, forever: true }] });
      assert.equal(r.status, 200, r.text);
    }
    for (const name of ['held', 'held2', 'held3', 'free', 'slot', 'slot2', 'slot3', 'slot4']) {
      let r = await api(B(), 'POST', '/api/v1/locks', { operations: [{ op: 'acquire', name, ttlSeconds: 30, owner: 'me' },
        { op: 'acquire', name, ttlSeconds: 30, owner: 'me', limit: 3 }, { op: 'get', name }] });
      checkAnswer(r, `locks ${name}`, { status: 200 });
      assert.equal(r.json.results.length, 3, r.text);
      assert.equal(r.json.results[2].held, true, r.text);
      const token = r.json.results[0].token ?? 1;
      if (name.startsWith('slot')) assert.deepEqual(r.json.results[2].holders.map((h) => h.slot), [0], r.text);
      r = await api(B(), 'POST', '/api/v1/locks', { operations: [{ op: 'renew', name, token, ttlSeconds: 30 }, { op: 'release', name, token }] });
      checkAnswer(r, `locks renew/release ${name}`, { status: 200 });
    }
    // the row held by another: acquire says held, and a free lock beside it still works
    const r = await api(B(), 'POST', '/api/v1/locks', { operations: [{ op: 'acquire', name: 'held', ttlSeconds: 30, owner: 'me' }] });
    assert.equal(r.json.results[0].acquired, false, r.text);
  });
});

// Not here: two Content-Length headers that differ. libh2o 2.2.5 frames by the first and drops
// both from the request's headers, so the broker cannot refuse it (docs/http-api.md, "Two
// Content-Length headers that differ"); a later h2o answers 400 itself.

test('request count (the run stays meaningful)', () => {
  assert.ok(nreq > 2000, `only ${nreq} requests were sent`);
});
