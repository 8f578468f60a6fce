// make bench: 10,001 partitions with concurrent push and pop.
// Producers push batches of 100 records to random partitions of one queue while consumers pop
// (batch 100, explicit ack) from any partition. Every record carries its push time; the report
// gives how long records waited between push and delivery (max and percentiles), throughput,
// and any error answer (a deadlock would show up as a 500 from the database).
//   node bench/partitions.mjs --url http://127.0.0.1:6632 [--seconds 20] [--partitions 10001] [--rate 3000]
const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, arr) => (a.startsWith('--') ? [...acc, [a.slice(2), arr[i + 1]]] : acc), []));
const url = args.url || 'http://127.0.0.1:6632';
const seconds = Number(args.seconds || 20);
const P = Number(args.partitions || 10001);
const queue = args.queue || 'bench_parts';
const producers = Number(args.producers || 8);
const consumers = Number(args.consumers || 16);
// records per second over all producers (0 = as fast as they can); a sustainable rate shows
// how long records wait because of scheduling, not because of a growing backlog
const rate = Number(args.rate || 0);
// partitions one pop may claim (the v4 multi-partition pop): with records spread thin over
// many partitions, one claim per pop would cost a round trip per handful of records
const perPop = Number(args['partitions-per-pop'] || 10);

const stopAt = Date.now() + seconds * 1000;
let pushed = 0, delivered = 0, errors = 0, seq = 0, acks = 0;
const waits = [];
const statuses = {};

async function call(method, path, body) {
  const r = await fetch(url + path, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined });
  statuses[r.status] = (statuses[r.status] || 0) + 1;
  if (r.status >= 500) errors++;
  return r.status === 204 ? null : r.json();
}

async function producer() {
  const every = rate > 0 ? (100 * producers * 1000) / rate : 0;
  let next = Date.now();
  while (Date.now() < stopAt) {
    if (every) {
      next += every;
      const d = next - Date.now();
      if (d > 0) await new Promise((r) => setTimeout(r, d));
    }
    const items = [];
    for (let i = 0; i < 100; i++) items.push({ queue, partition: `p${Math.floor(Math.random() * P)}`, payload: { t: Date.now(), n: seq++ } });
    await call('POST', '/api/v1/push', { items });
    pushed += items.length;
  }
}

async function consumer(drainUntil) {
  for (;;) {
    const r = await call('GET', `/api/v1/pop/queue/${queue}?batch=100&partitions=${perPop}&wait=true&timeout=1000`);
    if (!r || !r.messages || r.messages.length === 0) {
      if (Date.now() > drainUntil()) return;
      continue;
    }
    const now = Date.now();
    for (const m of r.messages) waits.push(now - m.data.t);
    delivered += r.messages.length;
    await call('POST', '/api/v1/ack/batch', { acknowledgments: r.messages.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId })) });
    acks++;
  }
}

const t0 = Date.now();
let producersDone = false;
const prod = Promise.all([...Array(producers)].map(producer)).then(() => { producersDone = true; });
// consumers run while producing and then drain what is left (up to 60 s more)
const cons = Promise.all([...Array(consumers)].map(() => consumer(() => (producersDone && delivered >= pushed) ? 0 : stopAt + 60000)));
await prod;
const pushSecs = (Date.now() - t0) / 1000;
await cons;
const total = (Date.now() - t0) / 1000;
waits.sort((a, b) => a - b);
const pct = (p) => waits.length ? waits[Math.min(waits.length - 1, Math.floor(waits.length * p))] : 0;
console.log(`partitions-${P}: ${producers} producers (batch 100${rate ? `, ${rate} records/s in all` : ', unthrottled'}), ${consumers} consumers (batch 100, up to ${perPop} partitions per pop, ack)`);
console.log(`  pushed ${pushed} records in ${pushSecs.toFixed(1)} s (${Math.round(pushed / pushSecs)}/s); delivered ${delivered} in ${total.toFixed(1)} s`);
console.log(`  wait from push to delivery: p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms, max ${waits.length ? waits[waits.length - 1] : 0} ms`);
console.log(`  ${acks} pops with records (${(delivered / Math.max(acks, 1)).toFixed(1)} records each)`);
console.log(`  answers by status: ${JSON.stringify(statuses)}; server errors (deadlocks would be here): ${errors}`);
if (delivered !== pushed) console.log(`  WARNING: ${pushed - delivered} records not delivered`);
process.exit(errors || delivered !== pushed ? 1 : 0);
