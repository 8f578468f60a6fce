// The last double emit of the earlier release (its B3, second order), driven on the wire exactly
// as two runners interleave: runner A pops a batch and reads a window, runner B's idle flush
// closes and emits that window, then A's cycle only *updates* the window (no delete) — without a
// fence it re-creates the window holding records already emitted and a later flush emits them
// again. Here A's upsert is refused (stale state), its lease released, the batch folded again
// from the rows as they are: every source record lands in exactly one result. Also: no false
// refusal for a batch leased after the close, or for a lease's own close; an array element
// refused as stale releases its lease; a flush closing a window that a seek back re-created with
// the same result emits again, while its retry and a concurrent second flush do not.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { get, post, readQueue, rmrf, startQueen } from './harness.mjs';

let node;
before(async () => { node = await startQueen(); });
after(async () => { if (node) { await node.stop(); rmrf(node.data); } });

const push = (items) => post(node.url, '/api/v1/push', { items });
const pop = async (q, group) => {
  const r = await get(node.url, `/api/v1/pop/queue/${q}?batch=50&consumerGroup=${group}`);
  return r.status === 200 ? r.json.messages : [];
};
const register = (body) => post(node.url, '/streams/v1/queries', body);
const cycle = (body) => post(node.url, '/streams/v1/cycle', body);
const stateGet = (body) => post(node.url, '/streams/v1/state/get', body);
const sinkRecords = async (q) => { try { return (await readQueue(node.url, q)).records; } catch { return []; } };

let seq = 0;
const uniq = (p) => `${p}-${process.pid}-${++seq}`;
const W = 'tumb:1\u001f2026-05-06T10:00:00.000Z\u001fk';

// what a runner does with a batch: read the window, fold the batch into it, upsert it, ack
async function foldCycle(id, group, ms, extraOps = []) {
  const pid = ms[0].partitionId;
  const st = await stateGet({ query_id: id, partition_id: pid, keys: [] });
  const row = st.json.rows.find((x) => x.key === W);
  const acc = row ? row.value.acc : { count: 0, ns: [] };
  const value = { acc: { count: acc.count + ms.length, ns: [...acc.ns, ...ms.map((m) => m.data.n)] }, windowStart: 0, windowEnd: 1 };
  const last = ms[ms.length - 1];
  return { read: acc, send: () => cycle({ query_id: id, partition_id: pid, consumer_group: group,
    state_ops: [...extraOps, { type: 'upsert', key: W, value }], push_items: [],
    ack: { transactionId: last.transactionId, leaseId: last.leaseId, status: 'completed', count: ms.length } }) };
}

// what an idle flush does: read the ripe rows, delete them, emit their results
async function idleFlush(id, group, pid, sink) {
  const st = await stateGet({ query_id: id, partition_id: pid, keys: [], key_prefix: 'tumb:1\u001f', ripe_at_or_before: Date.now() });
  if (!st.json.rows.length) return null;
  return cycle({ query_id: id, partition_id: pid, consumer_group: group, ack: null, release_lease: true,
    state_ops: st.json.rows.map((x) => ({ type: 'delete', key: x.key })),
    push_items: st.json.rows.map((x) => ({ queue: sink, partition: 'p0', payload: x.value.acc })) });
}

test('two runners after a lease moved: a cycle that read a window before another runner flushed it cannot re-create it', async () => {
  const name = uniq('race');
  const group = `streams.${name}`;
  const sink = `${name}-sink`;
  const src = `${name}-src`;
  const id = (await register({ name, source_queue: src, config_hash: 'h' })).json.query_id;
  await push([1, 2, 3].map((n) => ({ queue: src, partition: 'p0', payload: { n } })));
  // runner A folds the first batch: the window holds 1, 2, 3
  const b1 = await pop(src, group);
  const pid = b1[0].partitionId;
  const c1 = await foldCycle(id, group, b1);
  assert.equal((await c1.send()).json.success, true);
  // runner A pops record 4 and reads the window (count 3) ...
  await push([{ queue: src, partition: 'p0', payload: { n: 4 } }]);
  const b2 = await pop(src, group);
  assert.deepEqual(b2.map((m) => m.data.n), [4]);
  const c2 = await foldCycle(id, group, b2);
  assert.equal(c2.read.count, 3);
  // ... runner B's idle flush closes the window and emits 1, 2, 3 ...
  const f1 = await idleFlush(id, group, pid, sink);
  assert.equal(f1.json.success, true, f1.text);
  assert.deepEqual((await sinkRecords(sink)).map((x) => x.payload.ns), [[1, 2, 3]]);
  // ... then A's cycle only updates the window it read: it would hold 1..4, already emitted 1..3
  const stale = await c2.send();
  assert.equal(stale.json.success, false, stale.text);
  assert.match(stale.json.error, /stale state: state row ".*" was closed by another cycle or flush after this batch was leased/);
  const st = await stateGet({ query_id: id, partition_id: pid, keys: [] });
  assert.deepEqual(st.json.rows, [], 'the refused cycle wrote nothing');
  // the lease was released: the batch comes back at once, is folded from the rows as they are
  const b3 = await pop(src, group);
  assert.deepEqual(b3.map((m) => [m.data.n, m.transactionId]), [[4, b2[0].transactionId]]);
  const c3 = await foldCycle(id, group, b3);
  assert.equal(c3.read.count, 0);
  const ok = await c3.send();
  assert.equal(ok.json.success, true, ok.text);
  const f2 = await idleFlush(id, group, pid, sink);
  assert.equal(f2.json.success, true, f2.text);
  // every source record in exactly one result
  const results = (await sinkRecords(sink)).map((x) => x.payload.ns);
  assert.deepEqual(results, [[1, 2, 3], [4]]);
  assert.deepEqual(results.flat().sort(), [1, 2, 3, 4]);
  assert.deepEqual(await pop(src, group), [], 'everything acked');
});

test('no false refusal: a batch leased after the close, and a lease re-creating the key it closed itself', async () => {
  const name = uniq('nofalse');
  const group = `streams.${name}`;
  const sink = `${name}-sink`;
  const src = `${name}-src`;
  const id = (await register({ name, source_queue: src, config_hash: 'h' })).json.query_id;
  await push([1, 2].map((n) => ({ queue: src, partition: 'p0', payload: { n } })));
  const b1 = await pop(src, group);
  const pid = b1[0].partitionId;
  assert.equal((await (await foldCycle(id, group, b1)).send()).json.success, true);
  assert.equal((await idleFlush(id, group, pid, sink)).json.success, true);
  // a batch leased after the flush closed the window: it read the window as closed
  await push([{ queue: src, partition: 'p0', payload: { n: 3 } }]);
  const b2 = await pop(src, group);
  const c2 = await foldCycle(id, group, b2);
  assert.equal(c2.read.count, 0);
  const r2 = await c2.send();
  assert.equal(r2.json.success, true, r2.text);
  // a cycle that closes the window and opens it again under its own lease (a gate's partial
  // ack keeps the lease; its next cycle re-creates the key it closed): not refused
  await push([4, 5].map((n) => ({ queue: src, partition: 'p0', payload: { n } })));
  const b3 = await pop(src, group);
  const r3 = await cycle({ query_id: id, partition_id: pid, consumer_group: group, release_lease: false,
    state_ops: [{ type: 'delete', key: W }], push_items: [{ queue: sink, partition: 'p0', payload: { ns: [3, 4] } }],
    ack: { transactionId: b3[0].transactionId, leaseId: b3[0].leaseId, count: 1 } });
  assert.equal(r3.json.success, true, r3.text);
  const r4 = await cycle({ query_id: id, partition_id: pid, consumer_group: group,
    state_ops: [{ type: 'upsert', key: W, value: { acc: { count: 1, ns: [5] }, windowEnd: 1 } }],
    ack: { transactionId: b3[1].transactionId, leaseId: b3[1].leaseId, count: 1 } });
  assert.equal(r4.json.success, true, r4.text);
  assert.deepEqual((await sinkRecords(sink)).map((x) => x.payload.ns), [[1, 2], [3, 4]]);
});

test('an array element refused as stale state releases its lease; the other elements commit', async () => {
  const name = uniq('arrfence');
  const group = `streams.${name}`;
  const sink = `${name}-sink`;
  const src = `${name}-src`;
  const id = (await register({ name, source_queue: src, config_hash: 'h' })).json.query_id;
  await push([1, 2].map((n) => ({ queue: src, partition: 'p0', payload: { n } })));
  const b1 = await pop(src, group);
  const pid = b1[0].partitionId;
  assert.equal((await (await foldCycle(id, group, b1)).send()).json.success, true);
  await push([{ queue: src, partition: 'p0', payload: { n: 3 } }]);
  const b2 = await pop(src, group);
  const c2 = await foldCycle(id, group, b2);
  assert.equal((await idleFlush(id, group, pid, sink)).json.success, true);
  const other = '0190c2d4-0000-7000-8000-0000000000f7';
  void c2; // A read the window before the flush; it sends its update inside an array instead
  const last = b2[b2.length - 1];
  const r = await cycle([
    { query_id: id, partition_id: pid, consumer_group: group,
      state_ops: [{ type: 'upsert', key: W, value: { acc: { count: 3, ns: [1, 2, 3] }, windowEnd: 1 } }],
      ack: { transactionId: last.transactionId, leaseId: last.leaseId, count: 1 } },
    { query_id: id, partition_id: other, state_ops: [{ type: 'upsert', key: 'x', value: { ok: 1 } }], ack: null },
  ]);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.map((e) => [e.idx, e.success]), [[0, false], [1, true]]);
  assert.match(r.json[0].error, /stale state/);
  const again = await pop(src, group);
  assert.deepEqual(again.map((m) => m.transactionId), [last.transactionId], 'redelivered at once, not after the lease');
  // the older fence too (a cycle deleting a row another flush closed), in an array
  await push([{ queue: src, partition: 'p0', payload: { n: 4 } }]);
  const again2 = again;
  const r2 = await cycle([{ query_id: id, partition_id: pid, consumer_group: group, state_ops: [{ type: 'delete', key: W }],
    push_items: [{ queue: sink, partition: 'p0', payload: { ns: [1, 2, 3] } }],
    ack: { transactionId: again2[0].transactionId, leaseId: again2[0].leaseId, count: 1 } }]);
  assert.equal(r2.json[0].success, false, r2.text);
  assert.match(r2.json[0].error, /stale state/);
  const back = await pop(src, group);
  assert.equal(back[0].transactionId, again2[0].transactionId);
  assert.deepEqual((await sinkRecords(sink)).map((x) => x.payload.ns), [[1, 2]]);
  const st = await stateGet({ query_id: id, partition_id: other, keys: [] });
  assert.deepEqual(st.json.rows.map((x) => x.key), ['x']);
});

test('a seek back replays the source: a flush closing the re-created window emits again; its retry and a second flush do not', async () => {
  const name = uniq('seek');
  const sink = `${name}-sink`;
  const id = (await register({ name, source_queue: `${name}-src`, config_hash: 'h' })).json.query_id;
  const P = '0190c2d4-0000-7000-8000-0000000000c5';
  const value = { acc: { count: 2 }, windowStart: 0, windowEnd: 1 };
  const flush = { query_id: id, partition_id: P, ack: null, release_lease: true, state_ops: [{ type: 'delete', key: W }],
    push_items: [{ queue: sink, partition: 'p0', payload: { count: 2 } }] };
  const open = () => cycle({ query_id: id, partition_id: P, state_ops: [{ type: 'upsert', key: W, value }], ack: null });
  assert.equal((await open()).json.success, true);
  const f1 = await cycle(flush);
  assert.deepEqual([f1.json.success, f1.json.push_results[0].status, f1.json.replay], [true, 'queued', false], f1.text);
  // the retry of that flush (its answer lost): found written, the window stays closed
  const f1r = await cycle(flush);
  assert.deepEqual([f1r.json.success, f1r.json.push_results[0].status, f1r.json.replay], [true, 'duplicate', true], f1r.text);
  assert.equal((await sinkRecords(sink)).length, 1);
  // the source is replayed (a seek back): the same records fold the same window again
  assert.equal((await open()).json.success, true);
  // two runners flush it at once, each retrying: it is emitted once more, not zero times, not twice
  const answers = await Promise.all([cycle(flush), cycle(flush), cycle(flush)]);
  for (const a of answers) assert.equal(a.json.success, true, a.text);
  const queued = answers.filter((a) => a.json.push_results[0].status === 'queued');
  assert.equal(queued.length, 1, JSON.stringify(answers.map((a) => a.json)));
  assert.notEqual(queued[0].json.push_results[0].transaction_id, f1.json.push_results[0].transaction_id, 'a new id for a new incarnation');
  assert.deepEqual((await sinkRecords(sink)).map((x) => x.payload), [{ count: 2 }, { count: 2 }]);
  const st = await stateGet({ query_id: id, partition_id: P, keys: [] });
  assert.deepEqual(st.json.rows, []);
  // and once more retried after the fact: still two
  const late = await cycle(flush);
  assert.equal(late.json.success, true, late.text);
  assert.equal(late.json.replay, true);
  assert.equal((await sinkRecords(sink)).length, 2);
  // a third incarnation flushed twice in one array body: emitted once more
  assert.equal((await open()).json.success, true);
  const arr = await cycle([flush, flush]);
  assert.equal(arr.status, 200, arr.text);
  assert.deepEqual(arr.json.map((e) => e.success), [true, true], arr.text);
  assert.deepEqual(arr.json.map((e) => e.push_results[0].status).sort(), ['duplicate', 'queued'], arr.text);
  assert.equal((await sinkRecords(sink)).length, 3);
});

test('row versions (our SDKs): state/get answers them on request; an op applies only to the row as it was read', async () => {
  const name = uniq('ver');
  const group = `streams.${name}`;
  const sink = `${name}-sink`;
  const src = `${name}-src`;
  const id = (await register({ name, source_queue: src, config_hash: 'h' })).json.query_id;
  await push([1, 2].map((n) => ({ queue: src, partition: 'p0', payload: { n } })));
  const b1 = await pop(src, group);
  const pid = b1[0].partitionId;
  assert.equal((await (await foldCycle(id, group, b1)).send()).json.success, true);
  // the earlier release's answer shape unless asked
  const plain = await stateGet({ query_id: id, partition_id: pid, keys: [] });
  assert.deepEqual(Object.keys(plain.json.rows[0]), ['key', 'value', 'updated_at']);
  const v1 = (await stateGet({ query_id: id, partition_id: pid, keys: [], versions: true })).json.rows[0];
  assert.equal(typeof v1.version, 'number');
  assert.ok(v1.version > 0);
  assert.equal((await stateGet({ query_id: id, partition_id: pid, versions: 'yes' })).status, 400);
  // a flush reads the window (2 records) with its version; the lease holder's cycle adds record 3
  const ripe = v1;
  await push([{ queue: src, partition: 'p0', payload: { n: 3 } }]);
  const b2 = await pop(src, group);
  const c2 = await foldCycle(id, group, b2);
  assert.equal((await c2.send()).json.success, true);
  // the flush of what it read would emit 1, 2 and drop 3 with the row: refused, it changed
  const lost = await cycle({ query_id: id, partition_id: pid, ack: null, state_ops: [{ type: 'delete', key: W, version: ripe.version }],
    push_items: [{ queue: sink, partition: 'p0', payload: ripe.value.acc }] });
  assert.equal(lost.json.success, false, lost.text);
  assert.match(lost.json.error, /stale flush: state row ".*" changed since it was read/);
  // read again, flush again: 1, 2, 3 in one result
  const now = (await stateGet({ query_id: id, partition_id: pid, keys: [], versions: true })).json.rows[0];
  assert.ok(now.version > ripe.version);
  const f = await cycle({ query_id: id, partition_id: pid, ack: null, state_ops: [{ type: 'delete', key: W, version: now.version }],
    push_items: [{ queue: sink, partition: 'p0', payload: now.value.acc }] });
  assert.equal(f.json.success, true, f.text);
  assert.deepEqual((await sinkRecords(sink)).map((x) => x.payload.ns), [[1, 2, 3]]);
  // that flush retried (its answer lost): its rows are gone, a replay, versions or not
  const again = await cycle({ query_id: id, partition_id: pid, ack: null, state_ops: [{ type: 'delete', key: W, version: now.version }],
    push_items: [{ queue: sink, partition: 'p0', payload: now.value.acc }] });
  assert.deepEqual([again.json.success, again.json.replay], [true, true], again.text);
  // a cycle that read the window as absent (version 0) while it exists: refused, lease released
  await push([{ queue: src, partition: 'p0', payload: { n: 4 } }]);
  const b3 = await pop(src, group);
  assert.equal((await cycle({ query_id: id, partition_id: pid, ack: null, state_ops: [{ type: 'upsert', key: W, value: { acc: { count: 9, ns: [] } } }] })).json.success, true);
  const r3 = await cycle({ query_id: id, partition_id: pid, consumer_group: group,
    state_ops: [{ type: 'upsert', key: W, version: 0, value: { acc: { count: 1, ns: [4] }, windowEnd: 1 } }],
    ack: { transactionId: b3[0].transactionId, leaseId: b3[0].leaseId, count: 1 } });
  assert.equal(r3.json.success, false, r3.text);
  assert.match(r3.json.error, /stale state: state row ".*" changed since it was read \(version 0 is \d+\)/);
  assert.deepEqual((await pop(src, group)).map((m) => m.transactionId), [b3[0].transactionId], 'lease released');
  // and that flush retried now: its window is open again with other contents — refused, not a replay
  const late = await cycle({ query_id: id, partition_id: pid, ack: null, state_ops: [{ type: 'delete', key: W, version: now.version }],
    push_items: [{ queue: sink, partition: 'p0', payload: now.value.acc }] });
  assert.equal(late.json.success, false, late.text);
  assert.equal((await sinkRecords(sink)).length, 1);
});
