// Hostile input over every route: invalid UTF-8 (bad bytes, overlong forms, surrogates), NUL,
// bad percent-escapes and very long names in each path segment and query parameter; wrong JSON
// types, NUL and malformed JSON in each body field; bodies past the limit; requests h2o itself
// refuses. Nothing may answer 5xx, every refusal is the JSON error shape, and nothing is stored.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { ROOT, api, rmrf, startPostgres, startQueen } from './harness.mjs';
import { checkAnswer, mutations, rawRequest as rawAt, runAll, storedSince as storedAt, tableCounts as countsAt } from './hostile-lib.mjs';
import { ROUTES, UUID, fillPath } from './routes.mjs';

let pg;
let node;
const MAX_BODY = 65536;
before(async () => {
  pg = await startPostgres();
  node = await startQueen({ env: { QUEEN_PG_URL: pg.url, QUEEN_MAX_BODY_BYTES: String(MAX_BODY) } });
});
after(async () => {
  const early = node && node.exited;
  if (node) { await node.stop(); rmrf(node.data); }
  if (pg) pg.destroy();
  if (early) throw new Error(`the node exited during the tests: ${JSON.stringify(early)}\n${node.log}`);
});

const QUERY_PARAMS = ['queue', 'partition', 'consumerGroup', 'namespace', 'task', 'limit', 'offset', 'from', 'to',
  'status', 'after', 'prefix', 'ns', 'batch', 'wait', 'timeout', 'autoAck', 'partitions', 'subscriptionMode',
  'subscriptionFrom', 'minLagSeconds', 'ifVersion', 'deleteMetadata', 'requeued'];
// Encoded bytes that decode to something no name may hold. Each must answer 400 naming the
// parameter (code invalid_parameter).
const BAD_ENCODED = {
  invalidByte: '%ff%fe',
  overlongSlash: '%c0%af',
  overlongNul: '%c0%80',
  surrogate: '%ed%a0%80',
  truncated: 'ab%e2%82',
  beyondMax: '%f4%90%80%80',
  nul: 'a%00b',
  badEscape: 'a%zzb',
  cutEscape: 'ab%f',
};
// Values that are well-formed but out of every name limit: answered below 500 (400, 404, 204, or
// an empty listing), never stored.
const LONG = 'x'.repeat(70000);

const paramsOf = (pattern) => [...pattern.matchAll(/[:*]([A-Za-z]+)/g)].map((m) => m[1]);
const fill = fillPath;

let nreq = 0;
async function send(method, path, body, headers) {
  nreq++;
  return api(node.url, method, path, body, headers);
}
const rawRequest = (text, opts) => rawAt(node.port, text, opts);
const tableCounts = () => countsAt(pg);
const storedSince = (before) => storedAt(pg, before);

test('the route table here is the broker\'s (src/api/api_common.c)', () => {
  const src = fs.readFileSync(path.join(ROOT, 'src/api/api_common.c'), 'utf8');
  const registered = [...src.matchAll(/http_route\(s, "(\w+)", "([^"]+)"/g)].map((m) => `${m[1]} ${m[2]}`).sort();
  assert.ok(registered.length >= 40, `only ${registered.length} routes found`);
  assert.deepEqual(ROUTES.map(([m, p]) => `${m} ${p}`).sort(), registered);
});

describe('hostile input over every route', () => {
  test('invalid UTF-8, NUL and bad escapes in a path segment: 400 naming the parameter', async () => {
    const before = tableCounts();
    const jobs = [];
    for (const [method, pattern, body] of ROUTES) {
      for (const p of paramsOf(pattern)) {
        for (const [kind, enc] of Object.entries(BAD_ENCODED)) {
          jobs.push(async () => {
            const r = await send(method, fill(pattern, { [p]: enc }), body);
            checkAnswer(r, `${method} ${pattern} :${p}=${kind}`, { status: 400, code: 'invalid_parameter', parameter: p });
          });
        }
        jobs.push(async () => {
          const r = await send(method, fill(pattern, { [p]: LONG }), body);
          checkAnswer(r, `${method} ${pattern} :${p}=long`);
        });
      }
    }
    await runAll(jobs);
    assert.deepEqual(storedSince(before), []);
  });

  test('invalid UTF-8, NUL and bad escapes in a query parameter: 400 naming it, on every route', async () => {
    const before = tableCounts();
    const jobs = [];
    const kinds = Object.entries(BAD_ENCODED);
    ROUTES.forEach(([method, pattern, body], ri) => {
      const path = fill(pattern, {});
      // every parameter name once per route (the bad value rotates), and every bad value once
      QUERY_PARAMS.forEach((q, qi) => {
        const [kind, enc] = kinds[(ri + qi) % kinds.length];
        jobs.push(async () => {
          const r = await send(method, `${path}?${q}=${enc}`, body);
          checkAnswer(r, `${method} ${pattern}?${q}=${kind}`, { status: 400, code: 'invalid_parameter', parameter: q });
        });
      });
      for (const [kind, enc] of kinds) {
        const q = QUERY_PARAMS[ri % QUERY_PARAMS.length];
        jobs.push(async () => {
          // after a good parameter, so the decoder looks past the first pair
          const r = await send(method, `${path}?limit=5&${q}=${enc}`, body);
          checkAnswer(r, `${method} ${pattern}?${q}=${kind}`, { status: 400, code: 'invalid_parameter', parameter: q });
        });
      }
      // a bad name is refused too (it could be any parameter)
      jobs.push(async () => {
        const r = await send(method, `${path}?a%ffb=1`, body);
        checkAnswer(r, `${method} ${pattern}?<bad name>`, { status: 400, code: 'invalid_parameter' });
      });
      jobs.push(async () => {
        // with a body that is refused: the long values are valid, and a valid body (or none,
        // for incr) would be acted on
        const r = await send(method, `${path}?queue=${LONG}&consumerGroup=${LONG}&namespace=${LONG}`, body ? '[]' : undefined);
        checkAnswer(r, `${method} ${pattern}?<long>`);
      });
    });
    await runAll(jobs);
    assert.deepEqual(storedSince(before), []);
  });

  test('wrong JSON types, NUL characters and malformed JSON in every body field', async () => {
    const before = tableCounts();
    const jobs = [];
    const accepted = []; // mutations answered 2xx: what to look at when something was stored
    for (const [method, pattern, body] of ROUTES) {
      if (!body) continue;
      const path = fill(pattern, {});
      for (const [where, mutated] of mutations(body)) {
        jobs.push(async () => {
          const r = await send(method, path, mutated);
          checkAnswer(r, `${method} ${pattern} ${where}`);
          if (r.status < 300) accepted.push(`${method} ${pattern} ${where} → ${r.status} ${r.text.slice(0, 200)}`);
        });
      }
      for (const raw of ['[]', '"x"', '1', 'null', '{', '{"a":}', '{"a":"\\ud800"}', '\u00ff\u00fe', '{"a":1}{"b":2}', ' ']) {
        jobs.push(async () => {
          const r = await send(method, path, raw);
          checkAnswer(r, `${method} ${pattern} body ${JSON.stringify(raw)}`);
        });
      }
    }
    await runAll(jobs);
    assert.deepEqual(storedSince(before), [], `accepted:\n${accepted.join('\n')}`);
  });

  test('a NUL in any string field of an ack, a batch ack or a transaction ack: 400', async () => {
    const bodies = [
      ['/api/v1/ack', { transactionId: 'a\u0000b', partitionId: UUID }],
      ['/api/v1/ack/batch', { acknowledgments: [{ transactionId: 'a\u0000b', partitionId: UUID }] }],
      ['/api/v1/transaction', { operations: [{ type: 'ack', transactionId: 'a\u0000b', partitionId: UUID }] }],
      ['/api/v1/ack', { transactionId: 't', partitionId: UUID, consumerGroup: 'g\u0000' }],
      ['/api/v1/ack', { transactionId: 't', partitionId: UUID, error: '\u0000' }],
      ['/api/v1/ack/batch', { consumerGroup: '\u0000', acknowledgments: [{ transactionId: 't', partitionId: UUID }] }],
      ['/api/v1/fetch', { entries: [{ queue: 'hq', partition: 'p\u0000', offset: 0 }] }],
      ['/api/v1/partitions/changed', { entries: [{ queue: 'h\u0000q' }] }],
    ];
    for (const [path, body] of bodies) {
      const r = await send('POST', path, body);
      checkAnswer(r, `${path} ${JSON.stringify(body)}`, { status: 400 });
      assert.match(r.json.error, /NUL/, r.text);
    }
  });

  test(`bodies past QUEEN_MAX_BODY_BYTES (${MAX_BODY}): 413 JSON, plain or chunked`, async () => {
    const big = JSON.stringify({ items: [{ queue: 'hq', payload: 'y'.repeat(MAX_BODY) }] });
    for (const [method, pattern, body] of ROUTES) {
      if (!body) continue;
      const r = await send(method, fill(pattern, {}), big);
      checkAnswer(r, `${method} ${pattern} big`, { status: 413, code: 'payload_too_large' });
    }
    // chunked: h2o refuses it while reading, before any handler
    const raw = await rawRequest('POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n' +
      `${(MAX_BODY + 10).toString(16)}\r\n${'z'.repeat(MAX_BODY + 10)}\r\n0\r\n\r\n`);
    assert.equal(raw.status, 413, raw.text);
    assert.equal(raw.json.code, 'payload_too_large', raw.text);
    assert.ok(raw.headers['x-request-id'], raw.text);
  });
});

test('request ids: a safe x-request-id is kept, anything else is replaced by a UUIDv7', async () => {
  const uuid7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  let r = await api(node.url, 'GET', '/health', undefined, { 'x-request-id': 'proxy-1.a:B_9' });
  assert.equal(r.headers.get('x-request-id'), 'proxy-1.a:B_9');
  r = await api(node.url, 'GET', '/api/v1/nope', undefined, { 'x-request-id': 'k'.repeat(64) });
  assert.equal(r.headers.get('x-request-id'), 'k'.repeat(64));
  for (const bad of ['k'.repeat(65), 'a b', 'a/b', '"x"', 'caf\xe9', 'x;DROP']) {
    r = await api(node.url, 'GET', '/health', undefined, { 'x-request-id': bad });
    assert.match(r.headers.get('x-request-id'), uuid7, bad);
  }
  // two requests, two ids
  const a = (await api(node.url, 'GET', '/health')).headers.get('x-request-id');
  const b = (await api(node.url, 'GET', '/health')).headers.get('x-request-id');
  assert.match(a, uuid7);
  assert.notEqual(a, b);
  // OPTIONS and the answers h2o makes carry one too
  r = await api(node.url, 'OPTIONS', '/api/v1/push');
  assert.equal(r.status, 204);
  assert.match(r.headers.get('x-request-id'), uuid7);
});

describe('requests refused before routing', () => {
  const get = (path, extra = '') => `GET ${path} HTTP/1.1\r\nHost: x\r\n${extra}Connection: close\r\n\r\n`;

  test('within the limits: 100 headers, a 64 KiB header value, a 300 KiB path reach the broker', async () => {
    let extra = '';
    for (let i = 0; i < 98; i++) extra += `x-h${i}: v\r\n`; // + Host + Connection = 100
    let r = await rawRequest(get('/health', extra));
    assert.equal(r.status, 200, r.text);
    r = await rawRequest(get('/health', `x-big: ${'v'.repeat(65536)}\r\n`));
    assert.equal(r.status, 200, r.text);
    r = await rawRequest(get(`/api/v1/resources/queues/${'q'.repeat(300 * 1024)}`));
    assert.equal(r.status, 404, r.text);
    assert.equal(r.json.error, 'Queue not found');
  });

  test('malformed framing h2o answers itself is the JSON error shape', async () => {
    const cases = [
      ['POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', 400],
      ['POST /api/v1/push HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n', 400],
      ['POST /api/v1/push HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', 400],
      ['POST /api/v1/push HTTP/1.1\r\nHost: x\r\nExpect: something\r\nContent-Length: 2\r\n\r\n{}', 417],
    ];
    for (const [text, status] of cases) {
      const r = await rawRequest(text);
      assert.equal(r.status, status, `${JSON.stringify(text)}: ${r.text}`);
      assert.match(r.headers['content-type'], /^application\/json/, r.text);
      assert.equal(typeof r.json.error, 'string', r.text);
      assert.equal(typeof r.json.code, 'string', r.text);
      assert.ok(r.headers['x-request-id'], r.text);
      assert.equal(r.headers['access-control-allow-origin'], '*');
    }
  });

  // libh2o 2.2.5 (Debian 12) writes these answers straight to the socket from its HTTP/1
  // parser (lib/http1.c send_bad_request), with no hook: they stay plain text. See
  // docs/http-api.md "Limits". The test pins the limits so a change of library shows up here.
  test('beyond h2o\'s own limits: 101 headers, a 1 MB header value, a 1 MB path → 400 and the connection closed', async () => {
    let extra = '';
    for (let i = 0; i < 99; i++) extra += `x-h${i}: v\r\n`; // + Host + Connection = 101
    for (const text of [get('/health', extra), get('/health', `x-big: ${'v'.repeat(1 << 20)}\r\n`), get(`/${'p'.repeat(1 << 20)}`)]) {
      const r = await rawRequest(text);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.headers.connection, 'close');
    }
    // and the node is fine afterwards
    const h = await api(node.url, 'GET', '/health');
    assert.equal(h.status, 200);
  });
});

test('request count (the run stays fast)', () => {
  assert.ok(nreq > 1000, `only ${nreq} requests were sent`);
});
