// Several nodes booting at once against a fresh database: the migrations are applied once
// and every node comes up.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { ROOT, post, readQueue, rmrf, startPostgres, startQueen } from './harness.mjs';

// the versions the binary carries: one per file in src/db/migrations
const VERSIONS = fs.readdirSync(path.join(ROOT, 'src/db/migrations')).filter((f) => /^\d+_.*\.sql$/.test(f))
  .map((f) => Number(f.split('_')[0])).sort((a, b) => a - b);

test('four nodes booting at once share one schema', async () => {
  const pg = await startPostgres();
  const nodes = await Promise.all([1, 2, 3, 4].map((i) => startQueen({ env: { QUEEN_PG_URL: pg.url, QUEEN_NODE_ID: `n${i}` } })));
  try {
    const versions = pg.psql('SELECT string_agg(version::text, \',\' ORDER BY version) FROM public.queen_schema_migrations');
    assert.equal(versions, VERSIONS.join(','));
    const applied = nodes.filter((n) => /applying migration 001_init/.test(n.log)).length;
    assert.equal(applied, 1);
    // each node serves the same queues
    await post(nodes[0].url, '/api/v1/push', { items: [{ queue: 'shared', payload: 1 }] });
    for (const n of nodes) {
      const f = await readQueue(n.url, 'shared');
      assert.equal(f.records.length, 1);
    }
  } finally {
    for (const n of nodes) { await n.stop(); rmrf(n.data); }
    pg.destroy();
  }
});

// Versions are reserved per piece of work and can land out of order (010 before 003): a
// migration missing from a database is applied even when a newer one is recorded.
test('a migration older than the newest applied one is still applied', async () => {
  const pg = await startPostgres();
  let node = await startQueen({ env: { QUEEN_PG_URL: pg.url } });
  try {
    await node.stop();
    // pretend 010_kv never ran, while 011 did
    pg.psql('DROP FUNCTION queen.kv_batch_v1, queen.kv_gc_v1; DROP TABLE queen.kv; DROP SEQUENCE queen.kv_version_seq; ' +
      'DELETE FROM public.queen_schema_migrations WHERE version = 10');
    node = await startQueen({ env: { QUEEN_PG_URL: pg.url }, dataDir: node.data });
    assert.match(node.log, /applying migration 010_kv/);
    assert.doesNotMatch(node.log, /applying migration 011_timers/);
    const versions = pg.psql('SELECT string_agg(version::text, \',\' ORDER BY version) FROM public.queen_schema_migrations');
    assert.equal(versions, VERSIONS.join(','));
    const r = await fetch(node.url + '/api/v1/kv/ns/k', { method: 'PUT', body: '{"value":1}' });
    assert.equal(r.status, 200);
  } finally {
    await node.stop();
    rmrf(node.data);
    pg.destroy();
  }
});
