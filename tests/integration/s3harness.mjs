// s3harness.mjs — a real S3 server for the integration tests, and a fault-injecting proxy in
// front of it. Used by s3client.test.mjs (the C client through build/asan/tools/s3tool) and by
// the sink's integration tests.
//
// startS3({ buckets = ['lake'] } = {})  → Promise<s3>
//   Starts @20minutes/s3rver 5.x (it verifies SigV4 signatures; the plain `s3rver` package does
//   not) in a child node process with NODE_OPTIONS=--openssl-legacy-provider (without it any
//   paginated ListObjectsV2 answers 500), on 127.0.0.1, a port the kernel picks (port 0, read
//   back), silent, in a fresh temp directory, with the buckets created. Credentials are fixed
//   by s3rver: access key S3RVER, secret S3RVER; any region is accepted.
//     s3.endpoint        'http://127.0.0.1:PORT' (path-style addressing)
//     s3.vhostEndpoint   'http://s3.localhost:PORT' (virtual-host: BUCKET.s3.localhost; curl
//                        resolves *.localhost itself. NOTE s3rver checks v4 signatures of
//                        virtual-host requests against /BUCKET/KEY, not the real path, so they
//                        fail with SignatureDoesNotMatch: only path style is usable against it)
//     s3.port, s3.dir, s3.bucket ('lake'), s3.accessKey, s3.secretKey, s3.region ('us-east-1')
//     s3.env             the QUEEN_S3_* settings that point a sink at it (path style)
//     await s3.list(prefix = '', bucket)  → [{ key, size, etag }] sorted by key, every page
//     await s3.get(key, bucket)           → Buffer, or null when the key does not exist
//     await s3.put(key, body, bucket)     → status (to seed objects)
//     await s3.stop()                     → kills the child by its PID, removes the directory
//   The child is in harness.mjs's registry until it exits: a test file that ends with it still
//   running fails, and the harness stops it (the fault proxy below too, without failing).
//   list/get/put sign their requests with the small SigV4 implementation below (node:crypto),
//   a second client independent of the C one; signedRequest(endpoint, { method, p, query,
//   headers, body }) sends any other request with it.
//
// startFaultProxy(target)  → Promise<proxy>     (target: an endpoint URL such as s3.endpoint)
//   A plain node http proxy on 127.0.0.1 that forwards every request unchanged (the Host header
//   too, so signatures made for the proxy's address still verify at s3rver) unless a fault
//   rule takes it. Rules are tried in the order added; the first that matches answers:
//     proxy.fault(mode, { times, match, status, code, message, retryAfter, delayMs })
//       mode 'error'  answer status (default 500) with an S3 <Error> body (code, message)
//            '500'    500 InternalError          '503'  503 SlowDown with Retry-After
//            'reset'  destroy the connection (TCP RST) without answering, once the body is in
//            'reset-early'  the same as soon as the headers are in, while the body is still
//                     coming (a connection lost mid-upload)
//            'hang'   read the request, never answer (until the client gives up or stop())
//            'delay'  forward after delayMs
//            'pass'   forward (useful to let some requests through ahead of a wider rule)
//       times: how many requests the rule takes (default: unlimited); match: a function of the
//       request record below, or an object of { method, op, key, partNumber } to compare. The
//       rule is chosen when a request's headers arrive (its bodyBytes is not known yet).
//     proxy.pass()        drop every rule: pass everything from now on
//     proxy.requests      every request seen, in arrival order: { method, path (raw, encoded),
//                         query (raw, without '?'), params (decoded URLSearchParams as an
//                         object), key (decoded, bucket removed), op, headers, bodyBytes, at
//                         (arrival, ms), doneAt (answered, ms; null for reset/hang), fault (the
//                         mode that answered, or null), status (what the client got, null for
//                         reset/hang) }. op is one of put, get, head_bucket, head,
//                         create_multipart, upload_part, complete_multipart, abort_multipart,
//                         list_parts, list_uploads, list, delete, other.
//     proxy.count(match)  how many requests match (same forms as fault's match)
//     proxy.clear()       forget the recorded requests
//     proxy.uploads()     multipart uploads begun through the proxy and neither completed nor
//                         aborted: [{ uploadId, key, parts: [{ partNumber, etag, size }] }]
//     proxy.endpoint, proxy.port, await proxy.stop()
//   s3rver has no AbortMultipartUpload, ListParts or ListMultipartUploads; the proxy answers
//   them itself from what it saw pass (after checking the request's signature with the
//   S3RVER secret): DELETE ?uploadId= → 204 (404 NoSuchUpload when unknown), GET ?uploadId= →
//   ListPartsResult, GET /bucket?uploads → ListMultipartUploadsResult.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';

import { ROOT, tmpDir, track } from './harness.mjs';

export const S3RVER_KEY = 'S3RVER';
export const S3RVER_SECRET = 'S3RVER';

// ---------------------------------------------------------------- SigV4 (node:crypto)

const sha256hex = (b) => crypto.createHash('sha256').update(b).digest('hex');
const hmac = (k, s) => crypto.createHmac('sha256', k).update(s).digest();

// RFC 3986 encoding of a decoded string, as SigV4 wants it (keepSlash for the path).
export function awsEncode(s, keepSlash = false) {
  const bytes = Buffer.from(s, 'utf8');
  let out = '';
  for (const b of bytes) {
    const c = String.fromCharCode(b);
    if (/[A-Za-z0-9\-._~]/.test(c) || (keepSlash && c === '/')) out += c;
    else out += '%' + b.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

function decodeLoose(s) {
  try { return decodeURIComponent(s); } catch { return s; }
}

function canonicalQuery(raw) {
  if (!raw) return '';
  return raw.split('&').filter((p) => p.length).map((p) => {
    const i = p.indexOf('=');
    const k = i < 0 ? p : p.slice(0, i);
    const v = i < 0 ? '' : p.slice(i + 1);
    return [awsEncode(decodeLoose(k)), awsEncode(decodeLoose(v))];
  }).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`).join('&');
}

function signingKey(secret, day, region) {
  return hmac(hmac(hmac(hmac('AWS4' + secret, day), region), 's3'), 'aws4_request');
}

// Signs a request: returns the headers to send (host, x-amz-date, x-amz-content-sha256,
// authorization and the given ones).
export function sigv4Headers({ method, host, path: p, query = '', headers = {}, body = Buffer.alloc(0), region = 'us-east-1', accessKey = S3RVER_KEY, secretKey = S3RVER_SECRET, now = new Date() }) {
  const date = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  const day = date.slice(0, 8);
  const all = { ...Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), String(v)])), host, 'x-amz-date': date, 'x-amz-content-sha256': sha256hex(body) };
  const names = Object.keys(all).sort();
  const canon = [method, awsEncode(decodeLoose(p), true), canonicalQuery(query),
    names.map((n) => `${n}:${all[n].trim().replace(/ +/g, ' ')}\n`).join(''), names.join(';'), all['x-amz-content-sha256']].join('\n');
  const scope = `${day}/${region}/s3/aws4_request`;
  const sts = ['AWS4-HMAC-SHA256', date, scope, sha256hex(canon)].join('\n');
  const sig = crypto.createHmac('sha256', signingKey(secretKey, day, region)).update(sts).digest('hex');
  all.authorization = `AWS4-HMAC-SHA256 Credential=${accessKey}/${scope}, SignedHeaders=${names.join(';')}, Signature=${sig}`;
  return all;
}

// Checks a received request's Authorization against secret (for the requests the proxy answers).
export function sigv4Verify({ method, rawPath, rawQuery, headers, body }, secret = S3RVER_SECRET) {
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(headers.authorization || '');
  if (!m) return false;
  const [, , day, region, signed, sig] = m;
  const names = signed.split(';');
  if (!names.every((n) => n in headers)) return false;
  const payload = headers['x-amz-content-sha256'];
  if (payload !== 'UNSIGNED-PAYLOAD' && payload !== sha256hex(body)) return false;
  const canon = [method, awsEncode(decodeLoose(rawPath), true), canonicalQuery(rawQuery),
    names.map((n) => `${n}:${String(headers[n]).trim().replace(/ +/g, ' ')}\n`).join(''), signed, payload].join('\n');
  const sts = ['AWS4-HMAC-SHA256', headers['x-amz-date'], `${day}/${region}/s3/aws4_request`, sha256hex(canon)].join('\n');
  return crypto.createHmac('sha256', signingKey(secret, day, region)).update(sts).digest('hex') === sig;
}

// ---------------------------------------------------------------- small XML helpers

export function xmlDecode(s) {
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|amp|lt|gt|quot|apos);/g, (_, e) => {
    if (e[0] === '#') return String.fromCodePoint(e[1] === 'x' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10));
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[e];
  });
}
const xmlEscape = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const xmlTag = (x, tag) => { const m = new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`).exec(x); return m ? xmlDecode(m[1]) : null; };
const s3Error = (code, message) => `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${xmlEscape(message)}</Message></Error>`;

// ---------------------------------------------------------------- a plain client for checks

// One signed request (S3RVER credentials unless given): { status, headers, body }.
export function signedRequest(endpoint, { method, p, query = '', headers = {}, body = Buffer.alloc(0), secretKey = S3RVER_SECRET }) {
  const u = new URL(endpoint);
  const signed = sigv4Headers({ method, host: u.host, path: p, query, headers, body, secretKey });
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method, path: p + (query ? `?${query}` : ''), headers: { ...signed, 'content-length': body.length } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

// ---------------------------------------------------------------- s3rver

const CHILD = `
const { createRequire } = require('node:module');
const req = createRequire(process.env.S3H_ROOT + '/package.json');
const S3rver = req('@20minutes/s3rver');
const buckets = JSON.parse(process.env.S3H_BUCKETS);
const s = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: process.env.S3H_DIR,
  serviceEndpoint: 'localhost', vhostBuckets: false, configureBuckets: buckets.map((name) => ({ name })) });
s.run().then((a) => process.stdout.write(JSON.stringify({ port: a.port }) + '\\n'),
  (e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });
process.on('SIGTERM', () => s.close(() => process.exit(0)));
`;

export async function startS3({ buckets = ['lake'] } = {}) {
  const dir = tmpDir('queen-s3rver-');
  const child = spawn(process.execPath, ['-e', CHILD], {
    env: { PATH: process.env.PATH, NODE_OPTIONS: '--openssl-legacy-provider', S3H_ROOT: ROOT, S3H_DIR: dir, S3H_BUCKETS: JSON.stringify(buckets) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // a failed test that never calls stop(): the harness stops it when the file ends
  let s3 = null;
  const untrack = track({
    kind: 's3rver', what: `pid ${child.pid} (${dir})`, pid: child.pid,
    stop: async () => { if (s3) await s3.stop(); else child.kill('SIGKILL'); },
    killSync: () => child.kill('SIGKILL'),
    unref: () => { child.unref(); child.stdout.unref(); child.stderr.unref(); },
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => { untrack(); resolve({ code, signal }); }));
  const port = await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`s3rver did not start in 15 s: ${err}`)), 15000);
    child.stdout.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl >= 0) { clearTimeout(t); resolve(JSON.parse(out.slice(0, nl)).port); }
    });
    exited.then((e) => { clearTimeout(t); reject(new Error(`s3rver exited ${JSON.stringify(e)}: ${err}`)); });
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const bucket = buckets[0];
  s3 = {
    endpoint, port, dir, bucket, pid: child.pid,
    vhostEndpoint: `http://s3.localhost:${port}`,
    accessKey: S3RVER_KEY, secretKey: S3RVER_SECRET, region: 'us-east-1',
    env: {
      QUEEN_S3_ENDPOINT: endpoint, QUEEN_S3_REGION: 'us-east-1', QUEEN_S3_PATH_STYLE: 'true', QUEEN_S3_BUCKET: bucket,
      QUEEN_S3_ACCESS_KEY: S3RVER_KEY, QUEEN_S3_SECRET_KEY: S3RVER_SECRET,
    },
    async list(prefix = '', b = bucket) {
      const items = [];
      let token = null;
      for (;;) {
        const q = ['list-type=2', 'max-keys=1000', `prefix=${awsEncode(prefix)}`];
        if (token) q.push(`continuation-token=${awsEncode(token)}`);
        const res = await signedRequest(endpoint, { method: 'GET', p: `/${b}`, query: q.sort().join('&') });
        if (res.status !== 200) throw new Error(`list ${prefix}: ${res.status} ${res.body}`);
        const x = res.body.toString();
        for (const m of x.matchAll(/<Contents>([\s\S]*?)<\/Contents>/g)) {
          items.push({ key: xmlTag(m[1], 'Key'), size: Number(xmlTag(m[1], 'Size')), etag: xmlTag(m[1], 'ETag') });
        }
        if (xmlTag(x, 'IsTruncated') !== 'true') break;
        token = xmlTag(x, 'NextContinuationToken');
      }
      return items.sort((a, c) => (a.key < c.key ? -1 : a.key > c.key ? 1 : 0));
    },
    async get(key, b = bucket) {
      const res = await signedRequest(endpoint, { method: 'GET', p: `/${b}/${awsEncode(key, true)}` });
      if (res.status === 404) return null;
      if (res.status !== 200) throw new Error(`get ${key}: ${res.status} ${res.body}`);
      return res.body;
    },
    async put(key, body, b = bucket) {
      const res = await signedRequest(endpoint, { method: 'PUT', p: `/${b}/${awsEncode(key, true)}`, body: Buffer.from(body) });
      return res.status;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        process.kill(child.pid, 'SIGTERM');
        const t = setTimeout(() => { try { process.kill(child.pid, 'SIGKILL'); } catch { /* gone */ } }, 3000);
        await exited;
        clearTimeout(t);
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  return s3;
}

// ---------------------------------------------------------------- the fault proxy

function opOf(method, key, params) {
  const has = (k) => Object.prototype.hasOwnProperty.call(params, k);
  if (method === 'POST' && has('uploads')) return 'create_multipart';
  if (method === 'POST' && has('uploadId')) return 'complete_multipart';
  if (method === 'PUT' && has('partNumber')) return 'upload_part';
  if (method === 'DELETE' && has('uploadId')) return 'abort_multipart';
  if (method === 'GET' && has('uploadId')) return 'list_parts';
  if (method === 'GET' && !key && has('uploads')) return 'list_uploads';
  if (method === 'HEAD') return key ? 'head' : 'head_bucket';
  if (method === 'GET') return key ? 'get' : 'list';
  if (method === 'PUT' && key) return 'put';
  if (method === 'DELETE') return 'delete';
  return 'other';
}

function matches(match, rec) {
  if (!match) return true;
  if (typeof match === 'function') return !!match(rec);
  for (const [k, v] of Object.entries(match)) {
    if (k === 'partNumber') { if (Number(rec.params.partNumber) !== Number(v)) return false; } else if (rec[k] !== v) return false;
  }
  return true;
}

export async function startFaultProxy(target) {
  const t = new URL(target);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  const rules = [];
  const requests = [];
  const sockets = new Set();
  const uploads = new Map(); // uploadId → { uploadId, key, bucket, parts: Map }

  function answer(res, rec, status, body = '', headers = {}) {
    rec.status = status;
    rec.doneAt = Date.now();
    res.writeHead(status, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body), ...headers });
    res.end(body);
  }

  // The multipart calls s3rver lacks, answered from what passed through.
  function answerOwn(req, res, rec, body) {
    const ok = sigv4Verify({ method: req.method, rawPath: rec.path, rawQuery: rec.query, headers: req.headers, body });
    if (!ok) return answer(res, rec, 403, s3Error('SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided. Check your key and signing method.'));
    if (rec.op === 'list_uploads') {
      const list = [...uploads.values()].filter((u) => `/${u.bucket}` === rec.path.replace(/\/$/, ''));
      return answer(res, rec, 200, `<?xml version="1.0" encoding="UTF-8"?>\n<ListMultipartUploadsResult><Bucket>${xmlEscape(list[0]?.bucket ?? '')}</Bucket>${list.map((u) => `<Upload><Key>${xmlEscape(u.key)}</Key><UploadId>${xmlEscape(u.uploadId)}</UploadId></Upload>`).join('')}<IsTruncated>false</IsTruncated></ListMultipartUploadsResult>`);
    }
    const u = uploads.get(rec.params.uploadId);
    if (!u || u.key !== rec.key) return answer(res, rec, 404, s3Error('NoSuchUpload', 'The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.'));
    if (rec.op === 'abort_multipart') {
      uploads.delete(u.uploadId);
      return answer(res, rec, 204);
    }
    const parts = [...u.parts.values()].sort((a, b) => a.partNumber - b.partNumber);
    return answer(res, rec, 200, `<?xml version="1.0" encoding="UTF-8"?>\n<ListPartsResult><Bucket>${xmlEscape(u.bucket)}</Bucket><Key>${xmlEscape(u.key)}</Key><UploadId>${xmlEscape(u.uploadId)}</UploadId>${parts.map((p) => `<Part><PartNumber>${p.partNumber}</PartNumber><ETag>${xmlEscape(p.etag)}</ETag><Size>${p.size}</Size></Part>`).join('')}<IsTruncated>false</IsTruncated></ListPartsResult>`);
  }

  function forward(req, res, rec, body) {
    const up = http.request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers, agent }, (ures) => {
      const chunks = [];
      ures.on('data', (c) => chunks.push(c));
      ures.on('end', () => {
        const rbody = Buffer.concat(chunks);
        rec.status = ures.statusCode;
        if (ures.statusCode === 200) {
          if (rec.op === 'create_multipart') {
            const id = xmlTag(rbody.toString(), 'UploadId');
            const bucket = rec.path.split('/')[1];
            if (id) uploads.set(id, { uploadId: id, key: rec.key, bucket, parts: new Map() });
          } else if (rec.op === 'upload_part') {
            const u = uploads.get(rec.params.uploadId);
            if (u) u.parts.set(Number(rec.params.partNumber), { partNumber: Number(rec.params.partNumber), etag: ures.headers.etag, size: body.length });
          } else if (rec.op === 'complete_multipart' && !/<Error>/.test(rbody.toString())) {
            uploads.delete(rec.params.uploadId);
          }
        }
        const h = { ...ures.headers };
        delete h['transfer-encoding'];
        h['content-length'] = rbody.length;
        rec.doneAt = Date.now();
        res.writeHead(ures.statusCode, h);
        res.end(rbody);
      });
    });
    up.on('error', (e) => {
      rec.status = 502;
      rec.error = String(e);
      if (!res.headersSent) answer(res, rec, 502, s3Error('BadGateway', String(e)));
    });
    up.end(body);
  }

  const server = http.createServer((req, res) => {
    const rawPath = req.url.split('?')[0];
    const rawQuery = req.url.includes('?') ? req.url.slice(req.url.indexOf('?') + 1) : '';
    const params = Object.fromEntries(new URLSearchParams(rawQuery));
    const parts = decodeLoose(rawPath).split('/');
    const key = parts.slice(2).join('/');
    const rec = {
      method: req.method, path: rawPath, query: rawQuery, params, key, op: opOf(req.method, key, params),
      headers: { ...req.headers }, bodyBytes: 0, at: Date.now(), doneAt: null, fault: null, status: null,
    };
    requests.push(rec);
    // the rule is chosen when the headers are in (bodyBytes is not known yet)
    const rule = rules.find((r) => (r.times === undefined || r.times > 0) && matches(r.match, rec));
    if (rule && rule.times !== undefined) rule.times--;
    const mode = rule ? rule.mode : 'pass';
    rec.fault = rule ? mode : null;
    if (mode === 'reset-early') {
      if (req.socket.resetAndDestroy) req.socket.resetAndDestroy(); else req.socket.destroy();
      return;
    }
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      rec.bodyBytes = body.length;
      const own = ['abort_multipart', 'list_parts', 'list_uploads'].includes(rec.op);
      switch (mode) {
        case '500':
          return answer(res, rec, 500, s3Error('InternalError', 'We encountered an internal error. Please try again.'));
        case '503':
          return answer(res, rec, 503, s3Error('SlowDown', 'Please reduce your request rate.'), { 'retry-after': String(rule.retryAfter ?? 1) });
        case 'error':
          return answer(res, rec, rule.status ?? 500, s3Error(rule.code ?? 'InternalError', rule.message ?? 'injected'));
        case 'reset':
          if (req.socket.resetAndDestroy) req.socket.resetAndDestroy(); else req.socket.destroy();
          return undefined;
        case 'hang':
          return undefined; // the socket stays open; stop() destroys it
        case 'delay':
          return setTimeout(() => (own ? answerOwn(req, res, rec, body) : forward(req, res, rec, body)), rule.delayMs ?? 1000);
        default:
          return own ? answerOwn(req, res, rec, body) : forward(req, res, rec, body);
      }
    });
  });
  server.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  server.keepAliveTimeout = 30000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  // a proxy a failed test never stops would keep the test process alive: the harness stops it
  const untrack = track({ kind: 'proxy', what: `fault proxy on port ${port}`, stop: async () => proxy.stop(), killSync: () => {},
    unref: () => { server.unref(); for (const s of sockets) s.unref(); } });
  const proxy = {
    endpoint: `http://127.0.0.1:${port}`, port, requests,
    fault(mode, opts = {}) { rules.push({ mode, ...opts }); return this; },
    pass() { rules.length = 0; return this; },
    count(match) { return requests.filter((r) => matches(match, r)).length; },
    clear() { requests.length = 0; },
    uploads() {
      return [...uploads.values()].map((u) => ({ uploadId: u.uploadId, key: u.key, parts: [...u.parts.values()].sort((a, b) => a.partNumber - b.partNumber) }));
    },
    async stop() {
      untrack();
      for (const s of sockets) s.destroy();
      agent.destroy();
      if (server.listening) await new Promise((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}

