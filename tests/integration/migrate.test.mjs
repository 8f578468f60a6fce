// Several nodes booting at once against a fresh database: the migrations are applied once
// and every node comes up.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { post, rmrf, startPostgres, startQueen } from './harness.mjs';

test('four nodes booting at once share one schema', async () => {
  const pg = await startPostgres();
  const nodes = await Promise.all([1, 2, 3, 4].map((i) => startQueen({ env: { QUEEN_PG_URL: pg.url, QUEEN_NODE_ID: `n${i}` } })));
  try {
    const versions = pg.psql('SELECT string_agg(version::text, \',\' ORDER BY version) FROM public.queen_schema_migrations');
    assert.equal(versions, '1,2');
    const applied = nodes.filter((n) => /applying migration 001_init/.test(n.log)).length;
    assert.equal(applied, 1);
    // each node serves the same queues
    await post(nodes[0].url, '/api/v1/push', { items: [{ queue: 'shared', payload: 1 }] });
    for (const n of nodes) {
      const f = await post(n.url, '/api/v1/fetch', { queue: 'shared' });
      assert.equal(f.json.records.length, 1);
    }
  } finally {
    for (const n of nodes) { await n.stop(); rmrf(n.data); }
    pg.destroy();
  }
});
