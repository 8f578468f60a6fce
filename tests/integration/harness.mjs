// harness.mjs — starts the real `queen` binary (and, when a test needs one, a throwaway
// PostgreSQL) on free loopback ports, and tears them down. Every node a test starts is
// stopped with SIGTERM and must exit 0 with no sanitizer report in its log.
//
// Nothing a test file starts outlives it, whatever its tests' outcome: every queen node,
// throwaway PostgreSQL, s3rver and fault proxy is in a registry (track() below) until it is
// stopped, and when the file ends the harness stops what is left —
//   - once every test and every after() hook of the file is done, failed or not ('beforeExit',
//     see the registry below): queen nodes with SIGTERM (SIGKILL after 30 s), then proxies,
//     s3rver and the PostgreSQL clusters, the embedded ones of nodes that were killed with
//     SIGKILL included; a queen node or s3rver still running there fails the file (the test
//     forgot to stop it);
//   - on process exit, SIGTERM or SIGINT (a file cancelled by the runner's timeout): SIGKILL
//     for the processes, `pg_ctl stop -m immediate` for the clusters.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(here, '../..');
export const QUEEN_BIN = process.env.QUEEN_BIN || path.join(ROOT, 'build/asan/queen');
const IS_ROOT = process.getuid && process.getuid() === 0;

export function tmpDir(prefix = 'queen-test-') {
  // under /tmp so the postgres user can reach it when tests run as root
  const d = fs.mkdtempSync(path.join('/tmp', prefix));
  fs.chmodSync(d, 0o755);
  return d;
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// promise's value, or null after ms; the timer is cleared either way, so a finished wait does not
// keep the test process alive for the rest of ms.
export async function within(promise, ms) {
  let timer;
  const timeout = new Promise((r) => { timer = setTimeout(() => r(null), ms); });
  try { return await Promise.race([promise, timeout]); } finally { clearTimeout(timer); }
}

// ---------------------------------------------------------------- the registry

// Every process (or in-process server) started for the file and not stopped yet:
//   { kind: 'queen' | 'proxy' | 's3rver' | 'postgres', what, pid, stop: async (), killSync: (), unref: () }
// stop() is the graceful way (awaited at 'beforeExit'), killSync() the last resort run from the
// exit hook, where nothing asynchronous runs any more; unref() (optional) lets the process exit
// with the thing still running. Returns the function that takes the
// entry out (call it once the thing is stopped).
const running = new Set();
export function track(entry) {
  running.add(entry);
  return () => running.delete(entry);
}
// Embedded clusters: a node's data directory, from its start until the file ends. A node killed
// with SIGKILL leaves its cluster running (the next start adopts it); whatever is still running
// at the end is stopped.
const embeddedDirs = new Set();
// The kinds whose leftovers fail the file, in the order they are stopped.
const KIND_ORDER = ['queen', 'proxy', 's3rver', 'postgres'];
const LEAKS_FAIL = new Set(['queen', 's3rver']);

function postmasterRunning(pgdata) {
  try {
    const pid = Number(fs.readFileSync(path.join(pgdata, 'postmaster.pid'), 'utf8').split('\n')[0]);
    if (!pid) return false;
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function sleepSync(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

// A process that is gone or a zombie (nothing reaps it while the exit hook runs).
function deadOrZombie(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return true;
  }
}

function stopEmbeddedClusters() {
  for (const dir of embeddedDirs) {
    const pgdata = path.join(dir, 'pg');
    if (!postmasterRunning(pgdata)) continue;
    try { runAsPg(pgBin('pg_ctl'), ['-D', pgdata, '-m', 'immediate', '-w', 'stop']); } catch { /* best effort */ }
    if (postmasterRunning(pgdata)) {
      // pg_ctl could not stop it: the postmaster itself (SIGQUIT is its immediate shutdown)
      const pid = Number(fs.readFileSync(path.join(pgdata, 'postmaster.pid'), 'utf8').split('\n')[0]);
      try { process.kill(pid, 'SIGQUIT'); } catch { /* gone */ }
    }
  }
}

// What is still running, stopped gracefully; returns the descriptions of the leaks that fail.
export async function stopEverything() {
  const leaks = [];
  const entries = [...running].sort((a, b) => KIND_ORDER.indexOf(a.kind) - KIND_ORDER.indexOf(b.kind));
  for (const e of entries) {
    if (!running.has(e)) continue;
    if (LEAKS_FAIL.has(e.kind)) leaks.push(`${e.kind} ${e.what}`);
    try { await e.stop(); } catch (err) { leaks.push(`${e.kind} ${e.what}: stopping it failed: ${err.message.split('\n')[0]}`); }
    running.delete(e);
  }
  stopEmbeddedClusters();
  return leaks;
}

function killEverythingSync() {
  const pids = [];
  for (const e of running) {
    try { e.killSync(); } catch { /* gone */ }
    if (e.pid) pids.push(e.pid);
  }
  running.clear();
  // a node still alive could restart its cluster (it checks every 2 s): wait for the nodes first
  for (let i = 0; i < 100 && !pids.every(deadOrZombie); i++) sleepSync(50);
  stopEmbeddedClusters();
}

// When the file's tests are done, the file's own after() hooks may still stop what they
// started, and a hook of ours cannot be sure to run after theirs (root hooks run in the order
// they were registered, and this file is imported first). So the root after() hook registered
// here only unrefs what is still running, so that it no longer keeps the process alive; the
// verdict comes at 'beforeExit', once every hook is done and nothing else is left: anything
// still running then is a leak, stopped here, and a queen node or s3rver fails the file
// (exit status 1, which node --test reports as the file failing). Only in a test file:
// node:test's after() in a plain script (bench/sink.mjs imports this file) would make it print
// an empty TAP report.
const IN_TEST_FILE = !!process.env.NODE_TEST_CONTEXT || /\.test\.m?js$/.test(process.argv[1] || '');
// A test cancelled by its timeout can leave a poll loop or a timer behind that keeps the
// process alive, and then 'beforeExit' never comes: STALL_MS after the tests end, an unref'd
// timer (it fires only when something else still holds the process) stops what is left and
// ends the file with status 1.
const STALL_MS = Number(process.env.QUEEN_TEST_STALL_MS || 60000);
let verdictGiven = false;
if (IN_TEST_FILE) {
  after(() => {
    for (const e of running) { try { e.unref?.(); } catch { /* gone */ } }
    setTimeout(async () => {
      process.stderr.write(`harness: the test process is still alive ${STALL_MS / 1000} s after its tests ended (a timer, socket or loop a test left behind): stopping ${running.size} started processes\n`);
      verdictGiven = true;
      await stopEverything();
      process.exit(1);
    }, STALL_MS).unref();
  });
}
process.on('beforeExit', async () => {
  if (verdictGiven) return;
  verdictGiven = true;
  const leaks = await stopEverything();
  if (leaks.length) {
    process.stderr.write(`harness: still running when the file's tests ended, stopped by the harness (a test must stop what it starts, failed or not): ${leaks.join('; ')}\n`);
    process.exitCode = 1;
  }
});
process.on('exit', killEverythingSync);
// `on`, not `once`: node --test's own process passes the signal on to this one, and a second
// SIGTERM with no listener left would end the process in the middle of the cleanup
let signalled = false;
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    if (signalled) return;
    signalled = true;
    process.stderr.write(`harness: ${sig}: killing ${running.size} started processes\n`);
    killEverythingSync();
    process.exit(128 + os.constants.signals[sig]);
  });
}

function pgBin(name) {
  const base = '/usr/lib/postgresql';
  const versions = fs.readdirSync(base).filter((v) => fs.existsSync(path.join(base, v, 'bin', name)))
    .sort((a, b) => Number(b) - Number(a));
  return path.join(base, versions[0], 'bin', name);
}

function runAsPg(cmd, args, opts = {}) {
  const full = IS_ROOT ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
  const r = spawnSync(full[0], full[1], { cwd: '/', encoding: 'utf8', ...opts });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr || r.stdout}`);
  return r;
}

// A throwaway PostgreSQL cluster (durable settings unless fast: true).
export async function startPostgres({ fast = true } = {}) {
  const dir = tmpDir('queen-pg-');
  const data = path.join(dir, 'data');
  const sock = path.join(dir, 'sock');
  fs.mkdirSync(sock);
  if (IS_ROOT) spawnSync('chown', ['-R', 'postgres:postgres', dir]);
  runAsPg(pgBin('initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
  const port = await freePort();
  const stopNow = () => { if (postmasterRunning(data)) runAsPg(pgBin('pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']); };
  let untrack = null;
  const pg = {
    dir, data, sock, port,
    url: `postgresql://postgres@127.0.0.1:${port}/postgres`,
    start() {
      const o = `-p ${port} -k ${sock} -c listen_addresses=127.0.0.1 -c max_connections=200` + (fast ? ' -F -c synchronous_commit=off' : '');
      runAsPg(pgBin('pg_ctl'), ['-D', data, '-l', path.join(dir, 'log'), '-w', '-o', o, 'start']);
      untrack ??= track({ kind: 'postgres', what: `on port ${port} (${data})`, stop: async () => pg.destroy(), killSync: stopNow });
    },
    stop(mode = 'fast') {
      runAsPg(pgBin('pg_ctl'), ['-D', data, '-m', mode, '-w', 'stop']);
    },
    psql(sql, db = 'postgres') {
      const r = runAsPg('psql', ['-h', sock, '-p', String(port), '-U', 'postgres', '-d', db, '-At', '-c', sql]);
      return r.stdout.trim();
    },
    // Runs a whole script (text) on database db, stopping at its first error.
    psqlScript(text, db = 'postgres') {
      const r = runAsPg('psql', ['-h', sock, '-p', String(port), '-U', 'postgres', '-d', db, '-X', '-q', '-At',
        '-v', 'ON_ERROR_STOP=1'], { input: text });
      return r.stdout.trim();
    },
    urlOf(db) { return `postgresql://postgres@127.0.0.1:${port}/${db}`; },
    destroy() {
      try { pg.stop('immediate'); } catch { /* already stopped */ }
      fs.rmSync(dir, { recursive: true, force: true });
      if (untrack) { untrack(); untrack = null; }
    },
  };
  pg.start();
  return pg;
}

// Starts a node. env overrides; with no QUEEN_PG_URL/PG_* the node runs its embedded cluster
// in a fresh data dir. Resolves once /health answers 200.
export async function startQueen({ env = {}, dataDir, waitHealthy = true, timeoutMs = 60000 } = {}) {
  const port = await freePort();
  const data = dataDir || tmpDir('queen-data-');
  const fullEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME || '/tmp',
    PORT: String(port),
    HOST: '127.0.0.1',
    QUEEN_DATA_DIR: data,
    ASAN_OPTIONS: 'detect_leaks=1:abort_on_error=0',
    UBSAN_OPTIONS: 'print_stacktrace=1',
    ...env,
  };
  const proc = spawn(QUEEN_BIN, [], { env: fullEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  const node = {
    proc, port, data, url: `http://127.0.0.1:${port}`, log: '',
    exited: null,
    exitPromise: null,
  };
  if (!fullEnv.QUEEN_PG_URL && !fullEnv.PG_HOST) embeddedDirs.add(data);
  const untrack = track({
    kind: 'queen', what: `pid ${proc.pid} on port ${port} (${data})`, pid: proc.pid,
    stop: async () => {
      if (!node.exited) proc.kill('SIGTERM');
      const res = await within(node.exitPromise, 30000);
      if (!res) { proc.kill('SIGKILL'); await node.exitPromise; }
    },
    killSync: () => proc.kill('SIGKILL'),
    unref: () => { proc.unref(); proc.stdout.unref(); proc.stderr.unref(); },
  });
  proc.stdout.on('data', (d) => { node.log += d; });
  proc.stderr.on('data', (d) => { node.log += d; });
  node.exitPromise = new Promise((resolve) => proc.on('exit', (code, signal) => { node.exited = { code, signal }; untrack(); resolve(node.exited); }));
  node.stop = async (signal = 'SIGTERM', { expectCode = 0, timeoutMs: t = 30000 } = {}) => {
    if (!node.exited) proc.kill(signal);
    const res = await within(node.exitPromise, t);
    if (!res) { proc.kill('SIGKILL'); await node.exitPromise; throw new Error(`node did not exit after ${signal}\n${node.log}`); }
    if (signal !== 'SIGKILL') {
      checkSanitizers(node.log);
      if (expectCode !== null && res.code !== expectCode) throw new Error(`node exited with ${JSON.stringify(res)}\n${node.log}`);
    }
    return res;
  };
  node.kill9 = async () => { proc.kill('SIGKILL'); await node.exitPromise; };
  if (waitHealthy) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (node.exited) throw new Error(`queen exited during boot: ${JSON.stringify(node.exited)}\n${node.log}`);
      try {
        const r = await fetch(node.url + '/health');
        if (r.status === 200) break;
      } catch { /* not up yet */ }
      if (Date.now() > deadline) { proc.kill('SIGKILL'); throw new Error(`queen not healthy in time\n${node.log}`); }
      await sleep(100);
    }
  }
  return node;
}

// Resolves once the node's captured log matches `re` (its output is read asynchronously, so a
// line written before an answer may reach the test after it); throws with the log after `ms`.
export async function logMatch(node, re, ms = 5000) {
  const end = Date.now() + ms;
  while (!re.test(node.log)) {
    if (Date.now() > end) throw new Error(`log did not match ${re} within ${ms} ms:\n${node.log}`);
    await sleep(20);
  }
}

export function checkSanitizers(log) {
  if (/ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer/.test(log)) {
    throw new Error('sanitizer report in node log:\n' + log);
  }
}

// Runs the binary expecting it to exit during boot; returns { code, stderr }.
export function runBoot(env, timeoutMs = 20000) {
  const r = spawnSync(QUEEN_BIN, [], {
    env: { PATH: process.env.PATH, HOME: '/tmp', QUEEN_DATA_DIR: tmpDir('queen-boot-'), ...env },
    encoding: 'utf8', timeout: timeoutMs,
  });
  return { code: r.status, stderr: r.stderr, stdout: r.stdout };
}

export async function api(base, method, p, body, headers = {}) {
  const init = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body);
    if (!init.headers['content-type']) init.headers['content-type'] = 'application/json';
  }
  const r = await fetch(base + p, init);
  const text = await r.text();
  let json = null;
  try { json = text.length ? JSON.parse(text) : null; } catch { /* not JSON */ }
  return { status: r.status, headers: r.headers, text, json };
}

export const post = (base, p, body, headers) => api(base, 'POST', p, body, headers);
export const get = (base, p, headers) => api(base, 'GET', p, undefined, headers);

export function rmrf(d) {
  try { fs.rmSync(d, { recursive: true, force: true }); } catch { /* best effort */ }
}

export { os };

// ---- lease-free reads in the 2.x shape -------------------------------------------------------

// µs since the epoch of a broker stamp spelled ISO-8601 with six fraction digits and Z
// (exact: Date would drop the microseconds).
export function isoToUs(s) {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{6})Z$/.exec(s);
  if (!m) throw new Error(`not a broker stamp: ${s}`);
  return Date.parse(m[1] + 'Z') * 1000 + Number(m[2]);
}

// The raw text of each record's payload in one fetch answer, in order (payload is followed by
// ts, or by payloadError when this node could not open it).
export function rawPayloads(text) {
  const out = [];
  const re = /"payload":([\s\S]*?),"(?:ts|payloadError)":"/g;
  let m;
  while ((m = re.exec(text)) !== null) out.push(m[1]);
  return out;
}

// Every partition of a queue through POST /api/v1/partitions/changed (every page).
// { found, safeTime, partitions: [{name, id, lastOffset, logStart, lastWriteAt}] }
export async function listPartitions(base, queue, { headers, since } = {}) {
  const parts = [];
  let after = null;
  let safeTime = null;
  for (;;) {
    const entry = { queue, limit: 1000 };
    if (since !== undefined) entry.since = since;
    if (after) entry.after = after;
    const r = await post(base, '/api/v1/partitions/changed', { entries: [entry] }, headers);
    if (r.status !== 200) throw new Error(`partitions/changed ${queue}: ${r.status} ${r.text}`);
    if (r.json.safeTime && (!safeTime || r.json.safeTime < safeTime)) safeTime = r.json.safeTime;
    const e = r.json.entries[0];
    if (e.error === 'UNKNOWN_TOPIC_OR_PARTITION') return { found: false, safeTime, partitions: [] };
    if (e.error) throw new Error(`partitions/changed ${queue}: ${e.error}`);
    parts.push(...e.partitions);
    if (!e.next) break;
    after = e.next;
  }
  return { found: true, safeTime, partitions: parts };
}

// Every record of a queue (or of the partitions named), read with POST /api/v1/fetch from offset
// 0 up to each partition's high watermark, the way the 2.x client loops. Partitions in name
// order (bytewise), records in offset order. `ts` is the stamp in µs (isoToUs of the wire's
// ISO string, kept as tsIso); each record names its partition.
// { found, records, raws (payload texts, aligned with records), partitions: [{partition,
//   partitionId, startOffset, endOffset}], calls, text (every fetch answer, as sent) }
export async function readQueue(base, queue, { headers, partitions, maxBytes } = {}) {
  let names;
  const meta = new Map();
  if (partitions) {
    names = partitions;
  } else {
    const l = await listPartitions(base, queue, { headers });
    if (!l.found) return { found: false, records: [], raws: [], partitions: [], calls: 0 };
    for (const p of l.partitions) meta.set(p.name, p);
    names = l.partitions.map((p) => p.name);
  }
  names = [...names].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const state = new Map(names.map((n) => [n, { next: 0, end: null, records: [], raws: [], hw: 0, ls: 0, unknown: false }]));
  let pending = names;
  let calls = 0;
  const texts = [];
  while (pending.length) {
    const again = [];
    for (let i = 0; i < pending.length; i += 1000) {
      const chunk = pending.slice(i, i + 1000);
      const body = { entries: chunk.map((n) => ({ queue, partition: n, offset: state.get(n).next, ...(maxBytes ? { maxBytes } : {}) })) };
      if (maxBytes) body.maxBytes = maxBytes;
      const r = await post(base, '/api/v1/fetch', body, headers);
      calls++;
      if (r.status !== 200) throw new Error(`fetch ${queue}: ${r.status} ${r.text}`);
      texts.push(r.text);
      if (r.json.entries.length !== chunk.length) throw new Error(`fetch ${queue}: ${r.json.entries.length} entries for ${chunk.length}`);
      const raws = rawPayloads(r.text);
      let k = 0;
      let delivered = 0;
      const starved = [];
      chunk.forEach((n, j) => {
        const e = r.json.entries[j];
        const s = state.get(n);
        s.hw = e.highWatermark;
        s.ls = e.logStartOffset;
        const recRaws = raws.slice(k, k + e.records.length);
        k += e.records.length;
        if (e.error === 'UNKNOWN_TOPIC_OR_PARTITION') { s.unknown = true; return; }
        if (e.error === 'OFFSET_OUT_OF_RANGE' && s.next < e.logStartOffset) {
          s.next = e.logStartOffset;
          if (s.end === null) s.end = e.highWatermark;
          if (s.next < s.end) again.push(n);
          return;
        }
        if (e.error) throw new Error(`fetch ${queue}/${n}: ${e.error}`);
        if (s.end === null) s.end = e.highWatermark;
        if (e.records.length) {
          delivered += e.records.length;
          e.records.forEach((rec, x) => {
            s.records.push({ partition: n, ...rec, tsIso: rec.ts, ts: isoToUs(rec.ts) });
            s.raws.push(recRaws[x]);
          });
          s.next = e.records[e.records.length - 1].offset + 1;
          if (s.next < s.end) again.push(n);
        } else if (s.next < s.end) {
          starved.push(n);
        }
      });
      if (delivered > 0) again.push(...starved);
    }
    pending = again;
  }
  const known = names.filter((n) => !state.get(n).unknown);
  return {
    found: known.length > 0 || (!partitions && names.length === 0),
    records: known.flatMap((n) => state.get(n).records),
    raws: known.flatMap((n) => state.get(n).raws),
    partitions: known.map((n) => ({
      partition: n,
      partitionId: meta.get(n)?.id,
      startOffset: state.get(n).ls,
      endOffset: state.get(n).hw,
    })),
    calls,
    text: texts.join('\n'),
  };
}
