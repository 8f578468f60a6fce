// Upgrading a database the previous release left behind gives the same schema as a fresh one:
// the same stored functions (pg_get_functiondef), views, tables, columns, constraints, indexes
// and sequences. The previous release's database is a fixture, the pg_dump its binary left on
// its first boot (scripts/dump-release-schema.sh; that release kept its functions in the
// migrations, and 015/014 had superseded two of them). Also: every stored function has its one
// file, the option defaults come from the binary, a changed migration is refused, and a
// database a newer build migrated keeps that build's functions.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { ROOT, get, rmrf, runBoot, startPostgres, startQueen } from './harness.mjs';

// the previous release: main at 5d18872, before issue 10 moved the functions out of the migrations
const PREVIOUS = path.join(ROOT, 'tests/integration/fixtures/schema-5d18872.sql');

// Everything a database's schema is made of, one line per object, in a fixed order.
const DESCRIBE = `
SELECT 'function ' || p.oid::regprocedure::text || E'\\n' || pg_get_functiondef(p.oid)
  FROM pg_proc p WHERE p.pronamespace = 'queen'::regnamespace ORDER BY 1;
SELECT 'relation ' || c.oid::regclass::text || ' ' || c.relkind::text || ' ' || c.relpersistence::text || ' '
       || coalesce(array_to_string(c.reloptions, ','), '') || ' ' || coalesce(pg_get_viewdef(c.oid), '')
  FROM pg_class c WHERE c.relnamespace IN ('queen'::regnamespace, 'public'::regnamespace) ORDER BY 1;
SELECT 'column ' || a.attrelid::regclass::text || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
       || ' notnull=' || a.attnotnull || ' default=' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
       || ' identity=' || a.attidentity::text || ' compression=' || a.attcompression::text
       || ' collation=' || coalesce(a.attcollation::regcollation::text, '')
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE c.relnamespace IN ('queen'::regnamespace, 'public'::regnamespace) AND a.attnum > 0 AND NOT a.attisdropped
 ORDER BY 1;
SELECT 'constraint ' || conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
  FROM pg_constraint WHERE connamespace IN ('queen'::regnamespace, 'public'::regnamespace) ORDER BY 1;
SELECT 'index ' || pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
 WHERE c.relnamespace IN ('queen'::regnamespace, 'public'::regnamespace) ORDER BY 1;
SELECT 'sequence ' || s.seqrelid::regclass::text || ' ' || format_type(s.seqtypid, NULL) || ' ' || s.seqstart || ' '
       || s.seqincrement || ' ' || s.seqmax || ' ' || s.seqmin || ' ' || s.seqcache || ' ' || s.seqcycle
  FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid
 WHERE c.relnamespace IN ('queen'::regnamespace, 'public'::regnamespace) ORDER BY 1;
SELECT 'trigger ' || pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE c.relnamespace IN ('queen'::regnamespace, 'public'::regnamespace) AND NOT t.tgisinternal ORDER BY 1;
SELECT 'migration ' || version || ' ' || name || ' ' || coalesce(checksum, 'NULL')
  FROM public.queen_schema_migrations ORDER BY version;
SELECT 'defaults ' || options::text FROM queen.option_defaults;
`;

const FILES = fs.readdirSync(path.join(ROOT, 'src/db/functions')).filter((f) => f.endsWith('.sql'))
  .map((f) => f.replace(/\.sql$/, '')).sort();

let pg;
before(async () => {
  pg = await startPostgres();
});
after(() => pg.destroy());

// A database, and one boot of the current binary on it; returns its description.
async function bootOn(db, { stop = true } = {}) {
  const node = await startQueen({ env: { QUEEN_PG_URL: pg.urlOf(db) } });
  if (!stop) return node;
  await node.stop();
  rmrf(node.data);
  return pg.psqlScript(DESCRIBE, db);
}

function firstDifference(a, b) {
  const x = a.split('\n');
  const y = b.split('\n');
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    if (x[i] !== y[i]) return `line ${i + 1}:\n  fresh:    ${x[i]}\n  upgraded: ${y[i]}`;
  }
  return null;
}

test('a database of the previous release, upgraded, has the schema of a fresh one', async () => {
  pg.psql('CREATE DATABASE fresh');
  pg.psql('CREATE DATABASE upgraded');
  pg.psqlScript(fs.readFileSync(PREVIOUS, 'utf8'), 'upgraded');
  // before: the previous release's functions, the superseded ones among them
  const before = pg.psql("SELECT string_agg(proname, ',' ORDER BY proname) FROM pg_proc WHERE pronamespace = 'queen'::regnamespace", 'upgraded');
  assert.match(before, /lease_extend_v1/);
  assert.match(before, /timers_fire_v1/);
  // a queue its push created, with the options such a push stored ('{}') and one record
  pg.psql(`SELECT count(*) FROM queen.push_v1(ARRAY['00000000-0000-0000-0000-000000000001'::uuid], ARRAY['legacy'],
    ARRAY['Default'], ARRAY[1], ARRAY[2], ARRAY['\\x0101'::bytea || uuid_send(gen_random_uuid()) || '\\x027b7d'::bytea],
    '{}', '{}', '{}', 0)`, 'upgraded');
  assert.equal(pg.psql("SELECT options::text FROM queen.queues WHERE name = 'legacy'", 'upgraded'), '{}');

  const fresh = await bootOn('fresh');
  const upgraded = await bootOn('upgraded');
  assert.equal(firstDifference(fresh, upgraded), null);
  assert.equal(fresh, upgraded);

  // every stored function is one file of src/db/functions, and nothing else is there
  const fns = fresh.split('\n').map((l) => /^function queen\.([a-z_0-9]+)\(/.exec(l) || /^relation queen\.([a-z_0-9]+) v /.exec(l))
    .filter(Boolean).map((m) => m[1]).sort();
  assert.deepEqual(fns, FILES);
  assert.doesNotMatch(fresh, /lease_extend_v1|timers_fire_v1/);
  // the defaults are the binary's option table, the same as configure answers for no options
  const defaults = JSON.parse(pg.psql('SELECT options::text FROM queen.option_defaults', 'upgraded'));
  assert.equal(defaults.leaseTime, 300);
  assert.equal(defaults.retryDelay, 1000);
  assert.equal(defaults.retryLimit, 3);

  // a second boot changes nothing
  assert.equal(await bootOn('upgraded'), upgraded);

  // the old queue, which the previous release stored with '{}', gets the default lease now
  const node = await bootOn('upgraded', { stop: false });
  try {
    const t0 = Date.now() * 1000;
    const r = await get(node.url, '/api/v1/pop/queue/legacy?batch=1');
    assert.equal(r.status, 200);
    assert.deepEqual(r.json.messages[0].data, {});
    const exp = Number(pg.psql("SELECT c.lease_expires_at FROM queen.cursors c JOIN queen.queues q ON q.id = c.queue_id WHERE q.name = 'legacy'", 'upgraded'));
    const secs = (exp - t0) / 1e6;
    assert.ok(secs > 295 && secs <= 301, `lease of ${secs} s, want the default 300`);
  } finally {
    await node.stop();
    rmrf(node.data);
  }
});

test('a migration changed after it was applied is refused at boot', async () => {
  pg.psql('CREATE DATABASE edited');
  await bootOn('edited');
  pg.psql("UPDATE public.queen_schema_migrations SET checksum = repeat('0', 64) WHERE version = 3", 'edited');
  const r = runBoot({ QUEEN_PG_URL: pg.urlOf('edited') });
  assert.notEqual(r.code, 0);
  assert.match(r.stdout + r.stderr, /migration 003_consume was changed after the database applied it/);
});

test('a database a newer build migrated keeps that build\'s functions', async () => {
  pg.psql('CREATE DATABASE newer');
  await bootOn('newer');
  // a newer build: a migration this binary does not carry, and a body of its own
  pg.psql("INSERT INTO public.queen_schema_migrations (version, name, checksum) VALUES (9999, '9999_future', 'x')", 'newer');
  pg.psql("CREATE OR REPLACE FUNCTION queen.s3_escape(p text) RETURNS text LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT 'newer' $$", 'newer');
  const node = await startQueen({ env: { QUEEN_PG_URL: pg.urlOf('newer') } });
  try {
    assert.match(node.log, /the database has migration 9999, which this binary does not carry/);
    assert.equal(pg.psql("SELECT queen.s3_escape('a b')", 'newer'), 'newer');
  } finally {
    await node.stop();
    rmrf(node.data);
  }
});
