// Compiled by tsc (make sdk-js), never run: the spec's JS example and the client surface type-check
// against index.d.ts.
import { Queen, Stream, tokenBucketGate, ConflationUnsupportedError, type Message, type StreamHandle } from 'queen-mq';

export async function specExample(): Promise<StreamHandle> {
  const url = 'http://localhost:6632';
  const queen = new Queen({ url });
  const handle = await Stream
    .from(queen.queue('orders'))
    .filter(msg => msg.data.amount > 0)
    .windowTumbling({ seconds: 60, idleFlushMs: 5000 })
    .aggregate({ count: () => 1, sum: m => m.amount })
    .to(queen.queue('orders.per_minute'))
    .run({ queryId: 'orders.per_minute', url, batchSize: 50 });
  await Stream
    .from(queen.queue('api-requests'))
    .gate((req, ctx) => {
      ctx.state.remaining ??= 10;
      if (ctx.state.remaining < 1) return false;
      ctx.state.remaining -= 1;
      return true;
    })
    .to(queen.queue('api-allowed'))
    .run({ queryId: 'api-budget', url });
  await Stream.from(queen.queue('a')).gate(tokenBucketGate({ capacity: 5, refillPerSec: 1 })).to(queen.queue('b')).run({ queryId: 'tb' });
  return handle;
}

export async function client(queen: Queen): Promise<void> {
  await queen.queue('q').partition('p').push([{ data: { n: 1 }, transactionId: 't1' }]);
  const msgs: Message<{ n: number }>[] = await queen.queue('q').group('g').batch(10).wait(false).pop<{ n: number }>();
  await queen.ack(msgs, true, { group: 'g' });
  const c = queen.queue('q').group('g').renewLease(true, 5000).consume(async (m: Message) => { void m.data; });
  await c.stop();
  const latest: Message[] = await queen.queue('q').group('g').conflation().partitions(10).batch(10).wait(false).pop();
  void latest;
  const lv = queen.queue('q').group('g').conflation(true).consume(async (m: Message) => { void m.data; }, { onError: (e) => { if (e instanceof ConflationUnsupportedError) void e.code; } });
  await lv.stop();
  await queen.transaction().ack(msgs[0]).queue('out').partition('p').push([{ data: 1 }]).once('dedup', 'k', { ttlSeconds: 60 }).commit();
  await queen.kv.put('ns', 'k', { a: 1 }, { forever: true });
  await queen.timers.schedule({ queue: 'q', timerKey: 'k', payload: { a: 1 }, delayMs: 1000 });
  const lock = queen.lock('name', { ttlSeconds: 10 });
  if ((await lock.acquire()).acquired) await lock.release();
  const f = await queen.queue('q').fetch({ partition: 'p' });
  void f.records.length;
}
