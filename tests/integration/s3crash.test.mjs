// A crash at each of the five points of the commit sequence (QUEEN_S3_CRASH_AT kills the node
// with SIGKILL there), then a restart on the same database: the bucket ends with every record
// in exactly one object, and a window rebuilt after the crash has the bytes of the first
// attempt under the same key.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, test } from 'node:test';

import { post, rmrf, sleep, tmpDir } from './harness.mjs';
import { startS3 } from './s3harness.mjs';
import { nodeRegistry, queueRow, sinkEnv, waitFor, zstdDecode } from './sinkutil.mjs';

const sha = (b) => crypto.createHash('sha256').update(b).digest('hex');

async function snapshot(s3) {
  const out = new Map();
  for (const o of await s3.list('queen/')) out.set(o.key, await s3.get(o.key));
  return out;
}

// Every data record in the bucket, by "partition/offset", with how many times it appears.
function lakeRecords(snap) {
  const seen = new Map();
  for (const [key, body] of snap) {
    if (key.includes('/_queen/')) continue;
    for (const line of zstdDecode(body).split('\n')) {
      if (!line) continue;
      const r = JSON.parse(line);
      const id = `${r.partition}/${r.offset}`;
      seen.set(id, (seen.get(id) || 0) + 1);
    }
  }
  return seen;
}

const POINTS = ['after_intent', 'mid_upload', 'after_upload', 'before_commit', 'after_commit'];

describe('a crash at each point of the commit sequence', () => {
  let s3;
  const dirs = [];
  const reg = nodeRegistry(); // a node that never reached its crash point is stopped here
  before(async () => { s3 = await startS3(); });
  after(async () => {
    await reg.stopAll();
    if (s3) await s3.stop();
    for (const d of dirs) rmrf(d);
  });

  for (const point of POINTS) {
    test(`crash ${point}, restart: every record once, rebuilt bytes equal`, async () => {
      const queue = `crash-${point.replace('_', '-')}`;
      const data = tmpDir('queen-data-');
      dirs.push(data);
      const layout = point === 'mid_upload' ? 'per-partition' : 'merged';
      const env = sinkEnv(s3.endpoint, { QUEEN_S3_QUEUES: queue, QUEEN_NODE_ID: `crash-${point}`, QUEEN_S3_LAYOUT: layout });
      const first = await reg.start({ dataDir: data, env: { ...env, QUEEN_S3_CRASH_AT: point } });
      const items = [];
      for (let i = 0; i < 30; i++) items.push({ queue, partition: `p${i % 3}`, payload: { i, total: 42.00 } });
      const r = await post(first.url, '/api/v1/push', { items });
      assert.equal(r.status, 201, r.text);
      const exited = await Promise.race([first.exitPromise, sleep(30000).then(() => null)]);
      assert.ok(exited, `the node did not reach ${point}\n${first.log.slice(-3000)}`);
      assert.equal(exited.signal, 'SIGKILL', JSON.stringify(exited));
      const before = await snapshot(s3);
      const prefixed = [...before.keys()].filter((k) => k.includes(`queue=${queue}/`));
      if (point === 'after_intent') assert.equal(prefixed.length, 0, 'nothing is uploaded before the intent');
      if (point === 'after_upload' || point === 'before_commit' || point === 'after_commit')
        assert.ok(prefixed.some((k) => k.endsWith('0000000001.json')), 'the manifest is up');

      const second = await reg.start({ dataDir: data, env });
      try {
        await waitFor('window 1 committed after the restart', async () => {
          const row = await queueRow(second, queue);
          return row && row.k >= 1 && row.state === 'filling' ? row : null;
        }, 40000, second);
        // the restart took the path the crash point calls for: a window whose upload finished
        // is committed from its manifest, one that did not is rebuilt from its intent
        if (point === 'after_intent' || point === 'mid_upload') assert.match(second.log, /rebuilding window 1 /);
        if (point === 'after_upload' || point === 'before_commit') assert.match(second.log, /window 1 was uploaded before the restart; committing its manifest/);
        if (point === 'after_commit') assert.doesNotMatch(second.log, /rebuilding window|committing its manifest/);
        // a second push after the restart lands in a later window
        await post(second.url, '/api/v1/push', { items: [{ queue, partition: 'p0', payload: { after: true } }] });
        await waitFor('window 2', async () => ((await queueRow(second, queue)) || {}).k >= 2, 40000, second);
        const now = await snapshot(s3);
        const recs = lakeRecords(new Map([...now].filter(([k]) => k.includes(`queue=${queue}/`))));
        assert.equal(recs.size, 31, [...recs.keys()].join(','));
        for (const [id, n] of recs) assert.equal(n, 1, `${id} appears ${n} times`);
        for (const [k, body] of before) {
          if (!k.includes(`queue=${queue}/`) || k.includes('/_queen/')) continue;
          assert.ok(now.has(k), `${k} is still there`);
          assert.equal(sha(now.get(k)), sha(body), `${k}: the rebuilt object has the first attempt's bytes`);
        }
      } finally {
        await second.stop();
      }
    });
  }
});
