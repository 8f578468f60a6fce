// sinkutil.mjs — helpers of the S3 sink's integration tests: the environment of a node that
// runs the sink against a local S3 server, status polling, ISO µs stamps, zstd.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

import { get, sleep } from './harness.mjs';

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
