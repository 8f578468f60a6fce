// configure, health, status, metrics, CORS and HTTP/2 on one node.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { after, before, describe, test } from 'node:test';

import { get, post, readQueue, rmrf, startQueen } from './harness.mjs';

let node;
// with a key: configuring encryptionEnabled is refused on a node that has none (encryption.test.mjs)
before(async () => { node = await startQueen({ env: { QUEEN_ENCRYPTION_KEY: '00'.repeat(32) } }); });
after(async () => { if (node) { await node.stop(); rmrf(node.data); } });

const DEFAULTS = {
  priority: 0, leaseTime: 300, retryLimit: 3, retryDelay: 1000, maxSize: 0, ttl: 3600,
  deadLetterQueue: true, dlqAfterMaxRetries: true, delayedProcessing: 0, windowBuffer: 0,
  retentionSeconds: 0, completedRetentionSeconds: 0, retentionEnabled: false, encryptionEnabled: false,
  maxWaitTimeSeconds: 0, retentionSinkHold: null, retentionSinkHoldMaxSeconds: 604800,
};

describe('configure', () => {
  test('creates a queue with every option, defaults filled in', async () => {
    const r = await post(node.url, '/api/v1/configure', { queue: 'cfg1', namespace: 'billing', task: 'invoices', options: { leaseTime: 60 } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.configured, true);
    assert.equal(r.json.queue, 'cfg1');
    assert.equal(r.json.namespace, 'billing');
    assert.equal(r.json.task, 'invoices');
    assert.match(r.json.queueId, /^[0-9a-f-]{36}$/);
    assert.match(r.json.partitionId, /^[0-9a-f-]{36}$/);
    assert.deepEqual(r.json.options, { ...DEFAULTS, leaseTime: 60 });
  });

  test('reconfigure is a full overwrite and keeps the Default partition', async () => {
    const a = await post(node.url, '/api/v1/configure', { queue: 'cfg2', namespace: 'n', options: { retryLimit: 9, retentionEnabled: true, retentionSeconds: 86400, retentionSinkHold: 'default' } });
    const b = await post(node.url, '/api/v1/configure', { queue: 'cfg2', options: { windowBuffer: 10 } });
    assert.equal(b.status, 200);
    assert.equal(b.json.queueId, a.json.queueId);
    assert.equal(b.json.partitionId, a.json.partitionId);
    assert.deepEqual(b.json.options, { ...DEFAULTS, windowBuffer: 10 });
    assert.equal(b.json.namespace, '');
    assert.equal(a.json.options.retentionSinkHold, 'default');
  });

  test('the sink options of the spec are accepted', async () => {
    const r = await post(node.url, '/api/v1/configure', { queue: 'orders-hold', options: { retentionEnabled: true, retentionSeconds: 86400, retentionSinkHold: 'default', retentionSinkHoldMaxSeconds: 3600, completedRetentionSeconds: 60, maxWaitTimeSeconds: 120, encryptionEnabled: true } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.options.retentionSinkHoldMaxSeconds, 3600);
  });

  const bad = [
    [{}, /^queue is required$/],
    [{ queue: 7 }, /^queue is required$/],
    [{ queue: 'x', options: [] }, /^options must be an object$/],
    [{ queue: 'x', options: { bogus: 1 } }, /^unknown option "bogus"$/],
    [{ queue: 'x', options: { leaseTime: 'long' } }, /options\.leaseTime must be an integer between 0 and 2592000 seconds/],
    [{ queue: 'x', options: { leaseTime: -1 } }, /options\.leaseTime/],
    [{ queue: 'x', options: { leaseTime: 1.5 } }, /options\.leaseTime/],
    [{ queue: 'x', options: { retentionEnabled: 'yes' } }, /options\.retentionEnabled must be true or false/],
    [{ queue: 'x', options: { retentionSinkHold: 'bad name!' } }, /options\.retentionSinkHold/],
    [{ queue: 'x', options: { retentionSinkHoldMaxSeconds: 1 } }, /options\.retentionSinkHoldMaxSeconds/],
    [{ queue: 'x', namespace: 5 }, /namespace must be a string/],
  ];
  for (const [body, msg] of bad) {
    test(`rejects ${JSON.stringify(body)}`, async () => {
      const r = await post(node.url, '/api/v1/configure', body);
      assert.equal(r.status, 400, r.text);
      assert.match(r.json.error, msg);
    });
  }

  test('a rejected configure creates nothing', async () => {
    await post(node.url, '/api/v1/configure', { queue: 'never', options: { nope: true } });
    assert.equal((await readQueue(node.url, 'never')).found, false);
  });
});

// fetch and partitions/changed (the 2.x reads): reads.test.mjs

describe('operations', () => {
  test('/health', async () => {
    const r = await get(node.url, '/health');
    assert.equal(r.status, 200);
    assert.equal(r.json.status, 'healthy');
    assert.equal(r.json.database, 'connected');
  });

  test('/status has node, version, uptime, database and per-queue summaries', async () => {
    await post(node.url, '/api/v1/push', { items: [{ queue: 'st', partition: 'a', payload: 1 }, { queue: 'st', partition: 'b', payload: 2 }] });
    const r = await get(node.url, '/status');
    assert.equal(r.status, 200);
    for (const k of ['node', 'version', 'uptimeSeconds', 'database', 'queues']) assert.ok(k in r.json, k);
    assert.equal(r.json.database.state, 'connected');
    assert.equal(r.json.database.embedded, true);
    const q = r.json.queues.find((x) => x.queue === 'st');
    assert.equal(q.tenant, '00000000-0000-0000-0000-000000000001');
    assert.equal(q.partitions, 2);
    assert.equal(q.records, 2);
    assert.ok(q.safeTime >= q.lastTs);
  });

  test('/metrics/prometheus exposes requests, push records and bytes, commit batches, pool', async () => {
    const r = await get(node.url, '/metrics/prometheus');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
    for (const fam of ['queen_http_requests_total', 'queen_push_records_total', 'queen_push_bytes_total',
      'queen_push_commit_batch_records_bucket', 'queen_push_commit_batch_requests_count', 'queen_db_pool_size',
      'queen_db_pool_active', 'queen_db_pool_idle', 'queen_uptime_seconds', 'queen_process_resident_memory_bytes']) {
      assert.match(r.text, new RegExp(`^${fam}`, 'm'), fam);
    }
    assert.match(r.text, /queen_http_requests_total\{method="POST",route="\/api\/v1\/push",status="201"\} \d+/);
    const recs = Number(/^queen_push_records_total (\d+)$/m.exec(r.text)[1]);
    assert.ok(recs >= 2);
    // every sample line parses as name{labels} value
    for (const line of r.text.split('\n')) {
      if (!line || line.startsWith('#')) continue;
      assert.match(line, /^[a-z_:][a-z0-9_:]*(\{[^}]*\})? [0-9.eE+-]+|NaN|\+Inf$/, line);
    }
  });

  test('CORS on answers, OPTIONS preflight 204', async () => {
    const r = await get(node.url, '/health');
    assert.equal(r.headers.get('access-control-allow-origin'), '*');
    const o = await fetch(node.url + '/api/v1/push', { method: 'OPTIONS' });
    assert.equal(o.status, 204);
    assert.equal(o.headers.get('access-control-allow-methods'), 'GET, POST, PUT, DELETE, OPTIONS');
    assert.equal(o.headers.get('access-control-allow-headers'), 'Content-Type, Authorization');
  });

  test('HTTP/2 cleartext (prior knowledge) serves the API', async () => {
    const client = http2.connect(node.url);
    try {
      const body = await new Promise((resolve, reject) => {
        const req = client.request({ ':method': 'POST', ':path': '/api/v1/push', 'content-type': 'application/json' });
        let data = '';
        let status = 0;
        req.on('response', (h) => { status = h[':status']; });
        req.setEncoding('utf8');
        req.on('data', (c) => { data += c; });
        req.on('end', () => resolve({ status, data }));
        req.on('error', reject);
        req.end(JSON.stringify({ items: [{ queue: 'h2', payload: { ok: true } }] }));
      });
      assert.equal(body.status, 201);
      assert.equal(JSON.parse(body.data)[0].status, 'queued');
    } finally {
      client.close();
    }
  });

  test('keep-alive: many requests over one connection', async () => {
    const { Agent } = await import('node:http');
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const { request } = await import('node:http');
    const ports = new Set();
    for (let i = 0; i < 20; i++) {
      await new Promise((resolve, reject) => {
        const req = request(node.url + '/health', { agent }, (res) => {
          ports.add(res.socket.localPort);
          res.resume();
          res.on('end', resolve);
        });
        req.on('error', reject);
        req.end();
      });
    }
    agent.destroy();
    assert.equal(ports.size, 1);
  });
});
