// The S3 client (src/s3) against a real S3 server: @20minutes/s3rver, which verifies SigV4
// signatures, driven through build/asan/tools/s3tool. Directly: signed requests are accepted
// and objects read back byte for byte (through the client, the harness's own signer and boto3
// when /usr/bin/python3 has it), a wrong secret is refused with SignatureDoesNotMatch.
// Through the fault proxy (s3harness.mjs): 500s then recovery, 503 with Retry-After, reset
// and hung connections, retries that run out, cancel, multipart uploads that land whole (with a
// retried part), and a permanent part failure that sends AbortMultipartUpload.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { ROOT, rmrf, tmpDir } from './harness.mjs';
import { signedRequest, startFaultProxy, startS3 } from './s3harness.mjs';

const S3TOOL = path.join(ROOT, 'build/asan/tools/s3tool');
const MiB = 1 << 20;

let s3;
let proxy;
let dir;
before(async () => {
  assert.ok(fs.existsSync(S3TOOL), `${S3TOOL} missing: make build/asan/tools/s3tool`);
  dir = tmpDir('queen-s3client-');
  s3 = await startS3();
  proxy = await startFaultProxy(s3.endpoint);
});
after(async () => {
  if (proxy) await proxy.stop();
  if (s3) await s3.stop();
  if (dir) rmrf(dir);
});

// Runs s3tool asynchronously (the proxy lives in this process and must keep answering).
function tool(args, { endpoint = s3.endpoint, secret = s3.secretKey, extra = [] } = {}) {
  return new Promise((resolve) => {
    const p = spawn(S3TOOL, ['--endpoint', endpoint, '--access-key', s3.accessKey, '--region', 'us-east-1', '--backoff-ms', '10', '--backoff-max-ms', '50', ...extra, ...args], {
      env: { PATH: process.env.PATH, S3_SECRET: secret, ASAN_OPTIONS: 'detect_leaks=1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    p.on('exit', (code) => {
      assert.doesNotMatch(err, /Sanitizer|runtime error/, err);
      let json = null;
      try { json = JSON.parse(out.trim().split('\n').pop()); } catch { /* reported below */ }
      assert.ok(json, `s3tool printed no summary: ${out} ${err}`);
      resolve({ code, ...json, stderr: err });
    });
  });
}

function file(name, bytes) {
  const f = path.join(dir, name);
  fs.writeFileSync(f, bytes);
  return f;
}

const sha = (b) => crypto.createHash('sha256').update(b).digest('hex');

// Keys as the sink writes them, plus bytes that need encoding.
const KEY = 'queen/tenant=00000000-0000-0000-0000-000000000001/queue=caf%C3%A9 q/dt=2026-10-03/hour=06/w-0000000001-1791007200000000-1791009458377855.jsonl.zst';

describe('against s3rver directly', () => {
  test('a signed PUT is accepted and reads back byte-exact', async () => {
    const body = crypto.randomBytes(200 * 1024 + 7);
    const f = file('a.bin', body);
    for (const extra of [[], ['--md5', '--sse', 'AES256'], ['--sse', 'aws:kms:arn:aws:kms:us-east-1:111122223333:key/k-1'], ['--self-sign']]) {
      const put = await tool(['--content-type', 'application/zstd', 'put', KEY, f], { extra });
      assert.equal(put.code, 0, JSON.stringify(put));
      assert.deepEqual(put.requests, [['put', 200]]);
      const out = path.join(dir, 'a.out');
      const get = await tool(['get', KEY, out], { extra });
      assert.equal(get.code, 0, JSON.stringify(get));
      assert.equal(get.bytes, body.length);
      assert.ok(fs.readFileSync(out).equals(body), `${extra}: body differs`);
      assert.ok((await s3.get(KEY)).equals(body));
    }
    const listed = await s3.list('queen/tenant=00000000-0000-0000-0000-000000000001/');
    assert.deepEqual(listed.map((o) => [o.key, o.size]), [[KEY, body.length]]);
    // an empty object
    const e = await tool(['put', 'empty', file('empty', Buffer.alloc(0))]);
    assert.equal(e.code, 0, JSON.stringify(e));
    assert.equal((await s3.get('empty')).length, 0);
  });

  test('get of a missing key is "not found", head of the bucket is 0', async () => {
    const g = await tool(['get', 'no/such/key', path.join(dir, 'none')]);
    assert.equal(g.code, 3);
    assert.equal(g.status, 404);
    assert.match(g.error, /^NoSuchKey: /);
    assert.equal(g.attempts, 1);
    const h = await tool(['head']);
    assert.equal(h.code, 0, JSON.stringify(h));
    assert.deepEqual(h.requests, [['head_bucket', 200]]);
  });

  test('a wrong secret is refused with SignatureDoesNotMatch, at once', async () => {
    const put = await tool(['put', 'x', file('x', 'x')], { secret: 'not-the-secret' });
    assert.equal(put.code, 1);
    assert.equal(put.status, 403);
    assert.equal(put.attempts, 1);
    assert.match(put.error, /^SignatureDoesNotMatch: The request signature we calculated does not match/);
    assert.equal(await s3.get('x'), null);
    const head = await tool(['head'], { secret: 'not-the-secret' });
    assert.equal(head.code, 1);
    assert.equal(head.status, 403);
    assert.match(head.error, /credentials/);
    // and the same request with the right secret goes through
    assert.equal((await tool(['put', 'x', file('x', 'x')])).code, 0);
  });

  test('the probe says what is wrong: no such bucket, nothing listening', async () => {
    const h = await tool(['--bucket', 'nope', 'head']);
    assert.equal(h.code, 1);
    assert.equal(h.status, 404);
    assert.match(h.error, /no bucket named nope/);
    const dead = await tool(['--attempts', '2', 'head'], { endpoint: 'http://127.0.0.1:9' });
    assert.equal(dead.code, 1);
    assert.equal(dead.status, 0);
    assert.equal(dead.attempts, 2);
    assert.match(dead.error, /^no answer from http:\/\/127\.0\.0\.1:9/);
  });

  test('multipart: many small parts land whole, in order', async () => {
    const body = crypto.randomBytes(300 * 1024 + 11);
    const r = await tool(['--part-size', String(64 * 1024), 'multipart', 'mp/small-parts', file('mp.bin', body)]);
    assert.equal(r.code, 0, JSON.stringify(r));
    assert.equal(r.requests.filter(([op]) => op === 'upload_part').length, 5);
    assert.deepEqual([...r.parts].sort((a, b) => a - b), [1, 2, 3, 4, 5]);
    assert.equal(sha(await s3.get('mp/small-parts')), sha(body));
  });

  const boto = fs.existsSync('/usr/bin/python3') && spawnSync('/usr/bin/python3', ['-c', 'import boto3'], { stdio: 'ignore' }).status === 0;
  test('boto3 reads what the client wrote, and the client reads what boto3 wrote', { skip: boto ? false : '/usr/bin/python3 has no boto3 (Debian python3-boto3)' }, async () => {
    const ours = crypto.randomBytes(11 * MiB + 3);
    const w = await tool(['--threshold', String(5 * MiB), '--part-size', String(5 * MiB), 'put', 'cross/ours=1.bin', file('ours.bin', ours)]);
    assert.equal(w.code, 0, JSON.stringify(w));
    assert.equal(w.requests.filter(([op]) => op === 'upload_part').length, 3);
    const theirs = crypto.randomBytes(7 * MiB + 5);
    const theirsFile = file('theirs.bin', theirs);
    const py = `
import boto3, hashlib, sys
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
s3 = boto3.client('s3', endpoint_url=sys.argv[1], aws_access_key_id='S3RVER', aws_secret_access_key='S3RVER',
                  region_name='us-east-1', config=Config(s3={'addressing_style': 'path'}, signature_version='s3v4'))
body = s3.get_object(Bucket='lake', Key='cross/ours=1.bin')['Body'].read()
print(hashlib.sha256(body).hexdigest())
s3.upload_file(sys.argv[2], 'lake', 'cross/theirs=1.bin', Config=TransferConfig(multipart_threshold=5*1024*1024, multipart_chunksize=5*1024*1024))
`;
    const res = spawnSync('/usr/bin/python3', ['-c', py, s3.endpoint, theirsFile], { encoding: 'utf8' });
    assert.equal(res.status, 0, res.stderr);
    assert.equal(res.stdout.trim(), sha(ours));
    const out = path.join(dir, 'theirs.out');
    const g = await tool(['get', 'cross/theirs=1.bin', out]);
    assert.equal(g.code, 0, JSON.stringify(g));
    assert.equal(sha(fs.readFileSync(out)), sha(theirs));
  });
});

describe('through the fault proxy', () => {
  const via = (args, opts = {}) => tool(args, { endpoint: proxy.endpoint, ...opts });

  test('500s, then recovery', async () => {
    proxy.pass().clear();
    proxy.fault('500', { times: 2 });
    const body = crypto.randomBytes(4096);
    const r = await via(['put', 'retry/500.bin', file('r500', body)]);
    assert.equal(r.code, 0, JSON.stringify(r));
    assert.equal(r.attempts, 3);
    assert.deepEqual(r.requests, [['put', 500], ['put', 500], ['put', 200]]);
    assert.equal(proxy.count({ op: 'put' }), 3);
    // every attempt carried the whole body, with its length stated
    for (const q of proxy.requests) {
      assert.equal(q.bodyBytes, body.length);
      assert.equal(q.headers['content-length'], String(body.length));
      assert.equal(q.headers['transfer-encoding'], undefined);
      assert.equal(q.headers['x-amz-content-sha256'], sha(body));
    }
    assert.ok((await s3.get('retry/500.bin')).equals(body));
  });

  test('503 with Retry-After is honoured', async () => {
    proxy.pass().clear();
    proxy.fault('503', { times: 1, retryAfter: 1 });
    const r = await via(['--backoff-max-ms', '5000', 'put', 'retry/503.bin', file('r503', 'x')]);
    assert.equal(r.code, 0, JSON.stringify(r));
    assert.deepEqual(r.requests, [['put', 503], ['put', 200]]);
    const [a, b] = proxy.requests;
    assert.ok(b.at - a.at >= 900, `retried after ${b.at - a.at} ms`);
  });

  test('reset connections are retried', async () => {
    proxy.pass().clear();
    proxy.fault('reset', { times: 2 });
    const body = crypto.randomBytes(2 * MiB); // above curl's 100-continue threshold too
    const r = await via(['put', 'retry/reset.bin', file('rreset', body)]);
    assert.equal(r.code, 0, JSON.stringify(r));
    assert.deepEqual(r.requests, [['put', 0], ['put', 0], ['put', 200]]);
    assert.ok((await s3.get('retry/reset.bin')).equals(body));
  });

  test('a connection reset mid-upload is retried', async () => {
    proxy.pass().clear();
    proxy.fault('reset-early', { times: 1 });
    const body = crypto.randomBytes(3 * MiB);
    const r = await via(['put', 'retry/reset-early.bin', file('rre', body)]);
    assert.equal(r.code, 0, JSON.stringify(r));
    assert.deepEqual(r.requests, [['put', 0], ['put', 200]]);
    assert.ok((await s3.get('retry/reset-early.bin')).equals(body));
  });

  test('a hung request times out and is retried', async () => {
    proxy.pass().clear();
    proxy.fault('hang', { times: 1 });
    const t0 = Date.now();
    const r = await via(['--timeout-ms', '500', 'put', 'retry/hang.bin', file('rhang', 'hang')]);
    assert.equal(r.code, 0, JSON.stringify(r));
    assert.deepEqual(r.requests, [['put', 0], ['put', 200]]);
    assert.ok(Date.now() - t0 < 5000);
  });

  test('retries run out: the last answer is reported', async () => {
    proxy.pass().clear();
    proxy.fault('500');
    const r = await via(['--attempts', '3', 'put', 'retry/never.bin', file('rnever', 'x')]);
    proxy.pass();
    assert.equal(r.code, 1);
    assert.equal(r.attempts, 3);
    assert.equal(r.status, 500);
    assert.equal(r.error, 'InternalError: We encountered an internal error. Please try again.');
    assert.equal(await s3.get('retry/never.bin'), null);
  });

  test('other 4xx fail at once', async () => {
    proxy.pass().clear();
    proxy.fault('error', { status: 400, code: 'InvalidArgument', message: 'nope' });
    const r = await via(['put', 'retry/400.bin', file('r400', 'x')]);
    proxy.pass();
    assert.equal(r.code, 1);
    assert.equal(r.attempts, 1);
    assert.equal(r.error, 'InvalidArgument: nope');
  });

  test('cancel stops the retries during backoff', async () => {
    proxy.pass().clear();
    proxy.fault('500');
    const t0 = Date.now();
    const r = await via(['--backoff-ms', '3000', '--backoff-max-ms', '3000', '--attempts', '10', '--cancel-after-ms', '300', 'put', 'retry/cancel.bin', file('rc', 'x')]);
    proxy.pass();
    assert.equal(r.code, 1);
    assert.equal(r.attempts, 1);
    assert.match(r.error, /not retried: stopping/);
    assert.ok(Date.now() - t0 < 2500, `took ${Date.now() - t0} ms`);
  });

  test('multipart above the threshold lands whole, parts in parallel, a failed part retried', async () => {
    proxy.pass().clear();
    proxy.fault('500', { times: 1, match: { op: 'upload_part', partNumber: 2 } });
    const body = crypto.randomBytes(17 * MiB + 123);
    const r = await via(['--threshold', String(8 * MiB), '--part-size', String(5 * MiB), '--sse', 'AES256', 'put', 'mp/big=1.bin', file('big', body)]);
    assert.equal(r.code, 0, JSON.stringify(r));
    // create, 4 parts (+1 retry), complete
    assert.equal(proxy.count({ op: 'create_multipart' }), 1);
    assert.equal(proxy.count({ op: 'upload_part' }), 5);
    assert.equal(proxy.count({ op: 'complete_multipart' }), 1);
    assert.equal(proxy.count({ op: 'abort_multipart' }), 0);
    assert.deepEqual([...r.parts].sort((a, b) => a - b), [1, 2, 3, 4]);
    const create = proxy.requests.find((q) => q.op === 'create_multipart');
    assert.equal(create.query, 'uploads=');
    assert.equal(create.headers['x-amz-server-side-encryption'], 'AES256');
    for (const q of proxy.requests.filter((x) => x.op === 'upload_part')) {
      assert.equal(q.headers['x-amz-server-side-encryption'], undefined);
      assert.match(q.query, /^partNumber=\d+&uploadId=/);
      const n = Number(q.params.partNumber);
      assert.equal(q.bodyBytes, n < 4 ? 5 * MiB : body.length - 15 * MiB);
    }
    // the parts overlapped in time: some part arrived before another one was answered
    const ups = proxy.requests.filter((q) => q.op === 'upload_part');
    assert.ok(ups.some((a) => ups.some((b) => b !== a && b.at < a.doneAt && b.at >= a.at)), 'parts were sent one at a time');
    assert.equal(sha(await s3.get('mp/big=1.bin')), sha(body));
    assert.deepEqual(proxy.uploads(), []);
  });

  test('a permanent part failure aborts the upload', async () => {
    proxy.pass().clear();
    proxy.fault('error', { status: 403, code: 'AccessDenied', message: 'Access Denied', match: { op: 'upload_part', partNumber: 2 } });
    const body = crypto.randomBytes(3 * 64 * 1024 + 5);
    const r = await via(['--part-size', String(64 * 1024), 'multipart', 'mp/aborted.bin', file('ab', body)]);
    proxy.pass();
    assert.equal(r.code, 1);
    assert.equal(r.status, 403);
    assert.equal(r.error, 'upload_part 2: AccessDenied: Access Denied');
    assert.equal(proxy.count({ op: 'complete_multipart' }), 0);
    const aborts = proxy.requests.filter((q) => q.op === 'abort_multipart');
    assert.equal(aborts.length, 1);
    assert.equal(aborts[0].status, 204); // the proxy checked its signature before answering
    assert.equal(aborts[0].key, 'mp/aborted.bin');
    assert.deepEqual(r.requests.at(-1), ['abort_multipart', 204]);
    assert.deepEqual(proxy.uploads(), []);
    assert.equal(await s3.get('mp/aborted.bin'), null);
  });

  test('an upload left behind is visible through ListParts and ListMultipartUploads', async () => {
    proxy.pass().clear();
    // the complete and the abort both fail: the upload stays open, as after a crash
    proxy.fault('error', { status: 400, code: 'InvalidPart', message: 'gone', match: { op: 'complete_multipart' } });
    proxy.fault('500', { match: { op: 'abort_multipart' } });
    const body = crypto.randomBytes(2 * 64 * 1024 + 1);
    const r = await via(['--attempts', '2', '--part-size', String(64 * 1024), 'multipart', 'mp/left=behind', file('lb', body)]);
    proxy.pass();
    assert.equal(r.code, 1);
    assert.match(r.error, /^complete_multipart: InvalidPart: gone/);
    const open = proxy.uploads();
    assert.equal(open.length, 1);
    assert.equal(open[0].key, 'mp/left=behind');
    assert.deepEqual(open[0].parts.map((p) => [p.partNumber, p.size]), [[1, 65536], [2, 65536], [3, 1]]);
    const lp = await signedRequest(proxy.endpoint, { method: 'GET', p: '/lake/mp/left%3Dbehind', query: `uploadId=${encodeURIComponent(open[0].uploadId)}` });
    assert.equal(lp.status, 200);
    assert.equal([...lp.body.toString().matchAll(/<PartNumber>/g)].length, 3);
    const lu = await signedRequest(proxy.endpoint, { method: 'GET', p: '/lake', query: 'uploads=' });
    assert.equal(lu.status, 200);
    assert.match(lu.body.toString(), /<Key>mp\/left=behind<\/Key>/);
    // a badly signed abort is refused; a good one clears it
    const bad = await signedRequest(proxy.endpoint, { method: 'DELETE', p: '/lake/mp/left%3Dbehind', query: `uploadId=${encodeURIComponent(open[0].uploadId)}`, secretKey: 'wrong' });
    assert.equal(bad.status, 403);
    const ok = await signedRequest(proxy.endpoint, { method: 'DELETE', p: '/lake/mp/left%3Dbehind', query: `uploadId=${encodeURIComponent(open[0].uploadId)}` });
    assert.equal(ok.status, 204);
    assert.deepEqual(proxy.uploads(), []);
  });
});
