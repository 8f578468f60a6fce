// Database errors never reach a client as PostgreSQL's text. Forced on a throwaway PostgreSQL:
// the schema renamed away under a running node (an SQL error on every route that reads or
// writes), a constraint that makes a write fail with a DETAIL, connections terminated mid-request
// and the server stopped. Every answer is a stable code and sentence with the request id, and
// the node's log line with that id holds the database's message, detail and SQLSTATE.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, test } from 'node:test';

import { api, rmrf, sleep, startPostgres, startQueen } from './harness.mjs';
import { ROUTES, fillPath } from './routes.mjs';

let pg;
let node;
before(async () => {
  pg = await startPostgres();
  node = await startQueen({ env: { QUEEN_PG_URL: pg.url, DB_POOL_SIZE: '4' } });
  // a queue with records, a dead letter's worth of state: reads have something to look at
  const r = await api(node.url, 'POST', '/api/v1/push', { items: [{ queue: 'hq', partition: 'p', payload: { a: 1 } }] });
  assert.equal(r.status, 201, r.text);
});
after(async () => {
  const early = node && node.exited;
  if (node) { await node.stop(); rmrf(node.data); }
  if (pg) pg.destroy();
  if (early) throw new Error(`the node exited during the tests: ${JSON.stringify(early)}\n${node.log}`);
});

// Words of PostgreSQL's (and libpq's) messages that the errors below produce.
const SERVER_TEXT = /queen_hidden|does not exist|schema|relation|violates|constraint|Failing row|terminating connection|administrator|server closed|SQLSTATE|3F000|42P01|23514|57P01/i;
const SERVER_LEVEL = /ERROR:|FATAL:|PANIC:/; // libpq's prefixes, in capitals

function checkNoServerText(r, ctx) {
  for (const re of [SERVER_TEXT, SERVER_LEVEL]) {
    assert.doesNotMatch(r.text, re, `${ctx}: ${r.status} ${r.text}`);
    for (const [k, v] of r.headers) assert.doesNotMatch(`${k}: ${v}`, re, ctx);
  }
}

function checkDbFailure(r, ctx, codes) {
  checkNoServerText(r, ctx);
  assert.ok(r.status === 500 || r.status === 503, `${ctx}: ${r.status} ${r.text}`);
  if (/ \/api\/v1\/(timers|kv$|locks$)/.test(ctx)) {
    // the 2.x families answer in their envelope: {error: code, code, reason, detail, requestId}
    assert.deepEqual(Object.keys(r.json), ['error', 'code', 'reason', 'detail', 'requestId'], `${ctx}: ${r.text}`);
    assert.ok(codes.includes(r.json.code), `${ctx}: code ${r.json.code}: ${r.text}`);
    assert.equal(r.json.error, r.json.code, ctx);
    assert.equal(r.json.reason, r.json.code, ctx);
    assert.match(r.json.detail, /^database /, ctx);
  } else {
    assert.ok(codes.includes(r.json.code), `${ctx}: code ${r.json.code}: ${r.text}`);
    assert.match(r.json.error, /^database /, ctx);
  }
  const id = r.headers.get('x-request-id');
  assert.ok(id, ctx);
  assert.equal(r.json.requestId, id, ctx);
  return id;
}

// the node's output reaches the test asynchronously: wait (up to 5 s) for the request's line
async function logLine(id) {
  const find = () => node.log.split('\n').find((l) => l.includes(`request ${id} `));
  for (const end = Date.now() + 5000; !find() && Date.now() < end;) await sleep(20);
  return find();
}

// The routes whose answer needs the database (the others answer without it).
const NO_DB = new Set(['GET /metrics', 'GET /metrics/prometheus', 'GET /health', 'GET /status']);

test('an SQL error on every route class: a stable code, the request id, PostgreSQL\'s text only in the log', async () => {
  pg.psql('ALTER SCHEMA queen RENAME TO queen_hidden');
  const answers = [];
  try {
    for (const [method, pattern, body] of ROUTES) {
      const path = fillPath(pattern) + (pattern === '/api/v1/pop' ? '?namespace=n' : '');
      answers.push([`${method} ${pattern}`, await api(node.url, method, path, body)]);
    }
  } finally {
    pg.psql('ALTER SCHEMA queen_hidden RENAME TO queen');
  }
  let failed = 0;
  for (const [ctx, r] of answers) {
    checkNoServerText(r, ctx);
    if (NO_DB.has(ctx) || r.status < 500) {
      // answered without the database, or refused before reaching it (a 404 of the template)
      continue;
    }
    const id = checkDbFailure(r, ctx, ['database_error']);
    assert.equal(r.status, 500, ctx);
    const line = await logLine(id);
    assert.ok(line, `${ctx}: no log line for request ${id}`);
    assert.match(line, /database error [0-9A-Z]{5}: .*does not exist/, line);
    failed++;
  }
  // every class that reads or writes got the error, not a lucky 404
  for (const ctx of ['POST /api/v1/push', 'POST /api/v1/configure', 'POST /api/v1/fetch', 'POST /api/v1/partitions/changed',
    'GET /api/v1/pop/queue/:queue', 'GET /api/v1/pop', 'POST /api/v1/ack', 'POST /api/v1/ack/batch', 'POST /api/v1/transaction',
    'POST /api/v1/kv/batch', 'PUT /api/v1/kv/:namespace/:key', 'GET /api/v1/kv/:namespace', 'POST /api/v1/timers',
    'GET /api/v1/timers/:queue', 'GET /api/v1/timers/:queue/*timerKey', 'DELETE /api/v1/timers/:queue/*timerKey',
    'GET /api/v1/consumer-groups', 'GET /api/v1/dlq', 'GET /api/v1/resources/queues',
    'GET /api/v1/messages', 'DELETE /api/v1/resources/queues/:queue']) {
    const r = answers.find(([c]) => c === ctx)[1];
    assert.equal(r.status, 500, `${ctx}: ${r.text}`);
  }
  assert.ok(failed >= 30, `only ${failed} routes met the error`);
  // /status tells the operator the database failed, in the broker's words
  const st = answers.find(([c]) => c === 'GET /status')[1];
  assert.equal(st.status, 200);
  assert.match(st.json.database.lastError, /^database error/);
  // and the node serves again once the schema is back
  const ok = await api(node.url, 'POST', '/api/v1/push', { items: [{ queue: 'hq', partition: 'p', payload: { b: 2 } }] });
  assert.equal(ok.status, 201, ok.text);
});

test('a write PostgreSQL refuses with a DETAIL: the log keeps message, detail and SQLSTATE', async () => {
  pg.psql('ALTER TABLE queen.kv ADD CONSTRAINT dberror_test CHECK (false) NOT VALID');
  let r;
  try {
    r = await api(node.url, 'PUT', '/api/v1/kv/ns/k', { value: { v: 1 } });
  } finally {
    pg.psql('ALTER TABLE queen.kv DROP CONSTRAINT dberror_test');
  }
  const id = checkDbFailure(r, 'PUT kv', ['database_error']);
  const line = await logLine(id);
  assert.ok(line, `no log line for request ${id}:\n${node.log.slice(-2000)}`);
  assert.match(line, /database error 23514: new row for relation "kv" violates check constraint "dberror_test"; detail: Failing row contains/, line);
  assert.equal((await api(node.url, 'PUT', '/api/v1/kv/ns/k', { value: { v: 1 } })).status, 200);
});

test('connections terminated mid-request: 503 database_unavailable, no server text', async () => {
  // a session that holds the KV table, so the requests below wait on it inside PostgreSQL
  const locker = spawn('runuser', ['-u', 'postgres', '--', 'psql', '-h', pg.sock, '-p', String(pg.port), '-U', 'postgres', '-d', 'postgres',
    '-c', 'BEGIN; LOCK TABLE queen.kv IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(3); COMMIT;'],
  { cwd: '/', stdio: 'ignore', env: { ...process.env, PGAPPNAME: 'dberror-locker' } });
  const exited = new Promise((res) => locker.on('exit', res));
  try {
    for (let i = 0; i < 50 && pg.psql("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'dberror-locker' AND l.mode = 'AccessExclusiveLock'") === '0'; i++) await sleep(50);
    const waiting = [1, 2, 3].map((i) => api(node.url, 'PUT', `/api/v1/kv/ns/t${i}`, { value: i }));
    await sleep(300);
    pg.psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'queen'");
    for (const r of await Promise.all(waiting)) {
      const id = checkDbFailure(r, 'PUT kv while terminated', ['database_unavailable']);
      assert.equal(r.status, 503);
      assert.ok(id);
    }
  } finally {
    locker.kill();
    await exited;
  }
  // the pool reconnects by itself
  for (let i = 0; ; i++) {
    const r = await api(node.url, 'PUT', '/api/v1/kv/ns/back', { value: 1 });
    if (r.status === 200) break;
    assert.ok(i < 100, `no reconnection: ${r.status} ${r.text}`);
    await sleep(100);
  }
});

test('the database stopped: every route that needs it answers 503 with a stable code', async () => {
  pg.stop('immediate');
  try {
    await sleep(200);
    for (const [method, pattern, body] of ROUTES) {
      const ctx = `${method} ${pattern}`;
      const r = await api(node.url, method, fillPath(pattern) + (pattern === '/api/v1/pop' ? '?namespace=n' : ''), body);
      checkNoServerText(r, ctx);
      if (ctx === 'GET /health') {
        assert.equal(r.status, 503);
        assert.equal(r.json.database, 'disconnected');
        assert.match(r.json.code, /^database_(unavailable|timeout|overloaded)$/, r.text);
        continue;
      }
      if (NO_DB.has(ctx) || r.status < 500) continue;
      checkDbFailure(r, ctx, ['database_unavailable', 'database_timeout', 'database_overloaded']);
      assert.equal(r.status, 503, `${ctx}: ${r.text}`);
    }
  } finally {
    pg.start();
  }
  for (let i = 0; ; i++) {
    const r = await api(node.url, 'GET', '/health');
    if (r.status === 200) break;
    assert.ok(i < 200, 'no reconnection');
    await sleep(100);
  }
});
