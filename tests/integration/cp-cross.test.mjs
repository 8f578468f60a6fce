// A data-plane credential of one cluster tried against every route class of another, on the
// embedded proxy's port (docs/control-plane.md, "Credentials and isolation"; issue 15). Cluster
// A makes one of everything (queues with records, a held lease, a consumer group, a dead letter,
// KV keys on both wires, a pending timer, a held lock, a stream query with state, a trace,
// an ephemeral queue with a leased message); then cluster B tries every route on A's names and
// ids. The oracle is a twin: B's answer about A's things must be B's answer about things that
// exist nowhere (every id and name swapped back to a placeholder, fresh UUIDs and times masked),
// so nothing of A is read, changed, or even confirmed to exist. B's listings before it made
// anything equal those of an empty third cluster, and never mention A afterwards. Last, A finds
// everything as it left it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { api, freePort, get, post, rmrf, startPostgres, startQueen } from './harness.mjs';

const CP = 'cp-token-for-the-cross-tests-0123456789';
let pg, node, port;
before(async () => {
  pg = await startPostgres();
  port = await freePort();
  node = await startQueen({ env: { QUEEN_PG_URL: pg.url, QUEEN_PROXY_CP_TOKEN: CP, QUEEN_PROXY_PORT: String(port) } });
});
after(async () => {
  if (node) { await node.stop(); rmrf(node.data); }
  if (pg) pg.destroy();
});

const px = () => `http://127.0.0.1:${port}`;
const cpH = { 'x-queen-cp-token': CP };
const client = (token) => {
  const h = { authorization: `Bearer ${token}` };
  return {
    get: (p) => get(px(), p, h),
    post: (p, b, extra = {}) => post(px(), p, b, { ...h, ...extra }),
    put: (p, b) => api(px(), 'PUT', p, b, h),
    del: (p) => api(px(), 'DELETE', p, undefined, h),
    raw: async (p) => {
      const r = await fetch(px() + p, { headers: h });
      return { status: r.status, type: r.headers.get('content-type'), body: Buffer.from(await r.arrayBuffer()) };
    },
  };
};

// The 2.x binary push body (src/storage/qpb.h), flag 4: every item carries a transactionId.
function qpb(groups) {
  const parts = [Buffer.from('QPB1'), Buffer.from([4])];
  const u16 = (n) => { const b = Buffer.alloc(2); b.writeUInt16LE(n); return b; };
  const u32 = (n) => { const b = Buffer.alloc(4); b.writeUInt32LE(n); return b; };
  const str16 = (s) => { const b = Buffer.from(s); return Buffer.concat([u16(b.length), b]); };
  parts.push(u32(groups.length));
  for (const g of groups) {
    parts.push(str16(g.queue), str16(g.partition), u32(g.items.length));
    for (const it of g.items) {
      const pl = Buffer.from(JSON.stringify(it.payload));
      parts.push(str16(it.transactionId), u32(pl.length), pl);
    }
  }
  return new Uint8Array(Buffer.concat(parts));
}

const UUID_RE = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const TS_RE = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?/g;
// What a twin cannot share: minted versions and tokens, times and durations, and the node's own
// figures (CPU, memory, pool) that the status pages show beside the tenant's.
const MASKED = /^(token|expect|version|timestamp|since|expiresAt|renewedAt|leaseExpiresAt|createdAt|updatedAt|durationMs|tookMs|.*Pct|.*Mb|dbPool.*|.*EventLoop.*|minFreeSlots|freeSlots|dbConnections|uptime.*)$/;
// An answer with every id of ids (strings at least 5 long; digits as whole numbers) swapped for
// its name inside the answer's strings, then what a request mints (UUIDs, times) masked.
function norm(r, ids) {
  const subs = Object.entries(ids).filter(([, v]) => typeof v === 'string' && v.length >= 5)
    .sort((x, y) => y[1].length - x[1].length);
  const nums = Object.entries(ids).filter(([k]) => k === 'dlqId');
  const str = (s) => {
    for (const [k, v] of subs) s = s.split(v).join(`<${k}>`);
    s = s.replace(/\b[0-9a-f]{16}(\.\d+){3}\b/g, '<ephemeral id>').replace(UUID_RE, '<uuid>').replace(TS_RE, '<ts>').replace(/\b(request|Request) [0-9a-f]{6,}/g, '$1 <rid>');
    for (const [k, v] of nums) s = s.replace(new RegExp(`(?<![\\d.])${v}(?![\\d.])`, 'g'), `<${k}>`);
    return s;
  };
  const walk = (v, key) => {
    if (key !== undefined && MASKED.test(key) && v !== null) return '<masked>';
    if (typeof v === 'string') return str(v);
    if (Array.isArray(v)) return v.map((x) => walk(x));
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k)]));
    return v;
  };
  let body;
  try { body = r.text?.length ? walk(JSON.parse(r.text)) : ''; } catch { body = str(r.text); }
  return { status: r.status, body };
}

describe('one cluster\'s credential against every route class of another', () => {
  let A, B, C, AID, FID, a, b;
  const secret = 'A-SECRET-7d1f';

  before(async () => {
    const mk = async (name) => {
      const r = await post(px(), '/api/cp/clusters', { name }, cpH);
      assert.equal(r.status, 201, r.text);
      return r.json;
    };
    a = await mk('alpha');
    b = await mk('bravo');
    const c = await mk('charlie');
    A = client(a.token);
    B = client(b.token);
    C = client(c.token);
  });

  test('A makes one of everything', async () => {
    let r = await A.post('/api/v1/configure', { queue: 'orders', namespace: 'orders-ns', options: { leaseTime: 300, retryLimit: 5 } });
    assert.equal(r.status, 200, r.text);
    r = await A.post('/api/v1/push', { items: [1, 2, 3, 4].map((n) => ({ queue: 'orders', partition: 'part-a', transactionId: `a-txn-${n}`, payload: { secret, n } })) });
    assert.equal(r.status, 201, r.text);
    r = await A.post('/api/v1/push', { items: [{ queue: 'only-a-q', partition: 'only-a-p', payload: { secret } }] });
    assert.equal(r.status, 201, r.text);
    // a held lease (the default group), and a consumer group that moved
    r = await A.get('/api/v1/pop/queue/orders/partition/part-a?batch=1&wait=false');
    assert.equal(r.status, 200, r.text);
    const m = r.json.messages[0];
    r = await A.get('/api/v1/pop/queue/orders?consumerGroup=group-a&batch=1&autoAck=true&wait=false');
    assert.equal(r.status, 200, r.text);
    // a dead letter (its id, from a sequence, made long enough to be told apart in a sentence)
    pg.psql("SELECT setval(pg_get_serial_sequence('queen.dead_letters', 'id'), 500000)");
    assert.equal((await A.post('/api/v1/push', { items: [{ queue: 'dlq-q-a', partition: 'part-a', transactionId: 'a-poison', payload: { secret } }] })).status, 201);
    const pm = (await A.get('/api/v1/pop/queue/dlq-q-a?wait=false')).json.messages[0];
    r = await A.post('/api/v1/ack', { transactionId: pm.transactionId, partitionId: pm.partitionId, leaseId: pm.leaseId, status: 'dlq', error: 'bad' });
    assert.equal(r.json[0].dlq, true, r.text);
    const dl = (await A.get('/api/v1/dlq')).json;
    assert.equal(dl.total, 1);
    // KV on both wires, a pending timer, a held lock
    assert.equal((await A.put('/api/v1/kv/ns-one/key-one', { value: { secret } })).status, 200);
    r = await A.post('/api/v1/kv', { operations: [{ op: 'put', ns: 'ns-two', key: 'key-two', value: { secret }, forever: true }] });
    assert.equal(r.json.results[0].applied, true, r.text);
    const kvVersion = r.json.results[0].version;
    r = await A.post('/api/v1/timers', { operations: [{ op: 'schedule', queue: 'timer-q', timerKey: 'tkey-a/1', payload: Buffer.from(JSON.stringify({ secret })).toString('base64'), delayMs: 3600000 }] });
    assert.equal(r.json.results[0].status, 'scheduled', r.text);
    r = await A.post('/api/v1/locks', { operations: [{ op: 'acquire', name: 'lock-a', ttlSeconds: 300, owner: 'a-owner' }] });
    assert.equal(r.json.results[0].acquired, true, r.text);
    const lockToken = r.json.results[0].token;
    // a stream query with state on A's partition
    r = await A.post('/streams/v1/queries', { name: 'stream-a', source_queue: 'orders', sink_queue: 'sink-q', config_hash: 'h' });
    assert.equal(r.status, 200, r.text);
    const qid = r.json.query_id;
    r = await A.post('/streams/v1/cycle', { query_id: qid, partition_id: m.partitionId, state_ops: [{ type: 'upsert', key: 'state-a', value: { secret } }], ack: null });
    assert.equal(r.json.success, true, r.text);
    // a trace on A's record
    r = await A.post('/api/v1/traces', { transactionId: m.transactionId, partitionId: m.partitionId, traceNames: ['trace-a'], eventType: 'info', data: { secret } });
    assert.ok(r.status < 300, r.text);
    // an ephemeral queue with one message leased and one waiting
    r = await A.post('/api/v1/ephemeral/configure', { queue: 'ephem-a', options: { leaseSeconds: 300 } });
    assert.equal(r.status, 200, r.text);
    r = await A.post('/api/v1/ephemeral/push', { queue: 'ephem-a', messages: [{ payload: { secret } }, { payload: { secret } }] });
    assert.equal(r.json.pushed, 2, r.text);
    r = await A.get('/api/v1/ephemeral/pop?queue=ephem-a&wait=false');
    const eph = r.json.messages[0];
    assert.ok(eph, r.text);

    AID = {
      queue: 'orders', qns: 'orders-ns', partition: 'part-a', partitionId: m.partitionId, transactionId: m.transactionId, leaseId: m.leaseId,
      messageId: m.id ?? m.messageId ?? m.transactionId, group: 'group-a', dlqQueue: 'dlq-q-a', dlqId: dl.messages[0].dlqId,
      dlqPartitionId: pm.partitionId, dlqTxn: pm.transactionId, ns: 'ns-one', key: 'key-one', ns2: 'ns-two', key2: 'key-two', kvVersion,
      tq: 'timer-q', tk: 'tkey-a/1', lock: 'lock-a', lockToken, stream: 'stream-a', queryId: qid, stateKey: 'state-a', traceName: 'trace-a',
      eq: 'ephem-a', ephId: eph.id,
    };
    // the same things, made up: they exist in no tenant (a version or token of A's is asked of
    // a key or lock that is nowhere)
    FID = {
      queue: 'zz-orders', qns: 'zz-ordersns', partition: 'zz-part', partitionId: '0190c2d4-0000-7000-8000-00000000f001', transactionId: 'zz-txn-1',
      leaseId: '0190c2d4-0000-7000-8000-00000000f002', messageId: '0190c2d4-0000-7000-8000-00000000f003', group: 'zz-group',
      dlqQueue: 'zz-dlqq', dlqId: String(Number(AID.dlqId) + 1000000), dlqPartitionId: '0190c2d4-0000-7000-8000-00000000f004',
      dlqTxn: 'zz-poison', ns: 'zz-nsone', key: 'zz-keyone', ns2: 'zz-nstwo', key2: 'zz-keytwo', kvVersion,
      tq: 'zz-timerq', tk: 'zz-tkey/1', lock: 'zz-lock', lockToken, stream: 'zz-stream',
      queryId: '0190c2d4-0000-7000-8000-00000000f005', stateKey: 'zz-state', traceName: 'zz-trace', eq: 'zz-ephem',
      ephId: `zz${eph.id}`,
    };
    if (AID.messageId === AID.transactionId) FID.messageId = FID.transactionId;
  });

  // B's listings, before B made anything, are an empty cluster's (C's)
  const LISTINGS = [
    '/api/v1/resources/overview', '/api/v1/resources/queues', '/api/v1/resources/partitions', '/api/v1/resources/namespaces',
    '/api/v1/resources/tasks', '/api/v1/status', '/api/v1/status/analytics', '/api/v1/status/queues', '/api/v1/messages',
    '/api/v1/consumer-groups', '/api/v1/consumer-groups/lagging', '/api/v1/dlq', '/api/v1/traces/names',
    '/streams/v1/queries', '/api/v1/ephemeral/queues', '/api/v1/kv/ns-one', '/api/v1/timers/timer-q',
    '/api/v1/analytics/worker-metrics',
  ];
  // what of A a text names: its secret payloads, the queues B never touched, and (unless B sent
  // them itself) the ids A's records, leases and queries were given
  const leaks = (text, ids = true) => [secret, ...(ids ? Object.values(AID).filter((v) => typeof v === 'string' && /^[0-9a-f-]{36}$/.test(v)) : [])]
    .filter((v) => text.includes(v)).concat(['only-a-q', 'only-a-p'].filter((v) => text.includes(v)));

  test('B\'s listings are an empty cluster\'s and name nothing of A', async () => {
    for (const p of LISTINGS) {
      const rb = await B.get(p), rc = await C.get(p);
      assert.ok(rb.status < 500, `${p} → ${rb.status} ${rb.text}`);
      assert.deepEqual(norm(rb, {}), norm(rc, {}), p);
      assert.deepEqual(leaks(rb.text), [], `${p}: ${rb.text}`);
    }
    // system metrics are the node's (CPU, memory, connections), not a tenant's: no names in them
    const sm = await B.get('/api/v1/analytics/system-metrics');
    assert.ok(sm.status < 500, sm.text);
    assert.deepEqual(leaks(sm.text), [], sm.text);
  });

  // Each probe runs twice, with A's ids and with made-up ones; the answers must be one answer.
  // (seen: A's own answer to the same probe differs, so the probe can tell A's things apart.)
  const twin = async (what, make, seen = false) => {
    const ra = await make(AID, B), rf = await make(FID, B);
    assert.ok(ra.status < 500, `${what}: ${ra.status} ${ra.text}`);
    assert.deepEqual(norm(ra, AID), norm(rf, FID), what);
    if (seen) assert.notDeepEqual(norm(await make(AID, A), AID), norm(ra, AID), `${what}: A's answer is B's: the probe sees nothing`);
    assert.deepEqual(leaks(ra.text, false), [], `${what}: ${ra.text}`);
    return ra;
  };
  const ackOf = (x, status = 'completed') => ({ transactionId: x.transactionId, partitionId: x.partitionId, leaseId: x.leaseId, status, consumerGroup: x.group });

  test('reads and lookups by A\'s names and ids find nothing', async () => {
    await twin('pop queue', (x, c) => c.get(`/api/v1/pop/queue/${x.queue}?wait=false`));
    await twin('pop partition', (x, c) => c.get(`/api/v1/pop/queue/${x.queue}/partition/${x.partition}?wait=false&consumerGroup=${x.group}`));
    await twin('pop namespace', (x, c) => c.get(`/api/v1/pop?namespace=${x.qns}&wait=false`));
    await twin('pop framed', (x, c) => c.get(`/api/v1/pop/queue/${x.queue}/partition/${x.partition}?wait=false&frames=true`));
    await twin('fetch', (x, c) => c.post('/api/v1/fetch', { entries: [{ queue: x.queue, partition: x.partition, offset: 0 }] }), true);
    await twin('partitions/changed', (x, c) => c.post('/api/v1/partitions/changed', { entries: [{ queue: x.queue }] }), true);
    await twin('kv get (path)', (x, c) => c.get(`/api/v1/kv/${x.ns}/${x.key}`), true);
    await twin('kv list (path)', (x, c) => c.get(`/api/v1/kv/${x.ns}`), true);
    await twin('kv 2.x reads', (x, c) => c.post('/api/v1/kv', { operations: [
      { op: 'get', ns: x.ns2, key: x.key2 }, { op: 'getMany', ns: x.ns2, keys: [x.key2] },
      { op: 'getPrefix', ns: x.ns2, prefix: 'key' }, { op: 'check', ns: x.ns2, key: x.key2, expect: x.kvVersion }] }), true);
    await twin('kv 2.x lock row', (x, c) => c.post('/api/v1/kv', { operations: [{ op: 'get', ns: 'queen-locks', key: `${x.lock}#0` }] }), true);
    await twin('timer peek', (x, c) => c.get(`/api/v1/timers/${x.tq}/${x.tk}`), true);
    await twin('timer list', (x, c) => c.get(`/api/v1/timers/${x.tq}`), true);
    await twin('lock get', (x, c) => c.post('/api/v1/locks', { operations: [{ op: 'get', name: x.lock }] }), true);
    await twin('stream get', (x, c) => c.get(`/streams/v1/queries/${x.stream}`), true);
    await twin('stream state/get', (x, c) => c.post('/streams/v1/state/get', { query_id: x.queryId, partition_id: x.partitionId, keys: [x.stateKey] }), true);
    await twin('stream state/get by prefix', (x, c) => c.post('/streams/v1/state/get', { query_id: x.queryId, partition_id: x.partitionId, keys: [], key_prefix: 'st' }), true);
    await twin('traces of a record', (x, c) => c.get(`/api/v1/traces/${x.partitionId}/${x.transactionId}`), true);
    await twin('traces by name', (x, c) => c.get(`/api/v1/traces/by-name/${x.traceName}`), true);
    await twin('message get', (x, c) => c.get(`/api/v1/messages/${x.partitionId}/${x.transactionId}`), true);
    await twin('messages of a queue', (x, c) => c.get(`/api/v1/messages?queue=${x.queue}`), true);
    await twin('dlq of a queue', (x, c) => c.get(`/api/v1/dlq?queue=${x.dlqQueue}`), true);
    await twin('queue', (x, c) => c.get(`/api/v1/resources/queues/${x.queue}`), true);
    await twin('queue depth', (x, c) => c.get(`/api/v1/resources/queues/${x.queue}/depth`), true);
    await twin('partitions of a queue', (x, c) => c.get(`/api/v1/resources/partitions?queue=${x.queue}`), true);
    await twin('queue status', (x, c) => c.get(`/api/v1/status/queues/${x.queue}`), true);
    await twin('consumer group', (x, c) => c.get(`/api/v1/consumer-groups/${x.group}`), true);
    await twin('ephemeral depth', (x, c) => c.get(`/api/v1/ephemeral/queues/${x.eq}/depth`), true);
  });

  test('writes on A\'s leases, ids, keys, locks and queries change nothing and tell nothing', async () => {
    await twin('ack', (x) => B.post('/api/v1/ack', ackOf(x)));
    await twin('nack', (x) => B.post('/api/v1/ack', { ...ackOf(x, 'failed'), error: 'e' }));
    await twin('ack to the dlq', (x) => B.post('/api/v1/ack', { ...ackOf(x, 'dlq'), error: 'e' }));
    await twin('ack batch', (x) => B.post('/api/v1/ack/batch', { acknowledgments: [ackOf(x), { ...ackOf(x, 'failed'), error: 'e' }] }));
    await twin('lease renew', (x) => B.post(`/api/v1/lease/${x.leaseId}/extend`, { seconds: 600 }));
    await twin('transaction: ack + requiredLeases + kv and timers riders', (x) => B.post('/api/v1/transaction', {
      operations: [{ type: 'ack', ...ackOf(x) }], requiredLeases: [x.leaseId],
      kv: [{ op: 'check', ns: x.ns2, key: x.key2, expect: x.kvVersion, required: true }],
      timers: [{ op: 'cancel', queue: x.tq, timerKey: x.tk }] }));
    await twin('transaction: ack only', (x) => B.post('/api/v1/transaction', { operations: [{ type: 'ack', ...ackOf(x) }] }));
    await twin('transaction: timers rider only', (x) => B.post('/api/v1/transaction', {
      operations: [{ type: 'push', items: [{ queue: `${x.queue}-tx3`, payload: 1 }] }], timers: [{ op: 'cancel', queue: x.tq, timerKey: x.tk }] }));
    await twin('transaction: requiredLeases only guards a push', (x) => B.post('/api/v1/transaction', {
      operations: [{ type: 'push', items: [{ queue: `${x.queue}-tx`, payload: 1 }] }], requiredLeases: [x.leaseId] }));
    await twin('transaction: kv check of A\'s version', (x) => B.post('/api/v1/transaction', {
      operations: [{ type: 'push', items: [{ queue: `${x.queue}-tx2`, payload: 1 }] }],
      kv: [{ op: 'check', ns: x.ns2, key: x.key2, expect: x.kvVersion, required: true }] }));
    await twin('stream cycle on A\'s query', (x) => B.post('/streams/v1/cycle', {
      query_id: x.queryId, partition_id: x.partitionId, consumer_group: 'streams.stream-a',
      state_ops: [{ type: 'upsert', key: x.stateKey, value: { b: 1 } }], push_items: [{ queue: 'sink-q', partition: 'part-a', payload: { b: 1 } }],
      ack: { transactionId: x.transactionId, leaseId: x.leaseId, status: 'completed', count: 1 }, release_lease: true }));
    await twin('trace on A\'s record', (x) => B.post('/api/v1/traces', { transactionId: x.transactionId, partitionId: x.partitionId, traceNames: [x.traceName], eventType: 'info', data: { b: 1 } }));
    await twin('message retry', (x) => B.post(`/api/v1/messages/${x.dlqPartitionId}/${x.dlqTxn}/retry`, {}));
    await twin('message delete', (x) => B.del(`/api/v1/messages/${x.partitionId}/${x.transactionId}`));
    await twin('dlq requeue', (x) => B.post(`/api/v1/dlq/${x.dlqId}/requeue`, { keepTransactionId: true }));
    await twin('dlq delete', (x) => B.del(`/api/v1/dlq/${x.dlqId}`));
    await twin('lock renew', (x) => B.post('/api/v1/locks', { operations: [{ op: 'renew', name: x.lock, token: x.lockToken, ttlSeconds: 600, slot: 0 }] }));
    await twin('lock release', (x) => B.post('/api/v1/locks', { operations: [{ op: 'release', name: x.lock, token: x.lockToken }] }));
    await twin('timer cancel', (x) => B.del(`/api/v1/timers/${x.tq}/${x.tk}`));
    await twin('timer cancel (2.x op)', (x) => B.post('/api/v1/timers', { operations: [{ op: 'cancel', queue: x.tq, timerKey: x.tk }] }));
    await twin('kv delete (path)', (x) => B.del(`/api/v1/kv/${x.ns}/${x.key}`));
    await twin('kv 2.x delete with A\'s version', (x) => B.post('/api/v1/kv', { operations: [{ op: 'delete', ns: x.ns2, key: x.key2, expect: x.kvVersion }] }));
    await twin('kv 1.x batch with A\'s version', (x) => B.post('/api/v1/kv/batch', { namespace: x.ns2, ops: [{ op: 'put', key: x.key2, value: 1, ifVersion: x.kvVersion }] }));
    await twin('group seek', (x) => B.post(`/api/v1/consumer-groups/${x.group}/queues/${x.queue}/seek`, { toStart: true }));
    await twin('group partition seek', (x) => B.post(`/api/v1/consumer-groups/${x.group}/queues/${x.queue}/partitions/${x.partition}/seek`, { offset: 0 }));
    await twin('group queue delete', (x) => B.del(`/api/v1/consumer-groups/${x.group}/queues/${x.queue}`));
    await twin('group delete', (x) => B.del(`/api/v1/consumer-groups/${x.group}?deleteMetadata=true`));
    await twin('partition delete', (x) => B.del(`/api/v1/resources/queues/${x.queue}/partitions/${x.partition}`));
    await twin('queue delete', (x) => B.del(`/api/v1/resources/queues/${x.queue}`));
    await twin('stream drop', (x) => B.del(`/streams/v1/queries/${x.stream}`));
    await twin('ephemeral ack', (x) => B.post('/api/v1/ephemeral/ack', { queue: x.eq, acks: [{ id: x.ephId, status: 'completed' }] }));
    await twin('ephemeral reset', (x) => B.post('/api/v1/ephemeral/reset', { queue: x.eq }));
    await twin('ephemeral delete', (x) => B.del(`/api/v1/ephemeral/queue/${x.eq}`));
  });

  test('B making things under A\'s names makes B\'s own', async () => {
    const bpayload = { b: 'bravo' };
    // JSON and binary pushes reusing A's transactionIds: B's own records, never A's duplicates
    const pj = await twin('push (JSON) with A\'s transactionId', (x) => B.post('/api/v1/push', { items: [{ queue: x.queue, partition: x.partition, transactionId: x.transactionId, payload: bpayload }] }));
    assert.equal(pj.status, 201, pj.text);
    assert.ok(!/duplicate/.test(pj.text), pj.text);
    const pb = await twin('push (QPB1) with A\'s transactionIds', (x) => B.post('/api/v1/push', qpb([{ queue: x.queue, partition: x.partition, items: [{ transactionId: 'a-txn-2', payload: bpayload }, { transactionId: 'a-txn-3', payload: bpayload }] }]), { 'content-type': 'application/x-queen-push' }));
    assert.equal(pb.status, 201, pb.text);
    assert.ok(!/duplicate/.test(pb.text), pb.text);
    await twin('configure', (x) => B.post('/api/v1/configure', { queue: x.queue, options: { leaseTime: 99 } }));
    await twin('kv put (path)', (x) => B.put(`/api/v1/kv/${x.ns}/${x.key}`, { value: bpayload }));
    await twin('kv putIfAbsent (path)', (x) => B.post(`/api/v1/kv/${x.ns}/${x.key}x/putIfAbsent`, { value: bpayload }));
    await twin('kv incr (path)', (x) => B.post(`/api/v1/kv/${x.ns}/${x.key}c/incr`, {}));
    await twin('kv 2.x putIfAbsent of A\'s key', (x) => B.post('/api/v1/kv', { operations: [{ op: 'putIfAbsent', ns: x.ns2, key: x.key2, value: bpayload, forever: true }] }));
    await twin('timer schedule under A\'s key', (x) => B.post('/api/v1/timers', { operations: [{ op: 'schedule', queue: x.tq, timerKey: x.tk, payload: Buffer.from('"b"').toString('base64'), delayMs: 3600000 }] }));
    await twin('lock acquire of A\'s held lock', (x) => B.post('/api/v1/locks', { operations: [{ op: 'acquire', name: x.lock, ttlSeconds: 60, owner: 'b-owner' }] }));
    await twin('stream register under A\'s name', (x) => B.post('/streams/v1/queries', { name: x.stream, source_queue: x.queue, sink_queue: 'sink-q', config_hash: 'h' }));
    await twin('ephemeral push', (x) => B.post('/api/v1/ephemeral/push', { queue: x.eq, messages: [{ payload: bpayload }] }));
    const ep = await twin('ephemeral pop', (x) => B.get(`/api/v1/ephemeral/pop?queue=${x.eq}&batch=10&wait=false`));
    assert.deepEqual(ep.json.messages.map((m) => m.payload), [bpayload]);
    // B pops its own three records, never A's
    const fr = await B.raw(`/api/v1/pop/queue/orders/partition/part-a?batch=10&wait=false&frames=true&consumerGroup=fg`);
    assert.equal(fr.status, 200);
    assert.ok(fr.body.includes('bravo') && !fr.body.includes(secret), fr.body.toString('latin1'));
    const pp = await twin('pop after B pushed', (x) => B.get(`/api/v1/pop/queue/${x.queue}?batch=10&wait=false`));
    assert.deepEqual(pp.json.messages.map((m) => m.data), [bpayload, bpayload, bpayload]);
    const ts = (await B.get('/api/v1/traces/names')).text;
    assert.deepEqual(leaks(ts), []);
  });

  test('B\'s listings after all that still name nothing of A', async () => {
    for (const p of [...LISTINGS, '/api/v1/kv/ns-two', '/api/v1/resources/queues/orders', '/api/v1/consumer-groups/group-a']) {
      const r = await B.get(p);
      assert.ok(r.status < 500, `${p} → ${r.status}`);
      assert.deepEqual(leaks(r.text), [], `${p}: ${r.text}`);
    }
  });

  test('A finds everything as it left it', async () => {
    let r = await A.get('/api/v1/resources/queues/orders');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.options.leaseTime, 300);
    // the lease is A's still: renew and ack work
    r = await A.post(`/api/v1/lease/${AID.leaseId}/extend`, { seconds: 120 });
    assert.equal(r.json[0].success, true, r.text);
    r = await A.post('/api/v1/ack', ackOf({ ...AID, group: undefined }));
    assert.equal(r.json[0].success, true, r.text);
    r = await A.get('/api/v1/pop/queue/orders/partition/part-a?batch=10&wait=false');
    assert.deepEqual(r.json.messages.map((m) => m.data.n), [2, 3, 4]);
    r = await A.get('/api/v1/consumer-groups/group-a');
    assert.ok(r.status === 200 && r.text.includes('orders'), r.text);
    r = await A.get(`/api/v1/messages/${AID.partitionId}/${AID.transactionId}`);
    assert.equal(r.status, 200, r.text);
    assert.equal((await A.get('/api/v1/dlq')).json.total, 1);
    assert.deepEqual((await A.get('/api/v1/kv/ns-one/key-one')).json.value, { secret });
    r = await A.post('/api/v1/kv', { operations: [{ op: 'get', ns: 'ns-two', key: 'key-two' }] });
    assert.deepEqual([r.json.results[0].value, r.json.results[0].version], [{ secret }, AID.kvVersion]);
    assert.equal((await A.get('/api/v1/kv/ns-one/key-onex')).status, 404);
    r = await A.get(`/api/v1/timers/timer-q/${AID.tk}`);
    assert.equal(r.json.found, true, r.text);
    r = await A.post('/api/v1/locks', { operations: [{ op: 'get', name: 'lock-a' }] });
    assert.deepEqual(r.json.results[0].holders.map((h) => [h.owner, h.token]), [['a-owner', AID.lockToken]]);
    r = await A.post('/streams/v1/state/get', { query_id: AID.queryId, partition_id: AID.partitionId, keys: ['state-a'] });
    assert.ok(r.text.includes(secret) && !r.text.includes('"b":1'), r.text);
    r = await A.get(`/api/v1/traces/${AID.partitionId}/${AID.transactionId}`);
    assert.ok(r.text.includes(secret) && !r.text.includes('"b":1'), r.text);
    r = await A.get('/api/v1/ephemeral/queues/ephem-a/depth');
    assert.equal(r.json.length, 2, r.text);
    r = await A.post('/api/v1/ephemeral/ack', { queue: 'ephem-a', acks: [{ id: AID.ephId, status: 'completed' }] });
    assert.equal(r.json.results[0].outcome, 'acked', r.text);
    assert.equal((await A.get('/api/v1/resources/queues/sink-q')).status, 404, 'B\'s cycle pushed into A\'s sink');
  });
});
