// Types of queen-mq (checked by `tsc` in make sdk-js: test/types-check.ts uses every export)

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

export interface QueenOptions {
  url?: string;
  urls?: string[];
  bearerToken?: string;
  headers?: Record<string, string>;
  timeoutMillis?: number;
  retryAttempts?: number;
  loadBalancingStrategy?: 'affinity' | 'round-robin' | 'session';
  affinityHashRing?: number;
  enableFailover?: boolean;
  unhealthyMillis?: number;
  retryBaseMillis?: number;
  rateLimitBaseMillis?: number;
}

export interface Message<T = any> {
  id: string;
  transactionId: string;
  partitionId: string;
  partition: string;
  leaseId?: string | null;
  consumerGroup?: string | null;
  data: T;
  createdAt: string;
  traceId?: string | null;
  producerSub?: string | null;
  queue?: string;
  [k: string]: unknown;
}

export interface PushItem<T = any> { data?: T; payload?: T; transactionId?: string; traceId?: string; partition?: string }
export interface PushResult { status: 'queued' | 'duplicate' | 'failed'; transactionId?: string; error?: string; [k: string]: unknown }
export type AckStatus = boolean | 'completed' | 'failed' | 'retry' | 'dlq' | string;

export class QueenHttpError extends Error {
  status?: number; code?: string; reason?: string; detail?: string; body?: unknown; retryAfterSeconds?: number;
}

/** a pop that asked for conflation() got an answer without the conflation echo (an old broker); terminal for consume */
export class ConflationUnsupportedError extends Error {
  readonly code: 'conflation_unsupported'; status?: number; body?: unknown;
}

export class HttpClient {
  constructor(opts: QueenOptions & { urls: string[] });
  urls: string[];
  unhealthyUntil: Map<string, number>;
  order(affinityKey?: string): string[];
  request<R = any>(method: string, path: string, opts?: { body?: unknown; affinityKey?: string; timeoutMillis?: number; longPoll?: boolean; signal?: AbortSignal; retryAttempts?: number }): Promise<R | null>;
}

export interface FetchResult { partition: string; records: { offset: number; transactionId: string; payload: any; ts: string }[]; highWatermark: number; logStartOffset: number; nextOffset: number }
export interface ChangedPartition { name: string; id: string; lastOffset: number; logStart: number; lastWriteAt: string | null }

export class Consumer implements PromiseLike<void> {
  then<A = void, B = never>(onfulfilled?: ((value: void) => A | PromiseLike<A>) | null, onrejected?: ((reason: any) => B | PromiseLike<B>) | null): PromiseLike<A | B>;
  readonly done: Promise<void>;
  processed: number;
  stop(): Promise<void>;
}

export class QueueBuilder {
  readonly name: string;
  partition(p: string): QueueBuilder;
  group(g: string): QueueBuilder;
  batch(n: number): QueueBuilder;
  wait(b?: boolean): QueueBuilder;
  timeoutMillis(ms: number): QueueBuilder;
  partitions(n: number): QueueBuilder;
  autoAck(b?: boolean): QueueBuilder;
  commitOnDelivery(): QueueBuilder;
  subscriptionMode(m: 'new' | 'new-only' | 'all' | string): QueueBuilder;
  subscriptionFrom(f: string): QueueBuilder;
  namespace(ns: string): QueueBuilder;
  task(t: string): QueueBuilder;
  limit(n: number): QueueBuilder;
  concurrency(n: number): QueueBuilder;
  each(): QueueBuilder;
  renewLease(on?: boolean, everyMillis?: number): QueueBuilder;
  idleMillis(ms: number): QueueBuilder;
  config(opts: Record<string, Json>): QueueBuilder;
  /** last-value delivery for the group: the newest record of each claimed partition (needs group(), refused with autoAck) */
  conflation(on?: boolean): QueueBuilder;
  create(): Promise<any>;
  delete(): Promise<any>;
  push<T = any>(items: PushItem<T> | PushItem<T>[]): Promise<PushResult[]>;
  pop<T = any>(opts?: { signal?: AbortSignal }): Promise<Message<T>[]>;
  /** one message per call with batch 1 (the default) or .each(); the batch's array otherwise; `each` overrides */
  consume<T = any>(handler: (m: any) => unknown | Promise<unknown>, opts?: { signal?: AbortSignal; each?: boolean; onError?: (err: unknown, m?: Message<T> | Message<T>[]) => void }): Consumer;
  fetch(opts?: { partition?: string; offset?: number; maxBytes?: number }): Promise<FetchResult>;
  changedSince(since?: string | Date): Promise<{ safeTime: string | null; partitions: ChangedPartition[] }>;
}

export interface Expiry { ttlSeconds?: number; forever?: boolean; ttl?: number; until?: Date | string }
export interface KvWriteOptions extends Expiry { expect?: number; required?: boolean }
export interface KvResult { found?: boolean; applied?: boolean; key?: string; value?: any; version?: number; reason?: string; expiresAt?: string | null; [k: string]: unknown }

export class Kv {
  batch(operations: Record<string, unknown>[]): Promise<KvResult[]>;
  get(ns: string, key: string): Promise<KvResult>;
  getMany(ns: string, keys: string[]): Promise<KvResult>;
  getPrefix(ns: string, prefix: string, opts?: { after?: string; limit?: number; keysOnly?: boolean }): Promise<KvResult>;
  put(ns: string, key: string, value: Json, opts?: KvWriteOptions): Promise<KvResult>;
  putIfAbsent(ns: string, key: string, value: Json, opts?: Expiry & { required?: boolean }): Promise<KvResult>;
  delete(ns: string, key: string, opts?: { expect?: number; required?: boolean }): Promise<KvResult>;
  incr(ns: string, key: string, opts?: Expiry & { delta?: number; min?: number; max?: number; required?: boolean }): Promise<KvResult>;
  check(ns: string, key: string, opts: { expect: number; required?: boolean }): Promise<KvResult>;
}

export interface TimerSpec { queue: string; timerKey: string; payload?: Json | Uint8Array; delayMs?: number; txn?: string; partition?: string }
export interface TimerResult { ok: boolean; status: 'scheduled' | 'rescheduled' | 'cancelled' | 'absent' | 'too_late'; queue: string; timerKey: string; txn: string; messageId?: string; deliverAt?: string }

export class Timers {
  batch(operations: Record<string, unknown>[]): Promise<TimerResult[]>;
  schedule(t: TimerSpec): Promise<TimerResult>;
  reschedule(t: TimerSpec): Promise<TimerResult>;
  cancel(queue: string, timerKey: string, opts?: { txn?: string }): Promise<any>;
  peek(queue: string, timerKey: string): Promise<any>;
  list(queue: string, opts?: { after?: string; limit?: number }): Promise<{ rows: any[]; truncated: boolean; nextAfter: string | null }>;
}

export class Lock {
  readonly name: string;
  readonly owner: string;
  token?: number;
  slot?: number;
  lost: boolean;
  readonly held: boolean;
  acquire(): Promise<{ acquired: boolean; reason?: string; [k: string]: unknown }>;
  renew(): Promise<{ renewed: boolean; reason?: string; [k: string]: unknown }>;
  release(): Promise<{ released: boolean; [k: string]: unknown }>;
}

export class Locks {
  lock(name: string, opts?: { ttlSeconds?: number; limit?: number; owner?: string }): Lock;
  get(name: string): Promise<{ held: boolean; holders: any[] }>;
  batch(operations: Record<string, unknown>[]): Promise<any[]>;
}

export class TransactionBuilder {
  ack(msgs: Message | Message[], status?: AckStatus, opts?: { group?: string }): TransactionBuilder;
  queue(name: string): { partition(p: string): ReturnType<TransactionBuilder['queue']>; push(items: PushItem | PushItem[]): TransactionBuilder };
  once(ns: string, key: string, expiry?: Expiry): TransactionBuilder;
  guard(lock: Lock): TransactionBuilder;
  kv: {
    get(ns: string, key: string): TransactionBuilder;
    getMany(ns: string, keys: string[]): TransactionBuilder;
    getPrefix(): never;
    put(ns: string, key: string, value: Json, opts?: KvWriteOptions): TransactionBuilder;
    putIfAbsent(ns: string, key: string, value: Json, opts?: Expiry & { required?: boolean }): TransactionBuilder;
    delete(ns: string, key: string, opts?: { expect?: number; required?: boolean }): TransactionBuilder;
    incr(ns: string, key: string, opts?: Expiry & { delta?: number; min?: number; max?: number; required?: boolean }): TransactionBuilder;
    check(ns: string, key: string, opts: { expect: number; required?: boolean }): TransactionBuilder;
  };
  timers: { schedule(t: TimerSpec): TransactionBuilder; reschedule(t: TimerSpec): TransactionBuilder; cancel(t: { queue: string; timerKey: string; txn?: string }): TransactionBuilder };
  body(): Record<string, unknown>;
  commit(): Promise<any>;
}

export class Queen {
  constructor(opts: QueenOptions | string | string[]);
  readonly options: QueenOptions & { urls: string[] };
  readonly http: HttpClient;
  readonly kv: Kv;
  readonly timers: Timers;
  readonly locks: Locks;
  queue(name: string): QueueBuilder;
  transaction(): TransactionBuilder;
  lock(name: string, opts?: { ttlSeconds?: number; limit?: number; owner?: string }): Lock;
  ack(msg: Message | Message[], status?: AckStatus, opts?: { group?: string; error?: string }): Promise<{ success: boolean; error?: string; [k: string]: unknown }>;
  renew(what: string | Message): Promise<{ leaseId: string; success: boolean; expiresAt?: string; error?: string }>;
  renew(what: (string | Message)[]): Promise<{ leaseId: string; success: boolean; expiresAt?: string; error?: string }[]>;
  changed(entries: { queue: string; limit?: number; since?: string; after?: string }[]): Promise<any>;
  close(): Promise<void>;
}

export function uuidv7(): string;

// ---- streams
export type TimeValue = Date | number | string;
export interface WindowOptions {
  gracePeriod?: number;
  allowedLateness?: number;
  idleFlushMs?: number;
  onLate?: 'drop' | 'include';
  eventTime?: (msg: Message) => TimeValue;
}
export interface EmitContext { partition: string; partitionId: string; key: string; windowKey?: string; windowStart?: number; windowEnd?: number; late?: boolean }
export interface GateContext<S = Record<string, any>> { state: S; streamTimeMs: number; partitionId: string; partition: string; key: string }

export interface RunOptions {
  queryId: string;
  url?: string | string[];
  bearerToken?: string;
  batchSize?: number;
  maxPartitions?: number;
  maxWait?: number;
  maxWaitMillis?: number;
  reset?: boolean;
  consumerGroup?: string;
  subscriptionMode?: string;
  subscriptionFrom?: string;
  renewLeaseMillis?: number;
  onError?: (err: unknown, ctx: Record<string, unknown>) => void;
  abortSignal?: AbortSignal;
  logger?: Pick<Console, 'info' | 'error'>;
}

export interface StreamMetrics {
  cyclesTotal: number; flushCyclesTotal: number; messagesTotal: number; pushItemsTotal: number; stateOpsTotal: number;
  lateEventsTotal: number; errorsTotal: number; gateAllowsTotal: number; gateDenialsTotal: number;
  lastCycleAt: string | null; lastFlushAt: string | null; lastError: string | null; queryId: string; serverQueryId: string | null;
}

export interface StreamHandle {
  readonly queryId: string;
  readonly serverQueryId: string | null;
  readonly configHash: string;
  stop(): Promise<void>;
  metrics(): StreamMetrics;
  flushNow(): Promise<void> | null;
  readonly done: Promise<void>;
}

export class StreamBuildError extends Error { code: 'STREAMS_CHAIN_INVALID' }
export class StreamsError extends Error { code: string; status?: number; body?: unknown }

export class Stream {
  static from(source: QueueBuilder): Stream;
  readonly ops: ReadonlyArray<{ kind: string; config: Record<string, unknown> }>;
  map(fn: (msg: any, ctx?: any) => any): Stream;
  filter(fn: (msg: any, ctx?: any) => unknown): Stream;
  flatMap(fn: (msg: any, ctx?: any) => any[] | Promise<any[]>): Stream;
  keyBy(fn: (msg: Message) => string | number): Stream;
  windowTumbling(o: { seconds: number } & WindowOptions): Stream;
  windowSliding(o: { size: number; slide: number } & WindowOptions): Stream;
  windowSession(o: { gap: number } & WindowOptions): Stream;
  windowCron(o: { every: 'second' | 'minute' | 'hour' | 'day' | 'week' } & WindowOptions): Stream;
  reduce<A = any>(fn: (acc: A, value: any) => A | Promise<A>, initial?: A): Stream;
  aggregate(fields: Record<string, (value: any) => unknown>): Stream;
  gate<S = Record<string, any>>(fn: (value: any, ctx: GateContext<S>) => boolean | { allow: boolean } | Promise<boolean | { allow: boolean }>): Stream;
  to(queue: QueueBuilder, opts?: { partition?: string | ((value: any) => string) }): Stream;
  foreach(fn: (value: any, ctx: EmitContext) => unknown): Stream;
  configHash(): string;
  compile(): unknown;
  run(opts: RunOptions): Promise<StreamHandle>;
}

export function compile(ops: unknown[], opts?: { partial?: boolean }): unknown;
export function configHashOf(ops: ReadonlyArray<{ kind: string; config?: Record<string, unknown> }>): string;
export function canonicalChain(ops: ReadonlyArray<{ kind: string; config?: Record<string, unknown> }>): string;
export function isoToUs(s: string): number | null;
export function assignWindows(w: unknown, ts: number): { start: number; end: number }[];
export function tokenBucketGate(o: { capacity: number; refillPerSec: number; costFn?: (v: any) => number; allowZeroCost?: boolean }): (value: any, ctx: GateContext) => boolean;
export function slidingWindowGate(o: { limit: number; windowSec: number; costFn?: (v: any) => number }): (value: any, ctx: GateContext) => boolean;
