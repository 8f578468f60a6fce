// hostile-lib.mjs — what hostile.test.mjs and hostile2.test.mjs share: the answer check (no 5xx,
// the JSON error shape, no PostgreSQL text), the one-leaf-at-a-time body mutations, a small
// concurrency runner, the table counts that show whether a refused request stored anything, and
// a raw one-request socket for framing the fetch API cannot send.
import assert from 'node:assert/strict';
import net from 'node:net';

// PostgreSQL's own wording, which no answer may carry.
export const PG_TEXT = /invalid byte sequence|UTF8|SQLSTATE|syntax error|violates|relation "|function |out of range for type|invalid input syntax|column "|operator does not exist|null value in|duplicate key|current transaction is aborted/i;

// Every answer: no 5xx; a refusal is JSON with an `error` sentence (and a `code` when asked).
export function checkAnswer(r, ctx, { status, code, parameter } = {}) {
  const where = `${ctx} → ${r.status} ${r.text.slice(0, 300)}`;
  assert.ok(r.status < 500, `5xx: ${where}`);
  assert.ok(r.headers.get ? r.headers.get('x-request-id') : r.headers['x-request-id'], `no x-request-id: ${where}`);
  if (status !== undefined) assert.equal(r.status, status, where);
  if (r.status >= 400) {
    const ct = (r.headers.get ? r.headers.get('content-type') : r.headers['content-type']) || '';
    assert.match(ct, /^application\/json/, where);
    assert.ok(r.json && typeof r.json.error === 'string' && r.json.error.length > 0, `no JSON error: ${where}`);
    assert.doesNotMatch(r.text, PG_TEXT, where);
  }
  if (code !== undefined) assert.equal(r.json && r.json.code, code, where);
  if (parameter !== undefined) assert.equal(r.json && r.json.parameter, parameter, where);
}

// Runs jobs with a little concurrency (the answers are independent).
export async function runAll(jobs, width = 8) {
  let i = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (i < jobs.length) await jobs[i++]();
  }));
}

// Every row of every table of the schema, counted (what a hostile request could have stored).
export function tableCounts(pg) {
  const tables = pg.psql("SELECT string_agg(format('%I.%I', schemaname, tablename), ' ' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'queen'").split(' ');
  const sql = tables.map((t) => `SELECT '${t}', count(*) FROM ${t}`).join(' UNION ALL ');
  return Object.fromEntries(pg.psql(sql).split('\n').map((l) => l.split('|')));
}
// Tables a node writes by itself (presence, clocks, maintenance, the proxy's usage counts),
// whatever the requests.
const BACKGROUND = /node|presence|heartbeat|clock|schema_migrations|maint|watermark|tenants|cp_usage/;
export function storedSince(pg, before) {
  const now = tableCounts(pg);
  return Object.keys(now).filter((t) => !BACKGROUND.test(t) && now[t] !== before[t]).map((t) => `${t}: ${before[t]} → ${now[t]}`);
}

// Mutations of a template body, one leaf at a time: [description, body].
export function* mutations(body) {
  const leaves = [];
  (function walk(v, p) {
    if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (k === 'payload' || k === 'value') continue;
        walk(x, [...p, k]);
      }
      return;
    }
    leaves.push([p, v]);
  })(body, []);
  const set = (p, x) => {
    const copy = structuredClone(body);
    let o = copy;
    for (const k of p.slice(0, -1)) o = o[k];
    o[p[p.length - 1]] = x;
    return copy;
  };
  for (const [p, v] of leaves) {
    const at = p.join('.');
    const alts = typeof v === 'string'
      ? [['nul', `a\u0000${v}`], ['number', 123], ['object', {}], ['array', [v]], ['true', true], ['long', 'n'.repeat(5000)]]
      : [['string', 'x'], ['object', {}], ['nul string', '\u0000'], ['huge', 1e300], ['negative', -1]];
    for (const [kind, x] of alts) yield [`${at}=${kind}`, set(p, x)];
  }
}

// One request on a fresh socket, read to the end (h2o closes after refusing). text: a string
// (latin1) or a Buffer.
export function rawRequest(port, text, { timeoutMs = 5000 } = {}) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    const chunks = [];
    const timer = setTimeout(() => { s.destroy(); reject(new Error('no answer')); }, timeoutMs);
    s.on('data', (d) => {
      chunks.push(d);
      const all = Buffer.concat(chunks).toString('latin1');
      const m = /content-length: *(\d+)/i.exec(all);
      const end = all.indexOf('\r\n\r\n');
      if (m && end >= 0 && all.length >= end + 4 + Number(m[1])) s.end();
    });
    s.on('error', () => {});
    s.on('close', () => {
      clearTimeout(timer);
      const all = Buffer.concat(chunks).toString('latin1');
      const end = all.indexOf('\r\n\r\n');
      const head = all.slice(0, end).split('\r\n');
      const status = Number((head[0] || '').split(' ')[1]);
      const headers = {};
      for (const l of head.slice(1)) {
        const i = l.indexOf(':');
        headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
      }
      let body = all.slice(end + 4);
      if (/chunked/i.test(headers['transfer-encoding'] || '')) {
        let out = '';
        for (;;) {
          const nl = body.indexOf('\r\n');
          const n = parseInt(body.slice(0, nl), 16);
          if (!n) break;
          out += body.slice(nl + 2, nl + 2 + n);
          body = body.slice(nl + 2 + n + 2);
        }
        body = out;
      }
      let json = null;
      try { json = JSON.parse(body); } catch { /* not JSON */ }
      resolve({ status, headers, text: body, json });
    });
    s.write(typeof text === 'string' ? Buffer.from(text, 'latin1') : text);
  });
}
