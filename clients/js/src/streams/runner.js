// The streams runner: pop a batch under a lease, per source partition read its state rows, run
// the chain, commit state ops + sink pushes + the source ack as one POST /streams/v1/cycle.
// The idle flush closes ripe windows of quiet partitions with ack-less cycles; its clock is the
// broker's (partitions/changed: safeTime and each partition's lastWriteAt), never this process's
// wall clock — see README.md "Idle flush".
import { HttpClient, QueenHttpError, sleep } from '../http.js';

const US = '\u001f';
const WM_KEY = '__wm__';
const RECENT_MS = 5 * 60 * 1000;

export class StreamsError extends Error {
  constructor(message, code, extra = {}) { super(message); this.name = 'StreamsError'; this.code = code; Object.assign(this, extra); }
}

// integer microseconds since the epoch -> ISO-8601 UTC with six fraction digits
export function usToIso(us) {
  const ms = Math.floor(us / 1000);
  return `${new Date(ms).toISOString().slice(0, 19)}.${String(us - Math.floor(us / 1e6) * 1e6).padStart(6, '0')}Z`;
}

// ISO-8601 (any fraction width, Z or offset) -> integer microseconds since the epoch
export function isoToUs(s) {
  if (typeof s !== 'string') return null;
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)?$/.exec(s);
  if (!m) { const ms = Date.parse(s); return Number.isFinite(ms) ? ms * 1000 : null; }
  const base = Date.parse(`${m[1]}${m[3] ?? 'Z'}`);
  if (!Number.isFinite(base)) return null;
  const frac = m[2] ? Number((m[2] + '000000').slice(0, 6)) : 0;
  return base * 1000 + frac;
}

function toEpochMs(v) {
  if (v instanceof Date) return v.getTime();
  if (typeof v === 'number') return Number.isFinite(v) ? v : NaN;
  if (typeof v === 'string') return Date.parse(v);
  return NaN;
}

const clone = (v) => (v === undefined ? undefined : structuredClone(v));
const isPlainObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// the windows [start, end) an instant falls in
export function assignWindows(w, ts) {
  if (w.type === 'cron' && w.weekly) {
    const shift = 4 * 86400000; // the epoch was a Thursday: weeks start on Monday 00:00 UTC
    const start = Math.floor((ts - shift) / w.sizeMs) * w.sizeMs + shift;
    return [{ start, end: start + w.sizeMs }];
  }
  const latest = Math.floor(ts / w.slideMs) * w.slideMs;
  const out = [];
  for (let s = latest; s > ts - w.sizeMs; s -= w.slideMs) out.push({ start: s, end: s + w.sizeMs });
  return out.reverse();
}

export class Runner {
  constructor(stream, plan, opts) {
    if (!opts.queryId || typeof opts.queryId !== 'string') throw new StreamsError('run() needs a queryId', 'STREAMS_BAD_OPTIONS');
    const queen = stream.source.queen;
    this.stream = stream;
    this.plan = plan;
    this.queryId = opts.queryId;
    this.source = stream.source.name;
    this.group = opts.consumerGroup ?? `streams.${opts.queryId}`;
    this.batchSize = opts.batchSize ?? 200;
    this.maxPartitions = opts.maxPartitions ?? 4;
    this.maxWait = opts.maxWait ?? opts.maxWaitMillis ?? 1000;
    this.reset = !!opts.reset;
    this.subscriptionMode = opts.subscriptionMode;
    this.subscriptionFrom = opts.subscriptionFrom;
    this.onError = opts.onError;
    this.logger = opts.logger ?? (process.env.QUEEN_STREAMS_LOG === '1' ? console : null);
    this.renewLeaseMillis = opts.renewLeaseMillis ?? 10000;
    const urls = opts.url ? [].concat(opts.url) : queen.options.urls;
    this.http = opts.http ?? new HttpClient({
      urls, bearerToken: opts.bearerToken ?? queen.options.bearerToken, headers: queen.options.headers,
      retryAttempts: 3, retryBaseMillis: 100, timeoutMillis: 30000,
    });
    this.configHash = stream.configHash();
    this.serverQueryId = null;
    this.parts = new Map(); // partitionId -> {name, touchedAt, sourceUs}
    // partitionId -> what the state reads since its last commit saw: {full, versions: key -> row
    // version (0 = read as absent)}. The commit sends each op's version, so the broker applies it
    // only to the row as it was read (docs/streams.md, "Row versions"); reads and commits of one
    // partition are serialised by withPartition.
    this.reads = new Map();
    this.partLocks = new Map();
    this.stopped = false;
    this.popAbort = new AbortController();
    this.flushTimer = null;
    this.flushInFlight = null;
    this.stats = { cyclesTotal: 0, flushCyclesTotal: 0, messagesTotal: 0, pushItemsTotal: 0, stateOpsTotal: 0,
      lateEventsTotal: 0, errorsTotal: 0, gateAllowsTotal: 0, gateDenialsTotal: 0, lastCycleAt: null, lastFlushAt: null, lastError: null };
    if (opts.abortSignal) opts.abortSignal.addEventListener('abort', () => { this.stop(); }, { once: true });
  }

  async post(path, body) { return this.http.request('POST', path, { body }); }

  async start() {
    const body = { name: this.queryId, source_queue: this.source, config_hash: this.configHash, reset: this.reset };
    if (this.plan.sink) body.sink_queue = this.plan.sink.queue;
    let res;
    try {
      res = await this.post('/streams/v1/queries', body);
    } catch (err) {
      if (err instanceof QueenHttpError && err.status === 409) {
        throw new StreamsError(`${err.message} (run with reset: true to wipe the old state, or use another queryId)`, 'STREAMS_CONFIG_HASH_MISMATCH', { status: 409, body: err.body });
      }
      throw err;
    }
    if (!res?.success || !res.query_id) throw new StreamsError(`register failed: ${res?.error ?? 'no query_id'}`, 'STREAMS_REGISTER_FAILED', { body: res });
    this.serverQueryId = res.query_id;
    this.log('info', `registered ${this.queryId} (${res.query_id}) fresh=${res.fresh} reset=${res.reset}`);
    const w = this.plan.window;
    if (w && w.idleFlushMs > 0) {
      // a restarted runner flushes the partitions the query committed on lately, not only the
      // ones it has popped since it started
      try {
        const r = await this.post('/streams/v1/state/get', { query_id: this.serverQueryId, touched_within_ms: RECENT_MS });
        for (const p of r?.partitions ?? []) this.touch(p.partition_id, p.partition);
      } catch (err) { this.report(err, { phase: 'seed' }); }
      this.flushTimer = setInterval(() => { this.flushTick(); }, w.idleFlushMs);
      this.flushTimer.unref?.();
    }
    this.loop = this.runLoop();
  }

  handle() {
    const r = this;
    return {
      queryId: this.queryId,
      get serverQueryId() { return r.serverQueryId; },
      configHash: this.configHash,
      stop: () => r.stop(),
      metrics: () => ({ ...r.stats, queryId: r.queryId, serverQueryId: r.serverQueryId }),
      flushNow: () => r.flushTick(),
      done: this.loop,
    };
  }

  async stop() {
    if (this.stopped) return this.loop;
    this.stopped = true;
    if (this.flushTimer) clearInterval(this.flushTimer);
    this.popAbort.abort();
    await this.loop?.catch(() => {});
    await this.flushInFlight?.catch(() => {});
  }

  log(level, msg) { this.logger?.[level]?.(`[queen-streams ${this.queryId}] ${msg}`); }

  report(err, ctx) {
    this.stats.errorsTotal++;
    this.stats.lastError = String(err?.message ?? err);
    this.log('error', `${ctx?.phase ?? 'cycle'}: ${this.stats.lastError}`);
    try { this.onError?.(err, ctx); } catch { /* the hook's own failure is not the stream's */ }
  }

  touch(id, name) {
    const now = Date.now();
    const p = this.parts.get(id) ?? { name, touchedAt: now, sourceUs: null };
    p.touchedAt = now;
    if (name) p.name = name;
    this.parts.set(id, p);
    for (const [k, v] of this.parts) if (now - v.touchedAt > RECENT_MS) this.parts.delete(k);
    return p;
  }

  // one in-flight piece of work per partition in this process (main cycle or flush)
  withPartition(id, fn) {
    const prev = this.partLocks.get(id) ?? Promise.resolve();
    // each turn starts from no state read (one that did not commit must not lend its versions)
    const run = () => { this.reads.delete(id); return fn(); };
    const next = prev.then(run, run);
    const tail = next.catch(() => {});
    this.partLocks.set(id, tail);
    tail.then(() => { if (this.partLocks.get(id) === tail) this.partLocks.delete(id); });
    return next;
  }

  popPath() {
    const q = [['batch', this.batchSize], ['wait', 'true'], ['timeout', this.maxWait], ['consumerGroup', this.group]];
    if (this.subscriptionMode) q.push(['subscriptionMode', this.subscriptionMode]);
    if (this.subscriptionFrom) q.push(['subscriptionFrom', this.subscriptionFrom]);
    if (this.maxPartitions > 1) q.push(['partitions', this.maxPartitions]);
    return `/api/v1/pop/queue/${encodeURIComponent(this.source)}?${q.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')}`;
  }

  async runLoop() {
    while (!this.stopped) {
      let res;
      try {
        res = await this.http.request('GET', this.popPath(), { timeoutMillis: this.maxWait + 5000, longPoll: true, signal: this.popAbort.signal });
      } catch (err) {
        if (this.stopped) break;
        this.report(err, { phase: 'pop' });
        await sleep(500, this.popAbort.signal);
        continue;
      }
      const msgs = (res?.messages ?? []).filter(Boolean);
      if (!msgs.length) { if (!this.stopped) await sleep(100, this.popAbort.signal); continue; }
      const groups = new Map();
      for (const m of msgs) {
        if (!groups.has(m.partitionId)) groups.set(m.partitionId, []);
        groups.get(m.partitionId).push(m);
      }
      const leaseIds = [...new Set(msgs.map((m) => m.leaseId ?? res.leaseId).filter(Boolean))];
      let renew;
      if (this.renewLeaseMillis > 0 && leaseIds.length) {
        renew = setInterval(() => {
          for (const id of leaseIds) this.http.request('POST', `/api/v1/lease/${encodeURIComponent(id)}/extend`).catch(() => {});
        }, this.renewLeaseMillis);
      }
      try {
        for (const [pid, group] of groups) {
          this.touch(pid, group[0].partition);
          try {
            await this.withPartition(pid, () => this.processPartition(pid, group, res.leaseId));
          } catch (err) {
            this.report(err, { phase: 'cycle', partitionId: pid, partition: group[0].partition });
          }
        }
      } finally {
        if (renew) clearInterval(renew);
      }
    }
  }

  // ---- the operators
  async runPre(msgs) {
    let envs = msgs.map((m) => ({ msg: m, key: m.partitionId, value: m.data }));
    for (const op of this.plan.pre) {
      const next = [];
      for (const env of envs) {
        const r = await op.fn(env.msg, env.ctx);
        if (op.kind === 'map') next.push({ ...env, value: r });
        else if (op.kind === 'filter') { if (r) next.push(env); } else {
          if (!Array.isArray(r)) throw new StreamsError('.flatMap() must return an array', 'STREAMS_OPERATOR');
          for (const v of r) next.push({ ...env, value: v });
        }
      }
      envs = next;
    }
    if (this.plan.keyBy) {
      for (const env of envs) {
        const k = String(await this.plan.keyBy.fn(env.msg));
        if (k.includes(US)) throw new StreamsError('a keyBy key may not contain U+001F', 'STREAMS_OPERATOR');
        if (k.startsWith('__')) throw new StreamsError('keyBy keys beginning with __ are reserved', 'STREAMS_OPERATOR');
        env.key = k;
      }
    }
    return envs;
  }

  async runPost(emits) {
    let out = emits;
    for (const op of this.plan.post) {
      const next = [];
      for (const e of out) {
        const r = await op.fn(e.value, e.ctx);
        if (op.kind === 'map') next.push({ ...e, value: r });
        else if (op.kind === 'filter') { if (r) next.push(e); } else {
          if (!Array.isArray(r)) throw new StreamsError('.flatMap() must return an array', 'STREAMS_OPERATOR');
          for (const v of r) next.push({ ...e, value: v });
        }
      }
      out = next;
    }
    return out;
  }

  async sinkItems(emits, partitionName) {
    const post = await this.runPost(emits);
    if (this.plan.foreach) {
      for (const e of post) await this.plan.foreach.fn(e.value, e.ctx); // before the commit: at least once
      return [];
    }
    const s = this.plan.sink;
    return post.map((e) => ({
      queue: s.queue,
      partition: typeof s.partition === 'function' ? String(s.partition(e.value)) : (s.partition ?? partitionName),
      payload: isPlainObject(e.value) ? e.value : { value: e.value === undefined ? null : e.value },
    }));
  }

  // the versions of what this cycle read: on the first op of each key (a later op of the same
  // key applies to this cycle's own write); a key no read returned is known absent only after a
  // read of every row
  withVersions(body) {
    const r = this.reads.get(body.partition_id);
    this.reads.delete(body.partition_id);
    if (!r) return body;
    const seen = new Set();
    const ops = body.state_ops.map((op) => {
      if (seen.has(op.key)) return op;
      seen.add(op.key);
      const v = r.versions.has(op.key) ? r.versions.get(op.key) : r.full ? 0 : undefined;
      return v === undefined ? op : { ...op, version: v };
    });
    return { ...body, state_ops: ops };
  }

  async commit(body, { flush = false } = {}) {
    body = this.withVersions(body);
    const res = await this.post('/streams/v1/cycle', body);
    if (!res?.success) throw new StreamsError(`cycle failed: ${res?.error ?? 'no answer'}`, 'STREAMS_CYCLE_FAILED', { body: res });
    this.stats.stateOpsTotal += body.state_ops.length;
    this.stats.pushItemsTotal += body.push_items.length;
    if (flush) { this.stats.flushCyclesTotal++; this.stats.lastFlushAt = new Date().toISOString(); } else { this.stats.cyclesTotal++; this.stats.lastCycleAt = new Date().toISOString(); }
    return res;
  }

  async stateGet(pid, extra = {}) {
    const res = await this.post('/streams/v1/state/get', { query_id: this.serverQueryId, partition_id: pid, keys: [], ...extra, versions: true });
    if (!res?.success) throw new StreamsError(`state/get failed: ${res?.error ?? 'no answer'}`, 'STREAMS_STATE_FAILED', { body: res });
    const rows = res.rows ?? [];
    let r = this.reads.get(pid);
    if (!r) this.reads.set(pid, (r = { full: false, versions: new Map() }));
    for (const row of rows) if (typeof row.version === 'number') r.versions.set(row.key, row.version);
    const keys = extra.keys ?? [];
    if (keys.length) { for (const k of keys) if (!r.versions.has(k)) r.versions.set(k, 0); }
    else if (extra.key_prefix == null && extra.ripe_at_or_before == null) r.full = true;
    return rows;
  }

  async processPartition(pid, msgs, popLeaseId) {
    msgs.sort((a, b) => (isoToUs(a.createdAt) - isoToUs(b.createdAt)) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const name = msgs[0].partition;
    const last = msgs[msgs.length - 1];
    const leaseId = last.leaseId ?? popLeaseId;
    const base = { query_id: this.serverQueryId, partition_id: pid, consumer_group: last.consumerGroup && last.consumerGroup !== '__QUEUE_MODE__' ? last.consumerGroup : this.group };
    if (this.plan.gate) return this.gateCycle(pid, name, msgs, leaseId, base);
    let stateOps = [], emits = [];
    if (this.plan.window) ({ stateOps, emits } = await this.windowCycle(pid, name, msgs));
    else {
      const envs = await this.runPre(msgs);
      emits = envs.map((e) => ({ value: e.value, ctx: { partition: name, partitionId: pid, key: e.key } }));
    }
    const push = await this.sinkItems(emits, name);
    await this.commit({ ...base, state_ops: stateOps, push_items: push,
      ack: { transactionId: last.transactionId, leaseId, status: 'completed', count: msgs.length }, release_lease: true });
    this.stats.messagesTotal += msgs.length;
    const p = this.parts.get(pid);
    if (p) p.sourceUs = isoToUs(last.createdAt);
  }

  // ---- windows: tumbling, sliding, cron and session
  eventTimeOf(env) {
    const w = this.plan.window;
    let ts;
    if (w.eventTimeFn) {
      let v;
      try { v = w.eventTimeFn(env.msg); } catch (err) { throw new StreamsError(`eventTime threw for message ${env.msg.transactionId}: ${err?.message ?? err}`, 'STREAMS_EVENT_TIME'); }
      ts = toEpochMs(v);
      if (!Number.isFinite(ts)) throw new StreamsError(`eventTime returned no usable time (${JSON.stringify(v)}) for message ${env.msg.transactionId}`, 'STREAMS_EVENT_TIME');
    } else {
      ts = Math.floor(isoToUs(env.msg.createdAt) / 1000);
      if (!Number.isFinite(ts)) throw new StreamsError(`message ${env.msg.transactionId} has no createdAt`, 'STREAMS_EVENT_TIME');
    }
    return ts;
  }

  async windowCycle(pid, name, msgs) {
    const w = this.plan.window;
    const red = this.plan.reducer;
    const rows = await this.stateGet(pid);
    const wmRow = rows.find((r) => r.key === WM_KEY)?.value ?? {};
    const wm0 = typeof wmRow.eventTimeMs === 'number' ? wmRow.eventTimeMs : -Infinity;
    const envs = await this.runPre(msgs);
    for (const env of envs) env.ts = this.eventTimeOf(env);
    const maxCreatedMs = Math.max(...msgs.map((m) => Math.floor(isoToUs(m.createdAt) / 1000)));
    let clock, wm1 = wm0;
    if (w.eventTimeFn) {
      const maxTs = envs.length ? Math.max(...envs.map((e) => e.ts)) : -Infinity;
      wm1 = Math.max(wm0, maxTs - w.latenessMs);
      clock = wm1;
    } else clock = maxCreatedMs;
    const stateOps = [], emits = [];
    const ctxOf = (key, start, end) => ({ partition: name, partitionId: pid, key, windowKey: new Date(start).toISOString(), windowStart: start, windowEnd: end });
    if (w.type === 'session') await this.sessionFold(w, red, rows, envs, wm0, clock, stateOps, emits, ctxOf);
    else {
      const accs = new Map(); // stateKey -> {acc, start, end, key, seeded, touched}
      const prefix = w.tag + US;
      for (const r of rows) {
        if (!r.key.startsWith(prefix)) continue;
        const parts = r.key.split(US);
        if (parts.length !== 3) continue;
        accs.set(r.key, { acc: r.value.acc, start: r.value.windowStart, end: r.value.windowEnd, key: parts[2], seeded: true, touched: false });
      }
      const late = new Map(); // corrections for closed windows (onLate: 'include')
      for (const env of envs) {
        let anyOpen = false;
        for (const { start, end } of assignWindows(w, env.ts)) {
          const sk = `${w.tag}${US}${new Date(start).toISOString()}${US}${env.key}`;
          const closedAlready = w.eventTimeFn && end + w.graceMs <= wm0 && !accs.has(sk);
          if (closedAlready) {
            if (w.onLate === 'include') {
              let a = late.get(sk);
              if (!a) { a = { acc: red.init(), start, end, key: env.key }; late.set(sk, a); }
              a.acc = await red.fold(a.acc, env.value);
            }
            continue;
          }
          anyOpen = true;
          let a = accs.get(sk);
          if (!a) { a = { acc: red.init(), start, end, key: env.key, seeded: false, touched: false }; accs.set(sk, a); }
          a.acc = await red.fold(a.acc, env.value);
          a.touched = true;
        }
        if (!anyOpen) this.stats.lateEventsTotal++;
      }
      for (const [sk, a] of accs) {
        if (a.end + w.graceMs <= clock) {
          emits.push({ value: red.finish(a.acc), ctx: ctxOf(a.key, a.start, a.end) });
          if (a.seeded) stateOps.push({ type: 'delete', key: sk });
        } else if (a.touched) stateOps.push({ type: 'upsert', key: sk, value: { acc: a.acc, windowStart: a.start, windowEnd: a.end } });
      }
      for (const a of late.values()) emits.push({ value: red.finish(a.acc), ctx: { ...ctxOf(a.key, a.start, a.end), late: true } });
    }
    const last = msgs[msgs.length - 1];
    const wmValue = { sourceAt: last.createdAt, sourceTxn: last.transactionId };
    if (w.eventTimeFn && Number.isFinite(wm1)) wmValue.eventTimeMs = wm1;
    stateOps.push({ type: 'upsert', key: WM_KEY, value: wmValue });
    return { stateOps, emits };
  }

  // sessions: one open session per key, row sess:<gap>US open US <key> = {acc, sessionStart, lastEventTime}
  async sessionFold(w, red, rows, envs, wm0, clock, stateOps, emits, ctxOf, { flush = false } = {}) {
    const prefix = `${w.tag}${US}open${US}`;
    const open = new Map(); // key -> {acc, start, last, rowExists, changed}
    for (const r of rows) {
      if (!r.key.startsWith(prefix)) continue;
      const v = r.value;
      open.set(r.key.slice(prefix.length), { acc: v.acc, start: v.sessionStart, last: v.lastEventTime, rowExists: true, changed: false });
    }
    const close = (key, s) => emits.push({ value: red.finish(s.acc), ctx: ctxOf(key, s.start, s.last + w.gapMs) });
    for (const env of envs) {
      let s = open.get(env.key);
      if (s && env.ts > s.last + w.gapMs) {
        close(env.key, s); // the gap passed: that session is done, a new one starts (same row key)
        s = undefined;
        open.set(env.key, { acc: red.init(), start: env.ts, last: env.ts, rowExists: true, changed: true });
        s = open.get(env.key);
      } else if (!s) {
        if (w.eventTimeFn && env.ts + w.gapMs + w.graceMs <= wm0) {
          this.stats.lateEventsTotal++;
          if (w.onLate !== 'include') continue;
          const a = { acc: await red.fold(red.init(), env.value), start: env.ts, last: env.ts };
          emits.push({ value: red.finish(a.acc), ctx: { ...ctxOf(env.key, a.start, a.last + w.gapMs), late: true } });
          continue;
        }
        s = { acc: red.init(), start: env.ts, last: env.ts, rowExists: false, changed: true };
        open.set(env.key, s);
      }
      if (env.ts > s.last) s.last = env.ts;
      if (env.ts < s.start) s.start = env.ts;
      s.acc = await red.fold(s.acc, env.value);
      s.changed = true;
    }
    for (const [key, s] of open) {
      const sk = prefix + key;
      if (s.last + w.gapMs + w.graceMs <= clock) {
        close(key, s);
        if (s.rowExists) stateOps.push({ type: 'delete', key: sk });
      } else if (s.changed && !flush) stateOps.push({ type: 'upsert', key: sk, value: { acc: s.acc, sessionStart: s.start, lastEventTime: s.last } });
    }
  }

  // ---- the gate: fn(value, ctx) per message in order; a deny stops the batch and keeps the lease
  async gateCycle(pid, name, msgs, leaseId, base) {
    const rows = await this.stateGet(pid);
    const live = new Map(rows.filter((r) => !r.key.startsWith('__')).map((r) => [r.key, r.value]));
    const streamTimeMs = Date.now();
    const touched = new Set();
    const emits = [];
    let acked = null, ackCount = 0, denied = false;
    for (const m of msgs) {
      const envs = await this.runPre([m]);
      // a message's decisions are all or nothing: its mutations land only if every one of its
      // envelopes is allowed (a filtered-out message is done: it is acked with its neighbours)
      const tentative = new Map();
      const mine = [];
      for (const env of envs) {
        if (!tentative.has(env.key)) tentative.set(env.key, clone(live.get(env.key)) ?? {});
        const ctx = { state: tentative.get(env.key), streamTimeMs, partitionId: pid, partition: name, key: env.key };
        let r;
        try { r = await this.plan.gate.fn(env.value, ctx); } catch (err) {
          this.report(err, { phase: 'gate', partitionId: pid, partition: name, transactionId: m.transactionId });
          return; // nothing committed: the lease expires and the batch comes back in order
        }
        tentative.set(env.key, ctx.state ?? {});
        const allow = r === true || (isPlainObject(r) && r.allow === true);
        if (!allow) { denied = true; break; }
        mine.push({ value: env.value, ctx: { partition: name, partitionId: pid, key: env.key } });
      }
      if (denied) { this.stats.gateDenialsTotal++; break; }
      for (const [k, v] of tentative) { live.set(k, v); touched.add(k); }
      emits.push(...mine);
      this.stats.gateAllowsTotal += mine.length;
      acked = m;
      ackCount++;
    }
    if (!acked) return; // the very first message denied: no cycle at all
    const push = await this.sinkItems(emits, name);
    await this.commit({ ...base, state_ops: [...touched].map((k) => ({ type: 'upsert', key: k, value: live.get(k) })), push_items: push,
      ack: { transactionId: acked.transactionId, leaseId, status: 'completed', count: ackCount }, release_lease: !denied });
    this.stats.messagesTotal += ackCount;
    const p = this.parts.get(pid);
    if (p) p.sourceUs = isoToUs(acked.createdAt);
  }

  // ---- the idle flush
  flushTick() {
    if (this.flushInFlight || this.stopped) return this.flushInFlight;
    this.flushInFlight = this.flushAll().catch((err) => this.report(err, { phase: 'flush' })).finally(() => { this.flushInFlight = null; });
    return this.flushInFlight;
  }

  async flushAll() {
    if (!this.parts.size) return;
    // list only what was written since the oldest last-acked stamp of the touched partitions
    // (not the whole queue): a drained partition's last write is its last acked record, at or
    // after that bound, so every partition that can be flushed is listed
    let sinceUs = Infinity;
    for (const p of this.parts.values()) sinceUs = p.sourceUs == null ? -Infinity : Math.min(sinceUs, p.sourceUs);
    const entry0 = { queue: this.source, limit: 1000 };
    if (Number.isFinite(sinceUs)) entry0.since = usToIso(sinceUs);
    const res = await this.http.request('POST', '/api/v1/partitions/changed', { body: { entries: [entry0] } });
    let entry = res?.entries?.[0];
    const info = new Map();
    let safeTime = res?.safeTime;
    for (;;) {
      for (const p of entry?.partitions ?? []) info.set(p.id, p);
      if (!entry?.next) break;
      const more = await this.http.request('POST', '/api/v1/partitions/changed', { body: { entries: [{ ...entry0, after: entry.next }] } });
      if (more?.safeTime && more.safeTime < safeTime) safeTime = more.safeTime;
      entry = more?.entries?.[0];
    }
    const safeUs = isoToUs(safeTime);
    if (safeUs == null) return;
    for (const [pid, p] of [...this.parts]) {
      if (this.stopped) return;
      const pi = info.get(pid);
      if (!pi) continue;
      try {
        await this.withPartition(pid, () => this.flushPartition(pid, p.name ?? pi.name, pi, safeUs));
      } catch (err) { this.report(err, { phase: 'flush', partitionId: pid, partition: p.name }); }
    }
  }

  // The rule: a partition is flushed only when this query has consumed its last record (the
  // createdAt of the last acked source record, kept in __wm__.sourceAt, is at or past the
  // partition's lastWriteAt). Then nothing stamped at or below safeTime is still to come, so
  //   processing time: clock = safeTime;
  //   event time:      clock = watermark + (safeTime - lastWriteAt), the event-time clock moving
  //                    with the broker's while the partition is quiet (B1 of the earlier release).
  // A window closes when windowEnd + gracePeriod <= clock. An event-time flush that closes a
  // window stores that clock as the watermark, so a record arriving later for the same window
  // is late (dropped, or emitted as a separate late result) instead of opening it again.
  async flushPartition(pid, name, pi, safeUs) {
    const w = this.plan.window, red = this.plan.reducer;
    const wmRows = await this.stateGet(pid, { keys: [WM_KEY] });
    const wmRow = wmRows.find((r) => r.key === WM_KEY)?.value ?? {};
    const sourceUs = isoToUs(wmRow.sourceAt) ?? this.parts.get(pid)?.sourceUs ?? null;
    const lastWriteUs = isoToUs(pi.lastWriteAt);
    if (pi.lastOffset >= 0 && (sourceUs == null || lastWriteUs == null || sourceUs < lastWriteUs)) return; // records still to consume
    if (pi.lastOffset >= 0 && sourceUs === lastWriteUs) {
      // records of one push share their stamp, and a batch may have ended inside such a push:
      // drained only if the partition's last record is the last one this query acked
      const f = await this.http.request('POST', '/api/v1/fetch', { body: { entries: [{ queue: this.source, partition: name, offset: pi.lastOffset, maxBytes: 1 }], maxBytes: 1 } });
      const rec = f?.entries?.[0]?.records?.[0];
      if (!rec || rec.transactionId !== wmRow.sourceTxn) return;
    }
    let clock;
    if (w.eventTimeFn) {
      if (typeof wmRow.eventTimeMs !== 'number') return;
      clock = wmRow.eventTimeMs + Math.max(0, Math.floor((safeUs - (lastWriteUs ?? safeUs)) / 1000));
    } else clock = Math.floor(safeUs / 1000);
    const stateOps = [], emits = [];
    const ctxOf = (key, start, end) => ({ partition: name, partitionId: pid, key, windowKey: new Date(start).toISOString(), windowStart: start, windowEnd: end });
    if (w.type === 'session') {
      const rows = await this.stateGet(pid, { key_prefix: `${w.tag}${US}open${US}` });
      await this.sessionFold(w, red, rows, [], -Infinity, clock, stateOps, emits, ctxOf, { flush: true });
    } else {
      const ripe = clock - w.graceMs;
      if (ripe < 0) return;
      const rows = await this.stateGet(pid, { key_prefix: w.tag + US, ripe_at_or_before: ripe });
      for (const r of rows) {
        const parts = r.key.split(US);
        if (parts.length !== 3) continue;
        emits.push({ value: red.finish(r.value.acc), ctx: ctxOf(parts[2], r.value.windowStart, r.value.windowEnd) });
        stateOps.push({ type: 'delete', key: r.key });
      }
    }
    if (!emits.length) return;
    if (w.eventTimeFn && clock > wmRow.eventTimeMs) stateOps.push({ type: 'upsert', key: WM_KEY, value: { ...wmRow, eventTimeMs: clock } });
    const push = await this.sinkItems(emits, name);
    await this.commit({ query_id: this.serverQueryId, partition_id: pid, consumer_group: this.group, state_ops: stateOps, push_items: push, ack: null, release_lease: true }, { flush: true });
  }
}
