// The spec's JavaScript example (spec/streams.txt), exactly as printed.
import { Queen, Stream } from 'queen-mq'

const url = 'http://localhost:6632'
const queen = new Queen({ url })

const handle = await Stream
  .from(queen.queue('orders'))
  .filter(msg => msg.data.amount > 0)
  .windowTumbling({ seconds: 60, idleFlushMs: 5000 })
  .aggregate({ count: () => 1, sum: m => m.amount })
  .to(queen.queue('orders.per_minute'))
  .run({ queryId: 'orders.per_minute', url, batchSize: 50 })
