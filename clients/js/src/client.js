// The broker client: Queen, QueueBuilder, TransactionBuilder, KV, timers, locks (the 2.x wire).
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { HttpClient, QueenHttpError, sleep } from './http.js';

const QUEUE_MODE = '__QUEUE_MODE__';

// A pop that asked for conflation got an answer with neither `conflation: true` nor
// `conflationConflict: true` (a 204 included): the broker ignored the flag, so the group would
// get every record instead of the newest of each partition. Terminal for a consumer (the 2.x
// client's ConflationUnsupportedError).
export class ConflationUnsupportedError extends Error {
  constructor(message = 'queen-mq: conflation() requires a broker that supports conflation (the answer carried no conflation echo)', { status, body } = {}) {
    super(message);
    this.name = 'ConflationUnsupportedError';
    this.code = 'conflation_unsupported';
    this.status = status;
    this.body = body;
  }
}

// `conflationConflict: true`: the group's stored policy differs from what the pop declared, and
// the stored one was applied. Warned once per process (process.emitWarning), as the 2.x client.
let conflictWarned = false;
function warnConflationConflict(queue, group) {
  if (conflictWarned) return;
  conflictWarned = true;
  process.emitWarning(`queen-mq: the pop of queue ${queue} for group ${group} declared a conflation policy that differs from the group's stored one; the stored policy applies (warned once per process)`,
    { type: 'QueenConflationConflict', code: 'conflation_conflict' });
}
// for tests: forget that the warning was given
export function _resetConflationWarning() { conflictWarned = false; }
const UUID4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

// UUIDv7: 48-bit unix ms, version and variant bits, the rest random
export function uuidv7() {
  const b = randomBytes(16);
  const ms = BigInt(Date.now());
  for (let i = 0; i < 6; i++) b[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn);
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const QUEUE_DEFAULTS = {
  leaseTime: 300, retryLimit: 3, priority: 0, delayedProcessing: 0, windowBuffer: 0, maxSize: 0,
  retentionSeconds: 0, completedRetentionSeconds: 0, encryptionEnabled: false,
};

export class Queen {
  constructor(opts = {}) {
    if (typeof opts === 'string' || Array.isArray(opts)) opts = { urls: [].concat(opts) };
    const urls = opts.urls ?? (opts.url ? [opts.url] : []);
    this.options = { ...opts, urls };
    this.http = new HttpClient({ ...opts, urls });
    this.kv = new Kv(this);
    this.timers = new Timers(this);
    this.locks = new Locks(this);
    this._consumers = new Set();
  }

  queue(name) { return new QueueBuilder(this, name); }
  transaction() { return new TransactionBuilder(this); }
  lock(name, opts) { return this.locks.lock(name, opts); }

  // ack(message | messages, status = true, {group, error})
  async ack(msgs, status = true, { group, error } = {}) {
    const st = status === true ? 'completed' : status === false ? 'failed' : String(status);
    if (Array.isArray(msgs)) {
      if (msgs.length === 0) return { success: true, results: [] };
      const body = {
        acknowledgments: msgs.map((m) => ({
          transactionId: m.transactionId ?? m.id, partitionId: requirePartitionId(m),
          status: m._status === undefined ? st : (m._status === true ? 'completed' : m._status === false ? 'failed' : m._status),
          error: m._error ?? error ?? null, ...(m.leaseId ? { leaseId: m.leaseId } : {}),
        })),
        consumerGroup: group ?? groupOf(msgs[0]),
      };
      const res = await this.http.request('POST', '/api/v1/ack/batch', { body });
      const results = Array.isArray(res) ? res : res?.results ?? [];
      const bad = results.find((r) => r && (r.success === false || r.error));
      if (bad || (res && !Array.isArray(res) && res.error)) return { success: false, error: bad?.error ?? res.error, results };
      return { success: true, results };
    }
    const m = msgs;
    const body = {
      transactionId: m.transactionId ?? m.id, partitionId: requirePartitionId(m), status: st,
      error: error ?? null, consumerGroup: group ?? groupOf(m), ...(m.leaseId ? { leaseId: m.leaseId } : {}),
    };
    const res = await this.http.request('POST', '/api/v1/ack', { body });
    const first = Array.isArray(res) ? res[0] : res;
    if (!first || first.error || first.success === false) return { success: false, error: first?.error ?? 'ack failed' };
    return { success: true, ...first };
  }

  // renew(leaseId | message | messages): one extend per distinct leaseId
  async renew(what) {
    const ids = [...new Set([].concat(what).map((x) => (typeof x === 'string' ? x : x?.leaseId)).filter(Boolean))];
    const out = [];
    for (const id of ids) {
      const res = await this.http.request('POST', `/api/v1/lease/${encodeURIComponent(id)}/extend`);
      const r = Array.isArray(res) ? res[0] : res;
      const expiresAt = r?.newExpiresAt ?? r?.expiresAt ?? r?.lease_expires_at;
      out.push({ leaseId: id, success: r?.success ?? expiresAt != null, expiresAt, error: r?.error });
    }
    return Array.isArray(what) ? out : out[0];
  }

  // lease-free reads over several queues
  async changed(entries) {
    return this.http.request('POST', '/api/v1/partitions/changed', { body: { entries } });
  }

  async close() {
    const stops = [...this._consumers].map((c) => c.stop());
    await Promise.allSettled(stops);
  }
}

function requirePartitionId(m) {
  if (!m || !m.partitionId) throw new TypeError('queen-mq: ack needs the message\'s partitionId (to ensure message uniqueness)');
  return m.partitionId;
}
function groupOf(m) { return m?.consumerGroup && m.consumerGroup !== QUEUE_MODE ? m.consumerGroup : null; }

export class QueueBuilder {
  constructor(queen, name) {
    this.queen = queen;
    this.name = name;
    this._partition = undefined;
    this._group = undefined;
    this._batch = undefined;
    this._wait = true;
    this._timeout = 30000;
    this._autoAck = false;
    this._partitions = undefined;
    this._subMode = undefined;
    this._subFrom = undefined;
    this._config = {};
    this._namespace = undefined;
    this._task = undefined;
    this._limit = undefined;
    this._concurrency = 1;
    this._renewMillis = 0;
    this._idleMillis = undefined;
    this._each = false;
    this._conflation = false;
  }

  // builder methods set the option and return the builder (as the earlier client's did)
  _clone(patch) { return Object.assign(this, patch); }
  each() { return this._clone({ _each: true }); }
  partition(p) { return this._clone({ _partition: String(p) }); }
  group(g) { return this._clone({ _group: g }); }
  batch(n) { return this._clone({ _batch: n }); }
  wait(b = true) { return this._clone({ _wait: !!b }); }
  timeoutMillis(ms) { return this._clone({ _timeout: ms }); }
  partitions(n) { return this._clone({ _partitions: n }); }
  autoAck(b = true) { return this._clone({ _autoAck: !!b }); }
  commitOnDelivery() { return this.autoAck(true); }
  subscriptionMode(m) { return this._clone({ _subMode: m }); }
  subscriptionFrom(f) { return this._clone({ _subFrom: f }); }
  namespace(ns) { return this._clone({ _namespace: ns }); }
  task(t) { return this._clone({ _task: t }); }
  limit(n) { return this._clone({ _limit: n }); }
  concurrency(n) { return this._clone({ _concurrency: Math.max(1, n | 0) }); }
  renewLease(on = true, everyMillis = 10000) { return this._clone({ _renewMillis: on ? everyMillis : 0 }); }
  idleMillis(ms) { return this._clone({ _idleMillis: ms }); }
  config(opts) { return this._clone({ _config: { ...this._config, ...opts } }); }
  // last-value delivery for the group: each claimed partition gives its newest record (needs
  // group(); refused with autoAck — the broker's 400s conflation_needs_group / _with_auto_ack)
  conflation(on = true) { return this._clone({ _conflation: !!on }); }

  async create() {
    return this.queen.http.request('POST', '/api/v1/configure', {
      body: { queue: this.name, namespace: this._namespace ?? null, task: this._task ?? null, options: { ...QUEUE_DEFAULTS, ...this._config } },
    });
  }

  async delete() {
    return this.queen.http.request('DELETE', `/api/v1/resources/queues/${encodeURIComponent(this.name)}`);
  }

  // push([{data, transactionId?, traceId?, partition?}]) -> [{status, transactionId, ...}]
  async push(items) {
    const list = [].concat(items);
    const body = {
      items: list.map((it) => {
        const out = {
          queue: this.name,
          partition: it.partition ?? this._partition ?? 'Default',
          payload: it.data !== undefined ? it.data : it.payload !== undefined ? it.payload : it,
          transactionId: it.transactionId ?? uuidv7(),
        };
        if (typeof it.traceId === 'string' && UUID4.test(it.traceId)) out.traceId = it.traceId;
        return out;
      }),
    };
    const res = await this.queen.http.request('POST', '/api/v1/push', { body });
    if (res && !Array.isArray(res) && res.error) throw new QueenHttpError(res.error, { body: res });
    const results = Array.isArray(res) ? res : res?.results ?? [];
    const failed = results.find((r) => r?.status === 'failed');
    if (failed) throw new QueenHttpError(failed.error ?? 'push failed', { body: res });
    return results;
  }

  _popQuery({ forConsume = false } = {}) {
    const q = [];
    const batch = this._batch ?? 1;
    q.push(['batch', batch]);
    q.push(['wait', this._wait ? 'true' : 'false']);
    q.push(['timeout', this._timeout]);
    if (this._group) q.push(['consumerGroup', this._group]);
    if (this._autoAck && !forConsume) q.push(['autoAck', 'true']);
    if (this._subMode) q.push(['subscriptionMode', this._subMode]);
    if (this._subFrom) q.push(['subscriptionFrom', this._subFrom]);
    if (this._namespace && !this.name) q.push(['namespace', this._namespace]);
    if (this._task && !this.name) q.push(['task', this._task]);
    if (this._partitions && this._partitions > 1) q.push(['partitions', this._partitions]);
    if (this._conflation) q.push(['conflation', 'true']);
    return q.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&');
  }

  _popPath() {
    if (!this.name) return '/api/v1/pop';
    let p = `/api/v1/pop/queue/${encodeURIComponent(this.name)}`;
    if (this._partition && this._partition !== 'Default') p += `/partition/${encodeURIComponent(this._partition)}`;
    return p;
  }

  _affinity() {
    return `${this.name ?? this._namespace ?? '*'}:${this._partition ?? '*'}:${this._group ?? QUEUE_MODE}`;
  }

  // pop() -> messages (a failure throws; the 2.x client swallowed it, which hid outages)
  async pop({ signal } = {}) {
    const res = await this.queen.http.request('GET', `${this._popPath()}?${this._popQuery()}`, {
      affinityKey: this._affinity(), timeoutMillis: (this._wait ? this._timeout : 0) + 5000, longPoll: this._wait, signal,
    });
    if (this._conflation) {
      // every answer to a conflating pop carries the echo, an empty one included (200, not 204)
      const echoed = res && typeof res === 'object' && (res.conflation === true || res.conflationConflict === true);
      if (!echoed) throw new ConflationUnsupportedError(undefined, { status: res ? 200 : 204, body: res });
      if (res.conflationConflict === true) warnConflationConflict(this.name ?? this._namespace, this._group);
    }
    if (!res) return [];
    if (res.success === false && res.code) throw new QueenHttpError(res.error ?? res.code, { code: res.code, body: res });
    return (res.messages ?? []).filter(Boolean);
  }

  // consume(handler, {signal}) -> Consumer; await consumer.done or consumer.stop()
  // handler(message) for batch 1, or handler(messages) with .batch(n) and {each: false}
  // consume(handler): one message at a time with batch 1 (the default) or .each(), else the
  // handler gets the batch's array; {each} overrides
  consume(handler, { signal, each, onError } = {}) {
    const perMessage = each ?? (this._each || (this._batch ?? 1) === 1);
    const c = new Consumer(this, handler, { signal, each: perMessage, onError });
    this.queen._consumers.add(c);
    // the bookkeeping chain must not itself be an unhandled rejection when the loop ends in an
    // error (a 403, a conflation refusal): the caller sees that error on c.done
    c.done.finally(() => this.queen._consumers.delete(c)).catch(() => {});
    return c;
  }

  // lease-free reads: fetch({partition, offset, maxBytes}) for one partition, reading to the end
  async fetch({ partition = this._partition ?? 'Default', offset = 0, maxBytes = 8 * 1024 * 1024 } = {}) {
    const records = [];
    let from = offset, hw;
    let logStart = 0;
    for (;;) {
      const res = await this.queen.http.request('POST', '/api/v1/fetch', {
        body: { entries: [{ queue: this.name, partition, offset: from, maxBytes }], maxBytes },
        affinityKey: `${this.name}:*:__READ__`,
      });
      const e = res?.entries?.[0];
      if (!e || res.entries.length !== 1) throw new Error('queen-mq: fetch answered no entry for the one asked');
      if (e.error === 'UNKNOWN_TOPIC_OR_PARTITION') return { partition, records: [], highWatermark: 0, logStartOffset: 0, nextOffset: offset };
      if (e.error === 'OFFSET_OUT_OF_RANGE' && from < e.logStartOffset) { from = e.logStartOffset; logStart = e.logStartOffset; continue; }
      if (e.error && e.error !== 'OFFSET_OUT_OF_RANGE') throw new QueenHttpError(e.error, { code: e.error, body: e });
      if (hw === undefined) hw = e.highWatermark;
      logStart = e.logStartOffset;
      records.push(...e.records);
      if (e.records.length === 0 || from >= hw) break;
      from = e.records[e.records.length - 1].offset + 1;
      if (from >= hw) break;
    }
    return { partition, records, highWatermark: hw ?? 0, logStartOffset: logStart, nextOffset: from };
  }

  // changedSince(since?) -> {safeTime, partitions: [{name, id, lastOffset, logStart, lastWriteAt}]}
  async changedSince(since) {
    const partitions = [];
    let after, safeTime = null;
    for (;;) {
      const entry = { queue: this.name, limit: 1000 };
      if (since) entry.since = since instanceof Date ? since.toISOString() : since;
      if (after) entry.after = after;
      const res = await this.queen.http.request('POST', '/api/v1/partitions/changed', { body: { entries: [entry] }, affinityKey: `${this.name}:*:__READ__` });
      if (res?.safeTime && (safeTime === null || res.safeTime < safeTime)) safeTime = res.safeTime;
      const e = res?.entries?.[0];
      if (!e || e.error === 'UNKNOWN_TOPIC_OR_PARTITION') break;
      if (e.error) throw new QueenHttpError(e.error, { code: e.error, body: e });
      partitions.push(...e.partitions);
      if (!e.next) break;
      after = e.next;
    }
    return { safeTime, partitions };
  }
}

export class Consumer {
  constructor(qb, handler, { signal, each, onError }) {
    this.qb = qb;
    this.handler = handler;
    this.each = each;
    this.onError = onError;
    this.ac = new AbortController();
    if (signal) signal.addEventListener('abort', () => this.ac.abort(), { once: true });
    this.processed = 0;
    this.done = this._run();
  }

  async stop() { this.ac.abort(); await this.done.catch(() => {}); }

  // `await queue.consume(fn)` waits for the loop to end (a limit, the signal, stop()), as the
  // earlier client's did
  then(resolve, reject) { return this.done.then(resolve, reject); }

  async _run() {
    const { qb } = this;
    const queen = qb.queen;
    const workers = [];
    for (let w = 0; w < qb._concurrency; w++) workers.push(this._worker(queen));
    await Promise.all(workers);
  }

  async _worker(queen) {
    const { qb } = this;
    const signal = this.ac.signal;
    while (!signal.aborted && !(qb._limit && this.processed >= qb._limit)) {
      let msgs;
      try {
        msgs = await qb.pop({ signal });
      } catch (err) {
        if (signal.aborted) break;
        if (err.status === 403) throw err; // a 403 stops a consumer
        // terminal: a broker that ignores conflation, and the conflation refusals (400
        // conflation_needs_group / conflation_with_auto_ack), which no retry can change
        if (err instanceof ConflationUnsupportedError) throw err;
        if (err.status === 400 && typeof err.code === 'string' && err.code.startsWith('conflation_')) throw err;
        this.onError?.(err);
        await sleep(500, signal);
        continue;
      }
      if (!msgs.length) {
        if (!qb._wait) await sleep(qb._idleMillis ?? 100, signal);
        continue;
      }
      if (qb._limit) msgs = msgs.slice(0, Math.max(0, qb._limit - this.processed));
      let renewTimer;
      if (qb._renewMillis > 0 && !qb._autoAck) {
        renewTimer = setInterval(() => { queen.renew(msgs).catch(() => {}); }, qb._renewMillis);
      }
      try {
        if (this.each) {
          for (const m of msgs) {
            try {
              await this.handler(m);
              if (!qb._autoAck) await queen.ack(m, true, { group: qb._group });
            } catch (err) {
              this.onError?.(err, m);
              if (!qb._autoAck) await queen.ack(m, false, { group: qb._group, error: String(err?.message ?? err) }).catch(() => {});
            }
            this.processed++;
          }
        } else {
          try {
            await this.handler(msgs);
            if (!qb._autoAck) await queen.ack(msgs, true, { group: qb._group });
          } catch (err) {
            this.onError?.(err, msgs);
            if (!qb._autoAck) await queen.ack(msgs, false, { group: qb._group, error: String(err?.message ?? err) }).catch(() => {});
          }
          this.processed += msgs.length;
        }
      } finally {
        if (renewTimer) clearInterval(renewTimer);
      }
    }
  }
}

// ---- transactions: ack + push, with kv and timers riders (top-level siblings, omitted when unused)
export class TransactionBuilder {
  constructor(queen) {
    this.queen = queen;
    this.operations = [];
    this.leases = new Set();
    this.kvOps = [];
    this.guards = [];
    this.timerOps = [];
    const tx = this;
    this.kv = {
      get: (ns, key) => { tx.kvOps.push({ op: 'get', ns, key }); return tx; },
      getMany: (ns, keys) => { tx.kvOps.push({ op: 'getMany', ns, keys }); return tx; },
      getPrefix: () => { throw new TypeError('queen-mq: kv.getPrefix is not allowed inside a transaction (unbounded cost)'); },
      put: (ns, key, value, o = {}) => { tx.kvOps.push(kvWrite('put', ns, key, { value, ...o })); return tx; },
      putIfAbsent: (ns, key, value, o = {}) => { tx.kvOps.push(kvWrite('putIfAbsent', ns, key, { value, ...o })); return tx; },
      delete: (ns, key, o = {}) => { tx.kvOps.push(kvWrite('delete', ns, key, o)); return tx; },
      incr: (ns, key, o = {}) => { tx.kvOps.push(kvWrite('incr', ns, key, o)); return tx; },
      check: (ns, key, o = {}) => { tx.kvOps.push(kvWrite('check', ns, key, o)); return tx; },
    };
    this.timers = {
      schedule: (t) => { tx.timerOps.push(timerOp('schedule', t)); return tx; },
      reschedule: (t) => { tx.timerOps.push(timerOp('reschedule', t)); return tx; },
      cancel: (t) => { tx.timerOps.push(timerOp('cancel', t)); return tx; },
    };
  }

  ack(msgs, status = 'completed', { group } = {}) {
    for (const m of [].concat(msgs)) {
      const op = { type: 'ack', transactionId: m.transactionId ?? m.id, partitionId: requirePartitionId(m),
        status: status === true ? 'completed' : status === false ? 'failed' : status };
      const g = group ?? groupOf(m);
      if (g) op.consumerGroup = g;
      if (m.leaseId) { op.leaseId = m.leaseId; this.leases.add(m.leaseId); }
      this.operations.push(op);
    }
    return this;
  }

  queue(name) {
    const tx = this;
    let partition;
    const b = {
      partition(p) { partition = String(p); return b; },
      push(items) {
        tx.operations.push({ type: 'push', items: [].concat(items).map((it) => {
          const o = { queue: name, payload: it.data !== undefined ? it.data : it.payload !== undefined ? it.payload : it,
            transactionId: it.transactionId ?? uuidv7() };
          const p = it.partition ?? partition;
          if (p) o.partition = p;
          if (typeof it.traceId === 'string' && UUID4.test(it.traceId)) o.traceId = it.traceId;
          return o;
        }) });
        return tx;
      },
    };
    return b;
  }

  // once(ns, key, {ttlSeconds | forever}): the dedup gate, a required putIfAbsent
  once(ns, key, o = { forever: true }) { this.kvOps.push(kvWrite('putIfAbsent', ns, key, { value: true, ...o, required: true })); return this; }
  guard(lock) { this.guards.push(lock); return this; }

  body() {
    const b = { operations: this.operations, requiredLeases: [...this.leases] };
    const kv = [...this.guards.map((l) => l.guardOp()), ...this.kvOps];
    if (kv.length) b.kv = kv;
    if (this.timerOps.length) b.timers = this.timerOps;
    return b;
  }

  async commit() {
    if (!this.operations.length && !this.kvOps.length && !this.timerOps.length && !this.guards.length) {
      throw new TypeError('queen-mq: a transaction needs at least one operation');
    }
    for (let attempt = 0; ; attempt++) {
      const res = await this.queen.http.request('POST', '/api/v1/transaction', { body: this.body() });
      if (res?.success === false && res.reason === 'kv_precondition') {
        // a guard whose row moved under this holder's own renew: resend with the new token
        const lock = this.guards[res.failedIndex - this.flatPushAckCount()];
        if (lock && res.kvReason === 'version' && res.value?.owner === lock.owner && attempt < 3) {
          lock.token = res.version;
          continue;
        }
        if (lock) lock.lost = true;
        return res;
      }
      if (res?.success === false) throw new QueenHttpError(res.error ?? 'transaction failed', { body: res });
      return res;
    }
  }

  flatPushAckCount() {
    let n = 0;
    for (const op of this.operations) n += op.type === 'push' ? op.items.length : 1;
    return n;
  }
}

// ---- KV: every op through POST /api/v1/kv {operations}
function expiry(o) {
  const out = {};
  if (o.ttlSeconds !== undefined) out.ttlSeconds = o.ttlSeconds;
  else if (o.ttl !== undefined) out.ttlSeconds = Math.ceil(o.ttl / 1000); // ttl in ms, sugar
  else if (o.until !== undefined) out.ttlSeconds = Math.max(1, Math.ceil((new Date(o.until).getTime() - Date.now()) / 1000));
  if (o.forever) out.forever = true;
  return out;
}

function kvWrite(op, ns, key, o) {
  const out = { op, ns, key };
  if ('value' in o) out.value = o.value;
  if (op === 'put' || op === 'putIfAbsent' || op === 'incr') {
    const e = expiry(o);
    if (('ttlSeconds' in e) === !!e.forever) {
      throw new QueenHttpError('kv_expiry_not_specified: give exactly one of ttlSeconds or forever', { code: 'kv_expiry_not_specified' });
    }
    Object.assign(out, e);
  }
  if (op === 'incr') {
    if (o.delta !== undefined) { if (typeof o.delta !== 'number') throw new TypeError('queen-mq: incr delta must be a number'); out.delta = o.delta; }
    if (o.min !== undefined) out.min = o.min;
    if (o.max !== undefined) out.max = o.max;
  }
  if ('expect' in o) {
    if (o.expect === null || o.expect === undefined) throw new TypeError('queen-mq: expect must be an integer >= 0 (null is never a silent upsert)');
    if (op === 'incr' || op === 'putIfAbsent') throw new TypeError(`queen-mq: ${op} takes no expect`);
    out.expect = o.expect;
  } else if (op === 'check') throw new TypeError('queen-mq: check needs expect');
  if (o.required) out.required = true;
  return out;
}

export class Kv {
  constructor(queen) { this.queen = queen; }
  async batch(operations) {
    const res = await this.queen.http.request('POST', '/api/v1/kv', { body: { operations } });
    const results = res?.results;
    if (!Array.isArray(results) || results.length !== operations.length) throw new Error('queen-mq: kv answered a result list of the wrong length');
    return results;
  }
  async get(ns, key) { return (await this.batch([{ op: 'get', ns, key }]))[0]; }
  async getMany(ns, keys) { return (await this.batch([{ op: 'getMany', ns, keys }]))[0]; }
  async getPrefix(ns, prefix, { after, limit, keysOnly } = {}) {
    if (!prefix) throw new QueenHttpError('kv_prefix_required', { code: 'kv_prefix_required' });
    const op = { op: 'getPrefix', ns, prefix };
    if (after !== undefined) op.after = after;
    if (limit !== undefined) op.limit = limit;
    if (keysOnly) op.keysOnly = true;
    return (await this.batch([op]))[0];
  }
  async put(ns, key, value, o = {}) { return (await this.batch([kvWrite('put', ns, key, { value, ...o })]))[0]; }
  async putIfAbsent(ns, key, value, o = {}) { return (await this.batch([kvWrite('putIfAbsent', ns, key, { value, ...o })]))[0]; }
  async delete(ns, key, o = {}) { return (await this.batch([kvWrite('delete', ns, key, o)]))[0]; }
  async incr(ns, key, o = {}) { return (await this.batch([kvWrite('incr', ns, key, o)]))[0]; }
  async check(ns, key, o = {}) { return (await this.batch([kvWrite('check', ns, key, o)]))[0]; }
}

// ---- timers: keyed, payload base64 of the JSON text
const SERVER_OWNED = ['producerSub', 'messageId', 'tenant', 'tenantId', 'deliverAt', 'delaySeconds', 'attempts', 'claimToken', 'claimedUntil',
  'producer_sub', 'message_id', 'tenant_id', 'deliver_at', 'delay_seconds', 'claim_token', 'claimed_until'];

function timerOp(op, t) {
  for (const k of Object.keys(t)) {
    if (SERVER_OWNED.includes(k) || k.startsWith('_')) throw new TypeError(`queen-mq: timer field ${k} is server-owned`);
  }
  const out = { op, queue: t.queue, timerKey: t.timerKey };
  if (op !== 'cancel') {
    const p = t.payload;
    const bytes = Buffer.isBuffer(p) ? p : Buffer.from(JSON.stringify(p === undefined ? null : p), 'utf8');
    out.payload = bytes.toString('base64');
    out.delayMs = Math.max(0, Math.floor(t.delayMs ?? 0));
    if (t.partition) out.partition = t.partition;
  }
  out.txn = t.txn ?? uuidv7();
  return out;
}

export class Timers {
  constructor(queen) { this.queen = queen; }
  async batch(operations) {
    const res = await this.queen.http.request('POST', '/api/v1/timers', { body: { operations } });
    return res?.results ?? [];
  }
  async schedule(t) { return (await this.batch([timerOp('schedule', t)]))[0]; }
  async reschedule(t) { return (await this.batch([timerOp('reschedule', t)]))[0]; }
  async cancel(queue, timerKey, { txn } = {}) {
    const key = String(timerKey).split('/').map(encodeURIComponent).join('/');
    return this.queen.http.request('DELETE', `/api/v1/timers/${encodeURIComponent(queue)}/${key}${txn ? `?txn=${encodeURIComponent(txn)}` : ''}`);
  }
  async peek(queue, timerKey) {
    const key = String(timerKey).split('/').map(encodeURIComponent).join('/');
    return this.queen.http.request('GET', `/api/v1/timers/${encodeURIComponent(queue)}/${key}`);
  }
  async list(queue, { after, limit } = {}) {
    const q = [];
    if (after) q.push(`after=${encodeURIComponent(after)}`);
    if (limit) q.push(`limit=${limit}`);
    return this.queen.http.request('GET', `/api/v1/timers/${encodeURIComponent(queue)}${q.length ? `?${q.join('&')}` : ''}`);
  }
}

// ---- locks and semaphores: POST /api/v1/locks {operations}
export class Locks {
  constructor(queen) { this.queen = queen; }
  async batch(operations) {
    const res = await this.queen.http.request('POST', '/api/v1/locks', { body: { operations } });
    const results = res?.results;
    if (!Array.isArray(results) || results.length !== operations.length) throw new Error('queen-mq: locks answered a result list of the wrong length');
    return results;
  }
  lock(name, opts) { return new Lock(this, name, opts); }
  async get(name) { return (await this.batch([{ op: 'get', name }]))[0]; }
}

export class Lock {
  constructor(locks, name, { ttlSeconds = 30, limit, owner } = {}) {
    this.locks = locks;
    this.name = name;
    this.ttlSeconds = ttlSeconds;
    this.limit = limit;
    this.owner = owner ?? `${os.hostname()}:${process.pid}:${randomBytes(6).toString('hex')}`;
    this.token = undefined;
    this.slot = undefined;
    this.lost = false;
    this._timer = undefined;
    this._deadline = 0;
  }

  guardOp() {
    if (this.token === undefined) throw new Error(`queen-mq: lock ${this.name} is not held`);
    return { ...(this._guard ?? { op: 'check', ns: 'queen-locks', key: this.name, expect: this.token }), required: true };
  }

  get held() { return this.token !== undefined && !this.lost && Date.now() < this._deadline; }

  async acquire() {
    const op = { op: 'acquire', name: this.name, ttlSeconds: this.ttlSeconds, owner: this.owner };
    if (this.limit) op.limit = this.limit;
    const r = (await this.locks.batch([op]))[0];
    if (!r.acquired) return r;
    this.token = r.token; this.slot = r.slot; this._guard = r.guard; this.lost = false;
    this._deadline = Date.now() + this.ttlSeconds * 1000;
    this._timer = setInterval(() => { this.renew().catch(() => {}); }, Math.max(100, (this.ttlSeconds * 1000) / 3));
    this._timer.unref?.();
    return r;
  }

  async renew() {
    if (this.token === undefined) return { renewed: false, reason: 'lost' };
    if (Date.now() >= this._deadline) { this.lost = true; this._stop(); return { renewed: false, reason: 'lost' }; }
    const op = { op: 'renew', name: this.name, token: this.token, ttlSeconds: this.ttlSeconds, owner: this.owner };
    if (this.slot !== undefined) op.slot = this.slot;
    const r = (await this.locks.batch([op]))[0];
    if (r.renewed) { this.token = r.token; this._guard = r.guard; this._deadline = Date.now() + this.ttlSeconds * 1000; } else { this.lost = true; this._stop(); }
    return r;
  }

  async release() {
    this._stop();
    if (this.token === undefined) return { released: false };
    const op = { op: 'release', name: this.name, token: this.token };
    if (this.slot !== undefined) op.slot = this.slot;
    const r = (await this.locks.batch([op]))[0];
    this.token = undefined;
    return r;
  }

  _stop() { if (this._timer) clearInterval(this._timer); this._timer = undefined; }
}
