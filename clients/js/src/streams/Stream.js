// Stream: an immutable operator chain, checked as it is built, run by runner.js.
import { configHashOf } from './configHash.js';
import { Runner } from './runner.js';

const CRON_EVERY = ['second', 'minute', 'hour', 'day', 'week'];
const POS = (n) => typeof n === 'number' && Number.isFinite(n) && n > 0;
const NONNEG = (n) => typeof n === 'number' && Number.isFinite(n) && n >= 0;

export class StreamBuildError extends Error {
  constructor(msg) { super(msg); this.name = 'StreamBuildError'; this.code = 'STREAMS_CHAIN_INVALID'; }
}

function fnArg(name, fn) {
  if (typeof fn !== 'function') throw new StreamBuildError(`.${name}() needs a function`);
  return fn;
}

function windowOptions(kind, o, defaultIdle) {
  const grace = o.gracePeriod ?? 0;
  const lateness = o.allowedLateness ?? 0;
  if (!NONNEG(grace)) throw new StreamBuildError(`${kind}: gracePeriod must be a number of seconds >= 0`);
  if (!NONNEG(lateness)) throw new StreamBuildError(`${kind}: allowedLateness must be a number of seconds >= 0`);
  const idle = o.idleFlushMs ?? defaultIdle;
  if (!NONNEG(idle)) throw new StreamBuildError(`${kind}: idleFlushMs must be a number of milliseconds >= 0 (0 disables the idle flush)`);
  const onLate = o.onLate ?? 'drop';
  if (onLate !== 'drop' && onLate !== 'include') throw new StreamBuildError(`${kind}: onLate must be 'drop' or 'include', got ${JSON.stringify(onLate)}`);
  if (o.eventTime !== undefined && typeof o.eventTime !== 'function') throw new StreamBuildError(`${kind}: eventTime must be a function (msg) => Date | epoch ms | ISO string`);
  const known = new Set(['seconds', 'size', 'slide', 'gap', 'every', 'gracePeriod', 'allowedLateness', 'idleFlushMs', 'onLate', 'eventTime']);
  for (const k of Object.keys(o)) if (!known.has(k)) throw new StreamBuildError(`${kind}: unknown option ${k}`);
  return {
    config: { gracePeriod: grace, idleFlushMs: idle, eventTime: typeof o.eventTime === 'function', allowedLateness: lateness, onLate },
    rt: { graceMs: Math.max(0, Math.floor(grace * 1000)), latenessMs: Math.max(0, Math.floor(lateness * 1000)),
      idleFlushMs: Math.max(0, Math.floor(idle)), eventTimeFn: o.eventTime, onLate },
  };
}

export class Stream {
  constructor(source, ops = []) {
    this.source = source;
    this.ops = ops;
    Object.freeze(this.ops);
  }

  static from(source) {
    if (!source || typeof source.name !== 'string' || !source.queen) {
      throw new StreamBuildError('Stream.from() needs a queue builder: Stream.from(queen.queue("name"))');
    }
    return new Stream(source, []);
  }

  _add(op) {
    const ops = [...this.ops, op];
    compile(ops, { partial: true });
    return new Stream(this.source, ops);
  }

  map(fn) { return this._add({ kind: 'map', config: {}, fn: fnArg('map', fn) }); }
  filter(fn) { return this._add({ kind: 'filter', config: {}, fn: fnArg('filter', fn) }); }
  flatMap(fn) { return this._add({ kind: 'flatMap', config: {}, fn: fnArg('flatMap', fn) }); }
  keyBy(fn) { return this._add({ kind: 'keyBy', config: {}, fn: fnArg('keyBy', fn) }); }

  windowTumbling(o = {}) {
    if (!POS(o.seconds)) throw new StreamBuildError('windowTumbling: seconds must be a number > 0');
    const { config, rt } = windowOptions('windowTumbling', o, 5000);
    const sizeMs = Math.round(o.seconds * 1000);
    return this._add({ kind: 'window-tumbling', config: { seconds: o.seconds, ...config },
      window: { type: 'tumbling', tag: `tumb:${String(o.seconds)}`, sizeMs, slideMs: sizeMs, ...rt } });
  }

  windowSliding(o = {}) {
    if (!POS(o.size) || !POS(o.slide)) throw new StreamBuildError('windowSliding: size and slide must be numbers > 0');
    const sizeMs = Math.round(o.size * 1000), slideMs = Math.round(o.slide * 1000);
    if (sizeMs % slideMs !== 0) throw new StreamBuildError('windowSliding: size must be a multiple of slide');
    const { config, rt } = windowOptions('windowSliding', o, 5000);
    return this._add({ kind: 'window-sliding', config: { size: o.size, slide: o.slide, ...config },
      window: { type: 'sliding', tag: `slide:${String(o.size)}:${String(o.slide)}`, sizeMs, slideMs, ...rt } });
  }

  windowSession(o = {}) {
    if (!POS(o.gap)) throw new StreamBuildError('windowSession: gap must be a number of seconds > 0');
    const { config, rt } = windowOptions('windowSession', o, 1000);
    return this._add({ kind: 'window-session', config: { gap: o.gap, ...config },
      window: { type: 'session', tag: `sess:${String(o.gap)}`, gapMs: Math.round(o.gap * 1000), ...rt } });
  }

  windowCron(o = {}) {
    if (!CRON_EVERY.includes(o.every)) throw new StreamBuildError(`windowCron: every must be one of ${CRON_EVERY.join(', ')}`);
    const { config, rt } = windowOptions('windowCron', o, 30000);
    const sizeMs = { second: 1000, minute: 60000, hour: 3600000, day: 86400000, week: 7 * 86400000 }[o.every];
    return this._add({ kind: 'window-cron', config: { every: o.every, ...config },
      window: { type: 'cron', tag: `cron:${o.every}`, sizeMs, slideMs: sizeMs, weekly: o.every === 'week', ...rt } });
  }

  reduce(fn, initial) {
    fnArg('reduce', fn);
    const init = initial === undefined ? undefined : JSON.stringify(initial);
    return this._add({ kind: 'reduce', config: { hasInitial: initial !== undefined },
      reducer: { init: () => (init === undefined ? undefined : JSON.parse(init)), fold: fn, finish: (acc) => acc } });
  }

  aggregate(fields) {
    if (!fields || typeof fields !== 'object' || Array.isArray(fields) || Object.keys(fields).length === 0) {
      throw new StreamBuildError('aggregate() needs an object of {name: extractor}');
    }
    for (const [k, f] of Object.entries(fields)) {
      if (typeof f !== 'function') throw new StreamBuildError(`aggregate: field ${k} needs an extractor function`);
      if (k.startsWith('__')) throw new StreamBuildError(`aggregate: field names beginning with __ are reserved (${k})`);
    }
    return this._add({ kind: 'aggregate', config: { fields: Object.keys(fields) }, reducer: aggregateReducer(fields) });
  }

  gate(fn) { return this._add({ kind: 'gate', config: {}, fn: fnArg('gate', fn) }); }

  to(queueBuilder, { partition } = {}) {
    if (!queueBuilder || typeof queueBuilder.name !== 'string') throw new StreamBuildError('.to() needs a queue builder: .to(queen.queue("sink"))');
    if (partition !== undefined && typeof partition !== 'string' && typeof partition !== 'function') {
      throw new StreamBuildError('.to(): partition must be a string or a function (value) => string');
    }
    return this._add({ kind: 'sink', config: { queue: queueBuilder.name }, sink: { queue: queueBuilder.name, partition } });
  }

  foreach(fn) { return this._add({ kind: 'foreach', config: {}, fn: fnArg('foreach', fn) }); }

  configHash() { return configHashOf(this.ops); }
  compile() { return compile(this.ops, { partial: false }); }

  // run({queryId, url, batchSize, maxWait, reset, ...}) -> handle {stop(), metrics(), done}
  async run(opts = {}) {
    const plan = this.compile();
    const runner = new Runner(this, plan, opts);
    await runner.start();
    return runner.handle();
  }
}

// The stage plan: pre (map/filter/flatMap) -> keyBy -> (gate | window -> reducer) -> post -> sink.
export function compile(ops, { partial = false } = {}) {
  const plan = { pre: [], keyBy: null, window: null, reducer: null, gate: null, post: [], sink: null, foreach: null };
  let phase = 'pre';
  ops.forEach((op, i) => {
    if (plan.sink || plan.foreach) {
      throw new StreamBuildError(`sink operators (.to / .foreach) must be the last in the chain; found .${op.kind}() after it (operator ${i + 1})`);
    }
    switch (op.kind) {
      case 'map': case 'filter': case 'flatMap':
        (phase === 'post' ? plan.post : plan.pre).push(op);
        if (phase === 'post' && op.kind === 'flatMap') { /* allowed: several emits */ }
        break;
      case 'keyBy':
        if (plan.keyBy) throw new StreamBuildError('only one .keyBy() per stream');
        if (plan.gate) throw new StreamBuildError('.keyBy() must come before the gate');
        if (plan.window || plan.reducer) throw new StreamBuildError('.keyBy() must come before window/reduce/gate');
        plan.keyBy = op;
        break;
      case 'window-tumbling': case 'window-sliding': case 'window-session': case 'window-cron':
        if (plan.window) throw new StreamBuildError('only one window operator per stream');
        if (plan.reducer) throw new StreamBuildError('window must come before reduce/aggregate');
        if (plan.gate) throw new StreamBuildError('window+reduce is incompatible with .gate() in the same stream');
        plan.window = op.window;
        phase = 'window';
        break;
      case 'reduce': case 'aggregate':
        if (plan.reducer) throw new StreamBuildError('only one reduce/aggregate per stream');
        if (!plan.window) throw new StreamBuildError('reduce/aggregate requires a preceding window operator');
        plan.reducer = op.reducer;
        phase = 'post';
        break;
      case 'gate':
        if (plan.gate) throw new StreamBuildError('only one .gate() per stream; chain two streams if you need two decisions');
        if (plan.window || plan.reducer) throw new StreamBuildError('.gate() is incompatible with windowing/reduce in the same stream');
        plan.gate = op;
        phase = 'post';
        break;
      case 'sink': plan.sink = op.sink; break;
      case 'foreach': plan.foreach = op; break;
      default: throw new StreamBuildError(`unknown operator ${op.kind}`);
    }
  });
  if (!partial) {
    if (plan.window && !plan.reducer) {
      throw new StreamBuildError('a window needs a reduce/aggregate after it (a window alone emits nothing you can use)');
    }
    if (!plan.sink && !plan.foreach) throw new StreamBuildError('a stream needs a terminal .to(queue) or .foreach(fn)');
  }
  return plan;
}

// aggregate: count (extractor's number, else 1), sum, min, max, avg; other names: numeric running
// sums. The emitted value carries only the fields asked for (no internal fields).
function aggregateReducer(fields) {
  const names = Object.keys(fields);
  return {
    init: () => {
      const a = {};
      for (const n of names) {
        if (n === 'min' || n === 'max') a[n] = null;
        else if (n === 'avg') { a.avg = 0; a.__avg_sum = 0; a.__avg_count = 0; } else a[n] = 0;
      }
      return a;
    },
    fold: (acc, value) => {
      for (const n of names) {
        const v = fields[n](value);
        const num = typeof v === 'number' && Number.isFinite(v);
        if (n === 'count') acc.count += num ? v : 1;
        else if (n === 'min') { if (num && (acc.min === null || v < acc.min)) acc.min = v; } else if (n === 'max') { if (num && (acc.max === null || v > acc.max)) acc.max = v; } else if (n === 'avg') {
          if (num) { acc.__avg_sum += v; acc.__avg_count += 1; acc.avg = acc.__avg_sum / acc.__avg_count; }
        } else if (num) acc[n] += v;
      }
      return acc;
    },
    finish: (acc) => {
      const out = {};
      for (const [k, v] of Object.entries(acc)) if (!k.startsWith('__')) out[k] = v;
      return out;
    },
  };
}
