// harness.mjs — starts the real `queen` binary (and, when a test needs one, a throwaway
// PostgreSQL) on free loopback ports, and tears them down. Every node a test starts is
// stopped with SIGTERM and must exit 0 with no sanitizer report in its log.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
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
  const pg = {
    dir, data, sock, port,
    url: `postgresql://postgres@127.0.0.1:${port}/postgres`,
    start() {
      const o = `-p ${port} -k ${sock} -c listen_addresses=127.0.0.1 -c max_connections=200` + (fast ? ' -F -c synchronous_commit=off' : '');
      runAsPg(pgBin('pg_ctl'), ['-D', data, '-l', path.join(dir, 'log'), '-w', '-o', o, 'start']);
    },
    stop(mode = 'fast') {
      runAsPg(pgBin('pg_ctl'), ['-D', data, '-m', mode, '-w', 'stop']);
    },
    psql(sql) {
      const r = runAsPg('psql', ['-h', sock, '-p', String(port), '-U', 'postgres', '-d', 'postgres', '-At', '-c', sql]);
      return r.stdout.trim();
    },
    destroy() {
      try { this.stop('immediate'); } catch { /* already stopped */ }
      fs.rmSync(dir, { recursive: true, force: true });
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
  proc.stdout.on('data', (d) => { node.log += d; });
  proc.stderr.on('data', (d) => { node.log += d; });
  node.exitPromise = new Promise((resolve) => proc.on('exit', (code, signal) => { node.exited = { code, signal }; resolve(node.exited); }));
  node.stop = async (signal = 'SIGTERM', { expectCode = 0, timeoutMs: t = 30000 } = {}) => {
    if (!node.exited) proc.kill(signal);
    const res = await Promise.race([node.exitPromise, sleep(t).then(() => null)]);
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
