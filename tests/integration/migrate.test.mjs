// Several nodes booting at once against a fresh database: the migrations are applied once
// and every node comes up.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { post, ROOT, rmrf, startPostgres, startQueen } from './harness.mjs';

// every migration the binary embeds, by version
const VERSIONS = fs.readdirSync(path.join(ROOT, 'src/db/migrations')).filter((f) => /^\d+_.*\.sql$/.test(f))
  .map((f) => Number(f.split('_')[0])).sort((a, b) => a - b).join(',');

test('four nodes booting at once share one schema', async () => {
  const pg = await startPostgres();
  const nodes = await Promise.all([1, 2, 3, 4].map((i) => startQueen({ env: { QUEEN_PG_URL: pg.url, QUEEN_NODE_ID: `n${i}` } })));
  try {
    const versions = pg.psql('SELECT string_agg(version::text, \',\' ORDER BY version) FROM public.queen_schema_migrations');
    assert.equal(versions, VERSIONS);
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
