// bench/sink.mjs — the S3 sink's throughput and lag (make bench), against @20minutes/s3rver on
// loopback and the embedded PostgreSQL with durable commits.
//   1. backlog: N records (~200-byte payloads, batch 100, 16 concurrent pushes) are written with
//      the sink off; the node restarts with QUEEN_S3_START=earliest and the time until every
//      record is in a committed window gives records/s and MB/s, with the peak RSS against
//      QUEEN_S3_MEMORY_MB;
//   2. steady: pushes at a fixed rate while the sink runs (QUEEN_S3_MAX_WINDOW_MS=10000): the lag
//      sampled twice a second;
//   3. keep-up: unthrottled batch-100 pushes while the sink runs: the push rate, the sink's rate,
//      and how long the sink needs to catch up once the pushes stop;
//   4. backfill: a backlog over --fetch-queues queues (8; --fetch-records in all, N) drained
//      once per QUEEN_S3_FETCH_CONCURRENCY value of --fetch (1,4), each by a sink of its own name
//      and prefix on the same data, windows of QUEEN_S3_TARGET_MB=--fetch-target (16) so a queue
//      reads several slices: the drain time, records/s, the most log reads that ran at
//      once, and the CPU the broker and its PostgreSQL spent (what turning the knob down saves
//      the database during a backfill).
// Usage: node bench/sink.mjs --bin build/release/queen [--records 1000000] [--seconds 20]
//        [--fetch 1,4] [--fetch-queues 8] [--fetch-records N] [--fetch-target 16] [--only fetch (the backfill alone)]
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { freePort, sleep, tmpDir, rmrf } from '../tests/integration/harness.mjs';
import { startS3 } from '../tests/integration/s3harness.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const BIN = path.resolve(args.bin || 'build/release/queen');
const N = Number(args.records || 1000000);
const SECONDS = Number(args.seconds || 20);
const MEMORY_MB = Number(args.memory || 512);
const PAD = 'x'.repeat(170);

function body(queue, from, count, parts = 10) {
  const items = [];
  for (let i = 0; i < count; i++) items.push(`{"queue":"${queue}","partition":"p${(from + i) % parts}","payload":{"n":${from + i},"data":"${PAD}"}}`);
  return `{"items":[${items.join(',')}]}`;
}

async function startNode(data, env) {
  const port = await freePort();
  const proc = spawn(BIN, [], {
    env: { PATH: process.env.PATH, HOME: '/tmp', PORT: String(port), HOST: '127.0.0.1', QUEEN_DATA_DIR: data, QUEEN_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  proc.stderr.on('data', (d) => { log += d; if (log.length > 1e6) log = log.slice(-5e5); });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    try { if ((await fetch(url + '/health')).status === 200) break; } catch { /* booting */ }
    await sleep(100);
  }
  const exit = new Promise((r) => proc.on('exit', r));
  return { url, proc, log: () => log, stop: async () => { proc.kill('SIGTERM'); await exit; } };
}

const hwmMb = (pid) => {
  const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmHWM:\s+(\d+)/.exec(s)[1]) / 1024);
};
const rssMb = (pid) => {
  const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(s)[1]) / 1024);
};

async function pushAll(url, queue, total, conns = 16, batch = 100) {
  let next = 0;
  let errors = 0;
  const t0 = Date.now();
  await Promise.all(Array.from({ length: conns }, async () => {
    for (;;) {
      const from = next;
      if (from >= total) return;
      next += batch;
      const r = await fetch(url + '/api/v1/push', { method: 'POST', headers: { 'content-type': 'application/json' }, body: body(queue, from, Math.min(batch, total - from)) });
      if (r.status !== 201) errors++;
      await r.arrayBuffer();
    }
  }));
  return { secs: (Date.now() - t0) / 1000, errors };
}

async function row(url, queue) {
  const s = await (await fetch(url + '/status')).json();
  return s.s3.sinks[0].queues.find((q) => q.queue === queue);
}

async function metric(url, name, queue) {
  const t = await (await fetch(url + '/metrics/prometheus')).text();
  const m = new RegExp(`^${name}\\{queue="${queue}"\\} ([0-9.e+]+)$`, 'm').exec(t);
  return m ? Number(m[1]) : 0;
}

const ONLY = args.only ? new Set(args.only.split(',')) : null;
const want = (what) => !ONLY || ONLY.has(what);

// CPU seconds (user + system) of pid and every process below it (the embedded PostgreSQL).
function treeCpu(pid) {
  const tick = 100; // USER_HZ on Linux
  const procs = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      procs.push({ pid: Number(d), ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / tick });
    } catch { /* gone */ }
  }
  const under = new Set([pid]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const p of procs) if (!under.has(p.pid) && under.has(p.ppid)) { under.add(p.pid); grew = true; }
  }
  return procs.filter((p) => under.has(p.pid)).reduce((a, p) => a + p.cpu, 0);
}

async function backfill() {
  const values = (args.fetch || '1,4').split(',').map(Number);
  const QN = Number(args['fetch-queues'] || 8);
  const total = Number(args['fetch-records'] || N);
  const per = Math.floor(total / QN);
  const queues = Array.from({ length: QN }, (_, i) => `bf${i + 1}`);
  const bdata = tmpDir('queen-bench-backfill-');
  try {
    let node = await startNode(bdata, {});
    const t0 = Date.now();
    let errors = 0;
    for (const q of queues) errors += (await pushAll(node.url, q, per)).errors;
    await node.stop();
    console.log(`sink-backfill: ${QN} queues x ${per} records pushed first (${Math.round((QN * per) / ((Date.now() - t0) / 1000))} msg/s, ${errors} errors)`);
    if (errors) throw new Error('the backfill pushes failed');
    await sleep(16000);
    const target = String(args['fetch-target'] || 16);
    for (const [run, fc] of values.entries()) {
      // a sink of its own per run: its own commit pointers (so it starts from the earliest
      // record again) and its own prefix in the bucket
      node = await startNode(bdata, { ...sinkEnv, QUEEN_S3_QUEUES: queues.join(','), QUEEN_S3_SINK: `bf${run}`, QUEEN_S3_PREFIX: `bf${run}`,
        QUEEN_S3_FETCH_CONCURRENCY: String(fc), QUEEN_S3_TARGET_MB: target });
      const cpu0 = treeCpu(node.proc.pid);
      const s0 = Date.now();
      let st;
      for (;;) {
        st = (await (await fetch(node.url + '/status')).json()).s3;
        const done = queues.every((q) => (st.sinks[0].queues.find((r) => r.queue === q) || {}).records >= per);
        if (done) break;
        if (Date.now() - s0 > 900000) throw new Error(`backfill not drained: ${JSON.stringify(st)}\n${node.log().slice(-3000)}`);
        await sleep(100);
      }
      const secs = (Date.now() - s0) / 1000;
      const cpu = treeCpu(node.proc.pid) - cpu0;
      console.log(`sink-backfill: QUEEN_S3_FETCH_CONCURRENCY=${fc}: ${QN * per} records of ${QN} queues committed in ${secs.toFixed(1)} s ` +
        `(${Math.round((QN * per) / secs)} records/s, QUEEN_S3_TARGET_MB=${target}); at most ${st.reads.peak} reads at once, ` +
        `${st.reads.waited} reads waited for a slot; broker + PostgreSQL CPU ${cpu.toFixed(1)} s (${(cpu / secs).toFixed(2)} cores)`);
      await node.stop();
    }
  } finally {
    rmrf(bdata);
  }
}

const s3 = await startS3();
const data = tmpDir('queen-bench-sink-');
const sinkEnv = {
  QUEEN_S3_EMBEDDED: 'true', QUEEN_S3_QUEUES: 'lake_backlog,lake_steady,lake_keepup', QUEEN_S3_ENDPOINT: s3.endpoint,
  QUEEN_S3_REGION: 'us-east-1', QUEEN_S3_PATH_STYLE: 'true', QUEEN_S3_BUCKET: 'lake', QUEEN_S3_ACCESS_KEY: 'S3RVER',
  QUEEN_S3_SECRET_KEY: 'S3RVER', QUEEN_S3_START: 'earliest', QUEEN_S3_MAX_WINDOW_MS: '10000', QUEEN_S3_MEMORY_MB: String(MEMORY_MB),
  QUEEN_NODE_ID: 'bench',
};
try {
  sections: {
  if (want('fetch') && ONLY && ONLY.size === 1) {
    await backfill();
    break sections;
  }
  // 1. the backlog, written with the sink off
  let node = await startNode(data, {});
  const push = await pushAll(node.url, 'lake_backlog', N);
  await node.stop();
  console.log(`sink-backlog: ${N} records pushed first (${Math.round(N / push.secs)} msg/s, batch 100, 16 conns, ${push.errors} errors)`);
  // a backlog older than a window and the guard: every window of it may close as soon as it is read
  await sleep(16000);
  node = await startNode(data, sinkEnv);
  const t0 = Date.now();
  let first = 0;
  let peak = 0;
  const samples = []; // [ms, records committed]
  for (;;) {
    const r = await row(node.url, 'lake_backlog');
    if (r && r.ownedHere && !first) first = Date.now();
    peak = Math.max(peak, rssMb(node.proc.pid));
    if (r) samples.push([Date.now(), r.records]);
    if (r && r.records >= N) break;
    if (Date.now() - t0 > 600000) throw new Error(`backlog not drained: ${JSON.stringify(r)}\n${node.log().slice(-3000)}`);
    await sleep(50);
  }
  const secs = (Date.now() - (first || t0)) / 1000;
  // the drain rate while windows close by size: from the first commit to the last one that
  // reached 90% (the last window of the backlog waits for its age like any window)
  const s10 = samples.find(([, c]) => c > 0) || samples[0];
  const s90 = samples.find(([, c]) => c >= 0.9 * N) || samples[samples.length - 1];
  const drain = s90[0] > s10[0] ? (s90[1] - s10[1]) / ((s90[0] - s10[0]) / 1000) : N / secs;
  const written = await metric(node.url, 'queen_s3_bytes_written_total', 'lake_backlog');
  const windows = await metric(node.url, 'queen_s3_windows_committed_total', 'lake_backlog');
  const payloadMb = (N * (PAD.length + 30)) / 1048576;
  const mbPerRec = payloadMb / N;
  console.log(`sink-backlog: drains ${Math.round(drain)} records/s (${(drain * mbPerRec).toFixed(1)} MB/s of payload read, ` +
    `${(drain * written / N / 1048576).toFixed(1)} MB/s written as zstd JSONL); all ${N} committed ${secs.toFixed(1)} s after the ` +
    `claim in ${windows} windows; RSS peak ${hwmMb(node.proc.pid)} MiB with QUEEN_S3_MEMORY_MB=${MEMORY_MB}`);

  // 2. steady pushes: the lag
  const rate = Number(args.rate || 20000);
  const perReq = 100;
  const interval = 1000 / (rate / perReq);
  const lags = [];
  let sent = 0;
  const stopAt = Date.now() + SECONDS * 1000;
  const sampler = (async () => {
    while (Date.now() < stopAt + 12000) {
      const r = await row(node.url, 'lake_steady');
      if (r && typeof r.lagSeconds === 'number') lags.push(r.lagSeconds);
      await sleep(500);
    }
  })();
  let tick = Date.now();
  const inflight = new Set();
  while (Date.now() < stopAt) {
    const from = sent;
    sent += perReq;
    const p = fetch(node.url + '/api/v1/push', { method: 'POST', headers: { 'content-type': 'application/json' }, body: body('lake_steady', from, perReq) })
      .then((r) => r.arrayBuffer()).finally(() => inflight.delete(p));
    inflight.add(p);
    tick += interval;
    const wait = tick - Date.now();
    if (wait > 0) await sleep(wait);
  }
  await Promise.all(inflight);
  await sampler;
  lags.sort((a, b) => a - b);
  const q = (f) => lags[Math.min(lags.length - 1, Math.floor(f * lags.length))];
  console.log(`sink-steady: ${rate} msg/s for ${SECONDS} s, QUEEN_S3_MAX_WINDOW_MS=10000: lag p50 ${q(0.5).toFixed(1)} s, p90 ${q(0.9).toFixed(1)} s, max ${lags[lags.length - 1].toFixed(1)} s`);

  // 3. unthrottled pushes while the sink runs
  const before = await metric(node.url, 'queen_s3_records_written_total', 'lake_keepup');
  const k0 = Date.now();
  let total = 0;
  const pushes = [];
  const KSECONDS = Number(args.keepup || 40);
  const kstop = Date.now() + KSECONDS * 1000;
  const klags = [];
  const ksampler = (async () => {
    while (Date.now() < kstop) {
      const r = await row(node.url, 'lake_keepup');
      if (r && typeof r.lagSeconds === 'number') klags.push([Math.round((Date.now() - k0) / 1000), r.lagSeconds]);
      await sleep(1000);
    }
  })();
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (Date.now() < kstop) {
      const from = total;
      total += 100;
      const r = await fetch(node.url + '/api/v1/push', { method: 'POST', headers: { 'content-type': 'application/json' }, body: body('lake_keepup', from, 100) });
      await r.arrayBuffer();
      if (r.status !== 201) pushes.push(r.status);
    }
  }));
  const pushSecs = (Date.now() - k0) / 1000;
  await ksampler;
  const during = (await metric(node.url, 'queen_s3_records_written_total', 'lake_keepup')) - before;
  const c0 = Date.now();
  for (;;) {
    const r = await row(node.url, 'lake_keepup');
    if (r && r.records >= total) break;
    if (Date.now() - c0 > 300000) break;
    await sleep(200);
  }
  const third = (a) => a.filter(([t]) => t >= KSECONDS * 2 / 3).map(([, l]) => l);
  const lastLags = third(klags);
  console.log(`sink-keepup: pushes ${Math.round(total / pushSecs)} msg/s (batch 100, 16 conns) for ${pushSecs.toFixed(0)} s with the sink running; ` +
    `the sink committed ${Math.round(during / pushSecs)} records/s meanwhile; lag in the last third ${Math.min(...lastLags).toFixed(1)}..${Math.max(...lastLags).toFixed(1)} s ` +
    `(window age 10 s + guard 5 s); all committed ${((Date.now() - c0) / 1000).toFixed(1)} s after the pushes stopped`);
  console.log(`sink-keepup: lag by second ${klags.filter((_, i) => i % 5 === 0).map(([t, l]) => `${t}s:${l.toFixed(0)}`).join(' ')}`);
  console.log(`sink: broker RSS ${rssMb(node.proc.pid)} MiB now, ${hwmMb(node.proc.pid)} MiB peak`);
  await node.stop();
  // 4. the backfill, once per QUEEN_S3_FETCH_CONCURRENCY value
  if (want('fetch')) await backfill();
  }
} finally {
  await s3.stop();
  rmrf(data);
}
