// JWT authentication against the real binary: the boot lines, every route's access level for
// every role, missing / malformed / expired / not-yet-valid / wrongly signed tokens (HS256,
// RS256 with a PEM, EdDSA), the algorithm-confusion attack, issuer and audience, skip paths,
// custom role claims, a JWKS served by a node http server (fetch at boot, on an unknown key id,
// periodic refresh, failure, never blocking the loop), and the producer identity stamped from
// the token's sub, which clients cannot forge.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { api, get, logMatch, post, readQueue, rmrf, runBoot, sleep, startQueen } from './harness.mjs';
import { bearer, edPair, jwk, jwksServer, nowS, rsaPair, sign } from './jwt.mjs';

const SECRET = 'integration-secret-of-at-least-32-bytes';
const FATAL = 'ERROR boot: FATAL: queen: ';
const ROLES = ['none', 'read-only', 'read-write', 'admin'];
const RANK = { public: -1, none: 0, 'read-only': 1, 'read-write': 2, admin: 3 };
const UUID0 = '00000000-0000-4000-8000-000000000000';

// Every route the broker registers, with the level docs/http-api.md gives it. A request is
// sent with each role: below the level it must be refused 403, at or above it must get past
// the gate (any status but 401 and 403).
const ROUTES = [
  ['GET', '/health', 'public'],
  ['GET', '/metrics', 'public'],
  ['GET', '/metrics/prometheus', 'public'],
  ['GET', '/status', 'read-only'],
  ['POST', '/api/v1/push', 'read-write', { items: [{ queue: 'matrix', payload: 1 }] }],
  ['POST', '/api/v1/configure', 'read-write', { queue: 'matrix-cfg' }],
  ['POST', '/api/v1/fetch', 'read-only', { entries: [{ queue: 'matrix', partition: 'Default', offset: 0 }] }],
  ['POST', '/api/v1/partitions/changed', 'read-only', { entries: [{ queue: 'matrix' }] }],
  ['GET', '/api/v1/pop?namespace=matrix&wait=false', 'read-write'],
  ['GET', '/api/v1/pop/queue/matrix?wait=false', 'read-write'],
  ['GET', '/api/v1/pop/queue/matrix/partition/Default?wait=false', 'read-write'],
  ['POST', '/api/v1/ack', 'read-write', { transactionId: 'x', partitionId: UUID0 }],
  ['POST', '/api/v1/ack/batch', 'read-write', { acknowledgments: [] }],
  ['POST', `/api/v1/lease/${UUID0}/extend`, 'read-write', {}],
  ['POST', '/api/v1/transaction', 'read-write', { operations: [{ type: 'push', items: [{ queue: 'matrix-t', payload: 1 }] }] }],
  ['POST', '/api/v1/kv', 'read-write', { operations: [{ op: 'get', ns: 'm', key: 'k' }] }],
  ['POST', '/api/v1/locks', 'read-write', { operations: [{ op: 'get', name: 'm' }] }],
  ['POST', '/api/v1/kv/batch', 'read-write', { ops: [{ op: 'get', namespace: 'm', key: 'k' }] }],
  ['GET', '/api/v1/kv/m', 'read-only'],
  ['GET', '/api/v1/kv/m/k', 'read-only'],
  ['PUT', '/api/v1/kv/m/k', 'read-write', { value: 1 }],
  ['DELETE', '/api/v1/kv/m/k', 'read-write'],
  ['POST', '/api/v1/kv/m/k/putIfAbsent', 'read-write', { value: 1 }],
  ['POST', '/api/v1/kv/m/n/incr', 'read-write', { by: 1 }],
  ['POST', '/api/v1/timers', 'read-write', { operations: [{ op: 'schedule', queue: 'matrix-timer', timerKey: 'k', payload: 'MQ==', delayMs: 3600000 }] }],
  ['GET', '/api/v1/timers/matrix-timer', 'read-only'],
  ['GET', '/api/v1/timers/matrix-timer/k', 'read-only'],
  ['DELETE', '/api/v1/timers/matrix-timer/k', 'read-write'],
  ['GET', '/api/v1/consumer-groups', 'read-only'],
  ['GET', '/api/v1/consumer-groups/lagging', 'read-only'],
  ['GET', '/api/v1/consumer-groups/g', 'read-only'],
  ['DELETE', '/api/v1/consumer-groups/g', 'admin'],
  ['POST', '/api/v1/consumer-groups/g/subscription', 'read-write', { timestamp: '2026-01-01T00:00:00Z' }],
  ['DELETE', '/api/v1/consumer-groups/g/queues/matrix', 'admin'],
  ['POST', '/api/v1/consumer-groups/g/queues/matrix/seek', 'read-write', { toEnd: true }],
  ['POST', '/api/v1/consumer-groups/g/queues/matrix/partitions/Default/seek', 'read-write', { toEnd: true }],
  ['GET', '/api/v1/dlq', 'read-only'],
  ['POST', '/api/v1/dlq/1/requeue', 'read-write'],
  ['DELETE', '/api/v1/dlq/1', 'read-write'],
  ['GET', '/api/v1/resources/overview', 'read-only'],
  ['GET', '/api/v1/resources/queues', 'read-only'],
  ['GET', '/api/v1/resources/queues/matrix', 'read-only'],
  ['DELETE', '/api/v1/resources/queues/matrix-gone', 'admin'],
  ['DELETE', '/api/v1/resources/queues/matrix-gone/partitions/p', 'admin'],
  ['GET', '/api/v1/resources/namespaces', 'read-only'],
  ['GET', '/api/v1/resources/tasks', 'read-only'],
  ['GET', '/api/v1/status/queues', 'read-only'],
  ['GET', '/api/v1/status/queues/matrix', 'read-only'],
  ['POST', '/api/v1/stats/refresh', 'admin'],
  ['GET', '/api/v1/messages', 'read-only'],
  ['GET', `/api/v1/messages/${UUID0}/x`, 'read-only'],
  ['DELETE', `/api/v1/messages/${UUID0}/x`, 'read-write'],
  // streams: register and cycle read-write, state reads read-only (the earlier release's levels)
  ['POST', '/streams/v1/queries', 'read-write', { name: 'matrix-q', source_queue: 'matrix', config_hash: 'h' }],
  ['GET', '/streams/v1/queries', 'read-only'],
  ['GET', '/streams/v1/queries/matrix-q', 'read-only'],
  ['DELETE', '/streams/v1/queries/matrix-none', 'read-write'],
  ['POST', '/streams/v1/cycle', 'read-write', { query_id: UUID0, partition_id: UUID0, ack: null }],
  ['POST', '/streams/v1/state/get', 'read-only', { query_id: UUID0, partition_id: UUID0, keys: [] }],
];

// the HS256 node exempts this route with JWT_SKIP_PATHS: for it, the route is public
const SKIPPED = '/api/v1/resources/namespaces';
const levelOn = (path, level) => (path === SKIPPED ? 'public' : level);

const hs = (claims, header) => sign('HS256', SECRET, { exp: nowS() + 300, ...claims }, header);
const roleToken = (role) => hs(role === 'none' ? { sub: 'nobody' } : { sub: `u-${role}`, role });

describe('boot lines', () => {
  const cases = [
    [{ JWT_ENABLED: 'yes please' }, `${FATAL}JWT_ENABLED=yes please is not one of true, false. It turns on JWT authentication of the HTTP API`],
    [{ JWT_ENABLED: 'true' }, `${FATAL}JWT_SECRET is not set. It is the HS256 key tokens are signed with; JWT_ENABLED=true with JWT_ALGORITHM=HS256 needs it`],
    [{ JWT_ENABLED: 'true', JWT_ALGORITHM: 'PS256' }, `${FATAL}JWT_ALGORITHM=PS256 is not one of HS256, RS256, EdDSA, auto. It is the signature algorithm tokens must use (auto: HS256, RS256 or EdDSA, as the token says)`],
    [{ JWT_ENABLED: 'true', JWT_ALGORITHM: 'RS256' }, `${FATAL}JWT_PUBLIC_KEY is not set. It is the PEM public key (RSA or Ed25519) RS256 and EdDSA tokens are checked with; JWT_ENABLED=true with JWT_ALGORITHM=RS256 needs it or JWT_JWKS_URL`],
    [{ JWT_ENABLED: 'true', JWT_ALGORITHM: 'RS256', JWT_PUBLIC_KEY: 'garbage' }, `${FATAL}JWT_PUBLIC_KEY=garbage is not a PEM public key (no -----BEGIN PUBLIC KEY----- block could be read). It is the PEM public key (RSA or Ed25519) RS256 and EdDSA tokens are checked with`],
    [{ JWT_ENABLED: 'true', JWT_SECRET: SECRET, JWT_CLOCK_SKEW: '1d' }, `${FATAL}JWT_CLOCK_SKEW=1d is outside 0..=86400. It is the leeway in seconds for the exp, nbf and iat claims`],
    [{ JWT_ENABLED: 'true', JWT_ALGORITHM: 'auto', JWT_JWKS_URL: 'idp.example/jwks' }, `${FATAL}JWT_JWKS_URL=idp.example/jwks is not an http:// or https:// URL. It is where the JSON Web Key Set RS256 and EdDSA tokens are checked with is fetched`],
    [{ JWT_SKIP_PATHS: 'health' }, `${FATAL}JWT_SKIP_PATHS=health has an entry that does not start with /: health. It is the comma-separated paths answered without a token (an entry ending in / is a prefix)`],
  ];
  for (const [env, line] of cases) {
    test(Object.entries(env).map(([k, v]) => `${k}=${v}`).join(' '), () => {
      const r = runBoot(env);
      assert.equal(r.code, 2, r.stderr);
      assert.equal(r.stdout, '');
      assert.equal(r.stderr, line + '\n');
    });
  }
});

describe('HS256', () => {
  let node;
  before(async () => {
    node = await startQueen({ env: { JWT_ENABLED: 'true', JWT_SECRET: SECRET, JWT_SKIP_PATHS: `/health,/metrics,${SKIPPED}` } });
  });
  after(async () => { if (node) { await node.stop(); rmrf(node.data); } });

  test('every route class against every role', async () => {
    for (const [method, path, lvl, body] of ROUTES) {
      const level = levelOn(path, lvl);
      for (const role of ROLES) {
        const r = await api(node.url, method, path, body, bearer(roleToken(role)));
        const ctx = `${method} ${path} as ${role}: ${r.status} ${r.text}`;
        if (RANK[role] < RANK[level]) {
          assert.equal(r.status, 403, ctx);
          assert.deepEqual(r.json, { error: 'Insufficient permissions', code: 'forbidden' }, ctx);
        } else {
          assert.ok(r.status !== 401 && r.status !== 403, ctx);
        }
      }
    }
  });

  test('no token: public routes answer, every other route is 401 Authentication required', async () => {
    for (const [method, path, lvl, body] of ROUTES) {
      const level = levelOn(path, lvl);
      const r = await api(node.url, method, path, body);
      if (level === 'public') {
        assert.equal(r.status, 200, `${path}: ${r.text}`);
      } else {
        assert.equal(r.status, 401, `${method} ${path}: ${r.text}`);
        assert.deepEqual(r.json, { error: 'Authentication required', code: 'unauthorized' });
      }
    }
    for (const h of [{ authorization: '' }, { authorization: 'Bearer ' }, { authorization: 'Bearer   ' }]) {
      const r = await get(node.url, '/status', h);
      assert.equal(r.status, 401);
      assert.deepEqual(r.json, { error: 'Authentication required', code: 'unauthorized' });
    }
    // CORS preflight needs no token
    const r = await api(node.url, 'OPTIONS', '/api/v1/push');
    assert.equal(r.status, 204);
  });

  test('JWT_SKIP_PATHS exempts its paths, and they act for the default tenant', async () => {
    const r = await get(node.url, SKIPPED);
    assert.equal(r.status, 200, r.text);
    assert.equal((await get(node.url, '/api/v1/resources/tasks')).status, 401);
  });

  test('bad tokens: each says why', async () => {
    const expect = async (authorization, status, error) => {
      const r = await get(node.url, '/status', { authorization });
      assert.equal(r.status, status, `${authorization}: ${r.text}`);
      if (error instanceof RegExp) assert.match(r.json.error, error);
      else assert.equal(r.json.error, error);
    };
    await expect(`Bearer ${hs({ role: 'admin', exp: nowS() - 120 })}`, 401, 'Token has expired');
    await expect(`Bearer ${hs({ role: 'admin', nbf: nowS() + 120 })}`, 401, 'Token is not yet valid');
    await expect(`Bearer ${hs({ role: 'admin', iat: nowS() + 120 })}`, 401, 'Token was issued in the future');
    await expect(`Bearer ${sign('HS256', 'someone else\'s secret', { role: 'admin' })}`, 401, 'Invalid token signature');
    await expect('Bearer abc', 401, 'Token decode error: a JWT has three base64url parts separated by dots');
    await expect('Bearer a.b.c', 401, /^Token decode error: /);
    await expect('Bearer e30.e30.', 401, 'Token decode error: the header has no alg string');
    await expect(`Bearer ${sign('none', null, { role: 'admin' })}`, 401, 'Token uses none, expected HS256');
    await expect(`Bearer ${sign('RS256', rsaPair().privateKey, { role: 'admin' })}`, 401, 'Token uses RS256, expected HS256');
    await expect(`Bearer ${hs({ role: 'admin' }, { typ: 'at+jwt' })}`, 401, 'Token decode error: the header\'s typ must be JWT (it is at+jwt)');
    await expect(`Bearer ${hs({ role: 'admin', tenant: 'acme' })}`, 401, 'Invalid token tenant: the tenant claim must be a tenant id (a UUID)');
    // a valid signature over a payload changed afterwards
    const good = hs({ role: 'read-only' }).split('.');
    const evil = hs({ role: 'admin' }).split('.');
    await expect(`Bearer ${good[0]}.${evil[1]}.${good[2]}`, 401, 'Invalid token signature');
    await expect(`Bearer ${'x'.repeat(20000)}`, 401, 'Token decode error: the token is longer than 16384 bytes');
  });

  test('the Bearer prefix is optional and its case does not matter', async () => {
    const t = roleToken('read-only');
    for (const authorization of [`Bearer ${t}`, `bearer ${t}`, `BEARER ${t}`, t]) {
      const r = await get(node.url, '/status', { authorization });
      assert.equal(r.status, 200, `${authorization.slice(0, 10)}: ${r.text}`);
    }
  });

  test('the producer identity is the token\'s sub; a producerSub sent by the client is ignored', async () => {
    const alice = hs({ sub: 'alice', role: 'read-write' });
    let r = await post(node.url, '/api/v1/push', { items: [{ queue: 'prod', payload: 1, producerSub: 'mallory' }] }, bearer(alice));
    assert.equal(r.status, 201, r.text);
    r = await post(node.url, '/api/v1/transaction', { operations: [{ type: 'push', items: [{ queue: 'prod', payload: 2, producerSub: 'mallory' }] }] },
      bearer(hs({ sub: 'bob', role: 'read-write' })));
    assert.equal(r.status, 200, r.text);
    r = await post(node.url, '/api/v1/push', { items: [{ queue: 'prod', payload: 3, producerSub: 'mallory' }] }, bearer(hs({ role: 'admin' })));
    assert.equal(r.status, 201, r.text);
    r = await post(node.url, '/api/v1/timers', { operations: [{ op: 'schedule', queue: 'prod', timerKey: 'k', payload: 'NA==', delayMs: 0 }] },
      bearer(hs({ sub: 'carol', role: 'read-write' })));
    assert.equal(r.status, 200, r.text);
    const reader = bearer(roleToken('read-write'));
    let recs = [];
    for (let i = 0; i < 100 && recs.length < 4; i++) {
      recs = (await readQueue(node.url, 'prod', { headers: reader })).records;
      if (recs.length < 4) await sleep(100);
    }
    assert.deepEqual(recs.map((x) => [x.payload, x.producerSub]), [[1, 'alice'], [2, 'bob'], [3, null], [4, 'carol']]);
    r = await get(node.url, '/api/v1/pop/queue/prod?batch=10&wait=false', reader);
    assert.deepEqual(r.json.messages.map((m) => [m.data, m.producerSub]), [[1, 'alice'], [2, 'bob'], [3, null], [4, 'carol']]);
  });

  test('auth counters on /metrics/prometheus; a token that passed is not checked again', async () => {
    const hits = async () => Number((await get(node.url, '/metrics/prometheus')).text.match(/^queen_auth_token_cache_hits_total (\d+)$/m)[1]);
    const h0 = await hits();
    const t1 = hs({ sub: 'cache-me', role: 'read-only', n: Math.random() });
    assert.equal((await get(node.url, '/status', bearer(t1))).status, 200);
    assert.equal(await hits(), h0);
    assert.equal((await get(node.url, '/status', bearer(t1))).status, 200);
    assert.equal((await get(node.url, '/status', bearer(t1))).status, 200);
    assert.equal(await hits(), h0 + 2);
    const t = (await get(node.url, '/metrics/prometheus')).text;
    assert.match(t, /^queen_auth_tokens_total\{result="valid"\} [1-9]\d*$/m);
    assert.match(t, /^queen_auth_tokens_total\{result="invalid"\} [1-9]\d*$/m);
  });
});

describe('issuer, audience and custom role claims', () => {
  let node;
  before(async () => {
    node = await startQueen({
      env: {
        JWT_ENABLED: 'true', JWT_SECRET: SECRET, JWT_ISSUER: 'https://idp.test', JWT_AUDIENCE: 'queen',
        JWT_ROLES_CLAIM: 'queen_role', JWT_ROLES_ARRAY_CLAIM: 'groups', JWT_ROLE_ADMIN: 'ops', JWT_ROLE_READ_WRITE: 'app',
        JWT_ROLE_READ_ONLY: 'viewer', JWT_CLOCK_SKEW: '0',
      },
    });
  });
  after(async () => { if (node) { await node.stop(); rmrf(node.data); } });

  test('iss and aud must match', async () => {
    const base = { iss: 'https://idp.test', aud: 'queen', queen_role: 'viewer' };
    assert.equal((await get(node.url, '/status', bearer(hs(base)))).status, 200);
    assert.equal((await get(node.url, '/status', bearer(hs({ ...base, aud: ['other', 'queen'] })))).status, 200);
    let r = await get(node.url, '/status', bearer(hs({ ...base, iss: 'https://evil.test' })));
    assert.deepEqual([r.status, r.json], [401, { error: 'Invalid token issuer', code: 'unauthorized' }]);
    r = await get(node.url, '/status', bearer(hs({ ...base, aud: 'other' })));
    assert.deepEqual([r.status, r.json], [401, { error: 'Invalid token audience', code: 'unauthorized' }]);
    r = await get(node.url, '/status', bearer(hs({ ...base, exp: nowS() - 2 })));
    assert.deepEqual([r.status, r.json], [401, { error: 'Token has expired', code: 'unauthorized' }]);
    // a token that passed (and is remembered) still expires on time
    const short = bearer(hs({ ...base, exp: nowS() + 1 }));
    assert.equal((await get(node.url, '/status', short)).status, 200);
    assert.equal((await get(node.url, '/status', short)).status, 200);
    await sleep(2100);
    r = await get(node.url, '/status', short);
    assert.deepEqual([r.status, r.json], [401, { error: 'Token has expired', code: 'unauthorized' }]);
  });

  test('roles come from the configured claims and names', async () => {
    const base = { iss: 'https://idp.test', aud: 'queen' };
    const del = (claims) => api(node.url, 'DELETE', '/api/v1/resources/queues/none-such', undefined, bearer(hs({ ...base, ...claims })));
    assert.equal((await del({ role: 'admin', roles: ['admin'] })).status, 403);
    assert.equal((await del({ queen_role: 'app' })).status, 403);
    assert.notEqual((await del({ groups: ['viewer', 'ops'] })).status, 403);
    assert.notEqual((await del({ queen_role: 'ops' })).status, 403);
    const push = await post(node.url, '/api/v1/push', { items: [{ queue: 'q', payload: 1 }] }, bearer(hs({ ...base, groups: ['app'] })));
    assert.equal(push.status, 201, push.text);
  });
});

describe('RS256 with JWT_PUBLIC_KEY', () => {
  let node;
  const key = rsaPair();
  before(async () => {
    // written on one line with literal \n, as environment files often carry a PEM
    node = await startQueen({ env: { JWT_ENABLED: 'true', JWT_ALGORITHM: 'RS256', JWT_PUBLIC_KEY: key.pem.replace(/\n/g, '\\n') } });
  });
  after(async () => { if (node) { await node.stop(); rmrf(node.data); } });

  test('tokens signed with the key pass; any other key, and an HMAC over the PEM, do not', async () => {
    const ok = sign('RS256', key.privateKey, { role: 'read-write', sub: 'rsa-user', exp: nowS() + 60 });
    let r = await post(node.url, '/api/v1/push', { items: [{ queue: 'rs', payload: 1 }] }, bearer(ok));
    assert.equal(r.status, 201, r.text);
    r = await get(node.url, '/status', bearer(sign('RS256', rsaPair().privateKey, { role: 'admin' })));
    assert.deepEqual([r.status, r.json], [401, { error: 'Invalid token signature', code: 'unauthorized' }]);
    // the algorithm-confusion attack: HS256 keyed with the public PEM
    r = await get(node.url, '/status', bearer(sign('HS256', key.pem, { role: 'admin' })));
    assert.deepEqual([r.status, r.json], [401, { error: 'Token uses HS256, expected RS256', code: 'unauthorized' }]);
    r = await get(node.url, '/status', bearer(sign('EdDSA', edPair().privateKey, { role: 'admin' })));
    assert.deepEqual([r.status, r.json], [401, { error: 'Token uses EdDSA, expected RS256', code: 'unauthorized' }]);
    r = await get(node.url, '/api/v1/pop/queue/rs?wait=false', bearer(ok));
    assert.equal(r.json.messages[0].producerSub, 'rsa-user');
  });
});

describe('EdDSA with JWT_PUBLIC_KEY', () => {
  let node;
  const key = edPair();
  before(async () => { node = await startQueen({ env: { JWT_ENABLED: 'true', JWT_ALGORITHM: 'eddsa', JWT_PUBLIC_KEY: key.pem } }); });
  after(async () => { if (node) { await node.stop(); rmrf(node.data); } });

  test('Ed25519 signatures are checked', async () => {
    assert.equal((await get(node.url, '/status', bearer(sign('EdDSA', key.privateKey, { role: 'read-only' })))).status, 200);
    const r = await get(node.url, '/status', bearer(sign('EdDSA', edPair().privateKey, { role: 'read-only' })));
    assert.deepEqual([r.status, r.json], [401, { error: 'Invalid token signature', code: 'unauthorized' }]);
  });
});

describe('JWKS', () => {
  let node, jwks;
  const k1 = rsaPair(), k2 = rsaPair(), ed = edPair();
  before(async () => {
    jwks = await jwksServer([jwk(k1.publicKey, 'k1', { alg: 'RS256' }), jwk(ed.publicKey, 'ed1')]);
    node = await startQueen({
      env: { JWT_ENABLED: 'true', JWT_ALGORITHM: 'auto', JWT_JWKS_URL: jwks.url, JWT_JWKS_REFRESH_INTERVAL: '2', JWT_JWKS_TIMEOUT_MS: '3000' },
    });
  });
  after(async () => {
    if (node) { await node.stop(); rmrf(node.data); }
    if (jwks) await jwks.stop();
  });

  const status = async (token) => {
    const r = await get(node.url, '/status', bearer(token));
    return [r.status, r.json.error ?? 'ok'];
  };

  test('keys fetched at boot verify RS256 and EdDSA tokens, by kid or without one', async () => {
    assert.deepEqual(await status(sign('RS256', k1.privateKey, { role: 'read-only' }, { kid: 'k1' })), [200, 'ok']);
    assert.deepEqual(await status(sign('RS256', k1.privateKey, { role: 'read-only' })), [200, 'ok']);
    assert.deepEqual(await status(sign('EdDSA', ed.privateKey, { role: 'read-only' }, { kid: 'ed1' })), [200, 'ok']);
    assert.deepEqual(await status(sign('RS256', k2.privateKey, { role: 'read-only' }, { kid: 'k1' })), [401, 'Invalid token signature']);
    // auto mode without JWT_SECRET: HS256 is not accepted
    assert.deepEqual(await status(hs({ role: 'admin' })), [401, 'Token uses HS256, and this server has no JWT_SECRET']);
    assert.ok(jwks.hits >= 1);
  });

  test('a rotated key is fetched when a token names it; an unknown key id is refused', async () => {
    await sleep(1100); // past the cooldown between fetches
    jwks.keys = [...jwks.keys, jwk(k2.publicKey, 'k2')];
    const before = jwks.hits;
    assert.deepEqual(await status(sign('RS256', k2.privateKey, { role: 'read-only' }, { kid: 'k2' })), [200, 'ok']);
    assert.ok(jwks.hits > before);
    // right after a fetch, an unknown kid is answered without fetching again
    const hits = jwks.hits;
    assert.deepEqual(await status(sign('RS256', k2.privateKey, { role: 'read-only' }, { kid: 'nope' })), [401, 'Unknown key ID: nope']);
    assert.equal(jwks.hits, hits);
    await sleep(1100);
    assert.deepEqual(await status(sign('RS256', k2.privateKey, { role: 'read-only' }, { kid: 'nope2' })), [401, 'Unknown key ID: nope2']);
    assert.ok(jwks.hits > hits);
  });

  test('the set is fetched again every JWT_JWKS_REFRESH_INTERVAL', async () => {
    const h = jwks.hits;
    await sleep(4500);
    assert.ok(jwks.hits >= h + 1, `hits ${h} → ${jwks.hits}`);
  });

  test('a slow JWKS never blocks the loop, and a failed fetch keeps the old keys', async () => {
    await sleep(1100);
    // a fetch that takes 1.5 s: other requests are answered meanwhile
    jwks.removeAllListeners('request');
    let delay = 1500;
    jwks.on('request', (req, res) => {
      jwks.hits++;
      setTimeout(() => {
        if (jwks.failing) { res.writeHead(503); res.end('down'); return; }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ keys: jwks.keys }));
      }, delay);
    });
    const slow = status(sign('RS256', k2.privateKey, { role: 'read-only' }, { kid: 'missing-1' }));
    await sleep(200);
    const t0 = Date.now();
    assert.equal((await get(node.url, '/health')).status, 200);
    assert.deepEqual(await status(sign('RS256', k1.privateKey, { role: 'read-only' }, { kid: 'k1' })), [200, 'ok']);
    assert.ok(Date.now() - t0 < 1000, `answered in ${Date.now() - t0} ms while the JWKS fetch was running`);
    assert.deepEqual(await slow, [401, 'Unknown key ID: missing-1']);
    // the JWKS fails: a token naming an unknown key gets 500; known keys still work
    await sleep(1100);
    jwks.failing = true;
    delay = 0;
    assert.deepEqual(await status(sign('RS256', k2.privateKey, { role: 'read-only' }, { kid: 'missing-2' })), [500, 'Failed to fetch JWKS']);
    assert.deepEqual(await status(sign('RS256', k1.privateKey, { role: 'read-only' }, { kid: 'k1' })), [200, 'ok']);
    const m = (await get(node.url, '/metrics/prometheus')).text;
    assert.match(m, /^queen_auth_jwks_fetches_total\{result="failed"\} [1-9]\d*$/m);
    assert.match(m, /^queen_auth_jwks_keys 3$/m);
    jwks.failing = false;
  });
});

describe('JWKS unreachable at boot', () => {
  test('the node boots, and requests that need a key answer 500 until the JWKS answers', async () => {
    const node = await startQueen({
      env: { JWT_ENABLED: 'true', JWT_ALGORITHM: 'RS256', JWT_JWKS_URL: 'http://127.0.0.1:9/jwks', JWT_JWKS_TIMEOUT_MS: '500' },
    });
    try {
      const r = await get(node.url, '/status', bearer(sign('RS256', rsaPair().privateKey, { role: 'admin' }, { kid: 'a' })));
      assert.deepEqual([r.status, r.json], [500, { error: 'Failed to fetch JWKS', code: 'internal_error', requestId: r.headers.get('x-request-id') }]);
      assert.match(node.log, /JWKS fetch from http:\/\/127\.0\.0\.1:9\/jwks failed/);
      // the request id of the answer names a log line
      await logMatch(node, new RegExp(`request ${r.headers.get('x-request-id')} \\(GET /status\\): answered 500: Failed to fetch JWKS`));
    } finally {
      await node.stop();
      rmrf(node.data);
    }
  });
});

describe('a JWKS that never answers', () => {
  test('requests wait for it without blocking the node, and SIGTERM does not wait for the fetch', async () => {
    const hang = await jwksServer([]);
    hang.removeAllListeners('request');
    hang.on('request', () => { hang.hits++; }); // never answers
    const node = await startQueen({
      env: { JWT_ENABLED: 'true', JWT_ALGORITHM: 'RS256', JWT_JWKS_URL: hang.url, JWT_JWKS_TIMEOUT_MS: '60000' },
    });
    try {
      const waiting = get(node.url, '/status', bearer(sign('RS256', rsaPair().privateKey, { role: 'admin' }, { kid: 'a' })));
      await sleep(300);
      assert.equal((await get(node.url, '/health')).status, 200);
      assert.ok(hang.hits >= 1);
      const t0 = Date.now();
      const stopped = node.stop();
      const r = await waiting;
      assert.equal(r.status, 503, r.text);
      await stopped;
      assert.ok(Date.now() - t0 < 5000, `stopped in ${Date.now() - t0} ms`);
    } finally {
      if (!node.exited) await node.stop();
      rmrf(node.data);
      hang.closeAllConnections();
      await hang.stop();
    }
  });
});

describe('auth off', () => {
  let node;
  before(async () => { node = await startQueen(); });
  after(async () => { if (node) { await node.stop(); rmrf(node.data); } });

  test('tokens are ignored, every request is the default tenant\'s, and the producer is null', async () => {
    const t = sign('HS256', 'x', { sub: 'alice', role: 'admin', tenant: '11111111-1111-4111-8111-111111111111' });
    let r = await post(node.url, '/api/v1/push', { items: [{ queue: 'off', payload: 1, producerSub: 'mallory' }] }, bearer(t));
    assert.equal(r.status, 201, r.text);
    r = await get(node.url, '/api/v1/pop/queue/off?wait=false');
    assert.equal(r.json.messages[0].producerSub, null);
    r = await get(node.url, '/status');
    assert.deepEqual(r.json.queues.map((q) => [q.tenant, q.queue]), [['00000000-0000-0000-0000-000000000001', 'off']]);
    assert.doesNotMatch((await get(node.url, '/metrics/prometheus')).text, /queen_auth_/);
  });
});
