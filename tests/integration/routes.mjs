// routes.mjs — every route of the broker with a request of the right shape (a template body
// naming nothing that exists, a harmless value per path parameter), for the tests that send
// something to all of them (hostile.test.mjs, dberror.test.mjs). hostile.test.mjs checks that
// this table and the one registered in src/api/api_common.c are the same.
export const UUID = '0190c2d4-0000-7000-8000-000000000001';
// Template bodies: valid in shape, naming nothing that exists, so every single mutation below
// is refused or finds nothing. `payload` and `value` hold arbitrary JSON and are not mutated.
export const ROUTES = [
  ['GET', '/health'],
  ['GET', '/status'],
  ['GET', '/metrics/prometheus'],
  ['GET', '/metrics'],
  ['POST', '/api/v1/push', { items: [{ queue: 'hq', partition: 'p', transactionId: 't1', traceId: UUID, payload: { a: 1 } }] }],
  // ephemeral (RAM) queues: nothing reaches PostgreSQL (a mutated push may fill a RAM queue)
  ['POST', '/api/v1/ephemeral/configure', { queue: 'hq', options: { maxBytes: 1048576, maxLength: 10, policy: 'reject', ttlSeconds: 0, leaseSeconds: 30, retryLimit: 1, windowBuffer: { ms: 0, count: 0 } } }],
  ['POST', '/api/v1/ephemeral/reset', { queue: 'hq' }],
  ['DELETE', '/api/v1/ephemeral/queue/:queue'],
  ['POST', '/api/v1/ephemeral/push', { queue: 'hq', partition: 'p', messages: [{ payload: { a: 1 } }] }],
  ['GET', '/api/v1/ephemeral/pop'],
  ['POST', '/api/v1/ephemeral/ack', { queue: 'hq', group: 'g', acks: [{ id: 'x', status: 'completed', error: 'e' }] }],
  ['GET', '/api/v1/ephemeral/queues'],
  ['GET', '/api/v1/ephemeral/queues/:queue/depth'],
  ['POST', '/api/v1/configure', { queue: 'hq', namespace: 'n', task: 't', options: { leaseTime: 60, deadLetterQueue: true, retentionSinkHold: 's' } }],
  ['POST', '/api/v1/fetch', { entries: [{ queue: 'hq', partition: 'p', offset: 0, maxBytes: 1024 }], maxBytes: 4096 }],
  ['POST', '/api/v1/partitions/changed', { entries: [{ queue: 'hq', since: '2026-05-06T10:00:00.000000Z', after: '1', limit: 10 }] }],
  ['POST', '/api/v1/stats/refresh'],
  ['GET', '/api/v1/pop'],
  ['GET', '/api/v1/pop/queue/:queue'],
  ['GET', '/api/v1/pop/queue/:queue/partition/:partition'],
  ['POST', '/api/v1/ack', { transactionId: 't1', partitionId: UUID, leaseId: UUID, status: 'completed', consumerGroup: 'g', error: 'e' }],
  ['POST', '/api/v1/ack/batch', { consumerGroup: 'g', acknowledgments: [{ transactionId: 't1', partitionId: UUID, leaseId: UUID, status: 'failed', error: 'e' }] }],
  ['POST', '/api/v1/lease/:leaseId/extend', { seconds: 30 }],
  ['POST', '/api/v1/transaction', {
    operations: [
      { type: 'push', items: [{ queue: 'hq', partition: 'p', transactionId: 't2', payload: { b: 2 } }] },
      { type: 'ack', transactionId: 't1', partitionId: UUID, status: 'completed', consumerGroup: 'g', leaseId: UUID, error: 'e' }],
    requiredLeases: [UUID],
    kv: [{ op: 'check', ns: 'ns', key: 'k', expect: 999999999, required: true }, { op: 'getMany', ns: 'ns', keys: ['k'] }],
  }],
  ['POST', '/api/v1/kv', { operations: [
    { op: 'put', ns: 'ns', key: 'k', value: { v: 1 }, ttlSeconds: 60, expect: 999999999, required: true },
    { op: 'getMany', ns: 'ns', keys: ['k'] }, { op: 'getPrefix', ns: 'ns', prefix: 'k', after: 'a', limit: 5, keysOnly: true },
    { op: 'incr', ns: 'ns', key: 'c', delta: 1, min: 0, max: 10, ttlSeconds: 60 }] }],
  ['POST', '/api/v1/locks', { operations: [
    { op: 'renew', name: 'hl', token: 999999999, ttlSeconds: 30, slot: 0, owner: 'o' },
    { op: 'release', name: 'hl', token: 999999999, slot: 0 }, { op: 'get', name: 'hl' }] }],
  ['POST', '/api/v1/kv/batch', { namespace: 'ns', ops: [{ op: 'put', key: 'k', value: { v: 1 }, ttlMs: 60000, ifVersion: 999999999 }] }],
  ['GET', '/api/v1/kv/:namespace'],
  ['GET', '/api/v1/kv/:namespace/:key'],
  ['PUT', '/api/v1/kv/:namespace/:key', { value: { v: 1 }, ttlMs: 60000, ifVersion: 999999999 }],
  ['DELETE', '/api/v1/kv/:namespace/:key'],
  ['POST', '/api/v1/kv/:namespace/:key/putIfAbsent', { value: { v: 1 }, ttlMs: 60000, ifVersion: 999999999 }],
  ['POST', '/api/v1/kv/:namespace/:key/incr', { by: 1, max: 10, ttlMs: 60000, ifVersion: 999999999 }],
  // a cancel of a key that is not pending: no mutation of it can store anything (a schedule's
  // could: a negative delayMs is valid); tests/integration/timers.test.mjs covers the schedule fields
  ['POST', '/api/v1/timers', { operations: [{ op: 'cancel', queue: 'hq', timerKey: 'k', txn: 't3' }] }],
  ['GET', '/api/v1/timers/:queue/*timerKey'],
  ['DELETE', '/api/v1/timers/:queue/*timerKey'],
  ['GET', '/api/v1/timers/:queue'],
  ['GET', '/api/v1/consumer-groups'],
  ['GET', '/api/v1/consumer-groups/lagging'],
  ['GET', '/api/v1/consumer-groups/:group'],
  ['DELETE', '/api/v1/consumer-groups/:group'],
  ['POST', '/api/v1/consumer-groups/:group/subscription', { subscriptionTimestamp: '2026-05-06T10:00:00Z' }],
  ['DELETE', '/api/v1/consumer-groups/:group/queues/:queue'],
  ['POST', '/api/v1/consumer-groups/:group/queues/:queue/seek', { timestamp: '2026-05-06T10:00:00Z' }],
  ['POST', '/api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek', { offset: 1 }],
  ['GET', '/api/v1/dlq'],
  ['POST', '/api/v1/dlq/:id/requeue', { keepTransactionId: true }],
  ['DELETE', '/api/v1/dlq/:id'],
  ['GET', '/api/v1/resources/overview'],
  ['GET', '/api/v1/resources/queues'],
  ['GET', '/api/v1/resources/queues/:queue'],
  ['DELETE', '/api/v1/resources/queues/:queue'],
  ['DELETE', '/api/v1/resources/queues/:queue/partitions/:partition'],
  ['GET', '/api/v1/resources/queues/:queue/depth'],
  ['GET', '/api/v1/resources/partitions'],
  ['GET', '/api/v1/resources/namespaces'],
  ['GET', '/api/v1/resources/tasks'],
  ['GET', '/api/v1/status'],
  ['GET', '/api/v1/status/analytics'],
  ['GET', '/api/v1/analytics/system-metrics'],
  ['GET', '/api/v1/analytics/worker-metrics'],
  ['GET', '/api/v1/status/queues'],
  ['GET', '/api/v1/status/queues/:queue'],
  ['GET', '/api/v1/messages'],
  ['GET', '/api/v1/messages/:partitionId/:transactionId'],
  ['DELETE', '/api/v1/messages/:partitionId/:transactionId'],
  ['POST', '/api/v1/messages/:partitionId/:transactionId/retry', {}],
  ['POST', '/api/v1/traces', { transactionId: 't1', partitionId: UUID, consumerGroup: 'g', traceNames: ['n'], eventType: 'info', data: { a: 1 } }],
  ['GET', '/api/v1/traces/names'],
  ['GET', '/api/v1/traces/by-name/:traceName'],
  ['GET', '/api/v1/traces/:partitionId/:transactionId'],
  ['POST', '/streams/v1/queries', { name: 'hq-stream', source_queue: 'hq', sink_queue: 'hs', config_hash: 'h1', reset: false }],
  ['GET', '/streams/v1/queries'],
  ['GET', '/streams/v1/queries/:name'],
  ['DELETE', '/streams/v1/queries/:name'],
  ['POST', '/streams/v1/cycle', {
    query_id: UUID, partition_id: UUID, consumer_group: 'g', state_ops: [{ type: 'upsert', key: 'k', value: { v: 1 } }],
    push_items: [{ queue: 'hs', partition: 'p', payload: { b: 2 } }],
    ack: { transactionId: 't1', leaseId: UUID, status: 'completed', count: 1 }, release_lease: true,
  }],
  ['POST', '/streams/v1/state/get', { query_id: UUID, partition_id: UUID, keys: ['k'], key_prefix: 'k', ripe_at_or_before: 1 }],
];
// The control plane's routes (the embedded proxy's port, x-queen-cp-token; src/api/api_cp.c
// api_register_proxy), for hostile2.test.mjs. The same rule as above: each body is valid in shape
// and names a cluster that does not exist (or, for the create, is refused by any one mutation).
export const CP_ROUTES = [
  ['POST', '/api/cp/clusters', { name: 'hq-new', tenant: '0190c2d4-0000-7000-8000-0000000000ff', status: 'active', quotas: { requestsPerSecond: 0, maxStorageBytes: 0 } }],
  ['GET', '/api/cp/clusters'],
  ['GET', '/api/cp/clusters/:cluster'],
  ['PATCH', '/api/cp/clusters/:cluster', { status: 'push_blocked', quotas: { requestsPerSecond: 5, maxStorageBytes: 1024 } }],
  ['DELETE', '/api/cp/clusters/:cluster'],
  ['PUT', '/api/cp/clusters/:cluster/status', { status: 'suspended' }],
  ['POST', '/api/cp/clusters/:cluster/token'],
  ['POST', '/api/cp/clusters/:cluster/purge'],
  ['PUT', '/api/cp/clusters/:cluster/s3', {
    queues: 'hq', endpoint: 'http://127.0.0.1:9', region: 'us-east-1', bucket: 'b', accessKey: 'a', pathStyle: true,
    prefix: 'p', format: 'jsonl', start: 'earliest', targetMb: 8, maxWindowMs: 10000, secretKey: 's', enabled: true,
  }],
  ['GET', '/api/cp/clusters/:cluster/s3'],
  ['DELETE', '/api/cp/clusters/:cluster/s3'],
];
// A harmless value per path parameter (parsable where the route parses it).
export const GOOD_PARAM = { queue: 'hq', partition: 'p', leaseId: UUID, namespace: 'ns', key: 'k', id: '1', group: 'g', partitionId: UUID, transactionId: 't1', timerKey: 'k/1', name: 'hq-none', traceName: 'n', cluster: 'hq-none' };

// The path of a route with its parameters filled (bad: name → already-encoded replacement).
// (":name" is one segment; "*name" the rest of the path, its '/' kept, as the 2.x client sends a timerKey.)
export const fillPath = (pattern, bad = {}) =>
  pattern.replace(/([:*])([A-Za-z]+)/g, (_, kind, n) => (n in bad ? bad[n]
    : kind === '*' ? GOOD_PARAM[n].split('/').map(encodeURIComponent).join('/') : encodeURIComponent(GOOD_PARAM[n])));
