// Boot-time configuration: a bad value stops the boot with exactly one line in the spec's
// form and a non-zero exit; blank values are unset; enumerated values ignore case.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { rmrf, runBoot, startQueen } from './harness.mjs';

const cases = [
  [{ PORT: '0' }, 'ERROR boot: FATAL: queen: PORT=0 is outside 1..=65535. It is the TCP port the HTTP API listens on'],
  [{ PORT: '70000' }, 'ERROR boot: FATAL: queen: PORT=70000 is outside 1..=65535. It is the TCP port the HTTP API listens on'],
  [{ PORT: 'abc' }, 'ERROR boot: FATAL: queen: PORT=abc is outside 1..=65535. It is the TCP port the HTTP API listens on'],
  [{ QUEEN_LOG_FORMAT: 'xml' }, 'ERROR boot: FATAL: queen: QUEEN_LOG_FORMAT=xml is not one of text, json. It is the shape of each log line'],
  [{ LOG_LEVEL: 'loud' }, 'ERROR boot: FATAL: queen: LOG_LEVEL=loud is not one of trace, debug, info, warn, error. It is the least severe level that is logged'],
  [{ DB_POOL_SIZE: '0' }, 'ERROR boot: FATAL: queen: DB_POOL_SIZE=0 is outside 1..=1000. It is how many PostgreSQL connections this node keeps open for requests'],
  [{ QUEEN_MAX_BODY_BYTES: '10' }, 'ERROR boot: FATAL: queen: QUEEN_MAX_BODY_BYTES=10 is outside 1024..=1073741824. It is the largest request body accepted, in bytes; larger ones get 413'],
  [{ QUEEN_DEDUP_WINDOW_SECONDS: '-1' }, 'ERROR boot: FATAL: queen: QUEEN_DEDUP_WINDOW_SECONDS=-1 is outside 1..=31536000. It is how long a producer\'s transactionId is remembered to answer duplicate'],
  [{ PG_USE_SSL: 'maybe', PG_HOST: '127.0.0.1' }, 'ERROR boot: FATAL: queen: PG_USE_SSL=maybe is not one of true, false. It makes the external PostgreSQL connection require TLS'],
  [{ PG_PORT: '99999' }, 'ERROR boot: FATAL: queen: PG_PORT=99999 is outside 1..=65535. It is the external PostgreSQL port'],
  [{ QUEEN_NODE_ID: 'ordinal', HOSTNAME: 'no-digits' }, 'ERROR boot: FATAL: queen: QUEEN_NODE_ID=ordinal needs a hostname ending in a number, and this host is no-digits. It names this node in status, logs and the sink\'s leases'],
];

for (const [env, line] of cases) {
  test(`bad ${Object.keys(env)[0]}=${Object.values(env)[0]} stops the boot with one line`, () => {
    const r = runBoot(env);
    assert.equal(r.code, 2);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, line + '\n');
  });
}

test('blank values are unset and enumerated values ignore case', async () => {
  const node = await startQueen({ env: { QUEEN_LOG_FORMAT: 'JSON', QUEEN_LOG_LEVEL: 'Info', DB_POOL_SIZE: '   ', QUEEN_NODE_ID: 'ordinal', HOSTNAME: 'queen-3' } });
  try {
    const st = await (await fetch(node.url + '/status')).json();
    assert.equal(st.database.pool.size, 8);
    assert.equal(st.node, '3');
    const firstLine = node.log.split('\n')[0];
    const parsed = JSON.parse(firstLine);
    assert.equal(parsed.level, 'info');
    assert.equal(parsed.target, 'boot');
  } finally {
    await node.stop();
    rmrf(node.data);
  }
});

test('the spec alias QUEEN_RAFT_NODE_ID names the node', async () => {
  const node = await startQueen({ env: { QUEEN_RAFT_NODE_ID: 'node-a' } });
  try {
    const h = await (await fetch(node.url + '/health')).json();
    assert.equal(h.node, 'node-a');
  } finally {
    await node.stop();
    rmrf(node.data);
  }
});

test('an unreachable external database fails the boot with a clear log line', () => {
  const r = runBoot({ QUEEN_PG_URL: 'postgresql://postgres@127.0.0.1:1/none', DB_CONNECTION_TIMEOUT: '500', QUEEN_BOOT_DB_WAIT_MS: '1500' }, 120000);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /cannot connect to PostgreSQL/);
});

test('the alias is named in its own error line', () => {
  const r = runBoot({ QUEEN_RAFT_NODE_ID: 'ordinal', HOSTNAME: 'plain' });
  assert.equal(r.code, 2);
  assert.equal(r.stderr, 'ERROR boot: FATAL: queen: QUEEN_RAFT_NODE_ID=ordinal needs a hostname ending in a number, and this host is plain. It names this node in status, logs and the sink\'s leases\n');
});

test('enumerated values may carry surrounding blanks', async () => {
  const node = await startQueen({ env: { QUEEN_LOG_LEVEL: ' warn ' } });
  try {
    assert.doesNotMatch(node.log, / INFO /);
  } finally {
    await node.stop();
    rmrf(node.data);
  }
});
