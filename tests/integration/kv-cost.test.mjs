// What one lock op and one KV batch cost the database, in rows read, not in time (a timing
// test on a shared machine proves nothing). An acquire, a renew found by its token and a get
// read the lock's own keys only, however many other locks the tenant holds: the acquire's
// "does this owner hold a permit already" lookup was planned as a scan of every lock row of the
// tenant (each value parsed as jsonb), which made the lock loop's latency grow with the
// namespace (bench/run.sh locks-acquire-renew-release: 1.3k → 2.3k ops/s with 2000 other locks
// held). And the KV and lock functions keep their plans (plan_cache_mode): PL/pgSQL re-planned
// their statements at every call, most of a small batch's time (docs/kv.md, "Cost").
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { post, rmrf, startPostgres, startQueen } from './harness.mjs';

let pg, node;
before(async () => {
  pg = await startPostgres();
  node = await startQueen({ env: { QUEEN_PG_URL: pg.url } });
});
after(async () => {
  if (node) { await node.stop(); rmrf(node.data); }
  if (pg) pg.destroy();
});

const DEFAULT = '00000000-0000-0000-0000-000000000001';
// the rows of queen.kv one call read (index fetches and sequential reads), in its own transaction
// (psql -c runs both statements in one transaction; the last line is the second's answer)
const rowsRead = (call) => Number(pg.psql(`SELECT count(*) FROM ${call};
  SELECT coalesce(sum(idx_tup_fetch), 0) + coalesce(sum(seq_tup_read), 0) FROM pg_stat_xact_user_tables
   WHERE schemaname = 'queen' AND relname = 'kv'`).split('\n').pop());
const lockCall = (kind, name, { owner = null, ttl = 30, limit = 1, token = null, slot = null } = {}) =>
  `queen.lock_ops_v1('${DEFAULT}', ARRAY[${kind}], ARRAY['${name}'], ARRAY[${owner ? `'${owner}'` : 'NULL'}::text], ` +
  `ARRAY[${ttl}::bigint], ARRAY[${limit}], ARRAY[${token ?? 'NULL'}::bigint], ARRAY[${slot ?? 'NULL'}::int])`;

test('a lock op reads its own lock\'s rows, not every lock of the tenant', async () => {
  // 600 other locks held, and one semaphore of 4 permits
  for (let b = 0; b < 6; b++) {
    const ops = [...Array(100)].map((_, i) => ({ op: 'acquire', name: `held-${b * 100 + i}`, ttlSeconds: 3600, owner: 'app' }));
    const r = await post(node.url, '/api/v1/locks', { operations: ops });
    assert.equal(r.status, 200, r.text);
    assert.ok(r.json.results.every((x) => x.acquired), r.text);
  }
  assert.equal(pg.psql("SELECT count(*) FROM queen.kv WHERE namespace = 'queen-locks' AND version > 0"), '600');
  // acquire: probes name#0 (already held by this owner?) and takes it
  const acquire = rowsRead(lockCall(0, 'probe', { owner: 'me' }));
  assert.ok(acquire <= 5, `an acquire read ${acquire} rows of queen.kv`);
  const [held] = (await post(node.url, '/api/v1/locks', { operations: [{ op: 'get', name: 'probe' }] })).json.results;
  assert.equal(held.holders.length, 1);
  // renew found by its token (no slot), a get, and a refused acquire (which lists the holders)
  const renew = rowsRead(lockCall(1, 'probe', { token: held.holders[0].token }));
  assert.ok(renew <= 5, `a renew by token read ${renew} rows of queen.kv`);
  const get = rowsRead(lockCall(3, 'probe'));
  assert.ok(get <= 5, `a get read ${get} rows of queen.kv`);
  const refused = rowsRead(lockCall(0, 'probe', { owner: 'other' }));
  assert.ok(refused <= 8, `a refused acquire read ${refused} rows of queen.kv`);
  // a semaphore probes its own permits
  const sem = rowsRead(lockCall(0, 'sem', { owner: 'me', limit: 4 }));
  assert.ok(sem <= 10, `a semaphore acquire read ${sem} rows of queen.kv`);
  // and the answers are still right
  const r = await post(node.url, '/api/v1/locks', { operations: [
    { op: 'acquire', name: 'probe', ttlSeconds: 30, owner: 'me' }, { op: 'acquire', name: 'probe', ttlSeconds: 30, owner: 'x' },
    { op: 'get', name: 'held-7' }] });
  assert.equal(r.json.results[0].already, true, r.text);
  assert.equal(r.json.results[1].reason, 'held', r.text);
  assert.deepEqual(r.json.results[2].holders.map((h) => [h.slot, h.owner]), [[0, 'app']]);
});

test('the KV and lock functions keep their plans', () => {
  const cfg = pg.psql(`SELECT string_agg(proname || ':' || coalesce(array_to_string(proconfig, ','), '-'), ' ' ORDER BY proname)
    FROM pg_proc WHERE pronamespace = 'queen'::regnamespace
     AND proname IN ('kv_ops_v1', 'kv_ops_apply_v1', 'kv_batch_v1', 'lock_ops_v1', 'lock_holders')`);
  assert.equal(cfg, ['kv_batch_v1', 'kv_ops_apply_v1', 'kv_ops_v1', 'lock_holders', 'lock_ops_v1']
    .map((f) => `${f}:plan_cache_mode=force_generic_plan`).join(' '));
});
