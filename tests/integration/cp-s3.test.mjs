// A bucket per tenant (spec/s3-sink.txt; docs/control-plane.md, "The sink per tenant"): two
// nodes with the embedded proxy and the S3 sink on one database and one S3 server (s3rver,
// which checks SigV4 signatures), node 2 with another QUEEN_ENCRYPTION_KEY, a third node
// without the sink and a fourth without any key. The routes with every validation refusal and the secret never shown; a
// wrong secret rotated to the right one reaches the sink; two tenants sharing one bucket never
// share a key and each lake holds only its own records; a PUT without secretKey keeps it and
// rebuilds the sink, which resumes from its pointer (every record once); node 2 cannot open the
// secret (phase error, no queue) while node 1 carries on; a suspended cluster ships nothing and
// resumes where it stopped; push_blocked drains; DELETE removes the sink but no object; purge
// removes it too; /status and the tenant label of the sink's series.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { api, get, post, rmrf, sleep, startPostgres } from './harness.mjs';
import { startS3 } from './s3harness.mjs';
import { nodeRegistry, zstdDecode } from './sinkutil.mjs';
import { freePort } from './harness.mjs';

const CP = 'cp-token-for-the-s3-tests-0123456789';
const KEY1 = '11'.repeat(32);
const KEY2 = '22'.repeat(32);
const TA = 'aaaaaaaa-0000-4000-8000-0000000000b1';
const TB = 'bbbbbbbb-0000-4000-8000-0000000000b2';
const WRONG = 'not-the-secret-of-this-s3-server';

let pg, s3, reg, n1, n2, n3, n4, p1, p2, p3, p4;
const px = (port) => `http://127.0.0.1:${port}`;
const cpH = { 'x-queen-cp-token': CP };
const cp = {
  get: (p, port = p1) => get(px(port), `/api/cp${p}`, cpH),
  post: (p, b, port = p1) => post(px(port), `/api/cp${p}`, b, cpH),
  put: (p, b, port = p1) => api(px(port), 'PUT', `/api/cp${p}`, b, cpH),
  del: (p, port = p1) => api(px(port), 'DELETE', `/api/cp${p}`, undefined, cpH),
};
const pushAs = (token, items) =>
  post(px(p1), '/api/v1/push', { items }, { authorization: `Bearer ${token}` });
const until = async (fn, ms, what, node = n1) => {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) {
      const st = await get(node.url, '/status').catch(() => null);
      throw new Error(`${what} not reached in ${ms} ms\n${JSON.stringify(st && st.json && st.json.s3)}\n${node.log.slice(-3000)}`);
    }
    await sleep(100);
  }
};
const sinkOf = async (node, tenant) => {
  const r = await get(node.url, '/status');
  assert.equal(r.status, 200);
  return r.json.s3.sinks.find((s) => s.tenant === tenant) || null;
};
// every record of a tenant's queue in the lake, with its key
const lake = async (tenant, queue = 'orders') => {
  const out = [];
  for (const o of await s3.list(`queen/tenant=${tenant}/queue=${queue}/`)) {
    for (const line of zstdDecode(await s3.get(o.key)).split('\n')) if (line) out.push({ key: o.key, ...JSON.parse(line) });
  }
  return out;
};
const settings = (extra = {}) => ({
  queues: 'orders', endpoint: s3.endpoint, region: 'us-east-1', bucket: 'lake', accessKey: 'S3RVER', pathStyle: true,
  start: 'earliest', maxWindowMs: 1000, ...extra,
});
const items = (from, n, tag) =>
  Array.from({ length: n }, (_, i) => ({ queue: 'orders', partition: 'p', payload: { tag, i: from + i } }));

before(async () => {
  pg = await startPostgres();
  s3 = await startS3();
  reg = nodeRegistry();
  [p1, p2, p3, p4] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const env = {
    QUEEN_PG_URL: pg.url, QUEEN_PROXY_CP_TOKEN: CP, QUEEN_S3_EMBEDDED: 'true', QUEEN_S3_SAFE_GUARD_MS: '300',
    QUEEN_S3_DISCOVERY_INTERVAL_MS: '100', QUEEN_S3_LEASE_TTL_MS: '3000',
  };
  n1 = await reg.start({ env: { ...env, QUEEN_PROXY_PORT: String(p1), QUEEN_ENCRYPTION_KEY: KEY1, QUEEN_S3_INSTANCE: 'n1' } });
  n2 = await reg.start({ env: { ...env, QUEEN_PROXY_PORT: String(p2), QUEEN_ENCRYPTION_KEY: KEY2, QUEEN_S3_INSTANCE: 'n2' } });
  n3 = await reg.start({ env: { QUEEN_PG_URL: pg.url, QUEEN_PROXY_CP_TOKEN: CP, QUEEN_PROXY_PORT: String(p3) } });
  n4 = await reg.start({ env: { ...env, QUEEN_PROXY_PORT: String(p4), QUEEN_S3_INSTANCE: 'n4' } }); // no key
});
after(async () => {
  const dirs = reg ? reg.nodes.map((n) => n.data) : [];
  try {
    if (reg) await reg.stopAll();
  } finally {
    for (const d of dirs) rmrf(d);
    if (s3) await s3.stop();
    if (pg) pg.destroy();
  }
});

describe('a bucket per tenant', () => {
  let a, b;
  test('routes: s3_unavailable without the sink, every refusal, the secret never shown', async () => {
    let r = await cp.post('/clusters', { name: 'acme', tenant: TA });
    assert.equal(r.status, 201, r.text);
    a = r.json;
    r = await cp.post('/clusters', { name: 'beta', tenant: TB });
    assert.equal(r.status, 201, r.text);
    b = r.json;
    // the queues exist before the sinks look for them
    assert.equal((await pushAs(a.token, items(0, 3, 'a'))).status, 201);
    assert.equal((await pushAs(b.token, items(0, 3, 'b'))).status, 201);

    for (const [m, body] of [['GET'], ['PUT', settings({ secretKey: 'S3RVER' })], ['DELETE']]) {
      r = await api(px(p3), m, '/api/cp/clusters/acme/s3', body, cpH);
      assert.equal(r.status, 404, r.text);
      assert.equal(r.json.code, 's3_unavailable');
    }
    r = await get(px(p1), '/api/cp/clusters/acme/s3');
    assert.equal(r.status, 401);
    assert.equal((await get(n1.url, '/api/cp/clusters/acme/s3', cpH)).status, 404);

    r = await cp.get('/clusters/acme/s3');
    assert.equal(r.status, 404, r.text);
    assert.equal(r.json.code, 's3_not_found');
    r = await cp.del('/clusters/acme/s3');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json, { cluster: 'acme', removed: false });
    r = await cp.get('/clusters/nobody/s3');
    assert.equal(r.json.code, 'cluster_not_found');
    r = await cp.put('/clusters/nobody/s3', settings({ secretKey: 'S3RVER' }));
    assert.equal(r.status, 404);
    assert.equal(r.json.code, 'cluster_not_found');
    r = await cp.del('/clusters/nobody/s3');
    assert.equal(r.json.code, 'cluster_not_found');
    r = await cp.get('/clusters/Bad_Name/s3');
    assert.equal(r.json.code, 'invalid_parameter');

    const secret = 'S3RVER-secret-that-must-never-show';
    const refusals = [
      [settings(), 's3_invalid_secret'], // required the first time
      [settings({ secretKey: '' }), 's3_invalid_secret'],
      [settings({ secretKey: 'x'.repeat(4097) }), 's3_invalid_secret'],
      [settings({ secretKey: 7 }), 's3_invalid_secret'],
      [settings({ secretKey: secret, memoryMb: 64 }), 's3_node_wide_setting'],
      [settings({ secretKey: secret, leaseTtlMs: 5000 }), 's3_node_wide_setting'],
      [settings({ secretKey: secret, password: 'p' }), 's3_secret_field'],
      [settings({ secretKey: secret, sessionToken: 't' }), 's3_secret_field'],
      [settings({ secretKey: secret, color: 'red' }), 'unknown_field'],
      [settings({ secretKey: secret, maxWindowMs: 50 }), 's3_invalid_setting'],
      [settings({ secretKey: secret, format: 'csv' }), 's3_invalid_setting'],
      [settings({ secretKey: secret, enabled: 'yes' }), 's3_invalid_setting'],
      [settings({ secretKey: secret, targetMb: 'big' }), 's3_invalid_setting'],
      [settings({ secretKey: secret, endpoint: 'ftp://x' }), 's3_invalid_setting'],
      [settings({ secretKey: secret, queues: Array.from({ length: 1300 }, (_, i) => `queue-with-a-long-name-${i}`) }), 's3_too_large'],
      [[1, 2], 'invalid_request'],
    ];
    for (const [body, code] of refusals) {
      r = await cp.put('/clusters/acme/s3', body);
      assert.equal(r.status, 400, `${JSON.stringify(body).slice(0, 200)} → ${r.text}`);
      assert.equal(r.json.code, code, `${JSON.stringify(body).slice(0, 200)} → ${r.text}`);
      assert.ok(!r.text.includes(secret), r.text);
    }
    // nothing was stored by a refusal
    assert.equal((await cp.get('/clusters/acme/s3')).json.code, 's3_not_found');
    assert.ok(!n1.log.includes(secret) && !n2.log.includes(secret));
  });

  let firstAt;
  test('a wrong secret, then the right one: the rotated secret reaches the sink', async () => {
    let r = await cp.put('/clusters/acme/s3', settings({ secretKey: WRONG }));
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(Object.keys(r.json), ['cluster', 'tenant', 'enabled', 'config', 'secretKeySet', 'updatedAt']);
    assert.equal(r.json.cluster, 'acme');
    assert.equal(r.json.tenant, TA);
    assert.equal(r.json.enabled, true);
    assert.equal(r.json.secretKeySet, true);
    assert.equal(r.json.config.bucket, 'lake');
    assert.equal(r.json.config.maxWindowMs, 1000);
    assert.ok(!('secretKey' in r.json.config));
    assert.ok(!r.text.includes(WRONG));
    firstAt = r.json.updatedAt;
    const g = await cp.get('/clusters/acme/s3', p2);
    assert.equal(g.status, 200);
    assert.deepEqual(g.json, r.json);
    // s3rver refuses the signature: the probe fails, no queue starts
    const s = await until(async () => {
      const x = await sinkOf(n1, TA);
      return x && x.bucket.reachable === false && x;
    }, 8000, 'the bucket refusing the wrong secret');
    assert.equal(s.source, 'cp');
    assert.equal(s.phase, 'backoff');
    assert.match(s.bucket.error, /HTTP 403/);
    for (const n of [n1, n2]) assert.ok(!(await get(n.url, '/status')).text.includes(WRONG), 'no secret in /status');
    assert.equal((await s3.list(`queen/tenant=${TA}/`)).length, 0);

    r = await cp.put('/clusters/acme/s3', settings({ secretKey: 'S3RVER' }));
    assert.equal(r.status, 200, r.text);
    assert.ok(r.json.updatedAt > firstAt, `${r.json.updatedAt} > ${firstAt}`);
    await until(async () => (await lake(TA)).length === 3, 15000, "acme's first records in the lake");
    const s2 = await sinkOf(n1, TA);
    assert.equal(s2.phase, 'running');
    assert.equal(s2.bucket.reachable, true);
    for (const n of [n1, n2]) assert.ok(!n.log.includes(WRONG) && !/secret_key=|S3RVER"/.test(n.log.replace(/access_key=S3RVER/g, '')));
  });

  test('two tenants share one bucket, never a key; each lake holds only its own records', async () => {
    const r = await cp.put('/clusters/beta/s3', settings({ secretKey: 'S3RVER' }), p2);
    assert.equal(r.status, 200, r.text);
    await until(async () => (await lake(TB)).length === 3, 15000, "beta's records in the lake");
    const la = await lake(TA), lb = await lake(TB);
    assert.ok(la.every((x) => x.payload.tag === 'a' && x.key.startsWith(`queen/tenant=${TA}/`)));
    assert.ok(lb.every((x) => x.payload.tag === 'b' && x.key.startsWith(`queen/tenant=${TB}/`)));
    const all = (await s3.list('queen/')).map((o) => o.key);
    const ka = all.filter((k) => k.includes(`tenant=${TA}/`)), kb = all.filter((k) => k.includes(`tenant=${TB}/`));
    assert.ok(ka.length > 0 && kb.length > 0);
    assert.equal(ka.length + kb.length, all.length, all.join('\n'));
  });

  test('a node whose key differs shows that sink in error and runs none of its queues; the other carries on', async () => {
    // acme's secret was sealed on node 1 (KEY1), beta's on node 2 (KEY2): each node opens one
    for (const [node, bad, good] of [[n2, TA, TB], [n1, TB, TA]]) {
      const s = await until(async () => {
        const x = await sinkOf(node, bad);
        return x && x.phase === 'error' && x;
      }, 8000, `the sink of ${bad} in error`, node);
      assert.equal(s.source, 'cp');
      assert.match(s.error, /QUEEN_ENCRYPTION_KEY/);
      assert.match(s.error, /another key/);
      assert.deepEqual(s.queues, []);
      const g = await sinkOf(node, good);
      assert.equal(g.phase, 'running');
      assert.equal(g.queues[0].ownedHere, true);
      assert.equal(g.queues[0].heldBy, node === n1 ? 'n1' : 'n2');
      assert.equal((await get(node.url, '/status')).json.s3.controlPlaneError, null);
    }
    // a node without QUEEN_ENCRYPTION_KEY opens no secret and seals none
    for (const t of [TA, TB]) {
      const x = await until(async () => {
        const y = await sinkOf(n4, t);
        return y && y.phase === 'error' && y;
      }, 8000, `node 4's sink of ${t} in error`, n4);
      assert.match(x.error, /this node has no QUEEN_ENCRYPTION_KEY/);
      assert.deepEqual(x.queues, []);
    }
    const r = await cp.put('/clusters/acme/s3', settings({ secretKey: 'S3RVER' }), p4);
    assert.equal(r.status, 503, r.text);
    assert.equal(r.json.code, 'encryption_key_missing');
  });

  test('a PUT without secretKey keeps it and rebuilds the sink, which resumes from its pointer', async () => {
    assert.equal((await pushAs(a.token, items(3, 4, 'a'))).status, 201);
    const before = await cp.get('/clusters/acme/s3');
    const r = await cp.put('/clusters/acme/s3', settings());
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.secretKeySet, true);
    assert.ok(r.json.updatedAt > before.json.updatedAt);
    // records keep arriving across two more rebuilds, one while a window is open
    assert.equal((await pushAs(a.token, items(7, 1, 'a'))).status, 201);
    assert.equal((await cp.put('/clusters/acme/s3', settings())).status, 200);
    assert.equal((await pushAs(a.token, items(8, 1, 'a'))).status, 201);
    await sleep(700);
    assert.equal((await cp.put('/clusters/acme/s3', settings())).status, 200);
    assert.equal((await pushAs(a.token, items(9, 1, 'a'))).status, 201);
    const recs = await until(async () => {
      const l = await lake(TA);
      return l.length >= 10 && l;
    }, 15000, 'every acme record after the rebuild');
    await sleep(1500);
    const l = await lake(TA);
    assert.deepEqual(l.map((x) => x.payload.i).sort((x, y) => x - y), Array.from({ length: 10 }, (_, i) => i), 'each record once');
    assert.equal(l.length, recs.length);
    // the old sink gave its lease back (not left to expire) before the new one took the queue
    const at = n1.log.lastIndexOf('tenant=aaaaaaaa-0000-4000-8000-0000000000b1 sink=default: stopping (its control-plane row was written');
    assert.ok(at >= 0, n1.log.slice(-3000));
    const rest = n1.log.slice(at);
    const given = rest.search(/queue=orders: lease given back/), stopped = rest.search(/sink=default: stopped/);
    assert.ok(given > 0 && stopped > given, rest.slice(0, 3000));
  });

  test('suspended ships nothing and resumes where it stopped; push_blocked drains', async () => {
    const have = (await lake(TA)).length;
    assert.equal((await pushAs(a.token, items(10, 3, 'a'))).status, 201);
    let r = await cp.put('/clusters/acme/status', { status: 'suspended' });
    assert.equal(r.status, 200, r.text);
    const s = await until(async () => {
      const x = await sinkOf(n1, TA);
      return x && x.phase === 'stopped' && x;
    }, 8000, 'the suspended sink stopped');
    assert.match(s.error, /suspended/);
    await sleep(2500);
    assert.equal((await lake(TA)).length, have, 'a suspended cluster ships nothing');
    r = await cp.put('/clusters/acme/status', { status: 'push_blocked' });
    assert.equal(r.status, 200, r.text);
    r = await pushAs(a.token, items(13, 1, 'a'));
    assert.equal(r.status, 403);
    const l = await until(async () => {
      const x = await lake(TA);
      return x.length === have + 3 && x;
    }, 15000, 'the held records shipped once push_blocked');
    assert.deepEqual(l.map((x) => x.payload.i).sort((x, y) => x - y), Array.from({ length: 13 }, (_, i) => i));
    assert.equal((await sinkOf(n1, TA)).phase, 'running');
    r = await cp.put('/clusters/acme/status', { status: 'active' });
    assert.equal(r.status, 200);
  });

  test('/status and the tenant label of the sink series', async () => {
    const st = (await get(n1.url, '/status')).json.s3;
    assert.equal(st.controlPlaneError, null);
    assert.deepEqual(st.sinks.map((s) => [s.tenant, s.source]).sort(), [[TA, 'cp'], [TB, 'cp']]);
    // a sink counts what it wrote since it was built, and the previous test's last status change
    // rebuilds it (at the node's next read: the old sink's counts could still be showing, or
    // the new one's zeros): one more record, then its series
    assert.equal((await pushAs(a.token, items(400, 1, 'a'))).status, 201);
    const written = new RegExp(`queen_s3_records_written_total\\{queue="orders",tenant="${TA}"\\} [1-9]`);
    const m = await until(async () => {
      const t = (await get(n1.url, '/metrics/prometheus')).text;
      return written.test(t) && t;
    }, 15000, 'the records the rebuilt sink wrote, counted under its tenant');
    assert.match(m, written);
    assert.match(m, new RegExp(`queen_s3_lag_seconds\\{queue="orders",tenant="${TA}"\\} `));
    const m2 = (await get(n2.url, '/metrics/prometheus')).text;
    assert.match(m2, new RegExp(`queen_s3_records_written_total\\{queue="orders",tenant="${TB}"\\} 3`));
    assert.doesNotMatch(m2, new RegExp(`queen_s3_records_written_total\\{queue="orders",tenant="${TA}"`));
    assert.match(m, new RegExp(`queen_s3_s3_requests_total\\{operation="put",code="200",tenant="${TA}"\\}`));
    assert.match(m, new RegExp(`queen_s3_queues_given_back_total\\{tenant="${TA}"\\} 0`));
    for (const line of m.split('\n').filter((x) => /^queen_s3_/.test(x))) assert.match(line, /tenant="/, line);

    // the last error reading the rows, then null again once a read works; the sinks carry on
    pg.psql('ALTER FUNCTION queen.cp_s3_sinks_v1() RENAME TO cp_s3_sinks_v1_gone');
    try {
      await cp.put('/clusters/acme/status', { status: 'active' }); // a control-plane write asks for a read now
      const e = await until(async () => (await get(n1.url, '/status')).json.s3.controlPlaneError, 8000, 'controlPlaneError');
      assert.match(e, /^cannot read the control plane's sinks: the query failed/);
      assert.doesNotMatch(e, /does not exist|cp_s3_sinks_v1/, 'no PostgreSQL text in an answer');
      assert.equal((await sinkOf(n1, TA)).phase, 'running');
    } finally {
      pg.psql('ALTER FUNCTION queen.cp_s3_sinks_v1_gone() RENAME TO cp_s3_sinks_v1');
    }
    await cp.put('/clusters/acme/status', { status: 'active' });
    await until(async () => (await get(n1.url, '/status')).json.s3.controlPlaneError === null, 8000, 'controlPlaneError null');
  });

  test('purge and a new PUT on the same bucket: the new sink continues after the old lake, replacing nothing', async () => {
    const mdir = `queen/_queen/tenant=${TA}/queue=orders/windows/`;
    const old = new Map((await s3.list('queen/')).map((o) => [o.key, o.etag]));
    const mkeys = [...old.keys()].filter((k) => k.startsWith(mdir)).sort();
    const n = mkeys.length;
    assert.ok(n >= 2, mkeys.join(' '));
    assert.equal(mkeys[n - 1], `${mdir}${String(n).padStart(10, '0')}.json`);
    const bytes = new Map();
    for (const k of mkeys) bytes.set(k, await s3.get(k));
    const had = (await lake(TA)).length;
    let r = await cp.post('/clusters/acme/purge');
    assert.equal(r.status, 200, r.text);
    await until(async () => !(await sinkOf(n1, TA)), 8000, "acme's sink gone after the purge");
    r = await cp.put('/clusters/acme/s3', settings({ secretKey: 'S3RVER' }));
    assert.equal(r.status, 200, r.text);
    assert.equal((await pushAs(a.token, items(500, 2, 'a'))).status, 201);
    const next = `${mdir}${String(n + 1).padStart(10, '0')}.json`;
    await until(async () => (await s3.get(next)) !== null, 20000, `manifest ${n + 1} of the new run`);
    const m = JSON.parse((await s3.get(next)).toString());
    assert.equal(m.k, n + 1);
    assert.equal(m.records, 2);
    const now = new Map((await s3.list('queen/')).map((o) => [o.key, o.etag]));
    for (const [k, etag] of old) assert.equal(now.get(k), etag, `${k} kept`);
    for (const [k, b] of bytes) assert.deepEqual(await s3.get(k), b, `${k} byte for byte`);
    assert.ok(now.size > old.size, 'the lake only grows');
    const l = await lake(TA);
    assert.equal(l.length, had + 2);
    assert.deepEqual(l.filter((x) => x.payload.i >= 500).map((x) => x.payload.i).sort(), [500, 501]);
  });

  test('disabled keeps the row and stops the sink; DELETE removes the sink, never an object; purge removes it too', async () => {
    const objects = (await s3.list('queen/')).length;
    let r = await cp.put('/clusters/acme/s3', settings({ enabled: false }));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.enabled, false);
    await until(async () => (await sinkOf(n1, TA))?.phase === 'stopped', 8000, 'the disabled sink stopped');
    r = await cp.del('/clusters/acme/s3');
    assert.deepEqual(r.json, { cluster: 'acme', removed: true });
    await until(async () => !(await sinkOf(n1, TA)), 8000, 'the sink gone from node 1');
    await until(async () => !(await sinkOf(n2, TA)), 8000, 'the sink gone from node 2', n2);
    assert.equal((await cp.get('/clusters/acme/s3')).json.code, 's3_not_found');
    assert.deepEqual((await cp.del('/clusters/acme/s3')).json, { cluster: 'acme', removed: false });
    // a new PUT needs the secret again: the delete removed it
    assert.equal((await cp.put('/clusters/acme/s3', settings())).json.code, 's3_invalid_secret');
    r = await cp.post('/clusters/beta/purge');
    assert.equal(r.status, 200, r.text);
    await until(async () => !(await sinkOf(n1, TB)), 8000, "beta's sink gone after the purge");
    assert.equal((await cp.get('/clusters/beta/s3')).json.code, 's3_not_found');
    // deleting the cluster removes its sink too
    r = await cp.put('/clusters/beta/s3', settings({ secretKey: 'S3RVER' }), p2);
    assert.equal(r.status, 200, r.text);
    await until(async () => (await sinkOf(n2, TB))?.phase === 'running', 8000, "beta's sink again", n2);
    r = await cp.del('/clusters/beta', p2);
    assert.equal(r.status, 200, r.text);
    await until(async () => !(await sinkOf(n2, TB)), 8000, "beta's sink gone after the delete", n2);
    await until(async () => !(await sinkOf(n1, TB)), 8000, "beta's sink gone from node 1 after the delete");
    assert.equal(pg.psql("SELECT count(*) FROM queen.kv WHERE tenant_id = '00000000-0000-0000-0000-000000000002'"), '0',
      'no sealed secret left behind');
    assert.equal((await s3.list('queen/')).length, objects, 'no object deleted');
  });
});
