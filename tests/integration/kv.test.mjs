// The KV store over HTTP on the real binary: byte-exact values, versions, compare-and-set,
// putIfAbsent races, all-or-nothing batches, incr with max, TTL expiry and reclaim, the S3
// sink's lease + fence pattern, listings, and bad input answered 400 with what was wrong.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { api, get, post, rmrf, sleep, startPostgres, startQueen } from './harness.mjs';

let pg;
let node;
before(async () => {
  pg = await startPostgres();
  node = await startQueen({ env: { QUEEN_PG_URL: pg.url } });
});
after(async () => {
  // a node that left early (crash or a stray signal) would otherwise only show as fetch errors
  const early = node && node.exited;
  if (node) { await node.stop(); rmrf(node.data); }
  if (pg) pg.destroy();
  if (early) throw new Error(`the node exited during the tests: ${JSON.stringify(early)}\n${node.log}`);
});

const put = (ns, key, body) => api(node.url, 'PUT', `/api/v1/kv/${encodeURIComponent(ns)}/${encodeURIComponent(key)}`, body);
const read = (ns, key) => get(node.url, `/api/v1/kv/${encodeURIComponent(ns)}/${encodeURIComponent(key)}`);
const del = (ns, key, q = '') => api(node.url, 'DELETE', `/api/v1/kv/${encodeURIComponent(ns)}/${encodeURIComponent(key)}${q}`);
const incr = (ns, key, body) => post(node.url, `/api/v1/kv/${encodeURIComponent(ns)}/${encodeURIComponent(key)}/incr`, body);
const pia = (ns, key, body) => post(node.url, `/api/v1/kv/${encodeURIComponent(ns)}/${encodeURIComponent(key)}/putIfAbsent`, body);
const batch = (body) => post(node.url, '/api/v1/kv/batch', body);

// The raw text of the value in an answer (the stored bytes, not a re-serialisation).
function rawValue(text) {
  const m = /"value":([\s\S]*),"version":/.exec(text);
  assert.ok(m, `no value in ${text}`);
  return m[1];
}

async function metric(name, labels = '') {
  const r = await get(node.url, '/metrics/prometheus');
  const line = r.text.split('\n').find((l) => l.startsWith(name + labels + ' '));
  return line ? Number(line.split(' ')[1]) : 0;
}

describe('values and versions', () => {
  test('values come back byte for byte', async () => {
    const values = ['42.00', '{ "a" :\t[1 , 2.50],\n "b": {"c": null} }', '"caf\\u00e9 \\ud83d\\ude00 \\n \\"q\\""',
      '"raw UTF-8: café ☕ 😀"', 'null', 'true', '-0', '1e400', '12345678901234567890123', '[]', '{}',
      '"\\/slashes\\/"', JSON.stringify({ blob: 'x'.repeat(100000) })];
    for (const [i, v] of values.entries()) {
      const w = await put('bytes', `k${i}`, `{"value": ${v}}`);
      assert.equal(w.status, 200, w.text);
      const r = await read('bytes', `k${i}`);
      assert.equal(r.status, 200, r.text);
      assert.equal(rawValue(r.text), v);
      assert.equal(r.json.version, w.json.version);
      // a batch get reads the same bytes
      const b = await batch({ namespace: 'bytes', ops: [{ op: 'get', key: `k${i}` }] });
      assert.equal(rawValue(b.text.slice(0, -2)), v);
    }
  });

  test('every write advances the version, across keys too', async () => {
    const a = await put('ver', 'a', { value: 1 });
    const b = await put('ver', 'b', { value: 1 });
    const a2 = await put('ver', 'a', { value: 2 });
    assert.equal(a.json.created, true);
    assert.equal(a2.json.created, false);
    assert.ok(b.json.version > a.json.version);
    assert.ok(a2.json.version > b.json.version);
    // deleted and created again: a version it never had before
    await del('ver', 'a');
    const a3 = await put('ver', 'a', { value: 3 });
    assert.equal(a3.json.created, true);
    assert.ok(a3.json.version > a2.json.version);
  });

  test('get of a missing key answers 404', async () => {
    const r = await read('none', 'nothing');
    assert.equal(r.status, 404);
    assert.deepEqual(r.json, { error: 'key not found', code: 'not_found', namespace: 'none', key: 'nothing' });
  });

  test('keys and namespaces with slashes, colons and unicode', async () => {
    const key = 's3:default:orders%2Fx:lease/é';
    const w = await put('queen-s3', key, { value: { holder: 'a' } });
    assert.equal(w.status, 200, w.text);
    assert.equal(w.json.key, key);
    const r = await read('queen-s3', key);
    assert.equal(r.status, 200);
    assert.deepEqual(r.json.value, { holder: 'a' });
  });
});

describe('preconditions', () => {
  test('compare-and-set with a stale version fails with 409 and changes nothing', async () => {
    const v1 = await put('cas', 'k', { value: 'one' });
    const v2 = await put('cas', 'k', { value: 'two', ifVersion: v1.json.version });
    assert.equal(v2.status, 200, v2.text);
    assert.ok(v2.json.version > v1.json.version);
    const stale = await put('cas', 'k', { value: 'three', ifVersion: v1.json.version });
    assert.equal(stale.status, 409, stale.text);
    assert.equal(stale.json.failedOp, 0);
    assert.equal(stale.json.reason, 'version_mismatch');
    assert.equal(stale.json.currentVersion, v2.json.version);
    assert.equal(stale.json.error, `op 0 (put cas/k): version mismatch: required version ${v1.json.version}, found ${v2.json.version}`);
    const r = await read('cas', 'k');
    assert.equal(r.json.value, 'two');
    assert.equal(r.json.version, v2.json.version);
    // a version required of an absent key
    const absent = await put('cas', 'missing', { value: 1, ifVersion: 5 });
    assert.equal(absent.status, 409);
    assert.equal(absent.json.reason, 'absent');
    assert.equal((await read('cas', 'missing')).status, 404);
    // delete with a version
    const d1 = await del('cas', 'k', `?ifVersion=${v1.json.version}`);
    assert.equal(d1.status, 409);
    assert.equal((await read('cas', 'k')).status, 200);
    const d2 = await del('cas', 'k', `?ifVersion=${v2.json.version}`);
    assert.equal(d2.status, 200, d2.text);
    assert.equal(d2.json.deleted, true);
    assert.equal(d2.json.version, null);
    assert.equal((await read('cas', 'k')).status, 404);
    const d3 = await del('cas', 'k');
    assert.equal(d3.status, 200);
    assert.equal(d3.json.deleted, false);
  });

  test('putIfAbsent races: exactly one of two concurrent clients wins each round', async () => {
    const ROUNDS = 150;
    let winsA = 0;
    let winsB = 0;
    for (let i = 0; i < ROUNDS; i++) {
      const [a, b] = await Promise.all([pia('race', `k${i}`, { value: { who: 'a' } }), pia('race', `k${i}`, { value: { who: 'b' } })]);
      const codes = [a.status, b.status].sort();
      assert.deepEqual(codes, [200, 409], `round ${i}: ${a.text} / ${b.text}`);
      const winner = a.status === 200 ? a : b;
      const loser = a.status === 200 ? b : a;
      assert.equal(loser.json.reason, 'exists');
      assert.equal(loser.json.currentVersion, winner.json.version);
      const r = await read('race', `k${i}`);
      assert.equal(r.json.value.who, a.status === 200 ? 'a' : 'b');
      if (a.status === 200) winsA++; else winsB++;
    }
    assert.equal(winsA + winsB, ROUNDS);
  });

  test('a batch whose second op is stale changes nothing and names op 1', async () => {
    const a = await put('batch', 'a', { value: { n: 1 } });
    const b = await put('batch', 'b', { value: { n: 1 } });
    await put('batch', 'b', { value: { n: 2 } }); // b moves on: the version below is stale
    const r = await batch({ namespace: 'batch', ops: [
      { op: 'put', key: 'a', value: { n: 99 } },
      { op: 'put', key: 'b', value: { n: 99 }, ifVersion: b.json.version },
      { op: 'delete', key: 'c' },
      { op: 'put', key: 'new', value: 1 },
    ] });
    assert.equal(r.status, 409, r.text);
    assert.equal(r.json.failedOp, 1);
    assert.equal(r.json.reason, 'version_mismatch');
    assert.equal(r.json.op, 'put');
    assert.equal(r.json.key, 'b');
    const ra = await read('batch', 'a');
    assert.deepEqual(ra.json.value, { n: 1 });
    assert.equal(ra.json.version, a.json.version);
    assert.equal((await read('batch', 'new')).status, 404);
    assert.ok(await metric('queen_kv_precondition_failed_total', '{reason="version_mismatch"}') >= 1);
  });

  test('a batch applies its ops in order and reports each new version', async () => {
    const r = await batch({ namespace: 'seq', ops: [
      { op: 'putIfAbsent', key: 'x', value: 1 },
      { op: 'get', key: 'x' },
      { op: 'incr', key: 'x', by: 2 },
      { op: 'put', namespace: 'seq2', key: 'y', value: 'y', ttlMs: 60000 },
      { op: 'get', key: 'x', ifAbsent: false },
      { op: 'delete', key: 'x' },
      { op: 'get', key: 'x' },
    ] });
    assert.equal(r.status, 200, r.text);
    const res = r.json.results;
    assert.equal(res.length, 7);
    assert.equal(res[0].created, true);
    assert.equal(res[1].value, 1);
    assert.equal(res[1].version, res[0].version);
    assert.equal(res[2].value, 3);
    assert.ok(res[2].version > res[0].version);
    assert.ok(res[3].version > res[2].version);
    assert.ok(res[3].expiresAt > Date.now() * 1000);
    assert.equal(res[4].value, 3);
    assert.equal(res[5].deleted, true);
    assert.equal(res[6].found, false);
    assert.equal(res[6].value, null);
    assert.equal((await read('seq', 'x')).status, 404);
    assert.equal((await read('seq2', 'y')).status, 200);
  });
});

describe('incr', () => {
  test('creates missing keys, counts, and refuses past max', async () => {
    const c1 = await incr('rl', 'user-1', { max: 3, ttlMs: 60000 });
    assert.equal(c1.status, 200, c1.text);
    assert.equal(c1.json.value, 1);
    assert.equal(c1.json.created, true);
    const c2 = await incr('rl', 'user-1', { by: 2, max: 3 });
    assert.equal(c2.json.value, 3);
    assert.equal(c2.json.created, false);
    assert.equal(c2.json.expiresAt, c1.json.expiresAt);
    const refused = await incr('rl', 'user-1', { max: 3 });
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.json.reason, 'max_exceeded');
    assert.equal(refused.json.currentValue, 3);
    assert.equal(refused.json.currentVersion, c2.json.version);
    assert.equal(refused.json.error, 'op 0 (incr rl/user-1): incr refused: 3 + 1 would pass max 3');
    const r = await read('rl', 'user-1');
    assert.equal(r.json.value, 3);
    assert.equal(r.json.version, c2.json.version);
    // an empty body is incr by 1
    const plain = await incr('rl', 'plain');
    assert.equal(plain.status, 200, plain.text);
    assert.equal(plain.json.value, 1);
    assert.equal(await metric('queen_kv_precondition_failed_total', '{reason="max_exceeded"}'), 1);
  });

  test('refuses values that are not integers, and overflow', async () => {
    await put('rl', 'float', { value: 1.5 });
    const f = await incr('rl', 'float');
    assert.equal(f.status, 409);
    assert.equal(f.json.reason, 'not_integer');
    await put('rl', 'big', '{"value": 9223372036854775807}');
    const o = await incr('rl', 'big');
    assert.equal(o.status, 409);
    assert.equal(o.json.reason, 'overflow');
  });

  test('concurrent incrs all count', async () => {
    const N = 100;
    const rs = await Promise.all(Array.from({ length: N }, () => incr('rl', 'shared')));
    for (const r of rs) assert.equal(r.status, 200, r.text);
    assert.equal((await read('rl', 'shared')).json.value, N);
    assert.deepEqual(rs.map((r) => r.json.value).sort((a, b) => a - b), Array.from({ length: N }, (_, i) => i + 1));
  });
});

describe('TTL', () => {
  test('an expired key reads as absent and is reclaimed by the background job', async () => {
    const before = await metric('queen_kv_expired_reclaimed_total');
    const w = await put('ttl', 'short', { value: 'soon gone', ttlMs: 400 });
    assert.equal(w.status, 200);
    assert.ok(w.json.expiresAt > 0);
    assert.equal((await read('ttl', 'short')).status, 200);
    await sleep(700);
    assert.equal((await read('ttl', 'short')).status, 404);
    const l = await get(node.url, '/api/v1/kv/ttl');
    assert.deepEqual(l.json.keys, []);
    // absent for preconditions too: putIfAbsent takes it, a version requirement fails
    const v = await put('ttl', 'short2', { value: 1, ttlMs: 200 });
    await sleep(500);
    const stale = await put('ttl', 'short2', { value: 2, ifVersion: v.json.version });
    assert.equal(stale.status, 409);
    assert.equal(stale.json.reason, 'absent');
    // reclaimed: the job deletes the rows (it runs every second)
    const deadline = Date.now() + 15000;
    while (Date.now() < deadline) {
      if (pg.psql("SELECT count(*) FROM queen.kv WHERE namespace = 'ttl'") === '0') break;
      await sleep(200);
    }
    assert.equal(pg.psql("SELECT count(*) FROM queen.kv WHERE namespace = 'ttl'"), '0');
    assert.ok(await metric('queen_kv_expired_reclaimed_total') >= before + 2);
    const again = await pia('ttl', 'short', { value: 'back' });
    assert.equal(again.status, 200, again.text);
    assert.ok(again.json.version > w.json.version);
  });
});

describe('the S3 sink lease and fence', () => {
  test('a node whose lease was taken over cannot move its pointer', async () => {
    const NS = 'queen-s3';
    const LEASE = 's3:default:orders:lease';
    const PTR = 's3:default:orders:commit';
    const take = await pia(NS, LEASE, { value: { holder: 'node-a' }, ttlMs: 30000 });
    assert.equal(take.status, 200, take.text);
    let mine = take.json.version;
    const other = await pia(NS, LEASE, { value: { holder: 'node-b' }, ttlMs: 30000 });
    assert.equal(other.status, 409);
    assert.equal(other.json.reason, 'exists');
    // node a commits: the first op rewrites the lease with the version it last wrote
    const c1 = await batch({ namespace: NS, ops: [
      { op: 'put', key: LEASE, value: { holder: 'node-a' }, ttlMs: 30000, ifVersion: mine },
      { op: 'put', key: PTR, value: { k: 1, tEnd: 1000 } },
    ] });
    assert.equal(c1.status, 200, c1.text);
    mine = c1.json.results[0].version;
    // node a stalls; its lease expires (here: a short TTL), node b takes the queue
    const refresh = await put(NS, LEASE, { value: { holder: 'node-a' }, ttlMs: 300, ifVersion: mine });
    assert.equal(refresh.status, 200);
    mine = refresh.json.version;
    await sleep(600);
    const takeB = await pia(NS, LEASE, { value: { holder: 'node-b' }, ttlMs: 30000 });
    assert.equal(takeB.status, 200, takeB.text);
    assert.notEqual(takeB.json.version, mine);
    // node a comes back: its fenced batch rolls back whole
    const c2 = await batch({ namespace: NS, ops: [
      { op: 'put', key: LEASE, value: { holder: 'node-a' }, ttlMs: 30000, ifVersion: mine },
      { op: 'put', key: PTR, value: { k: 2, tEnd: 2000 } },
    ] });
    assert.equal(c2.status, 409, c2.text);
    assert.equal(c2.json.failedOp, 0);
    assert.equal(c2.json.reason, 'version_mismatch');
    assert.equal(c2.json.currentVersion, takeB.json.version);
    const p = await read(NS, PTR);
    assert.deepEqual(p.json.value, { k: 1, tEnd: 1000 });
    assert.deepEqual((await read(NS, LEASE)).json.value, { holder: 'node-b' });
    // node b's fence holds
    const c3 = await batch({ namespace: NS, ops: [
      { op: 'put', key: LEASE, value: { holder: 'node-b' }, ttlMs: 30000, ifVersion: takeB.json.version },
      { op: 'put', key: PTR, value: { k: 2, tEnd: 2000 } },
    ] });
    assert.equal(c3.status, 200, c3.text);
    // giving the lease back on SIGTERM: delete requiring the own version
    const give = await del(NS, LEASE, `?ifVersion=${c3.json.results[0].version}`);
    assert.equal(give.json.deleted, true);
  });
});

describe('listing', () => {
  test('lists live keys of a namespace by prefix, in key order, with paging', async () => {
    for (const k of ['p:a', 'p:b', 'p:c', 'p_x', 'q:a', 'p%d']) await put('list', k, { value: k });
    await put('list', 'p:gone', { value: 1, ttlMs: 1 });
    await sleep(20);
    const all = await get(node.url, '/api/v1/kv/list?prefix=p:');
    assert.equal(all.status, 200, all.text);
    assert.deepEqual(all.json.keys.map((k) => k.key), ['p:a', 'p:b', 'p:c']);
    assert.equal(all.json.more, false);
    // LIKE wildcards in the prefix are literal
    assert.deepEqual((await get(node.url, '/api/v1/kv/list?prefix=p_')).json.keys.map((k) => k.key), ['p_x']);
    assert.deepEqual((await get(node.url, '/api/v1/kv/list?prefix=p%25')).json.keys.map((k) => k.key), ['p%d']);
    const p1 = await get(node.url, '/api/v1/kv/list?limit=2');
    assert.deepEqual(p1.json.keys.map((k) => k.key), ['p%d', 'p:a']);
    assert.equal(p1.json.more, true);
    const p2 = await get(node.url, `/api/v1/kv/list?limit=2&after=${encodeURIComponent(p1.json.after)}`);
    assert.deepEqual(p2.json.keys.map((k) => k.key), ['p:b', 'p:c']);
    assert.equal(p2.json.keys[0].value, 'p:b');
  });
});

describe('bad input', () => {
  const cases = [
    ['PUT', '/api/v1/kv/ns/k', '{"value": 1', /^Invalid JSON: /],
    ['PUT', '/api/v1/kv/ns/k', '', /^Empty request body$/],
    ['PUT', '/api/v1/kv/ns/k', '[1]', /^request body must be a JSON object$/],
    ['PUT', '/api/v1/kv/ns/k', '{}', /^value is required \(any JSON value\)$/],
    ['PUT', '/api/v1/kv/ns/k', '{"value":1,"ttlMs":"5"}', /^ttlMs must be an integer between 1 and 315360000000$/],
    ['PUT', '/api/v1/kv/ns/k', '{"value":1,"ttlMs":-1}', /^ttlMs must be an integer/],
    ['PUT', '/api/v1/kv/ns/k', '{"value":1,"ifVersion":"3"}', /^ifVersion must be a positive integer/],
    ['PUT', '/api/v1/kv/ns/k', '{"value":1,"ifVersion":1,"ifAbsent":true}', /cannot be combined/],
    ['PUT', '/api/v1/kv/ns/k', '{"value":1,"key":"x"}', /^namespace and key come from the path, not the body$/],
    ['PUT', '/api/v1/kv/ns/k', '{"value":1,"tll":5}', /^unknown field "tll"/],
    ['PUT', `/api/v1/kv/ns/${'k'.repeat(1025)}`, '{"value":1}', /^key is 1025 bytes; at most 1024 are allowed$/],
    ['PUT', `/api/v1/kv/${'n'.repeat(256)}/k`, '{"value":1}', /^namespace is 256 bytes; at most 255 are allowed$/],
    ['PUT', '/api/v1/kv/ns/a%00b', '{"value":1}', /^key must not contain NUL characters$/],
    ['PUT', '/api/v1/kv/ns/a%FFb', '{"value":1}', /^key must be valid UTF-8$/],
    ['GET', '/api/v1/kv/ns/a%ZZ', undefined, /^invalid percent-encoding in the path$/],
    ['POST', '/api/v1/kv/ns/k/incr', '{"by":"2"}', /^by must be an integer \(64-bit\)$/],
    ['POST', '/api/v1/kv/ns/k/incr', '{"max":1.5}', /^max must be an integer \(64-bit\)$/],
    ['POST', '/api/v1/kv/ns/k/incr', '{"value":1}', /^value is only accepted by put and putIfAbsent$/],
    ['POST', '/api/v1/kv/ns/k/putIfAbsent', '{"value":1,"ifVersion":2}', /cannot be combined/],
    ['DELETE', '/api/v1/kv/ns/k?ifVersion=abc', undefined, /^ifVersion must be a positive integer/],
    ['DELETE', '/api/v1/kv/ns/k?ifVersion=0', undefined, /^ifVersion must be a positive integer/],
    ['GET', '/api/v1/kv/ns?limit=0', undefined, /^limit must be an integer between 1 and 1000$/],
    ['GET', '/api/v1/kv/ns?limit=1001', undefined, /^limit must be an integer between 1 and 1000$/],
    ['POST', '/api/v1/kv/batch', '{"ops":[]}', /^ops must hold at least one op$/],
    ['POST', '/api/v1/kv/batch', '{"ops":[{"op":"put","namespace":"n","key":"k"}]}', /^ops\[0\]: value is required/],
    ['POST', '/api/v1/kv/batch', '{"ops":[{"op":"cas","namespace":"n","key":"k"}]}', /^ops\[0\]: op must be one of/],
    ['POST', '/api/v1/kv/batch', '{"namespace":"n","ops":[{"op":"get","key":"a"},{"op":"get","key":""}]}', /^ops\[1\]: key must be a non-empty string$/],
    ['POST', '/api/v1/kv/batch', '{"namespace":"n","ops":[{"op":"get","key":1}]}', /^ops\[0\]: key must be a string$/],
  ];
  for (const [method, p, body, want] of cases) {
    test(`${method} ${p.slice(0, 60)} ${body ?? ''}`.slice(0, 120), async () => {
      const r = await api(node.url, method, p, body);
      assert.equal(r.status, 400, r.text);
      assert.match(r.json.error, want);
    });
  }

  test('a value over 1 MiB and a batch over 1000 ops are refused', async () => {
    const big = await put('ns', 'big', `{"value":"${'x'.repeat(1 << 20)}"}`);
    assert.equal(big.status, 400);
    assert.equal(big.json.error, 'value is 1048578 bytes; at most 1048576 are allowed');
    const ops = Array.from({ length: 1001 }, (_, i) => ({ op: 'get', key: `k${i}` }));
    const r = await batch({ namespace: 'n', ops });
    assert.equal(r.status, 400);
    assert.equal(r.json.error, 'ops holds 1001 ops; at most 1000 are allowed');
    const ok = await batch({ namespace: 'n', ops: ops.slice(0, 1000) });
    assert.equal(ok.status, 200, ok.text.slice(0, 200));
    assert.equal(ok.json.results.length, 1000);
  });

  test('answers carry at most 64 MiB of values: a listing pages, a batch is refused', async () => {
    const doc = `"${'v'.repeat((1 << 20) - 100)}"`;
    for (let i = 0; i < 66; i++) {
      const w = await put('huge', `k${String(i).padStart(2, '0')}`, `{"value":${doc}}`);
      assert.equal(w.status, 200, w.text);
    }
    // 64 MiB of these values is 64 keys and a bit: the 65th starts past the bound
    const l1 = await get(node.url, '/api/v1/kv/huge?limit=1000');
    assert.equal(l1.status, 200);
    assert.equal(l1.json.keys.length, 65);
    assert.equal(l1.json.more, true);
    const l2 = await get(node.url, `/api/v1/kv/huge?limit=1000&after=${l1.json.after}`);
    assert.equal(l2.json.keys.length, 1);
    assert.equal(l2.json.more, false);
    const ops = (n) => Array.from({ length: n }, (_, i) => ({ op: 'get', key: `k${String(i).padStart(2, '0')}` }));
    const ok = await batch({ namespace: 'huge', ops: ops(64) });
    assert.equal(ok.status, 200);
    const tooBig = await batch({ namespace: 'huge', ops: ops(65) });
    assert.equal(tooBig.status, 400, tooBig.text.slice(0, 300));
    assert.match(tooBig.json.error, /more than 67108864 bytes of values; split the batch/);
    const drop = await batch({ namespace: 'huge', ops: [...ops(66).map((o) => ({ ...o, op: 'delete' }))] });
    assert.equal(drop.status, 200);
  });

  test('nothing was stored by the bad requests', async () => {
    assert.equal((await read('ns', 'k')).status, 404);
    assert.equal(pg.psql("SELECT count(*) FROM queen.kv WHERE namespace IN ('ns', 'n')"), '0');
  });

  test('metrics count the operations', async () => {
    assert.ok(await metric('queen_kv_ops_total', '{op="putIfAbsent"}') > 0);
    assert.ok(await metric('queen_kv_ops_total', '{op="incr"}') > 0);
    assert.ok(await metric('queen_kv_batches_total') > 0);
  });
});

// ---- the 2.x batch, POST /api/v1/kv {operations} (tests/py/test_kv.py drives it through the client) ----
describe('POST /api/v1/kv (2.x)', () => {
  const kv = (operations) => post(node.url, '/api/v1/kv', { operations });
  const ok200 = (r) => { assert.equal(r.status, 200, r.text.slice(0, 400)); return r.json.results; };

  test('values come back byte for byte, in a get, a getMany row and a getPrefix row', async () => {
    const raw = '{"b" : [1,2.50,"\\u00e9"],  "a":null}';
    const body = `{"operations":[{"op":"put","ns":"w2","key":"raw","value":${raw},"forever":true},` +
      '{"op":"get","ns":"w2","key":"raw"},{"op":"getMany","ns":"w2","keys":["raw"]},' +
      '{"op":"getPrefix","ns":"w2","prefix":"ra"}]}';
    const r = await post(node.url, '/api/v1/kv', body);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.text.split(raw).length - 1, 3, r.text);
    assert.equal(r.json.results[1].found, true);
  });

  test('exactly one of many concurrent putIfAbsent wins, every round', async () => {
    for (let round = 0; round < 5; round++) {
      const all = await Promise.all(Array.from({ length: 8 }, (_, i) =>
        kv([{ op: 'putIfAbsent', ns: 'race2', key: `r${round}`, value: i, ttlSeconds: 60 }])));
      const won = all.map(ok200).filter((res) => res[0].applied === true);
      assert.equal(won.length, 1);
      const lost = all.map(ok200).filter((res) => res[0].applied === false);
      for (const l of lost) assert.equal(l[0].reason, 'exists');
    }
  });

  test('batches naming the same keys in opposite orders never deadlock', async () => {
    const keys = Array.from({ length: 6 }, (_, i) => `k${i}`);
    const ops = (ks) => ks.map((k) => ({ op: 'incr', ns: 'order2', key: k, forever: true }));
    const runs = await Promise.all(Array.from({ length: 16 }, (_, i) =>
      kv(ops(i % 2 ? keys : [...keys].reverse()))));
    for (const r of runs) ok200(r);
    const g = ok200(await kv([{ op: 'getMany', ns: 'order2', keys }]));
    assert.deepEqual(g[0].rows.map((x) => x.value), keys.map(() => 16));
  });

  test('a lost required op rolls back the batch: its verdict at its place, nothing written', async () => {
    ok200(await kv([{ op: 'put', ns: 'req2', key: 'fence', value: 'v', forever: true }]));
    const r = await kv([
      { op: 'put', ns: 'req2', key: 'a', value: 1, forever: true },
      { op: 'delete', ns: 'req2', key: 'fence' },
      { op: 'check', ns: 'req2', key: 'a', expect: 0, required: true },
    ]);
    const res = ok200(r);
    // the check sees the put before it (ops apply in order); the rollback takes back both writes
    assert.equal(r.json.rolledBack, true);
    assert.equal(r.json.failedIndex, 2);
    assert.equal(res.length, 3);
    assert.deepEqual(res.map((x) => [x.applied, x.reason]), [[false, 'rolled_back'], [false, 'rolled_back'], [false, 'exists']]);
    assert.equal(res[2].value, 1);
    const g = ok200(await kv([{ op: 'get', ns: 'req2', key: 'fence' }, { op: 'get', ns: 'req2', key: 'a' }]));
    assert.equal(g[0].found, true);
    assert.equal(g[1].found, false);
    assert.equal(pg.psql("SELECT count(*) FROM queen.kv WHERE namespace = 'req2'"), '1');
  });

  test('a failed required op that is not last: the later ops never run', async () => {
    const r = await kv([
      { op: 'putIfAbsent', ns: 'req3', key: 'x', value: 1, forever: true, required: true },
      { op: 'put', ns: 'req3', key: 'x', value: 2, forever: true, expect: 99, required: true },
      { op: 'put', ns: 'req3', key: 'y', value: 3, forever: true },
    ]);
    const res = ok200(r);
    assert.equal(r.json.failedIndex, 1);
    assert.equal(res[1].reason, 'version');
    // the verdict shows the key as the failed op saw it: the putIfAbsent's write
    assert.equal(res[1].value, 1);
    assert.equal(pg.psql("SELECT count(*) FROM queen.kv WHERE namespace = 'req3'"), '0');
  });

  test('deleted keys and failed creations leave no rows behind', async () => {
    ok200(await kv([
      { op: 'put', ns: 'rows2', key: 'a', value: 1, forever: true },
      { op: 'delete', ns: 'rows2', key: 'a' },
      { op: 'check', ns: 'rows2', key: 'b', expect: 7 },
      { op: 'put', ns: 'rows2', key: 'c', value: 1, forever: true, expect: 3 },
    ]));
    assert.equal(pg.psql("SELECT count(*) FROM queen.kv WHERE namespace = 'rows2'"), '0');
  });

  const refusals = [
    [{}, 'kv_invalid_body', 'operations_missing'],
    [{ operations: {} }, 'kv_invalid_body', 'not_array'],
    [{ operations: [], ns: 'x' }, 'kv_invalid_body', 'unknown_field'],
    [{ operations: [7] }, 'kv_invalid_op', 'not_object'],
    [{ operations: [{ op: 'upsert', ns: 'n', key: 'k' }] }, 'kv_invalid_op', 'op_unknown'],
    [{ operations: [{ op: 'get', ns: 'n', key: 'k', value: 1 }] }, 'kv_unknown_field', 'unknown'],
    [{ operations: [{ op: 'get', key: 'k' }] }, 'kv_invalid_name', 'ns_missing'],
    [{ operations: [{ op: 'get', ns: '', key: 'k' }] }, 'kv_invalid_name', 'ns_invalid'],
    [{ operations: [{ op: 'get', ns: 'n', key: 'a\u0000b' }] }, 'kv_invalid_name', 'key_invalid'],
    [{ operations: [{ op: 'get', ns: 'n', key: 'k'.repeat(1025) }] }, 'kv_invalid_name', 'key_invalid'],
    [{ operations: [{ op: 'put', ns: 'n', key: 'k', value: 1 }] }, 'kv_expiry_not_specified', 'kv_expiry_not_specified'],
    [{ operations: [{ op: 'incr', ns: 'n', key: 'k', ttlSeconds: 5, forever: true }] }, 'kv_expiry_not_specified', 'kv_expiry_not_specified'],
    [{ operations: [{ op: 'put', ns: 'n', key: 'k', value: 1, forever: false }] }, 'kv_invalid_ttl', 'forever_not_true'],
    [{ operations: [{ op: 'put', ns: 'n', key: 'k', value: 1, ttlSeconds: 0 }] }, 'kv_invalid_ttl', 'out_of_range'],
    [{ operations: [{ op: 'put', ns: 'n', key: 'k', value: 1, ttlSeconds: 1.5 }] }, 'kv_invalid_ttl', 'out_of_range'],
    [{ operations: [{ op: 'put', ns: 'n', key: 'k', forever: true }] }, 'kv_invalid_value', 'missing'],
    [{ operations: [{ op: 'put', ns: 'n', key: 'k', value: 1, forever: true, expect: null }] }, 'kv_invalid_expect', 'not_integer'],
    [{ operations: [{ op: 'put', ns: 'n', key: 'k', value: 1, forever: true, expect: -1 }] }, 'kv_invalid_expect', 'negative'],
    [{ operations: [{ op: 'putIfAbsent', ns: 'n', key: 'k', value: 1, forever: true, expect: 4 }] }, 'kv_invalid_expect', 'not_for_put_if_absent'],
    [{ operations: [{ op: 'check', ns: 'n', key: 'k' }] }, 'kv_invalid_expect', 'missing'],
    [{ operations: [{ op: 'incr', ns: 'n', key: 'k', forever: true, expect: 1 }] }, 'kv_unknown_field', 'unknown'],
    [{ operations: [{ op: 'incr', ns: 'n', key: 'k', forever: true, delta: true }] }, 'kv_invalid_delta', 'not_integer'],
    [{ operations: [{ op: 'incr', ns: 'n', key: 'k', forever: true, min: 5, max: 1 }] }, 'kv_invalid_bound', 'min_above_max'],
    [{ operations: [{ op: 'put', ns: 'n', key: 'k', value: 1, forever: true, required: 1 }] }, 'kv_invalid_op', 'required_invalid'],
    [{ operations: [{ op: 'getPrefix', ns: 'n' }] }, 'kv_prefix_required', 'kv_prefix_required'],
    [{ operations: [{ op: 'getPrefix', ns: 'n', prefix: '' }] }, 'kv_prefix_required', 'kv_prefix_required'],
    [{ operations: [{ op: 'getMany', ns: 'n', keys: [] }] }, 'kv_invalid_name', 'keys_missing'],
    [{ operations: [{ op: 'getMany', ns: 'n', keys: ['a', 3] }] }, 'kv_invalid_name', 'key_invalid'],
  ];
  for (const [body, code, reason] of refusals) {
    test(`refused: ${JSON.stringify(body).slice(0, 100)}`, async () => {
      const r = await post(node.url, '/api/v1/kv', body);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.error, code, r.text);
      assert.equal(r.json.code, code, r.text);
      assert.equal(r.json.reason, reason, r.text);
      assert.equal(typeof r.json.detail, 'string');
    });
  }

  test('bounds: 1000 ops and 1 MiB values pass, one more is refused', async () => {
    const ops = (n) => Array.from({ length: n }, (_, i) => ({ op: 'put', ns: 'lim2', key: `k${i}`, value: i, ttlSeconds: 60 }));
    assert.equal(ok200(await kv(ops(1000))).length, 1000);
    const over = await kv(ops(1001));
    assert.equal(over.status, 400);
    assert.equal(over.json.reason, 'too_many_ops');
    const big = '"' + 'x'.repeat((1 << 20) - 2) + '"';
    const okBig = await post(node.url, '/api/v1/kv', `{"operations":[{"op":"put","ns":"lim2","key":"big","value":${big},"forever":true}]}`);
    assert.equal(okBig.status, 200);
    const tooBig = await post(node.url, '/api/v1/kv', `{"operations":[{"op":"put","ns":"lim2","key":"big","value":${big}1,"forever":true}]}`);
    assert.equal(tooBig.status, 400);
    const bigger = '"' + 'x'.repeat(1 << 20) + '"';
    const refused = await post(node.url, '/api/v1/kv', `{"operations":[{"op":"put","ns":"lim2","key":"big","value":${bigger},"forever":true}]}`);
    assert.equal(refused.json.reason, 'value_too_large');
    // a getPrefix limit is clamped, never refused
    const page = ok200(await kv([{ op: 'getPrefix', ns: 'lim2', prefix: 'k', limit: 5000, keysOnly: true }]));
    assert.equal(page[0].rows.length, 1000);
    assert.equal(page[0].truncated, false);
    const one = ok200(await kv([{ op: 'getPrefix', ns: 'lim2', prefix: 'k', limit: -3, keysOnly: true }]));
    assert.equal(one[0].rows.length, 1);
    assert.equal(one[0].truncated, true);
  });

  test('invalid JSON and an empty body are refused in the envelope', async () => {
    const r = await post(node.url, '/api/v1/kv', '{"operations": [');
    assert.equal(r.status, 400);
    assert.equal(r.json.error, 'kv_invalid_body');
    assert.equal(r.json.reason, 'invalid_json');
    const e = await api(node.url, 'POST', '/api/v1/kv');
    assert.equal(e.status, 400);
    assert.equal(e.json.reason, 'empty');
    assert.deepEqual(ok200(await kv([])), []);
  });

  test('the S3 fence as put + expect + required in one batch', async () => {
    const take = ok200(await kv([{ op: 'putIfAbsent', ns: 'queen-s3', key: 'lease:t', value: { holder: 'a' }, ttlSeconds: 30 }]));
    const mine = take[0].version;
    const commit = ok200(await kv([
      { op: 'put', ns: 'queen-s3', key: 'lease:t', value: { holder: 'a' }, ttlSeconds: 30, expect: mine, required: true },
      { op: 'put', ns: 'queen-s3', key: 'pointer:t', value: { seq: 1 }, forever: true },
    ]));
    assert.equal(commit[0].applied, true);
    // another holder took over: the old holder's commit moves nothing
    ok200(await kv([{ op: 'put', ns: 'queen-s3', key: 'lease:t', value: { holder: 'b' }, ttlSeconds: 30 }]));
    const r = await kv([
      { op: 'put', ns: 'queen-s3', key: 'lease:t', value: { holder: 'a' }, ttlSeconds: 30, expect: commit[0].version, required: true },
      { op: 'put', ns: 'queen-s3', key: 'pointer:t', value: { seq: 2 }, forever: true },
    ]);
    assert.equal(r.json.failedIndex, 0);
    assert.equal(r.json.results[0].reason, 'version');
    assert.deepEqual(r.json.results[0].value, { holder: 'b' });
    const p = ok200(await kv([{ op: 'get', ns: 'queen-s3', key: 'pointer:t' }]));
    assert.deepEqual(p[0].value, { seq: 1 });
  });
});

// ---- locks and semaphores, POST /api/v1/locks (tests/py/test_locks.py drives them through the client) ----
describe('POST /api/v1/locks', () => {
  const locks = async (operations) => {
    const r = await post(node.url, '/api/v1/locks', { operations });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.results.length, operations.length);
    return r.json.results;
  };

  test('exactly one of many concurrent acquirers holds a lock; a semaphore gives out exactly its permits', async () => {
    for (let round = 0; round < 4; round++) {
      const all = await Promise.all(Array.from({ length: 8 }, (_, i) =>
        locks([{ op: 'acquire', name: `race-${round}`, ttlSeconds: 30, owner: `o${i}` }])));
      assert.equal(all.filter((x) => x[0].acquired).length, 1);
      for (const x of all.filter((y) => !y[0].acquired)) assert.ok(['held', 'contended'].includes(x[0].reason));
    }
    const sem = await Promise.all(Array.from({ length: 10 }, (_, i) =>
      locks([{ op: 'acquire', name: 'sem', ttlSeconds: 30, owner: `s${i}`, limit: 4 }])));
    const won = sem.filter((x) => x[0].acquired).map((x) => x[0].slot).sort();
    // a loser that only met permits being taken says contended; never more than four holders
    assert.ok(won.length >= 1 && won.length <= 4, JSON.stringify(sem));
    assert.equal(new Set(won).size, won.length);
    const held = (await locks([{ op: 'get', name: 'sem' }]))[0];
    assert.equal(held.holders.length, won.length);
  });

  test('ops are independent and in order: acquire, renew, release of one lock in one call', async () => {
    const [acq] = await locks([{ op: 'acquire', name: 'seq', ttlSeconds: 30, owner: 'me' }]);
    const res = await locks([
      { op: 'renew', name: 'seq', token: acq.token, ttlSeconds: 30 },
      { op: 'renew', name: 'seq', token: acq.token, ttlSeconds: 30 },
      { op: 'get', name: 'seq' },
    ]);
    assert.equal(res[0].renewed, true);
    assert.ok(res[0].token > acq.token);
    assert.equal(res[1].renewed, false);
    assert.equal(res[1].reason, 'lost');
    assert.equal(res[2].holders[0].token, res[0].token);
    assert.deepEqual(res[0].guard, { op: 'check', ns: 'queen-locks', key: 'seq#0', expect: res[0].token, required: true });
    // the guard is a KV op: it holds in a KV batch until the permit changes
    const g = await post(node.url, '/api/v1/kv', { operations: [res[0].guard] });
    assert.equal(g.json.results[0].applied, true);
    const [rel] = await locks([{ op: 'release', name: 'seq', token: res[0].token, slot: 0 }]);
    assert.equal(rel.released, true);
    const g2 = await post(node.url, '/api/v1/kv', { operations: [res[0].guard] });
    assert.equal(g2.json.failedIndex, 0);
    assert.equal(g2.json.results[0].reason, 'absent');
  });

  test('names with LIKE metacharacters stay their own lock', async () => {
    await locks([{ op: 'acquire', name: 'a_b', ttlSeconds: 30 }, { op: 'acquire', name: 'a%', ttlSeconds: 30 }]);
    const [g] = await locks([{ op: 'get', name: 'axb' }]);
    assert.equal(g.held, false);
    const [h] = await locks([{ op: 'get', name: 'a_b' }]);
    assert.equal(h.holders.length, 1);
  });

  const refusals = [
    [{}, 'lock_invalid_body', 'operations_missing'],
    [{ operations: [], x: 1 }, 'lock_invalid_body', 'unknown_field'],
    [{ operations: [{ op: 'acquire', name: 'n' }] }, 'lock_invalid_ttl', 'missing'],
    [{ operations: [{ op: 'acquire', name: 'n', ttlSeconds: 0 }] }, 'lock_invalid_ttl', 'out_of_range'],
    [{ operations: [{ op: 'acquire', name: 'n', ttlSeconds: 5, forever: true }] }, 'lock_unknown_field', 'unknown'],
    [{ operations: [{ op: 'acquire', name: 'x'.repeat(257), ttlSeconds: 5 }] }, 'lock_invalid_name', 'name_invalid'],
    [{ operations: [{ op: 'acquire', name: 'a\nb', ttlSeconds: 5 }] }, 'lock_invalid_name', 'name_invalid'],
    [{ operations: [{ op: 'acquire', name: 'n', ttlSeconds: 5, owner: '' }] }, 'lock_invalid_owner', 'owner_invalid'],
    [{ operations: [{ op: 'acquire', name: 'n', ttlSeconds: 5, limit: 0 }] }, 'lock_invalid_limit', 'out_of_range'],
    [{ operations: [{ op: 'release', name: 'n', token: 0 }] }, 'lock_invalid_token', 'not_positive'],
    [{ operations: [{ op: 'release', name: 'n', token: 3, slot: -1 }] }, 'lock_invalid_slot', 'out_of_range'],
    [{ operations: Array.from({ length: 101 }, () => ({ op: 'get', name: 'n' })) }, 'lock_limit_exceeded', 'too_many_ops'],
  ];
  for (const [body, code, reason] of refusals) {
    test(`refused: ${JSON.stringify(body).slice(0, 90)}`, async () => {
      const r = await post(node.url, '/api/v1/locks', body);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.error, code, r.text);
      assert.equal(r.json.reason, reason, r.text);
    });
  }
});
