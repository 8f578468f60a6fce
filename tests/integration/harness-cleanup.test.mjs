// harness-cleanup.test.mjs — nothing a test file starts outlives it, and one bad file cannot
// hang the run. Each case writes a deliberately bad test file into a temp directory (outside
// tests/integration, so the suite never runs it by itself), runs it through
// scripts/run-integration.sh, and checks that the runner exits in time, reports the failure, and
// that no process the file started is left: the queen node (by its pid), its embedded
// PostgreSQL (postmaster.pid) and the s3rver child.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';

import { ROOT, rmrf, sleep, tmpDir } from './harness.mjs';

const HARNESS = pathToFileURL(path.join(ROOT, 'tests/integration/harness.mjs')).href;
const S3HARNESS = pathToFileURL(path.join(ROOT, 'tests/integration/s3harness.mjs')).href;

// The bad file's preamble: it writes the pids of what it starts to PIDS, so the test can look
// for them afterwards.
const preamble = (pidFile) => `
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { startQueen } from '${HARNESS}';
import { startS3 } from '${S3HARNESS}';
const note = (o) => fs.appendFileSync(${JSON.stringify(pidFile)}, JSON.stringify(o) + '\\n');
`;

const alive = (pid) => { try { process.kill(pid, 0); return true; } catch { return false; } };
const postmasterPid = (data) => {
  try { return Number(fs.readFileSync(path.join(data, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]) || null; } catch { return null; }
};

function runRunner(file, env = {}, limitMs = 180000) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const { NODE_TEST_CONTEXT, ...outer } = process.env; // this file's own runner context
    const p = spawn('scripts/run-integration.sh', [], {
      cwd: ROOT, env: { ...outer, TEST_FILES: file, TEST_CONCURRENCY: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { out += d; });
    const t = setTimeout(() => p.kill('SIGKILL'), limitMs);
    p.on('close', (code, signal) => { clearTimeout(t); resolve({ code, signal, out, ms: Date.now() - t0 }); });
  });
}

function notes(pidFile) {
  return fs.existsSync(pidFile) ? fs.readFileSync(pidFile, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
}

async function assertNothingLeft(started) {
  // the runner has exited; give a killed process a moment to be reaped
  for (let i = 0; i < 50 && started.some((s) => alive(s.pid) || (s.data && postmasterPid(s.data) && alive(postmasterPid(s.data)))); i++) await sleep(100);
  for (const s of started) {
    assert.equal(alive(s.pid), false, `${s.kind} pid ${s.pid} is still running`);
    if (s.data) {
      const pm = postmasterPid(s.data);
      assert.ok(!pm || !alive(pm), `the embedded PostgreSQL of ${s.data} (pid ${pm}) is still running`);
    }
  }
}

test('a failing test that never stops its node and s3rver: the file fails, the harness stops both, the runner exits', async () => {
  const dir = tmpDir('queen-meta-');
  const pidFile = path.join(dir, 'pids');
  const file = path.join(dir, 'leaks.test.mjs');
  fs.writeFileSync(file, preamble(pidFile) + `
test('fails with a node and an s3rver running', async () => {
  const s3 = await startS3();
  note({ kind: 's3rver', pid: s3.pid });
  const node = await startQueen();
  note({ kind: 'queen', pid: node.proc.pid, data: node.data });
  assert.equal(1, 2, 'deliberate failure');
});
test('a later test passes', () => {});
`);
  const r = await runRunner(file);
  const started = notes(pidFile);
  try {
    assert.equal(started.length, 2, r.out);
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /deliberate failure/);
    assert.match(r.out, /harness: still running when the file.s tests ended, stopped by the harness[^\n]*queen pid [^\n]*s3rver pid/);
    assert.match(r.out, /^integration: 1 passed, [1-9]\d* failed, 0 skipped$/m);
    await assertNothingLeft(started);
  } finally { rmrf(dir); }
});

test('a passing test that forgets its node: the file fails with the leak named', async () => {
  const dir = tmpDir('queen-meta-');
  const pidFile = path.join(dir, 'pids');
  const file = path.join(dir, 'forgets.test.mjs');
  fs.writeFileSync(file, preamble(pidFile) + `
test('passes but never stops its node', async () => {
  const node = await startQueen();
  note({ kind: 'queen', pid: node.proc.pid, data: node.data });
});
`);
  const r = await runRunner(file);
  const started = notes(pidFile);
  try {
    assert.equal(started.length, 1, r.out);
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, new RegExp(`queen pid ${started[0].pid} on port`));
    await assertNothingLeft(started);
  } finally { rmrf(dir); }
});

test('a test that hangs with its node and a timer running: the per-test timeout cancels it, the harness stops the node and ends the stalled process', async () => {
  const dir = tmpDir('queen-meta-');
  const pidFile = path.join(dir, 'pids');
  const file = path.join(dir, 'hangs.test.mjs');
  fs.writeFileSync(file, preamble(pidFile) + `
test('waits for ever', async () => {
  const node = await startQueen();
  note({ kind: 'queen', pid: node.proc.pid, data: node.data });
  await new Promise((resolve) => setInterval(() => {}, 1000));
});
`);
  const r = await runRunner(file, { TEST_TIMEOUT_MS: '20000', QUEEN_TEST_STALL_MS: '5000' });
  const started = notes(pidFile);
  try {
    assert.equal(started.length, 1, r.out);
    assert.equal(r.code, 1, r.out);
    // Node 20 ends the process itself once the cancelled test is reported, later ones keep it
    // alive for the timer: then the harness's stall timer ends it
    assert.ok(r.ms < 120000, `the runner took ${r.ms} ms`);
    assert.doesNotMatch(r.out, /still running after \d+ s: SIGTERM/);
    await assertNothingLeft(started);
  } finally { rmrf(dir); }
});

test('a file that never ends (its process stays alive after the tests): the per-file timeout kills its process group', async () => {
  const dir = tmpDir('queen-meta-');
  const pidFile = path.join(dir, 'pids');
  const file = path.join(dir, 'lingers.test.mjs');
  // a node started outside any test, and a timer that keeps the process alive: no test is
  // running for --test-timeout to cancel, so only the runner's per-file timeout ends it
  fs.writeFileSync(file, preamble(pidFile) + `
const node = await startQueen();
note({ kind: 'queen', pid: node.proc.pid, data: node.data });
setInterval(() => {}, 1000);
test('passes', () => {});
`);
  const r = await runRunner(file, { TEST_FILE_TIMEOUT_S: '40', QUEEN_TEST_STALL_MS: '600000' });
  const started = notes(pidFile);
  try {
    assert.equal(started.length, 1, r.out);
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /still running after 40 s: SIGTERM to its process group/);
    assert.ok(r.ms < 100000, `the runner took ${r.ms} ms`);
    await assertNothingLeft(started);
  } finally { rmrf(dir); }
});
