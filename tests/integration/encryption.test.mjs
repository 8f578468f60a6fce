// Encryption at rest (docs/encryption.md): payloads of a queue with encryptionEnabled are sealed
// (AES-256-GCM under QUEEN_ENCRYPTION_KEY) before they reach PostgreSQL, every read path gives the
// plaintext back byte for byte, a node whose key cannot open a record says so, and the database
// refuses plaintext for an encrypted queue from a node that has not learnt it yet.
//
// One throwaway PostgreSQL, several nodes on it: A and D share key K1, B has K2, C has none.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { get, post, readQueue, rmrf, runBoot, sleep, startPostgres, startQueen } from './harness.mjs';

const K1 = '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f';
const K1_B64 = 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8='; // the same 32 bytes
const K2 = 'ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100';
const PAYLOAD = '{"total":42.00,"card":"4111-1111-1111-1111"}';
const SECRET = '4111-1111-1111-1111';
// one timer op of the 2.x wire (payload: the JSON text, sent as base64)
const timer = (node, queue, timerKey, text, delayMs, extra = {}) => post(node.url, '/api/v1/timers',
  { operations: [{ op: 'schedule', queue, timerKey, payload: Buffer.from(text).toString('base64'), delayMs, ...extra }] });

let pg;
const nodes = [];
before(async () => { pg = await startPostgres(); });
after(async () => {
  for (const n of nodes) { try { await n.stop(); } catch (e) { console.error(e.message); } rmrf(n.data); }
  if (pg) pg.destroy();
});

async function node(key) {
  const env = { QUEEN_PG_URL: pg.url, DB_POOL_SIZE: '4' };
  if (key) env.QUEEN_ENCRYPTION_KEY = key;
  const n = await startQueen({ env });
  nodes.push(n);
  return n;
}
async function stop(n) {
  await n.stop();
  rmrf(n.data);
  nodes.splice(nodes.indexOf(n), 1);
}

// raw JSON bodies, so the payload's bytes can be compared as sent
const pushRaw = (n, items) => post(n.url, '/api/v1/push', `{"items":[${items.join(',')}]}`);
const item = (queue, partition, payload, extra = '') =>
  `{"queue":"${queue}","partition":"${partition}","payload":${payload}${extra}}`;
const configure = (n, queue, options) => post(n.url, '/api/v1/configure', { queue, options });
// every record of a queue (or of some partitions) as { status, text, json: { records } }: 404 when none of it exists
const fetchAll = async (n, queue, partitions) => {
  const q = await readQueue(n.url, queue, { partitions });
  return { status: q.found ? 200 : 404, text: q.text, json: { records: q.records } };
};

// Every stored segment of a queue as bytes, straight from PostgreSQL.
function segments(queue) {
  const out = pg.psql(`SELECT encode(s.data, 'hex') FROM queen.segments s JOIN queen.partitions p ON p.id = s.partition_id
    JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '${queue}' ORDER BY p.name, s.base_offset`);
  return out ? out.split('\n').map((h) => Buffer.from(h, 'hex')) : [];
}
const holds = (bufs, text) => bufs.some((b) => b.includes(Buffer.from(text)));
// The record flags byte of the first record of a segment (after the version byte): 8 = sealed.
const sealedFlag = (seg) => (seg[1] & 8) === 8;

async function metric(n, name) {
  const r = await get(n.url, '/metrics/prometheus');
  const m = r.text.match(new RegExp(`^${name} (\\d+)`, 'm'));
  return m ? Number(m[1]) : NaN;
}

describe('boot', () => {
  const what = 'It is the AES-256-GCM key that seals the payloads of queues with encryptionEnabled; every node needs the same one';
  const cases = [
    ['short', 'QUEEN_ENCRYPTION_KEY=<5 characters, not shown> is not 64 hex digits or the base64 of 32 bytes: it has 5 characters, which is not well-formed base64'],
    [K1.slice(0, 60), 'QUEEN_ENCRYPTION_KEY=<60 characters, not shown> is not 64 hex digits or the base64 of 32 bytes: it has 60 characters and decodes as base64 to 45 bytes'],
    [K1.slice(0, 63) + 'z', 'QUEEN_ENCRYPTION_KEY=<64 characters, not shown> is not 64 hex digits or the base64 of 32 bytes: it has 64 characters, and not all of them are hex digits'],
    ['AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg==', 'QUEEN_ENCRYPTION_KEY=<44 characters, not shown> is not 64 hex digits or the base64 of 32 bytes: it has 44 characters and decodes as base64 to 31 bytes'],
    ['correct horse battery staple', 'QUEEN_ENCRYPTION_KEY=<28 characters, not shown> is not 64 hex digits or the base64 of 32 bytes: it has 28 characters, not all of them hex digits or base64'],
  ];
  for (const [value, line] of cases) {
    test(`a bad key (${value.length} characters) stops the boot with one line that does not show it`, () => {
      const r = runBoot({ QUEEN_ENCRYPTION_KEY: value });
      assert.equal(r.code, 2);
      assert.equal(r.stdout, '');
      assert.equal(r.stderr, `ERROR boot: FATAL: queen: ${line}. ${what}\n`);
      assert.ok(!r.stderr.includes(value));
    });
  }
});

describe('a node with the key', () => {
  let a;
  before(async () => { a = await node(K1); });

  test('configure refuses nothing; the node logs its key fingerprint, never the key', async () => {
    const r = await configure(a, 'enc', { encryptionEnabled: true, retryLimit: 0, deadLetterQueue: true });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.options.encryptionEnabled, true);
    assert.equal((await configure(a, 'plain', {})).status, 200);
    assert.match(a.log, /encryption at rest: key fingerprint cb7d7711/);
    assert.ok(!a.log.includes(K1));
  });

  test('stored segments hold no plaintext; the same push to a plain queue does (the check can fail)', async () => {
    for (const q of ['enc', 'plain']) {
      const r = await pushRaw(a, [item(q, 'p1', PAYLOAD, ',"transactionId":"t-1","traceId":"0190c2d4-0000-7000-8000-000000000001"'),
        item(q, 'p1', '{"total":42.00}'), item(q, 'p2', '"just a string 42.00"'), `{"queue":"${q}","partition":"p2"}`]);
      assert.equal(r.status, 201, r.text);
    }
    const enc = segments('enc'), plain = segments('plain');
    assert.equal(enc.length, 2);
    assert.equal(plain.length, 2);
    assert.ok(holds(plain, SECRET) && holds(plain, '42.00') && holds(plain, 'just a string'));
    assert.ok(!holds(enc, SECRET) && !holds(enc, '42.00') && !holds(enc, 'total') && !holds(enc, 'just a string'));
    assert.ok(enc.every(sealedFlag));
    assert.ok(!plain.some(sealedFlag));
    // the transactionId and traceId stay readable (they are not payload)
    assert.ok(holds(enc, 't-1'));
    assert.equal(await metric(a, 'queen_push_sealed_records_total'), 4);
  });

  test('fetch gives the plaintext byte for byte', async () => {
    const r = await fetchAll(a, 'enc');
    assert.equal(r.status, 200, r.text);
    assert.ok(r.text.includes(`"payload":${PAYLOAD}`), r.text);
    assert.ok(r.text.includes('"payload":{"total":42.00}'));
    assert.ok(r.text.includes('"payload":"just a string 42.00"'));
    assert.deepEqual(r.json.records.map((x) => x.payload), [JSON.parse(PAYLOAD), { total: 42 }, 'just a string 42.00', null]);
    assert.ok(r.json.records.every((x) => !('payloadError' in x)));
    assert.equal(r.json.records[0].traceId, '0190c2d4-0000-7000-8000-000000000001');
  });

  test('pop gives the plaintext, and the message lookup too', async () => {
    const r = await get(a.url, '/api/v1/pop/queue/enc/partition/p1?batch=10&wait=false&autoAck=true');
    assert.equal(r.status, 200, r.text);
    assert.ok(r.text.includes(`"data":${PAYLOAD}`), r.text);
    assert.ok(r.text.includes('"data":{"total":42.00}'));
    const m = r.json.messages.find((x) => x.transactionId === 't-1');
    const one = await get(a.url, `/api/v1/messages/${m.partitionId}/t-1`);
    assert.equal(one.status, 200, one.text);
    assert.ok(one.text.includes(`"payload":${PAYLOAD}`), one.text);
    assert.equal(one.json.isEncrypted, true);
  });

  test('a transaction seals its pushes', async () => {
    const r = await post(a.url, '/api/v1/transaction', `{"operations":[{"type":"push","items":[{"queue":"enc","partition":"tx","payload":{"tx":"${SECRET}","n":1.50}}]}]}`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.success, true, r.text);
    assert.ok(!holds(segments('enc'), SECRET));
    const f = await fetchAll(a, 'enc', ['tx']);
    assert.ok(f.text.includes(`"payload":{"tx":"${SECRET}","n":1.50}`), f.text);
  });

  test('dead letters show the plaintext and requeue it sealed again', async () => {
    assert.equal((await pushRaw(a, [item('enc', 'dl', '{"poison":1.10}')])).status, 201);
    const p = await get(a.url, '/api/v1/pop/queue/enc/partition/dl?batch=1&wait=false');
    const msg = p.json.messages[0];
    assert.ok(p.text.includes('"data":{"poison":1.10}'), p.text);
    const ack = await post(a.url, '/api/v1/ack', { transactionId: msg.transactionId, partitionId: msg.partitionId, leaseId: msg.leaseId, status: 'dlq', error: 'bad' });
    assert.equal(ack.status, 200, ack.text);
    const dl = await get(a.url, '/api/v1/dlq?queue=enc');
    assert.equal(dl.status, 200, dl.text);
    assert.equal(dl.json.messages.length, 1, dl.text);
    assert.ok(dl.text.includes('"data":{"poison":1.10}'), dl.text);
    assert.equal(dl.json.messages[0].isEncrypted, true);
    // the dead letter's own copy is sealed as well
    const copy = pg.psql("SELECT encode(record, 'hex') FROM queen.dead_letters");
    assert.ok(copy.length > 0 && !Buffer.from(copy, 'hex').includes(Buffer.from('poison')));
    const rq = await post(a.url, `/api/v1/dlq/${dl.json.messages[0].dlqId}/requeue`, {});
    assert.equal(rq.status, 201, rq.text);
    const f = await fetchAll(a, 'enc', ['dl']);
    assert.equal(f.json.records.length, 2);
    assert.ok(f.text.split('"payload":{"poison":1.10}').length === 3, f.text);
    assert.ok(!holds(segments('enc'), 'poison'));
  });

  test('timers are sealed when scheduled, peeked as stored (sealed), and fire sealed', async () => {
    const later = await timer(a, 'enc', 'later', `{"later":"${SECRET}"}`, 3600000, { partition: 'tm' });
    assert.equal(later.json.results[0].status, 'scheduled', later.text);
    const stored = pg.psql("SELECT encode(record, 'hex') FROM queen.log_timers WHERE queue = 'enc' AND timer_key = 'later'");
    assert.ok(stored.length > 0);
    assert.ok(!Buffer.from(stored, 'hex').includes(Buffer.from(SECRET)));
    // peek is an inspection surface: the bytes as stored, and says they are sealed
    for (const r of [await get(a.url, '/api/v1/timers/enc/later'), (await get(a.url, '/api/v1/timers/enc')).json.rows[0]]) {
      const row = r.json || r;
      assert.equal(row.encrypted, true, JSON.stringify(row));
      const bytes = Buffer.from(row.payload, 'base64');
      assert.ok(bytes.length > SECRET.length && !bytes.includes(Buffer.from(SECRET)));
    }
    assert.equal((await timer(a, 'enc', 'now', '{"now":7.70}', 0, { partition: 'tm' })).status, 200);
    let f;
    for (let i = 0; i < 100; i++) {
      f = await fetchAll(a, 'enc', ['tm']);
      if (f.status === 200 && f.json.records.length) break;
      await sleep(100);
    }
    assert.ok(f.text.includes('"payload":{"now":7.70}'), f.text);
    assert.ok(!holds(segments('enc'), '7.70'));
  });

  test('the base64 spelling of the same key opens the same records', async () => {
    const b64 = await node(K1_B64);
    try {
      const r = await fetchAll(b64, 'enc');
      assert.ok(r.text.includes(`"payload":${PAYLOAD}`), r.text);
    } finally { await stop(b64); }
  });
});

describe('nodes that cannot open the records', () => {
  test('a node with another key says so per record and keeps the other records intact', async () => {
    const b = await node(K2);
    try {
      const r = await fetchAll(b, 'enc');
      assert.equal(r.status, 200, r.text);
      const rec = r.json.records.find((x) => x.transactionId === 't-1');
      assert.equal(rec.payload, null);
      assert.match(rec.payloadError, /^sealed under another key \(fingerprint cb7d7711, this node's is [0-9a-f]{8}\)$/);
      assert.ok(!r.text.includes(SECRET));
      // an empty payload has nothing to open
      assert.equal(r.json.records.find((x) => x.partition === 'p2' && x.offset === 1).payload, null);
      const plain = await fetchAll(b, 'plain');
      assert.ok(plain.text.includes(`"payload":${PAYLOAD}`));
      assert.ok(plain.json.records.every((x) => !('payloadError' in x)));
      // pop: the same, in "data"
      const p = await get(b.url, '/api/v1/pop/queue/enc/partition/p1?batch=10&wait=false&consumerGroup=other');
      assert.equal(p.status, 200, p.text);
      assert.equal(p.json.messages[0].data, null);
      assert.match(p.json.messages[0].payloadError, /^sealed under another key/);
      // the framed pop (QPF1): no payload in the frame, the reason in the answer's own keys
      const fr = await fetch(`${b.url}/api/v1/pop/queue/enc/partition/p1?batch=10&wait=false&consumerGroup=other2&frames=true`);
      assert.equal(fr.headers.get('content-type'), 'application/x-queen-pop');
      const raw = Buffer.from(await fr.arrayBuffer());
      assert.ok(!raw.includes(Buffer.from(SECRET)));
      const own = JSON.parse(raw.subarray(9, 9 + raw.readUInt32LE(5)).toString());
      assert.equal(own.frames, true);
      assert.equal(own.payloadErrors.length, p.json.messages.filter((x) => x.payloadError).length);
      assert.match(own.payloadErrors[0].payloadError, /^sealed under another key/);
      assert.match(own.payloadErrors[0].partitionId, /^[1-9][0-9]*$/);
      // the message lookup and the timer listing
      const m = await get(b.url, `/api/v1/messages/${p.json.messages[0].partitionId}/t-1`);
      assert.equal(m.json.payload, null);
      assert.match(m.json.payloadError, /^sealed under another key/);
      // a timer is peeked as stored: the same sealed bytes whatever the node's key
      const l = await get(b.url, '/api/v1/timers/enc/later');
      assert.equal(l.json.encrypted, true);
      assert.ok(!Buffer.from(l.json.payload, 'base64').includes(Buffer.from(SECRET)));
    } finally { await stop(b); }
  });

  test('a node without a key says so, refuses to configure encryption and to push plaintext into it', async () => {
    const c = await node(null);
    try {
      assert.match(c.log, /no QUEEN_ENCRYPTION_KEY; configuring encryptionEnabled is refused here/);
      const r = await fetchAll(c, 'enc');
      const rec = r.json.records.find((x) => x.transactionId === 't-1');
      assert.equal(rec.payload, null);
      assert.equal(rec.payloadError, 'sealed, and this node has no QUEEN_ENCRYPTION_KEY to open it');
      const cf = await configure(c, 'enc-2', { encryptionEnabled: true });
      assert.equal(cf.status, 400);
      assert.match(cf.json.error, /^encryptionEnabled needs QUEEN_ENCRYPTION_KEY, and this node has none/);
      assert.equal((await get(c.url, '/api/v1/resources/queues/enc-2')).status, 404);
      // pushes: the encrypted queue is refused (nothing stored), a plain queue works as ever
      const before = segments('enc').length;
      const pr = await pushRaw(c, [item('enc', 'p9', '{"from":"c"}')]);
      assert.equal(pr.status, 503, pr.text);
      assert.match(pr.json.error, /^queue enc has encryptionEnabled and this node has no QUEEN_ENCRYPTION_KEY/);
      assert.equal(segments('enc').length, before);
      // two requests sharing a group commit: only the one for the encrypted queue fails
      const [x, y] = await Promise.all([pushRaw(c, [item('plain', 'p9', '{"ok":1}')]), pushRaw(c, [item('enc', 'p9', '{"no":1}')])]);
      assert.equal(x.status, 201, x.text);
      assert.equal(y.status, 503, y.text);
      const tx = await post(c.url, '/api/v1/transaction', { operations: [{ type: 'push', items: [{ queue: 'enc', payload: { t: 1 } }] }] });
      assert.equal(tx.status, 503, tx.text);
      const tm = await timer(c, 'enc', 'from-c', '{"t":1}', 0);
      assert.equal(tm.status, 503, tm.text);
      assert.deepEqual(Object.keys(tm.json), ['error', 'code', 'reason', 'detail', 'requestId']);
      assert.deepEqual([tm.json.error, tm.json.code, tm.json.reason], ['encryption_key_missing', 'encryption_key_missing', 'no_node_key']);
      assert.match(tm.json.detail, /^queue enc has encryptionEnabled and this node has no QUEEN_ENCRYPTION_KEY/);
      assert.equal(pg.psql("SELECT count(*) FROM queen.log_timers WHERE timer_key = 'from-c'"), '0');
      assert.ok(!holds(segments('enc'), '"no"') && !holds(segments('enc'), 'from'));
    } finally { await stop(c); }
  });
});

describe('across nodes with the same key', () => {
  test('a queue encrypted on one node is sealed by a node that pushed to it in plaintext before', async () => {
    const a = nodes[0];
    const d = await node(K1);
    try {
      // d learns nothing of "late" being plain: it pushes plaintext
      assert.equal((await pushRaw(d, [item('late', 'p', '{"before":1}')])).status, 201);
      assert.ok(holds(segments('late'), 'before'));
      // a timer made on d while the queue is plain, due in a moment
      const tm = await timer(d, 'late', 'plain', `{"timer":"${SECRET}"}`, 3000, { partition: 't' });
      assert.equal(tm.json.results[0].status, 'scheduled', tm.text);
      assert.ok(Buffer.from(pg.psql("SELECT encode(record, 'hex') FROM queen.log_timers WHERE queue = 'late' AND timer_key = 'plain'"), 'hex').includes(Buffer.from(SECRET)));
      // encrypted through a, then pushed through d at once: d's plaintext is refused, sealed, sent again
      assert.equal((await configure(a, 'late', { encryptionEnabled: true })).status, 200);
      const r = await pushRaw(d, [item('late', 'p', `{"after":"${SECRET}"}`)]);
      assert.equal(r.status, 201, r.text);
      assert.ok(!holds(segments('late'), SECRET));
      assert.equal(await metric(d, 'queen_push_seal_refusals_total'), 1);
      // the next push needs no refusal
      assert.equal((await pushRaw(d, [item('late', 'p', '{"again":2}')])).status, 201);
      assert.equal(await metric(d, 'queen_push_seal_refusals_total'), 1);
      // a transaction through d into another queue encrypted meanwhile
      assert.equal((await pushRaw(d, [item('late2', 'p', '{"x":0}')])).status, 201);
      assert.equal((await configure(a, 'late2', { encryptionEnabled: true })).status, 200);
      const tx = await post(d.url, '/api/v1/transaction', `{"operations":[{"type":"push","items":[{"queue":"late2","partition":"p","payload":{"tx":"${SECRET}"}}]}]}`);
      assert.equal(tx.json.success, true, tx.text);
      assert.ok(!holds(segments('late2'), SECRET));
      // the plaintext timer is sealed in place before it fires
      let f;
      for (let i = 0; i < 100; i++) {
        f = await fetchAll(a, 'late', ['t']);
        if (f.status === 200 && f.json.records.length) break;
        await sleep(100);
      }
      assert.ok(f.text.includes(`"payload":{"timer":"${SECRET}"}`), f.text);
      assert.ok(!holds(segments('late'), SECRET));
      assert.equal(pg.psql(`SELECT count(*) FROM queen.log_timers WHERE queue = 'late'`), '0');
      assert.equal((await metric(a, 'queen_timers_sealed_total')) + (await metric(d, 'queen_timers_sealed_total')), 1);
      // everything reads back through both nodes
      for (const n of [a, d]) {
        const all = await fetchAll(n, 'late');
        assert.deepEqual(all.json.records.map((x) => x.payload).filter((x) => !x.timer),
          [{ before: 1 }, { after: SECRET }, { again: 2 }]);
      }
      // a timer scheduled through d into a queue encrypted meanwhile (d has not learnt it):
      // timer_ops_v1 refuses the plaintext (QE002), d seals it and sends the ops again
      assert.equal((await pushRaw(d, [item('late3', 'p', '{"x":0}')])).status, 201);
      assert.equal((await configure(a, 'late3', { encryptionEnabled: true })).status, 200);
      const t3 = await timer(d, 'late3', 'k', `{"t3":"${SECRET}"}`, 3600000);
      assert.equal(t3.json.results[0].status, 'scheduled', t3.text);
      const rec3 = pg.psql("SELECT encode(record, 'hex') FROM queen.log_timers WHERE queue = 'late3' AND timer_key = 'k'");
      assert.ok(rec3.length > 0 && !Buffer.from(rec3, 'hex').includes(Buffer.from(SECRET)));
      assert.equal((await get(a.url, '/api/v1/timers/late3/k')).json.encrypted, true);
    } finally { await stop(d); }
  });

  test('turning encryption off: new records are plain, the sealed ones still read', async () => {
    const a = nodes[0];
    assert.equal((await configure(a, 'late', { encryptionEnabled: false })).status, 200);
    assert.equal((await pushRaw(a, [item('late', 'p', '{"plain":"again"}')])).status, 201);
    assert.ok(holds(segments('late'), '"plain":"again"'));
    const all = await fetchAll(a, 'late');
    assert.ok(all.text.includes(`"payload":{"after":"${SECRET}"}`));
    assert.ok(all.text.includes('"payload":{"plain":"again"}'));
  });
});
