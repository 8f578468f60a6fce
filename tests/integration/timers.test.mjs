// Timers on the real binary: create, get, list, cancel; firing exactly once with two nodes on
// one PostgreSQL; a timer due while no node ran fires when one starts; a node killed with
// SIGKILL in the middle of firing thousands of timers loses none and doubles none; producer
// transactionIds are deduplicated like a push; bad input answers 400.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { api, get, listPartitions, post, readQueue, rmrf, sleep, startPostgres, startQueen } from './harness.mjs';

async function metric(node, name) {
  const r = await get(node.url, '/metrics/prometheus');
  const line = r.text.split('\n').find((l) => l.startsWith(name + ' '));
  return line ? Number(line.split(' ')[1]) : 0;
}

async function fetchQueue(node, queue) {
  const r = await readQueue(node.url, queue);
  return { records: r.records, raws: r.raws };
}

// Polls until the queue holds `n` records (or the deadline passes); returns the records.
async function waitRecords(node, queue, n, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let recs = [];
  while (Date.now() < deadline) {
    recs = (await fetchQueue(node, queue)).records;
    if (recs.length >= n) break;
    await sleep(200);
  }
  return recs;
}

function assertEachOnce(recs, txns) {
  const counts = new Map();
  for (const r of recs) counts.set(r.transactionId, (counts.get(r.transactionId) || 0) + 1);
  for (const t of txns) assert.equal(counts.get(t), 1, `transactionId ${t} appeared ${counts.get(t) || 0} times`);
  assert.equal(recs.length, txns.length, 'records other than the timers were pushed');
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

  test('create, get, list with paging, cancel', async () => {
    const payload = '{ "order" : 7, "total": 42.00, "name": "caf\\u00e9" }';
    const c = await post(a.url, '/api/v1/timers',
      `{"queue":"later","partition":"p1","delayMs":600000,"payload":${payload},"transactionId":"t-get",` +
      '"traceId":"0190c2d4-0000-7000-8000-000000000001"}');
    assert.equal(c.status, 201, c.text);
    assert.match(c.json.timerId, /^[0-9a-f-]{36}$/);
    assert.equal(c.json.queue, 'later');
    assert.equal(c.json.partition, 'p1');
    assert.equal(c.json.transactionId, 't-get');
    assert.ok(Math.abs(c.json.fireAt - (Date.now() + 600000) * 1000) < 60e6);
    // any node answers for it
    const g = await get(b.url, `/api/v1/timers/${c.json.timerId}`);
    assert.equal(g.status, 200, g.text);
    assert.equal(g.json.fireAt, c.json.fireAt);
    assert.equal(g.json.traceId, '0190c2d4-0000-7000-8000-000000000001');
    assert.equal(/"payload":([\s\S]*),"createdAt":/.exec(g.text)[1], payload);

    const more = await post(a.url, '/api/v1/timers', { items: [
      { queue: 'later', delayMs: 600000, payload: 1 },
      { queue: 'later', fireAt: new Date(Date.now() + 3600e3).toISOString(), payload: 2 },
      { queue: 'elsewhere', delayMs: 600000, payload: 3 },
    ] });
    assert.equal(more.status, 201, more.text);
    assert.equal(more.json.length, 3);
    const p1 = await get(b.url, '/api/v1/timers?queue=later&limit=2');
    assert.equal(p1.status, 200, p1.text);
    assert.equal(p1.json.timers.length, 2);
    assert.equal(p1.json.more, true);
    const p2 = await get(b.url, `/api/v1/timers?queue=later&limit=2&after=${p1.json.after}`);
    assert.equal(p2.json.timers.length, 1);
    assert.equal(p2.json.more, false);
    const ids = [...p1.json.timers, ...p2.json.timers].map((t) => t.timerId);
    assert.deepEqual(ids, [c.json.timerId, more.json[0].timerId, more.json[1].timerId]);
    const all = await get(a.url, '/api/v1/timers');
    assert.ok(all.json.timers.some((t) => t.queue === 'elsewhere'));

    const del = await api(b.url, 'DELETE', `/api/v1/timers/${c.json.timerId}`);
    assert.equal(del.status, 200, del.text);
    assert.deepEqual(del.json, { timerId: c.json.timerId, cancelled: true });
    assert.equal((await get(a.url, `/api/v1/timers/${c.json.timerId}`)).status, 404);
    const again = await api(a.url, 'DELETE', `/api/v1/timers/${c.json.timerId}`);
    assert.equal(again.status, 404);
    assert.match(again.json.error, /^timer not found/);
    for (const t of more.json) assert.equal((await api(a.url, 'DELETE', `/api/v1/timers/${t.timerId}`)).status, 200);
  });

  test('a listing carries at most 16 MiB of records and pages the rest', async () => {
    const payload = `"${'p'.repeat((4 << 20) - 2)}"`; // the largest payload a timer takes
    const items = Array.from({ length: 5 }, () => `{"queue":"bulky","delayMs":600000,"payload":${payload}}`);
    const c = await post(a.url, '/api/v1/timers', `{"items":[${items.join(',')}]}`);
    assert.equal(c.status, 201, c.text.slice(0, 300));
    const tooBig = await post(a.url, '/api/v1/timers', `{"queue":"bulky","delayMs":1,"payload":"${'p'.repeat(4 << 20)}"}`);
    assert.equal(tooBig.status, 400);
    assert.equal(tooBig.json.error, "payload is 4194306 bytes; a timer's payload may have at most 4194304");
    const l1 = await get(a.url, '/api/v1/timers?queue=bulky');
    assert.equal(l1.status, 200);
    assert.equal(l1.json.timers.length, 4);
    assert.equal(l1.json.more, true);
    assert.equal(l1.json.timers[0].payload.length, (4 << 20) - 2);
    const l2 = await get(a.url, `/api/v1/timers?queue=bulky&after=${l1.json.after}`);
    assert.equal(l2.json.timers.length, 1);
    assert.equal(l2.json.more, false);
    for (const t of c.json) assert.equal((await api(a.url, 'DELETE', `/api/v1/timers/${t.timerId}`)).status, 200);
  });

  test('cancel prevents firing', async () => {
    const c = await post(a.url, '/api/v1/timers', { queue: 'cancelled', delayMs: 1500, payload: 'never', transactionId: 'cx' });
    assert.equal(c.status, 201);
    assert.equal((await api(b.url, 'DELETE', `/api/v1/timers/${c.json.timerId}`)).status, 200);
    await sleep(3000);
    assert.equal((await fetchQueue(a, 'cancelled')).records.length, 0);
  });

  test('200 timers created on both nodes fire exactly once each, byte for byte', async () => {
    const N = 200;
    const txns = [];
    const mk = (i) => {
      txns.push(`fire-${i}`);
      return `{"queue":"fired","partition":"p${i % 7}","delayMs":${500 + (i * 10) % 1500},"transactionId":"fire-${i}",` +
        `"payload":{"i": ${i}, "amount": ${i}.50}}`;
    };
    const firedBefore = (await metric(a, 'queen_timers_fired_total')) + (await metric(b, 'queen_timers_fired_total'));
    const bodies = [[], []];
    for (let i = 0; i < N; i++) bodies[i % 2].push(mk(i));
    // half as one batch, half one request each, to both nodes
    const ra = await post(a.url, '/api/v1/timers', `{"items":[${bodies[0].join(',')}]}`);
    assert.equal(ra.status, 201, ra.text);
    const rb = await Promise.all(bodies[1].map((body) => post(b.url, '/api/v1/timers', body)));
    for (const r of rb) assert.equal(r.status, 201, r.text);
    const recs = await waitRecords(a, 'fired', N, 30000);
    await sleep(1500); // anything doubled would show up by now
    const { records, raws } = await fetchQueue(b, 'fired');
    assertEachOnce(records, txns);
    assert.equal(recs.length, N);
    // payloads as sent; the records of one partition are in fire order
    records.forEach((r, k) => {
      const i = Number(r.transactionId.slice(5));
      assert.equal(raws[k], `{"i": ${i}, "amount": ${i}.50}`);
    });
    assert.equal((await get(a.url, '/api/v1/timers?queue=fired')).json.timers.length, 0);
    const firedAfter = (await metric(a, 'queen_timers_fired_total')) + (await metric(b, 'queen_timers_fired_total'));
    assert.equal(firedAfter - firedBefore, N);
  });

  test('a fired timer wakes the long-polling pops of both nodes', async () => {
    assert.equal((await post(a.url, '/api/v1/configure', { queue: 'wake' })).status, 200);
    const pa = get(a.url, '/api/v1/pop/queue/wake/partition/pa?wait=true&timeout=30000');
    const pb = get(b.url, '/api/v1/pop/queue/wake/partition/pb?wait=true&timeout=30000');
    await sleep(500);
    const c = await post(b.url, '/api/v1/timers', { items: [
      { queue: 'wake', partition: 'pa', delayMs: 300, payload: 'a' },
      { queue: 'wake', partition: 'pb', delayMs: 300, payload: 'b' }] });
    assert.equal(c.status, 201, c.text);
    const t0 = Date.now();
    const [ra, rb] = await Promise.all([pa, pb]);
    // a pop nobody wakes would wait out its 30 s
    assert.ok(Date.now() - t0 < 10000, `woken after ${Date.now() - t0} ms`);
    assert.equal(ra.status, 200, ra.text);
    assert.equal(rb.status, 200, rb.text);
    assert.deepEqual([ra.json.messages[0].data, rb.json.messages[0].data], ['a', 'b']);
  });

  test('a fireAt in the past fires at once; the record keeps its traceId', async () => {
    const c = await post(b.url, '/api/v1/timers', { queue: 'past', fireAt: '2020-01-01T00:00:00Z', payload: { x: 1 },
      traceId: '0190c2d4-0000-7000-8000-0000000000aa' });
    assert.equal(c.status, 201, c.text);
    const recs = await waitRecords(a, 'past', 1, 10000);
    assert.equal(recs.length, 1);
    assert.equal(recs[0].transactionId, c.json.transactionId);
    assert.equal(recs[0].traceId, '0190c2d4-0000-7000-8000-0000000000aa');
    assert.deepEqual(recs[0].payload, { x: 1 });
  });

  test('a producer transactionId already pushed is deduplicated like a push', async () => {
    const p = await post(a.url, '/api/v1/push', { items: [{ queue: 'dd', partition: 'x', transactionId: 'same', payload: 'pushed' }] });
    assert.equal(p.status, 201);
    const dupsBefore = (await metric(a, 'queen_timers_duplicates_total')) + (await metric(b, 'queen_timers_duplicates_total'));
    const c = await post(a.url, '/api/v1/timers', { items: [
      { queue: 'dd', partition: 'x', transactionId: 'same', delayMs: 0, payload: 'timer' },
      { queue: 'dd', partition: 'x', transactionId: 'other', delayMs: 0, payload: 'timer' },
      { queue: 'dd', partition: 'x', transactionId: 'other', delayMs: 0, payload: 'timer again' },
    ] });
    assert.equal(c.status, 201, c.text);
    const recs = await waitRecords(a, 'dd', 2, 10000);
    await sleep(1000);
    const final = (await fetchQueue(a, 'dd')).records;
    assert.equal(final.length, 2, JSON.stringify(recs));
    assert.deepEqual(final.map((r) => [r.transactionId, r.payload]), [['same', 'pushed'], ['other', 'timer']]);
    assert.equal((await get(a.url, '/api/v1/timers?queue=dd')).json.timers.length, 0);
    const dupsAfter = (await metric(a, 'queen_timers_duplicates_total')) + (await metric(b, 'queen_timers_duplicates_total'));
    assert.equal(dupsAfter - dupsBefore, 2);
  });

  describe('bad input', () => {
    const cases = [
      ['POST', '/api/v1/timers', '{"queue":', /^Invalid JSON: /],
      ['POST', '/api/v1/timers', '', /^Empty request body$/],
      ['POST', '/api/v1/timers', '{"delayMs":5}', /^queue is required \(a string\)$/],
      ['POST', '/api/v1/timers', '{"queue":"q"}', /^fireAt \(ISO-8601 or microseconds since the epoch\) or delayMs is required$/],
      ['POST', '/api/v1/timers', '{"queue":"q","delayMs":5,"fireAt":"2030-01-01T00:00:00Z"}', /^give either fireAt or delayMs, not both$/],
      ['POST', '/api/v1/timers', '{"queue":"q","fireAt":1767225600000}', /^fireAt must be between 2001-09-09 and 9999-12-31/],
      ['POST', '/api/v1/timers', '{"queue":"q","fireAt":"next week"}', /^fireAt must be an ISO-8601 timestamp/],
      ['POST', '/api/v1/timers', '{"queue":"q","delayMs":-5}', /^delayMs must be an integer between 0 and/],
      ['POST', '/api/v1/timers', '{"queue":"q","delayMs":"5"}', /^delayMs must be an integer between 0 and/],
      ['POST', '/api/v1/timers', '{"queue":"q","delayMs":5,"traceId":"x"}', /^traceId must be a UUID$/],
      ['POST', '/api/v1/timers', '{"queue":"q","delayMs":5,"transactionId":5}', /^transactionId must be a string$/],
      ['POST', '/api/v1/timers', '{"queue":"q","delayMs":5,"when":1}', /^unknown field "when"/],
      ['POST', '/api/v1/timers', `{"queue":"${'q'.repeat(256)}","delayMs":5}`, /^queue must be 1 to 255 bytes/],
      ['POST', '/api/v1/timers', '{"items":[{"queue":"q","delayMs":1},{"queue":"q"}]}', /^items\[1\]: fireAt/],
      ['POST', '/api/v1/timers', '{"items":[]}', /^items must hold at least one timer$/],
      ['GET', '/api/v1/timers/not-a-uuid', undefined, /^timer id must be a UUID/],
      ['DELETE', '/api/v1/timers/123', undefined, /^timer id must be a UUID/],
      ['GET', '/api/v1/timers?limit=0', undefined, /^limit must be an integer between 1 and 1000$/],
      ['GET', '/api/v1/timers?limit=x', undefined, /^limit must be an integer between 1 and 1000$/],
      ['GET', '/api/v1/timers?after=zzz', undefined, /^after must be a timer id/],
    ];
    for (const [method, p, body, want] of cases) {
      test(`${method} ${p} ${body ?? ''}`.slice(0, 100), async () => {
        const r = await api(a.url, method, p, body);
        assert.equal(r.status, 400, r.text);
        assert.match(r.json.error, want);
      });
    }
    test('a timer id that does not exist answers 404', async () => {
      const r = await get(a.url, '/api/v1/timers/01900000-0000-7000-8000-000000000000');
      assert.equal(r.status, 404);
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
    const c = await post(a.url, '/api/v1/timers', { queue: 'offline', delayMs: 600000, payload: 'late', transactionId: 'off-1' });
    assert.equal(c.status, 201);
    await a.stop();
    rmrf(a.data);
    // with every node down, the timer falls due (moved on the database's clock, so no race
    // with how long the node took to stop)
    pg.psql(`UPDATE queen.log_timers SET fire_at = queen.now_us() - 1000000 WHERE id = '${c.json.timerId}'`);
    await sleep(1000);
    assert.equal(pg.psql('SELECT count(*) FROM queen.log_timers WHERE fire_at < queen.now_us()'), '1');
    const b = await startQueen({ env: { QUEEN_PG_URL: pg.url, QUEEN_NODE_ID: 'b' } });
    try {
      const recs = await waitRecords(b, 'offline', 1, 15000);
      assert.equal(recs.length, 1);
      assert.equal(recs[0].transactionId, 'off-1');
      assert.equal(recs[0].payload, 'late');
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
      // created far in the future, then all made due at once on the database's clock: how
      // long the creation took under load cannot let node a finish before the kill
      const fireAt = (Date.now() + 3600e3) * 1000;
      for (let s = 0; s < N; s += 500) {
        const items = [];
        for (let i = s; i < s + 500; i++) {
          txns.push(`k-${i}`);
          items.push({ queue: 'killed', partition: `p${i % 13}`, fireAt, transactionId: `k-${i}`, payload: { i } });
        }
        const r = await post(a.url, '/api/v1/timers', { items });
        assert.equal(r.status, 201, r.text);
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
      assertEachOnce((await fetchQueue(b, 'killed')).records, txns);
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
