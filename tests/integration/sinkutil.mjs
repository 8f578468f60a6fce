// sinkutil.mjs — helpers of the S3 sink's integration tests: the environment of a node that
// runs the sink against a local S3 server, status polling, ISO µs stamps, zstd, the records of
// a queue in the lake, and a registry of the nodes a describe block starts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

import { get, sleep, startQueen } from './harness.mjs';

export const TENANT = '00000000-0000-0000-0000-000000000001';

export function sinkEnv(endpoint, extra = {}) {
  return {
    QUEEN_S3_EMBEDDED: 'true',
    QUEEN_S3_QUEUES: 'orders',
    QUEEN_S3_ENDPOINT: endpoint,
    QUEEN_S3_REGION: 'us-east-1',
    QUEEN_S3_PATH_STYLE: 'true',
    QUEEN_S3_BUCKET: 'lake',
    QUEEN_S3_ACCESS_KEY: 'S3RVER',
    QUEEN_S3_SECRET_KEY: 'S3RVER',
    QUEEN_S3_START: 'earliest',
    QUEEN_S3_MAX_WINDOW_MS: '1000',
    QUEEN_S3_SAFE_GUARD_MS: '300',
    QUEEN_S3_DISCOVERY_INTERVAL_MS: '100',
    QUEEN_S3_LEASE_TTL_MS: '3000',
    ...extra,
  };
}

export function isoUs(us) {
  const ms = Math.floor(us / 1000);
  return new Date(ms).toISOString().slice(0, 23) + String(us % 1000).padStart(3, '0') + 'Z';
}

export async function s3Status(node) {
  const r = await get(node.url, '/status');
  assert.equal(r.status, 200);
  return r.json.s3;
}

export async function queueRow(node, queue = 'orders') {
  const s3 = await s3Status(node);
  return s3.sinks[0].queues.find((q) => q.queue === queue);
}

export async function waitFor(what, fn, timeoutMs = 30000, node = null) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await fn();
    if (last) return last;
    if (Date.now() > deadline) {
      const st = node ? JSON.stringify(await s3Status(node).catch(() => null)) : '';
      throw new Error(`timed out waiting for ${what}\n${st}\n${node ? node.log.slice(-4000) : ''}`);
    }
    await sleep(100);
  }
}

export const zstdDecode = (buf) => {
  const r = spawnSync('zstd', ['-dc'], { input: buf, maxBuffer: 1 << 30 });
  assert.equal(r.status, 0, r.stderr.toString());
  return r.stdout.toString();
};

// Every record of a queue in the lake (JSONL zstd objects), each with the key it is in.
export async function lakeRecords(s3, queue) {
  const out = [];
  for (const o of await s3.list(`queen/tenant=${TENANT}/queue=${encodeURIComponent(queue)}/`)) {
    for (const line of zstdDecode(await s3.get(o.key)).split('\n')) if (line) out.push({ key: o.key, ...JSON.parse(line) });
  }
  return out;
}

// The nodes a describe block starts: start() registers each one before its test can fail,
// and stopAll() (in after()) stops every node still running whatever the tests did — a
// stopped (SIGSTOP) node is continued first — then rethrows the first failure (a node that
// exited badly or left a sanitizer report), so a failed test never leaks a node.
export function nodeRegistry() {
  const nodes = [];
  return {
    nodes,
    async start(opts) {
      const n = await startQueen(opts);
      nodes.push(n);
      return n;
    },
    async stopAll() {
      let first = null;
      for (const n of nodes.splice(0)) {
        if (n.exited) continue;
        try { process.kill(n.proc.pid, 'SIGCONT'); } catch { /* gone */ }
        try { await n.stop(); } catch (e) { first = first || e; }
      }
      if (first) throw first;
    },
  };
}
