// conflation() against the real broker (newest record per partition, the consume loop, the
// broker's 400s as QueenHttpError codes, the one-time conflict warning) and against a stub
// HTTP server that ignores the flag (ConflationUnsupportedError: on pop, terminal for consume).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { broker, uniq, client } from './_broker.mjs';
import { Queen, QueenHttpError, ConflationUnsupportedError } from '../index.js';
import { _resetConflationWarning } from '../src/client.js';

const byPartition = (msgs) => Object.fromEntries(msgs.map((m) => [m.partition, m.data.v]));
const pushN = async (queen, q, partition, from, to) => {
  const items = [];
  for (let v = from; v < to; v++) items.push({ data: { v } });
  await queen.queue(q).partition(partition).push(items);
};

test('conflation on the real broker', async (t) => {
  const node = await broker(t);
  const queen = client(node);

  await t.test('pop: the newest record of each partition; an empty pop is [] (echoed, no error)', async () => {
    const q = uniq('cf');
    await pushN(queen, q, 'a', 0, 5);
    await pushN(queen, q, 'b', 0, 3);
    const latest = queen.queue(q).group('g').conflation().batch(10).partitions(10).wait(false);
    const msgs = await latest.pop();
    assert.deepEqual(byPartition(msgs), { a: 4, b: 2 });
    for (const m of msgs) assert.equal((await queen.ack(m, true, { group: 'g' })).success, true);
    assert.deepEqual(await latest.pop(), [], 'an empty conflating pop answers [] (the broker echoes it)');
    // a long poll that times out is empty too, with the echo
    assert.deepEqual(await queen.queue(q).group('g').conflation().timeoutMillis(300).pop(), []);
    // another group without conflation still sees every record
    const all = await queen.queue(q).group('plain').batch(10).partitions(10).wait(false).pop();
    assert.equal(all.length, 8);
    // conflation(false) declares the ordinary policy: no flag on the wire, no echo needed
    assert.equal(latest.conflation(false)._popQuery().includes('conflation'), false);
    assert.match(queen.queue(q).group('g').conflation()._popQuery(), /&conflation=true$/, 'conflation is the last parameter, as the 2.x client sends it');
  });

  await t.test('consume: the loop gets the newest of each partition and acks it', async () => {
    const q = uniq('cfc');
    await pushN(queen, q, 'a', 0, 4);
    await pushN(queen, q, 'b', 0, 6);
    await pushN(queen, q, 'c', 0, 1);
    const seen = [];
    const errors = [];
    await queen.queue(q).group('workers').conflation().batch(10).partitions(10).each().timeoutMillis(300).limit(3)
      .consume(async (m) => { seen.push([m.partition, m.data.v]); }, { onError: (e) => errors.push(e) });
    assert.deepEqual(seen.sort(), [['a', 3], ['b', 5], ['c', 0]]);
    assert.deepEqual(errors, []);
    // acked: nothing is left for the group, newer pushes are delivered newest-only again
    await pushN(queen, q, 'a', 10, 13);
    const again = await queen.queue(q).group('workers').conflation().batch(10).partitions(10).wait(false).pop();
    assert.deepEqual(byPartition(again), { a: 12 });
  });

  await t.test('the 400s surface as QueenHttpError with their codes; consume stops on them', async () => {
    const q = uniq('cf400');
    await pushN(queen, q, 'a', 0, 2);
    await assert.rejects(queen.queue(q).conflation().wait(false).pop(),
      (e) => e instanceof QueenHttpError && e.status === 400 && e.code === 'conflation_needs_group');
    await assert.rejects(queen.queue(q).group('g').conflation().autoAck().wait(false).pop(),
      (e) => e instanceof QueenHttpError && e.status === 400 && e.code === 'conflation_with_auto_ack');
    const errors = [];
    const c = queen.queue(q).conflation().timeoutMillis(300).consume(async () => {}, { onError: (e) => errors.push(e) });
    await assert.rejects(c.done, (e) => e.status === 400 && e.code === 'conflation_needs_group');
    assert.deepEqual(errors, [], 'terminal, not retried through onError');
    // nothing was touched: the group's first real pop stores the policy and gets the newest
    const [m] = await queen.queue(q).group('g').conflation().wait(false).pop();
    assert.equal(m.data.v, 1);
  });

  await t.test('a conflict (stored policy differs) warns once per process and goes on', async () => {
    const q = uniq('cfx');
    await pushN(queen, q, 'a', 0, 3);
    const warnings = [];
    const onWarning = (w) => { if (w.name === 'QueenConflationConflict') warnings.push(w); };
    process.on('warning', onWarning);
    _resetConflationWarning();
    try {
      // the group's first pop declares the ordinary policy: stored as not conflating
      const [first] = await queen.queue(q).group('g').wait(false).pop();
      assert.equal(first.data.v, 0);
      await queen.ack(first, true, { group: 'g' });
      const [m] = await queen.queue(q).group('g').conflation().wait(false).pop();
      assert.equal(m.data.v, 1, 'the stored (ordinary) policy applied');
      await queen.ack(m, true, { group: 'g' });
      const [m2] = await queen.queue(q).group('g').conflation().wait(false).pop();
      assert.equal(m2.data.v, 2);
      await queen.ack(m2, true, { group: 'g' });
      await new Promise((r) => setImmediate(r));
      assert.equal(warnings.length, 1, 'one warning for two conflicting answers');
      assert.equal(warnings[0].code, 'conflation_conflict');
    } finally {
      process.off('warning', onWarning);
    }
  });
});

// a broker that ignores the flag: 204, or 200 with messages and no echo
function stub(handler) {
  return new Promise((resolve) => {
    const seen = [];
    const srv = http.createServer((req, res) => { seen.push(req.url); handler(req, res); });
    srv.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${srv.address().port}`, seen, close: () => new Promise((r) => { srv.closeAllConnections?.(); srv.close(r); }) }));
  });
}

test('a broker without the echo: ConflationUnsupportedError, terminal for consume', async (t) => {
  const msg = { id: 'm1', transactionId: 't1', partitionId: 'p1', leaseId: 'l1', partition: 'a', consumerGroup: 'g', data: { v: 1 } };
  const s = await stub((req, res) => {
    if (req.url.includes('empty=1') || req.url.includes('/queue/e')) { res.writeHead(204); res.end(); return; }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ success: true, messages: [msg] }));
  });
  t.after(() => s.close());
  const queen = new Queen({ url: s.url });

  await assert.rejects(queen.queue('q').group('g').conflation().wait(false).pop(),
    (e) => e instanceof ConflationUnsupportedError && e.code === 'conflation_unsupported' && e.status === 200);
  await assert.rejects(queen.queue('e').group('g').conflation().wait(false).pop(),
    (e) => e instanceof ConflationUnsupportedError && e.status === 204, 'a 204 has no echo either');
  assert.ok(s.seen.every((u) => u.endsWith('&conflation=true')), s.seen.join(' '));
  // without conflation() the same answers are ordinary
  assert.deepEqual((await queen.queue('q').group('g').wait(false).pop()).map((m) => m.data.v), [1]);
  assert.deepEqual(await queen.queue('e').group('g').wait(false).pop(), []);

  // consume: the first poll ends the loop with the error, the handler never runs
  const before = s.seen.length;
  let handled = 0;
  const errors = [];
  const c = queen.queue('q').group('g').conflation().wait(false).consume(async () => { handled++; }, { onError: (e) => errors.push(e) });
  await assert.rejects(c.done, (e) => e instanceof ConflationUnsupportedError);
  assert.equal(handled, 0);
  assert.deepEqual(errors, []);
  assert.equal(s.seen.length - before, 1, 'one poll, no retry');
});
