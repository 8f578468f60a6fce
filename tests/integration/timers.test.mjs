// Timers on the real binary, at the wire, for what the 2.x client does not exercise: keyed
// schedule/reschedule/cancel with their verdicts, peek and the keyset listing (byte order,
// clamps, the 16 MiB page), keys with slashes on the path routes, payloadZstd, refusals in the
// 2.x envelope; firing exactly once with two nodes on one PostgreSQL, also while reschedules
// race the firing rounds of both nodes; too_late against a round held open; a timer due while
// no node ran; a node killed mid-firing; timers stored before the keys (migration 045).
// tests/py/test_timers.py drives the same routes through the 2.x client.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { ROOT, api, get, listPartitions, post, readQueue, rmrf, sleep, startPostgres, startQueen } from './harness.mjs';

const b64 = (text) => Buffer.from(text).toString('base64');
const unb64 = (s) => Buffer.from(s, 'base64').toString('utf8');
const ISO_US = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;
const isoUs = (s) => Date.parse(s.slice(0, 19) + 'Z') * 1000 + Number(s.slice(20, 26));

// one schedule op; payload is the JSON text (sent as base64, as the 2.x wire carries it)
const sched = (queue, timerKey, payloadText, delayMs, extra = {}) =>
  ({ op: 'schedule', queue, timerKey, payload: b64(payloadText), delayMs, ...extra });
const ops = (node, operations, headers) => post(node.url, '/api/v1/timers', { operations }, headers);
// the 2.x client quotes everything in a key but '/' (urllib quote(key, safe='/'))
const keyPath = (queue, key) => `/api/v1/timers/${encodeURIComponent(queue)}/${key.split('/').map(encodeURIComponent).join('/')}`;
const peek = (node, queue, key) => get(node.url, keyPath(queue, key));
const cancel = (node, queue, key, txn) => api(node.url, 'DELETE', keyPath(queue, key) + (txn ? `?txn=${encodeURIComponent(txn)}` : ''));

async function metric(node, name) {
  const r = await get(node.url, '/metrics/prometheus');
  const line = r.text.split('\n').find((l) => l.startsWith(name + ' '));
  return line ? Number(line.split(' ')[1]) : 0;
}

// Polls until the queue holds `n` records (or the deadline passes); returns the records.
async function waitRecords(node, queue, n, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let recs = [];
  while (Date.now() < deadline) {
    recs = (await readQueue(node.url, queue)).records;
    if (recs.length >= n) break;
    await sleep(200);
  }
  return recs;
}

// Every pending timer of a queue, through the listing's pages.
async function pending(node, queue) {
  const rows = [];
  let after = '';
  for (;;) {
    const r = await get(node.url, `/api/v1/timers/${encodeURIComponent(queue)}?limit=1000${after ? `&after=${encodeURIComponent(after)}` : ''}`);
    assert.equal(r.status, 200, r.text);
    rows.push(...r.json.rows);
    if (!r.json.truncated) return rows;
    after = r.json.nextAfter;
  }
}

function assertEachOnce(recs, txns) {
  const counts = new Map();
  for (const r of recs) counts.set(r.transactionId, (counts.get(r.transactionId) || 0) + 1);
  for (const t of txns) assert.equal(counts.get(t), 1, `transactionId ${t} appeared ${counts.get(t) || 0} times`);
  assert.equal(recs.length, txns.length, 'records other than the timers were pushed');
}

// A psql session kept open (a firing round held in a transaction of the test's own).
function psqlSession(pg) {
  const asRoot = process.getuid && process.getuid() === 0;
  const args = ['-h', pg.sock, '-p', String(pg.port), '-U', 'postgres', '-d', 'postgres', '-At'];
  const proc = spawn(asRoot ? 'runuser' : 'psql', asRoot ? ['-u', 'postgres', '--', 'psql', ...args] : args,
    { cwd: '/', stdio: ['pipe', 'pipe', 'pipe'] });
  const s = { out: '', proc };
  proc.stdout.on('data', (d) => { s.out += d; });
  proc.stderr.on('data', (d) => { s.out += d; });
  s.send = (sql) => proc.stdin.write(sql + '\n');
  s.until = async (re, ms = 5000) => {
    for (const end = Date.now() + ms; !re.test(s.out);) {
      if (Date.now() > end) throw new Error(`psql: ${re} not seen in ${ms} ms: ${s.out}`);
      await sleep(20);
    }
  };
  s.close = () => new Promise((resolve) => { proc.on('exit', resolve); proc.stdin.end(); });
  return s;
}

// A refusal in the 2.x envelope: error and code the same stable code, reason, detail, and the
// op at fault (index) when one is; `want` is "code:reason".
function refusal(r, status, want, detail) {
  assert.equal(r.status, status, r.text);
  const keys = Object.keys(r.json);
  assert.deepEqual(keys.filter((k) => k !== 'index'), ['error', 'code', 'reason', 'detail'], r.text);
  assert.equal(r.json.error, r.json.code, r.text);
  assert.equal(`${r.json.code}:${r.json.reason}`, want, r.text);
  if (detail) assert.match(r.json.detail, detail, r.text);
  return r.json;
}

describe('two nodes on one database', () => {
  let pg;
  let a;
  let b;
  before(async () => {
    pg = await startPostgres();
    a = await startQueen({ env: { QUEEN_PG_URL: pg.url, QUEEN_NODE_ID: 'a' } });
    b = await startQueen({ env: { QUEEN_PG_URL: pg.url, QUEEN_NODE_ID: 'b' } });
  });
  after(async () => {
    // a node that left early (crash or a stray signal) would otherwise only show as fetch errors
    const early = [a, b].filter((n) => n && n.exited);
    for (const n of [a, b]) if (n) { await n.stop(); rmrf(n.data); }
    if (pg) pg.destroy();
    for (const n of early) throw new Error(`a node exited during the tests: ${JSON.stringify(n.exited)}\n${n.log}`);
  });

  test('schedule, peek on the other node, reschedule, cancel: verdicts and shapes', async () => {
    const payload = '{ "order" : 7, "total": 42.00, "name": "caf\\u00e9" }';
    const t0 = Date.now();
    const s = await ops(a, [sched('later', 'order:7/expire', payload, 600000, { txn: 't-1', partition: 'p1' })]);
    assert.equal(s.status, 200, s.text);
    assert.equal(s.json.results.length, 1);
    const r0 = s.json.results[0];
    assert.deepEqual(Object.keys(r0), ['ok', 'status', 'queue', 'timerKey', 'txn', 'messageId', 'deliverAt']);
    assert.deepEqual({ ...r0, deliverAt: null }, { ok: true, status: 'scheduled', queue: 'later', timerKey: 'order:7/expire',
      txn: 't-1', messageId: null, deliverAt: null });
    assert.match(r0.deliverAt, ISO_US);
    assert.ok(Math.abs(isoUs(r0.deliverAt) - (t0 + 600000) * 1000) < 60e6, r0.deliverAt);

    // any node answers for it; the payload exactly as stored (the JSON text as sent)
    const p = await peek(b, 'later', 'order:7/expire');
    assert.equal(p.status, 200, p.text);
    assert.deepEqual(Object.keys(p.json), ['found', 'queue', 'timerKey', 'partition', 'txn', 'deliverAt', 'attempts',
      'createdAt', 'payload', 'encrypted']);
    assert.equal(p.json.found, true);
    assert.equal(p.json.partition, 'p1');
    assert.equal(p.json.txn, 't-1');
    assert.equal(p.json.deliverAt, r0.deliverAt);
    assert.equal(p.json.attempts, 0);
    assert.equal(p.json.encrypted, false);
    assert.match(p.json.createdAt, ISO_US);
    assert.equal(unb64(p.json.payload), payload);

    // a schedule of a pending key is the same upsert: rescheduled; reschedule of a new key: scheduled
    const again = await ops(b, [
      sched('later', 'order:7/expire', '{"v":2}', 1200000, { txn: 't-2' }),
      { ...sched('later', 'fresh', '2', 600000), op: 'reschedule' },
    ]);
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.json.results.map((x) => [x.ok, x.status, x.txn]), [[true, 'rescheduled', 't-2'], [true, 'scheduled', again.json.results[1].txn]]);
    // a txn the client did not send is made here (a UUIDv7)
    assert.match(again.json.results[1].txn, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const p2 = await peek(a, 'later', 'order:7/expire');
    assert.equal(unb64(p2.json.payload), '{"v":2}');
    assert.equal(p2.json.txn, 't-2');
    assert.equal(p2.json.partition, 'Default'); // the replacement is a new timer under the old name
    assert.ok(isoUs(p2.json.deliverAt) > isoUs(r0.deliverAt));

    // cancel over the path route: the cancelled timer's txn and time; then absent, echoing ?txn=
    const c = await cancel(b, 'later', 'order:7/expire', 't-2');
    assert.equal(c.status, 200, c.text);
    assert.deepEqual(c.json, { ok: true, status: 'cancelled', queue: 'later', timerKey: 'order:7/expire', txn: 't-2',
      messageId: null, deliverAt: p2.json.deliverAt });
    const c2 = await cancel(a, 'later', 'order:7/expire', 'asked');
    assert.deepEqual(c2.json, { ok: false, status: 'absent', queue: 'later', timerKey: 'order:7/expire', txn: 'asked',
      messageId: null, deliverAt: null });
    assert.equal((await cancel(a, 'later', 'order:7/expire')).json.txn, null);
    assert.deepEqual((await peek(a, 'later', 'order:7/expire')).json, { found: false });
    // a cancel in a batch, and the ops of one key in request order
    const batch = await ops(a, [
      { op: 'cancel', queue: 'later', timerKey: 'fresh' },
      sched('later', 'x', '1', 600000),
      { op: 'cancel', queue: 'later', timerKey: 'x' },
      sched('later', 'x', '2', 600000),
      { op: 'cancel', queue: 'later', timerKey: 'nothing', txn: 'n-1' },
    ]);
    assert.deepEqual(batch.json.results.map((x) => x.status), ['cancelled', 'scheduled', 'cancelled', 'scheduled', 'absent']);
    assert.equal(batch.json.results[4].txn, 'n-1');
    assert.equal(unb64((await peek(b, 'later', 'x')).json.payload), '2');
    assert.equal((await cancel(b, 'later', 'x')).json.status, 'cancelled');
    // an empty batch does nothing and says so
    assert.deepEqual((await ops(a, [])).json, { results: [] });
  });

  test('keys with slashes, blanks and non-ASCII on the path routes', async () => {
    const keys = ['a/b/c', 'a//b/', '/lead', 'tail/', 'spa ce', 'caf\u00e9/\u6771', 'per%cent', 'q?x#y'];
    const r = await ops(a, keys.map((k, i) => sched('paths', k, String(i), 600000)));
    assert.deepEqual(r.json.results.map((x) => x.status), keys.map(() => 'scheduled'));
    for (const [i, k] of keys.entries()) {
      const p = await peek(b, 'paths', k);
      assert.equal(p.status, 200, `${k}: ${p.text}`);
      assert.equal(p.json.timerKey, k);
      assert.equal(unb64(p.json.payload), String(i));
    }
    // an encoded slash is a slash too
    assert.equal((await get(a.url, '/api/v1/timers/paths/a%2Fb%2Fc')).json.timerKey, 'a/b/c');
    for (const k of keys) {
      const c = await cancel(a, 'paths', k);
      assert.equal(c.json.status, 'cancelled', `${k}: ${c.text}`);
    }
    assert.deepEqual(await pending(a, 'paths'), []);
  });

  test('the listing pages one queue in key byte order, clamps limit, and says when it is cut', async () => {
    const keys = ['b', 'B', 'a', 'a/1', 'a0', '\u00e9', 'z', 'Z9', '~', '0'];
    const r = await ops(a, keys.map((k) => sched('listed', k, JSON.stringify(k), 600000)));
    assert.equal(r.status, 200, r.text);
    await ops(a, [sched('listed-other', 'a', '1', 600000)]);
    const order = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    const seen = [];
    let after = '';
    let pages = 0;
    for (;;) {
      const l = await get(b.url, `/api/v1/timers/listed?limit=3${after ? `&after=${encodeURIComponent(after)}` : ''}`);
      assert.equal(l.status, 200, l.text);
      assert.deepEqual(Object.keys(l.json), ['rows', 'truncated', 'nextAfter']);
      pages++;
      seen.push(...l.json.rows.map((x) => x.timerKey));
      for (const x of l.json.rows) assert.equal(unb64(x.payload), JSON.stringify(x.timerKey));
      if (!l.json.truncated) { assert.equal(l.json.nextAfter, null); break; }
      assert.equal(l.json.nextAfter, l.json.rows[l.json.rows.length - 1].timerKey);
      after = l.json.nextAfter;
    }
    assert.deepEqual(seen, order);
    assert.equal(pages, 4);
    // after is exclusive and need not be a key that exists
    const mid = await get(a.url, '/api/v1/timers/listed?after=a0x&limit=2');
    assert.deepEqual(mid.json.rows.map((x) => x.timerKey), order.slice(order.indexOf('a0') + 1, order.indexOf('a0') + 3));
    // limit is clamped, never refused: 0 and -5 give one row, 100000 gives them all
    for (const lim of ['0', '-5']) {
      const l = await get(a.url, `/api/v1/timers/listed?limit=${lim}`);
      assert.equal(l.status, 200, l.text);
      assert.equal(l.json.rows.length, 1);
      assert.equal(l.json.truncated, true);
    }
    const all = await get(a.url, '/api/v1/timers/listed?limit=100000');
    assert.equal(all.json.rows.length, keys.length);
    assert.equal(all.json.truncated, false);
    // the default page is 100
    await ops(a, Array.from({ length: 120 }, (_, i) => sched('listed-many', `k${String(i).padStart(3, '0')}`, '1', 600000)));
    const dflt = await get(a.url, '/api/v1/timers/listed-many');
    assert.equal(dflt.json.rows.length, 100);
    assert.equal(dflt.json.truncated, true);
    assert.equal(dflt.json.nextAfter, 'k099');
    // a queue with none, and one that does not exist
    assert.deepEqual((await get(a.url, '/api/v1/timers/never-seen')).json, { rows: [], truncated: false, nextAfter: null });
    refusal(await get(a.url, '/api/v1/timers/listed?limit=ten'), 400, 'timer_invalid_limit:not_integer', /^limit must be an integer/);
    refusal(await get(a.url, `/api/v1/timers/listed?after=${'k'.repeat(1025)}`), 400, 'timer_invalid_cursor:after_too_long');
    await ops(a, [...keys.map((k) => ({ op: 'cancel', queue: 'listed', timerKey: k })), { op: 'cancel', queue: 'listed-other', timerKey: 'a' }]);
    await ops(a, Array.from({ length: 120 }, (_, i) => ({ op: 'cancel', queue: 'listed-many', timerKey: `k${String(i).padStart(3, '0')}` })));
  });

  test('a listing carries at most 16 MiB of records and pages the rest', async () => {
    const big = `"${'p'.repeat((4 << 20) - 2)}"`; // the largest payload a timer takes
    const c = await ops(a, Array.from({ length: 5 }, (_, i) => sched('bulky', `k${i}`, big, 600000)));
    assert.equal(c.status, 200, c.text.slice(0, 300));
    const tooBig = await ops(a, [sched('bulky', 'k9', `"${'p'.repeat(4 << 20)}"`, 1)]);
    refusal(tooBig, 400, 'timer_limit_exceeded:payload_too_large', /^operations\[0\]: payload is 4194306 bytes; a timer's payload may have at most 4194304$/);
    const l1 = await get(a.url, '/api/v1/timers/bulky');
    assert.equal(l1.status, 200);
    assert.equal(l1.json.rows.length, 4);
    assert.equal(l1.json.truncated, true);
    assert.equal(unb64(l1.json.rows[0].payload).length, (4 << 20));
    const l2 = await get(a.url, `/api/v1/timers/bulky?after=${l1.json.nextAfter}`);
    assert.equal(l2.json.rows.length, 1);
    assert.equal(l2.json.truncated, false);
    await ops(a, Array.from({ length: 5 }, (_, i) => ({ op: 'cancel', queue: 'bulky', timerKey: `k${i}` })));
  });

  test('payloadZstd: one frame with its size in the header, stored and delivered decompressed', async () => {
    // '{"zipped": true, "n": [1, 2, 3], "pad": "zzz…"}' (243 bytes), zstd level 1, with and without the size
    const FRAME = 'KLUv/SDzpQEAxAJ7InppcHBlZCI6IHRydWUsICJuIjogWzEsIDIsIDNdLCAicGFkIjogInoifQEAIlKgDA==';
    const SIZELESS = 'KLUv/QAApQEAxAJ7InppcHBlZCI6IHRydWUsICJuIjogWzEsIDIsIDNdLCAicGFkIjogInoifQEAIlKgDA==';
    const text = `{"zipped": true, "n": [1, 2, 3], "pad": "${'z'.repeat(200)}"}`;
    const r = await ops(a, [{ op: 'schedule', queue: 'zipped', timerKey: 'z', payload: FRAME, payloadZstd: true, delayMs: 100, txn: 'z-1' }]);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.results[0].status, 'scheduled');
    const recs = await waitRecords(b, 'zipped', 1, 10000);
    assert.equal(recs.length, 1);
    assert.equal(recs[0].transactionId, 'z-1');
    assert.deepEqual(recs[0].payload, JSON.parse(text));
    const raw = (await readQueue(b.url, 'zipped')).raws[0];
    assert.equal(raw, text);
    const bad = await ops(a, [{ op: 'schedule', queue: 'zipped', timerKey: 'y', payload: SIZELESS, payloadZstd: true, delayMs: 1 }]);
    refusal(bad, 400, 'timer_invalid_payload:zstd_invalid', /content size/);
    const notFrame = await ops(a, [{ op: 'schedule', queue: 'zipped', timerKey: 'y', payload: b64(text), payloadZstd: true, delayMs: 1 }]);
    refusal(notFrame, 400, 'timer_invalid_payload:zstd_invalid', /not a zstd frame/);
    assert.deepEqual(await pending(a, 'zipped'), []);
  });

  test('a cancelled timer never fires; a rescheduled one fires once, as replaced', async () => {
    await ops(a, [sched('replaced', 'gone', '"never"', 1500, { txn: 'c-1' }), sched('replaced', 'moved', '"old"', 1500, { txn: 'r-1' })]);
    assert.equal((await cancel(b, 'replaced', 'gone')).json.status, 'cancelled');
    assert.equal((await ops(b, [sched('replaced', 'moved', '"new"', 1000, { txn: 'r-2' })])).json.results[0].status, 'rescheduled');
    const recs = await waitRecords(a, 'replaced', 1, 10000);
    await sleep(2500);
    const final = (await readQueue(a.url, 'replaced')).records;
    assert.deepEqual(final.map((x) => [x.transactionId, x.payload]), [['r-2', 'new']]);
    assert.equal(recs.length, 1);
    // and now the key is free again
    assert.equal((await ops(a, [sched('replaced', 'moved', '"third"', 600000)])).json.results[0].status, 'scheduled');
    await cancel(a, 'replaced', 'moved');
  });

  test('200 timers scheduled on both nodes fire exactly once each, byte for byte', async () => {
    const N = 200;
    const txns = [];
    const mk = (i) => {
      txns.push(`fire-${i}`);
      return sched('fired', `k${i}`, `{"i": ${i}, "amount": ${i}.50}`, 500 + (i * 10) % 1500, { partition: `p${i % 7}`, txn: `fire-${i}` });
    };
    const firedBefore = (await metric(a, 'queen_timers_fired_total')) + (await metric(b, 'queen_timers_fired_total'));
    const halves = [[], []];
    for (let i = 0; i < N; i++) halves[i % 2].push(mk(i));
    // half as one batch, half one request each, to both nodes
    const ra = await ops(a, halves[0]);
    assert.equal(ra.status, 200, ra.text);
    const rb = await Promise.all(halves[1].map((op) => ops(b, [op])));
    for (const r of rb) assert.equal(r.json.results[0].status, 'scheduled', r.text);
    const recs = await waitRecords(a, 'fired', N, 30000);
    await sleep(1500); // anything doubled would show up by now
    const { records, raws } = await readQueue(b.url, 'fired');
    assertEachOnce(records, txns);
    assert.equal(recs.length, N);
    records.forEach((r, k) => {
      const i = Number(r.transactionId.slice(5));
      assert.equal(raws[k], `{"i": ${i}, "amount": ${i}.50}`);
    });
    assert.deepEqual(await pending(a, 'fired'), []);
    const firedAfter = (await metric(a, 'queen_timers_fired_total')) + (await metric(b, 'queen_timers_fired_total'));
    assert.equal(firedAfter - firedBefore, N);
  });

  test('reschedules racing the firing rounds of both nodes: every timer delivered exactly once, as last replaced', async () => {
    const K = 30;
    const OPS = 16;
    const answers = new Map(); // key -> [{status, txn}] in the order each key's ops were sent
    const counts = {};
    let seq = 0;
    // each key's ops one after another (so their order is known), the keys in parallel,
    // alternating the nodes, with delays from none to a few ops long: rounds of both nodes
    // fire some of these timers while the next reschedule is on its way
    await Promise.all(Array.from({ length: K }, async (_, k) => {
      const key = `race-${k}`;
      const list = [];
      answers.set(key, list);
      for (let i = 0; i < OPS; i++) {
        const txn = `${key}-${i}`;
        const node = (k + i) % 2 ? a : b;
        // every fourth a while away (the next op surely replaces it), the others due about now
        const delay = i % 4 === 0 && i < OPS - 1 ? 2000 : (seq++ * 7) % 120;
        const op = sched('raced', key, JSON.stringify({ key, i }), delay, { txn, op: i % 3 ? 'reschedule' : 'schedule' });
        const r = await ops(node, [op]);
        assert.equal(r.status, 200, r.text);
        const { status, txn: got } = r.json.results[0];
        counts[status] = (counts[status] || 0) + 1;
        list.push({ status, txn: got, sent: txn });
      }
    }));
    // every timer due by now: wait until none is pending, then for anything doubled
    for (let i = 0; i < 100 && (await pending(a, 'raced')).length; i++) await sleep(200);
    assert.deepEqual(await pending(a, 'raced'), []);
    await sleep(1500);
    const recs = (await readQueue(b.url, 'raced')).records;
    console.log(`race: ${JSON.stringify(counts)}; ${recs.length} delivered`);
    const byKey = new Map();
    for (const r of recs) {
      const { key } = r.payload;
      if (!byKey.has(key)) byKey.set(key, []);
      byKey.get(key).push(r.transactionId);
    }
    for (const [key, list] of answers) {
      // replay the verdicts: a generation starts with "scheduled" (the previous one, if any,
      // was delivered before that op), takes the txn of each "rescheduled", and ends delivered
      // when the next op comes too late, when a later op finds it gone, or at the end
      const expected = [];
      let current = null;
      for (const x of list) {
        if (x.status === 'scheduled') {
          if (current) expected.push(current);
          current = x.sent;
        } else if (x.status === 'rescheduled') {
          assert.ok(current, `${key}: rescheduled with nothing pending: ${JSON.stringify(list)}`);
          current = x.sent;
        } else if (x.status === 'too_late') {
          assert.equal(x.txn, current, `${key}: too_late names the timer delivered`);
          expected.push(current);
          current = null;
        } else {
          assert.fail(`${key}: unexpected ${x.status}`);
        }
      }
      if (current) expected.push(current);
      const got = byKey.get(key) || [];
      assert.deepEqual([...got].sort(), [...expected].sort(), `${key}: delivered ${JSON.stringify(got)}, verdicts ${JSON.stringify(list)}`);
      assert.equal(new Set(got).size, got.length, `${key}: a txn delivered twice`);
    }
    assert.ok(counts.rescheduled > 0, JSON.stringify(counts));
  });

  test('an op that meets its timer in a firing round waits for it: too_late when the round commits', async () => {
    const held = psqlSession(pg);
    try {
      for (const [kind, key] of [['reschedule', 'hot-r'], ['cancel', 'hot-c']]) {
        const s = await ops(a, [sched('late', key, `{"v":"old-${kind}"}`, 3600000, { txn: `old-${kind}` })]);
        const deliverAt = s.json.results[0].deliverAt;
        // a round of the test's own, held open: it took the timer (made due on the database's
        // clock first, inside the same transaction, so no node's round can take it)
        held.out = '';
        held.send(`BEGIN; UPDATE queen.log_timers SET fire_at = queen.now_us() WHERE queue = 'late' AND timer_key = '${key}';
          SELECT 'fired ' || o_fired FROM queen.timers_fire_v2(1000, 16777216, 86400000000);`);
        await held.until(/fired [1-9]/);
        const op = kind === 'cancel' ? { op: 'cancel', queue: 'late', timerKey: key }
          : sched('late', key, '{"v":"new"}', 600000, { txn: 'new', op: 'reschedule' });
        let answered = null;
        const inflight = ops(b, [op]).then((r) => { answered = r; return r; });
        await sleep(700);
        assert.equal(answered, null, 'the op did not wait for the round');
        held.send('COMMIT;');
        const r = await inflight;
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(r.json.results[0], { ok: false, status: 'too_late', queue: 'late', timerKey: key,
          txn: `old-${kind}`, messageId: null, deliverAt });
        // the old timer was delivered, once; nothing new is pending under the key
        assert.deepEqual((await peek(a, 'late', key)).json, { found: false });
      }
      const recs = (await readQueue(a.url, 'late')).records;
      assert.deepEqual(recs.map((x) => [x.transactionId, x.payload.v]), [['old-reschedule', 'old-reschedule'], ['old-cancel', 'old-cancel']]);
      assert.ok((await metric(b, 'queen_timers_too_late_total')) >= 2);

      // a round that rolls back leaves the timer as it was: the waiting op then applies
      await ops(a, [sched('late', 'hot-back', '{"v":"old"}', 3600000, { txn: 'back-1' })]);
      held.out = '';
      held.send(`BEGIN; UPDATE queen.log_timers SET fire_at = queen.now_us() WHERE queue = 'late' AND timer_key = 'hot-back';
        SELECT 'fired ' || o_fired FROM queen.timers_fire_v2(1000, 16777216, 86400000000);`);
      await held.until(/fired [1-9]/);
      const inflight = ops(b, [sched('late', 'hot-back', '{"v":"new"}', 3600000, { txn: 'back-2' })]);
      await sleep(500);
      held.send('ROLLBACK;');
      const r = await inflight;
      assert.equal(r.json.results[0].status, 'rescheduled', r.text);
      const p = await peek(a, 'late', 'hot-back');
      assert.equal(p.json.txn, 'back-2');
      assert.equal((await readQueue(a.url, 'late')).records.length, 2);
      await cancel(a, 'late', 'hot-back');
    } finally {
      await held.close();
    }
  });

  test('a fired timer wakes the long-polling pops of both nodes', async () => {
    assert.equal((await post(a.url, '/api/v1/configure', { queue: 'wake' })).status, 200);
    const pa = get(a.url, '/api/v1/pop/queue/wake/partition/pa?wait=true&timeout=30000');
    const pb = get(b.url, '/api/v1/pop/queue/wake/partition/pb?wait=true&timeout=30000');
    await sleep(500);
    const c = await ops(b, [sched('wake', 'a', '"a"', 300, { partition: 'pa' }), sched('wake', 'b', '"b"', 300, { partition: 'pb' })]);
    assert.equal(c.status, 200, c.text);
    const t0 = Date.now();
    const [ra, rb] = await Promise.all([pa, pb]);
    // a pop nobody wakes would wait out its 30 s
    assert.ok(Date.now() - t0 < 10000, `woken after ${Date.now() - t0} ms`);
    assert.equal(ra.status, 200, ra.text);
    assert.equal(rb.status, 200, rb.text);
    assert.deepEqual([ra.json.messages[0].data, rb.json.messages[0].data], ['a', 'b']);
  });

  test('a delay in the past fires on the next round', async () => {
    const c = await ops(b, [sched('past', 'p', '{"x":1}', -86400000, { txn: 'past-1' })]);
    assert.equal(c.status, 200, c.text);
    // deliverAt is now: the broker's clock, never the past the client named
    assert.ok(Math.abs(isoUs(c.json.results[0].deliverAt) - Date.now() * 1000) < 30e6, c.text);
    const recs = await waitRecords(a, 'past', 1, 10000);
    assert.deepEqual(recs.map((x) => [x.transactionId, x.payload]), [['past-1', { x: 1 }]]);
  });

  test('a txn already pushed to the partition is deduplicated like a push', async () => {
    const p = await post(a.url, '/api/v1/push', { items: [{ queue: 'dd', partition: 'x', transactionId: 'same', payload: 'pushed' }] });
    assert.equal(p.status, 201);
    const dupsBefore = (await metric(a, 'queen_timers_duplicates_total')) + (await metric(b, 'queen_timers_duplicates_total'));
    const c = await ops(a, [
      sched('dd', 'k1', '"timer"', 0, { partition: 'x', txn: 'same' }),
      sched('dd', 'k2', '"timer"', 0, { partition: 'x', txn: 'other' }),
      sched('dd', 'k3', '"timer again"', 0, { partition: 'x', txn: 'other' }),
    ]);
    assert.equal(c.status, 200, c.text);
    await waitRecords(a, 'dd', 2, 10000);
    await sleep(1000);
    const final = (await readQueue(a.url, 'dd')).records;
    assert.deepEqual(final.map((r) => [r.transactionId, r.payload]), [['same', 'pushed'], ['other', 'timer']]);
    assert.deepEqual(await pending(a, 'dd'), []);
    const dupsAfter = (await metric(a, 'queen_timers_duplicates_total')) + (await metric(b, 'queen_timers_duplicates_total'));
    assert.equal(dupsAfter - dupsBefore, 2);
  });

  test('queen.timer_ops_v1 applies in its caller\'s transaction (the contract of the transaction rider)', async () => {
    const hex = (t) => Buffer.from(t).toString('hex');
    // a record: flags 0x10 (producer txn), txn "rt", payload 1
    const rec = `\\x10${'02' + hex('rt')}01${hex('1')}`;
    const call = (key) => `SELECT o_status FROM queen.timer_ops_v1('00000000-0000-0000-0000-000000000001', ARRAY[0],
      ARRAY['rider'], ARRAY['${key}'], ARRAY['Default'], ARRAY['rt'], ARRAY[3600000000]::int8[], ARRAY[gen_random_uuid()],
      ARRAY[1], ARRAY['${rec}'::bytea]);`;
    pg.psqlScript(`BEGIN; ${call('rolled-back')} ROLLBACK;`);
    pg.psqlScript(`BEGIN; ${call('committed')} COMMIT;`);
    // a transaction that fails after the ops (a rider whose pushes fail) keeps none of them
    assert.throws(() => pg.psqlScript(`BEGIN; ${call('failed')} SELECT 1 / 0; COMMIT;`), /division by zero/);
    assert.deepEqual((await pending(a, 'rider')).map((x) => x.timerKey), ['committed']);
    assert.equal(unb64((await peek(b, 'rider', 'committed')).json.payload), '1');
    // a plaintext record for an encrypted queue is refused before anything is written (QE002);
    // the queue row is the test's own (these nodes have no key to configure one)
    pg.psql("INSERT INTO queen.queues (tenant_id, name, options, configured) VALUES ('00000000-0000-0000-0000-000000000001', 'rider-enc', '{\"encryptionEnabled\": true}', true)");
    assert.throws(() => pg.psqlScript(call('x').replace("ARRAY['rider']", "ARRAY['rider-enc']")),
      /timer_ops_v1: op 1 \(queue "rider-enc"\) needs its payload sealed/);
    assert.equal(pg.psql("SELECT count(*) FROM queen.log_timers WHERE queue = 'rider-enc'"), '0');
    pg.psql("DELETE FROM queen.queues WHERE name = 'rider-enc'"); // a row of the test's own: no clock, no partition
    await cancel(a, 'rider', 'committed');
  });

  describe('refusals: the 2.x envelope, a stable reason, nothing stored', () => {
    const S = { op: 'schedule', queue: 'q', timerKey: 'k', payload: b64('1'), delayMs: 5 };
    const cases = [
      ['{"operations":', 'timer_invalid_body:invalid_json', /^Invalid JSON: /],
      ['', 'timer_invalid_body:empty', /^the body is empty/],
      ['[]', 'timer_invalid_body:shape', /^the body is \{"operations": \[op, \.\.\.\]\} and nothing else/],
      [{ queue: 'q', delayMs: 5, payload: { a: 1 } }, 'timer_invalid_body:shape', /server-id timer body.* is retired/],
      [{ items: [{ queue: 'q', delayMs: 5 }] }, 'timer_invalid_body:shape', /is retired/],
      [{ operations: [S], timers: [] }, 'timer_invalid_body:shape', /nothing else/],
      [{ operations: {} }, 'timer_invalid_body:not_array', /^operations must be an array of timer ops$/],
      [{ operations: [{ ...S, op: 'fire' }] }, 'timer_invalid_op:op_unknown', /^operations\[0\]: op must be "schedule", "reschedule" or "cancel"$/],
      [{ operations: [S, 7] }, 'timer_invalid_op:not_object', /^operations\[1\]: an op must be a JSON object$/],
      [{ operations: [{ ...S, producerSub: 'mallory' }] }, 'timer_server_owned_field:server_owned', /^operations\[0\]: "producerSub" is owned by the server/],
      [{ operations: [{ ...S, deliverAt: '2030-01-01T00:00:00Z' }] }, 'timer_server_owned_field:server_owned', /"deliverAt" is owned/],
      [{ operations: [{ ...S, delay_seconds: 5 }] }, 'timer_server_owned_field:server_owned', /"delay_seconds" is owned/],
      [{ operations: [{ ...S, _trace: 1 }] }, 'timer_server_owned_field:server_owned', /"_trace" is owned/],
      [{ operations: [{ op: 'cancel', queue: 'q', timerKey: 'k', tenantId: 'x' }] }, 'timer_server_owned_field:server_owned', /"tenantId" is owned/],
      [{ operations: [{ ...S, fireAt: 5 }] }, 'timer_unknown_field:unknown', /unknown field "fireAt"/],
      [{ operations: [{ op: 'cancel', queue: 'q', timerKey: 'k', payload: 'MQ==' }] }, 'timer_unknown_field:not_for_cancel', /a cancel takes/],
      [{ operations: [{ ...S, queue: undefined }] }, 'timer_invalid_name:queue_missing', /queue is required/],
      [{ operations: [{ ...S, queue: 'q'.repeat(256) }] }, 'timer_invalid_name:queue_invalid', /1 to 255 bytes/],
      [{ operations: [{ ...S, timerKey: '' }] }, 'timer_invalid_name:key_invalid', /1 to 1024 bytes/],
      [{ operations: [{ ...S, timerKey: 'k\u0000' }] }, 'timer_invalid_name:key_missing', /timerKey is required/],
      [{ operations: [{ ...S, txn: 5 }] }, 'timer_invalid_name:txn_invalid', /txn must be a string/],
      [{ operations: [{ ...S, partition: '' }] }, 'timer_invalid_name:partition_invalid', /partition must be 1 to 255/],
      [{ operations: [{ ...S, delayMs: '5' }] }, 'timer_invalid_delay:not_integer', /delayMs must be an integer/],
      [{ operations: [{ ...S, delayMs: 1.5 }] }, 'timer_invalid_delay:not_integer', /delayMs must be an integer/],
      [{ operations: [{ ...S, delayMs: undefined }] }, 'timer_invalid_delay:missing', /delayMs is required/],
      [{ operations: [{ ...S, delayMs: 315360000001 }] }, 'timer_invalid_delay:out_of_range', /between -315360000000 and 315360000000/],
      [{ operations: [{ ...S, payload: undefined }] }, 'timer_invalid_payload:missing', /payload is required/],
      [{ operations: [{ ...S, payload: { a: 1 } }] }, 'timer_invalid_payload:not_base64', /payload must be a string/],
      [{ operations: [{ ...S, payload: 'a b' }] }, 'timer_invalid_payload:not_base64', /payload is not base64/],
      [{ operations: [{ ...S, payload: b64('{"a":') }] }, 'timer_invalid_payload:not_json', /payload must be one JSON text/],
      [{ operations: [{ ...S, payload: '' }] }, 'timer_invalid_payload:not_json', /it is empty/],
      [{ operations: [{ ...S, payloadZstd: 'yes' }] }, 'timer_invalid_payload:zstd_invalid', /true or false/],
      [{ operations: Array.from({ length: 1001 }, (_, i) => ({ op: 'cancel', queue: 'q', timerKey: `k${i}` })) }, 'timer_limit_exceeded:too_many_ops', /at most 1000/],
    ];
    for (const [body, want, detail] of cases) {
      test(`${want}: ${JSON.stringify(body).slice(0, 90)}`, async () => {
        const j = refusal(await post(a.url, '/api/v1/timers', body), 400, want, detail);
        // the op at fault, when one is
        const at = /^operations\[(\d+)\]/.exec(j.detail);
        assert.equal(j.index, at ? Number(at[1]) : undefined, JSON.stringify(j));
      });
    }
    test('the path routes: the queue and key bounds, the retired server-id routes', async () => {
      refusal(await get(a.url, `/api/v1/timers/q/${'k'.repeat(1025)}`), 400, 'timer_invalid_name:key_invalid');
      refusal(await api(a.url, 'DELETE', `/api/v1/timers/${'q'.repeat(256)}/k`), 400, 'timer_invalid_name:queue_invalid');
      refusal(await api(a.url, 'DELETE', `/api/v1/timers/q/k?txn=${'t'.repeat(256)}`), 400, 'timer_invalid_name:txn_invalid');
      // GET /api/v1/timers (the tenant-wide list) and DELETE /api/v1/timers/:id are gone
      assert.equal((await get(a.url, '/api/v1/timers')).status, 405);
      assert.equal((await api(a.url, 'DELETE', '/api/v1/timers/01900000-0000-7000-8000-000000000000')).status, 405);
      // a GET of /api/v1/timers/<uuid> is now the (empty) listing of a queue of that name
      assert.deepEqual((await get(a.url, '/api/v1/timers/01900000-0000-7000-8000-000000000000')).json,
        { rows: [], truncated: false, nextAfter: null });
    });
    test('nothing was stored by the bad requests', () => {
      assert.equal(pg.psql("SELECT count(*) FROM queen.log_timers WHERE queue = 'q'"), '0');
    });
  });
});

describe('nodes that stop', () => {
  let pg;
  before(async () => { pg = await startPostgres(); });
  after(() => { if (pg) pg.destroy(); });

  test('a timer due while no node runs fires when one starts', async () => {
    const a = await startQueen({ env: { QUEEN_PG_URL: pg.url, QUEEN_NODE_ID: 'a' } });
    const c = await ops(a, [sched('offline', 'k', '"late"', 600000, { txn: 'off-1' })]);
    assert.equal(c.json.results[0].status, 'scheduled', c.text);
    await a.stop();
    rmrf(a.data);
    // with every node down, the timer falls due (moved on the database's clock, so no race
    // with how long the node took to stop)
    pg.psql("UPDATE queen.log_timers SET fire_at = queen.now_us() - 1000000 WHERE queue = 'offline'");
    await sleep(1000);
    assert.equal(pg.psql('SELECT count(*) FROM queen.log_timers WHERE fire_at < queen.now_us()'), '1');
    const b = await startQueen({ env: { QUEEN_PG_URL: pg.url, QUEEN_NODE_ID: 'b' } });
    try {
      const recs = await waitRecords(b, 'offline', 1, 15000);
      assert.deepEqual(recs.map((x) => [x.transactionId, x.payload]), [['off-1', 'late']]);
      assert.equal(pg.psql('SELECT count(*) FROM queen.log_timers'), '0');
    } finally {
      await b.stop();
      rmrf(b.data);
    }
  });

  test('a node killed while firing loses no timer and doubles none', async () => {
    const N = 2000;
    // small rounds, so firing 2000 timers takes many transactions and the kill lands mid-way
    const a = await startQueen({ env: { QUEEN_PG_URL: pg.url, QUEEN_NODE_ID: 'a', QUEEN_TIMER_FIRE_BATCH: '5' } });
    const txns = [];
    let b = null;
    try {
      // scheduled far in the future, then all made due at once on the database's clock: how
      // long the scheduling took under load cannot let node a finish before the kill
      for (let s = 0; s < N; s += 500) {
        const batch = [];
        for (let i = s; i < s + 500; i++) {
          txns.push(`k-${i}`);
          batch.push(sched('killed', `k-${i}`, JSON.stringify({ i }), 3600000, { partition: `p${i % 13}`, txn: `k-${i}` }));
        }
        const r = await ops(a, batch);
        assert.equal(r.status, 200, r.text);
      }
      assert.equal(await metric(a, 'queen_timers_fired_total'), 0);
      pg.psql("UPDATE queen.log_timers SET fire_at = queen.now_us() WHERE queue = 'killed'");
      // wait until a is firing, then kill it
      const deadline = Date.now() + 30000;
      let fired = 0;
      while (Date.now() < deadline) {
        fired = await metric(a, 'queen_timers_fired_total');
        if (fired >= 100) break;
        await sleep(5);
      }
      assert.ok(fired >= 100, `node a fired only ${fired} timers`);
      await a.kill9();
      await sleep(500);
      const left = Number(pg.psql('SELECT count(*) FROM queen.log_timers'));
      console.log(`killed after ${fired} fired by metric; ${left} timers left`);
      assert.ok(left > 0 && left < N, `the kill did not land mid-firing (${left} timers left)`);
      b = await startQueen({ env: { QUEEN_PG_URL: pg.url, QUEEN_NODE_ID: 'b' } });
      const recs = await waitRecords(b, 'killed', N, 60000);
      assert.equal(recs.length, N);
      await sleep(1000);
      assertEachOnce((await readQueue(b.url, 'killed')).records, txns);
      assert.equal(pg.psql('SELECT count(*) FROM queen.log_timers'), '0');
      // offsets stayed dense: nothing was half-written by the killed round
      const parts = await listPartitions(b.url, 'killed');
      const total = parts.partitions.reduce((s, p) => s + p.lastOffset + 1, 0);
      assert.equal(total, N);
    } finally {
      if (!a.exited) await a.kill9();
      rmrf(a.data);
      if (b) { await b.stop(); rmrf(b.data); }
    }
  });
});

test('timers stored before the keys (migration 045) are keyed by their id and still fire', async () => {
  const pg = await startPostgres();
  let node = null;
  try {
    // the previous release's database, with a server-id timer in it
    pg.psql('CREATE DATABASE legacy');
    pg.psqlScript(fs.readFileSync(path.join(ROOT, 'tests/integration/fixtures/schema-5d18872.sql'), 'utf8'), 'legacy');
    const id = '01900000-0000-7000-8000-00000000abcd';
    // record: flags 0x10 (producer txn), txn "t-legacy", payload {"legacy":1}
    const rec = '10' + '08' + Buffer.from('t-legacy').toString('hex') + '0c' + Buffer.from('{"legacy":1}').toString('hex');
    pg.psql(`INSERT INTO queen.log_timers (id, tenant_id, queue, partition, fire_at, txn_id, txn_producer, payload_bytes, record, created_at)
      VALUES ('${id}', '00000000-0000-0000-0000-000000000001', 'legacy', 'Default', queen.now_us() + 3600000000, 't-legacy', true, 12,
              '\\x${rec}', queen.now_us())`, 'legacy');
    node = await startQueen({ env: { QUEEN_PG_URL: pg.urlOf('legacy') } });
    const p = await peek(node, 'legacy', id);
    assert.equal(p.status, 200, p.text);
    assert.equal(p.json.found, true, p.text);
    assert.equal(p.json.txn, 't-legacy');
    assert.equal(unb64(p.json.payload), '{"legacy":1}');
    assert.equal(p.json.attempts, 0);
    assert.deepEqual((await get(node.url, '/api/v1/timers/legacy')).json.rows.map((x) => x.timerKey), [id]);
    // it fires as it was
    pg.psql("UPDATE queen.log_timers SET fire_at = queen.now_us() WHERE queue = 'legacy'", 'legacy');
    const recs = await waitRecords(node, 'legacy', 1, 10000);
    assert.deepEqual(recs.map((x) => [x.transactionId, x.payload]), [['t-legacy', { legacy: 1 }]]);
    // a timer a node of the previous build inserts during a rolling upgrade gets a key of its own
    pg.psql(`INSERT INTO queen.log_timers (id, tenant_id, queue, partition, fire_at, txn_id, txn_producer, payload_bytes, record, created_at)
      VALUES ('01900000-0000-7000-8000-00000000abce', '00000000-0000-0000-0000-000000000001', 'legacy', 'Default',
              queen.now_us() + 3600000000, 't-old-node', true, 12, '\\x${rec}', queen.now_us())`, 'legacy');
    const rows = (await get(node.url, '/api/v1/timers/legacy')).json.rows;
    assert.equal(rows.length, 1);
    assert.match(rows[0].timerKey, /^[0-9a-f-]{36}$/);
  } finally {
    if (node) { await node.stop(); rmrf(node.data); }
    pg.destroy();
  }
});
