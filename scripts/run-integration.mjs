// run-integration.mjs — runs the integration test files (scripts/run-integration.sh sets the
// scene), each in its own `node --test` process group, TEST_CONCURRENCY at a time, so that one
// failing or hanging file cannot hang the run:
//   - every test has TEST_TIMEOUT_MS (node --test --test-timeout; default 300000), after which
//     node cancels it and the file's after() hooks run (the harness stops what it started);
//   - every file has TEST_FILE_TIMEOUT_S (default 1200) in all: past it its process group gets
//     SIGTERM (the harness kills what it started, queen nodes drain), 15 s later SIGKILL;
//   - a process still in a file's group 10 s after the file's node --test has exited (a queen
//     node, an s3rver it started and lost) is listed, killed, and fails the file.
// Each file's output is printed when it ends; the last line is the total:
//   integration: N passed, N failed, N skipped
// Exit status 0 only when every file passed.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const files = process.argv.slice(2);
const concurrency = Math.max(1, Number(process.env.TEST_CONCURRENCY || 2));
const testTimeoutMs = Number(process.env.TEST_TIMEOUT_MS || 300000);
const fileTimeoutS = Number(process.env.TEST_FILE_TIMEOUT_S || 1200);
const KILL_GRACE_MS = 15000;
const LEFTOVER_GRACE_MS = 10000;

if (files.length === 0) {
  console.error('run-integration: no test files');
  process.exit(2);
}

// run from inside a test file (the harness's own test), the outer runner's context must not leak in
const { NODE_TEST_CONTEXT: _outerContext, ...childEnv } = process.env;
const tapDir = fs.mkdtempSync(path.join(os.tmpdir(), 'queen-tap-'));
const live = new Set(); // process group ids of the files running

// The processes whose process group is pgid: [{ pid, cmd }].
function groupMembers(pgid) {
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) !== pgid || fields[0] === 'Z') continue;
      const cmd = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').join(' ').trim();
      out.push({ pid: Number(d), cmd });
    } catch { /* gone meanwhile */ }
  }
  return out;
}

function killGroup(pgid, sig) {
  try { process.kill(-pgid, sig); } catch { /* gone */ }
}

// The root summary of a TAP report: { tests, pass, fail, cancelled, skipped, todo } or null.
function tapCounts(file) {
  let text;
  try { text = fs.readFileSync(file, 'utf8'); } catch { return null; }
  const c = {};
  for (const m of text.matchAll(/^# (tests|pass|fail|cancelled|skipped|todo) (\d+)$/gm)) c[m[1]] = Number(m[2]);
  return 'tests' in c ? c : null;
}

function runFile(file, index) {
  return new Promise((resolve) => {
    const tap = path.join(tapDir, `${index}.tap`);
    const t0 = Date.now();
    const child = spawn(process.execPath, [
      '--test', `--test-timeout=${testTimeoutMs}`,
      '--test-reporter=spec', '--test-reporter-destination=stdout',
      '--test-reporter=tap', `--test-reporter-destination=${tap}`,
      file,
    ], { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: childEnv });
    const pgid = child.pid;
    live.add(pgid);
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    let timedOut = false;
    let killer = null;
    const watchdog = setTimeout(() => {
      timedOut = true;
      out += `\nrun-integration: ${file} still running after ${fileTimeoutS} s: SIGTERM to its process group\n`;
      killGroup(pgid, 'SIGTERM');
      killer = setTimeout(() => killGroup(pgid, 'SIGKILL'), KILL_GRACE_MS);
    }, fileTimeoutS * 1000);
    child.on('close', async (code, signal) => {
      clearTimeout(watchdog);
      // node --test exits before the file's process when a signal ends them: the harness in
      // that process is still stopping what it started, so give the group a moment to empty
      let leftovers = groupMembers(pgid);
      for (let waited = 0; leftovers.length && waited < LEFTOVER_GRACE_MS; waited += 200) {
        await new Promise((r) => setTimeout(r, 200));
        leftovers = groupMembers(pgid);
      }
      if (killer) clearTimeout(killer);
      live.delete(pgid);
      if (leftovers.length) {
        out += `\nrun-integration: ${file} left ${leftovers.length} process(es) running, killed now:\n`
          + leftovers.map((p) => `  pid ${p.pid}: ${p.cmd}\n`).join('');
        killGroup(pgid, 'SIGKILL');
      }
      const counts = tapCounts(tap);
      const ok = code === 0 && !timedOut && leftovers.length === 0 && counts !== null;
      resolve({ file, ok, code, signal, timedOut, leftovers: leftovers.length, counts, secs: (Date.now() - t0) / 1000, out });
    });
  });
}

function onSignal(sig) {
  for (const g of live) { killGroup(g, 'SIGTERM'); }
  setTimeout(() => { for (const g of live) killGroup(g, 'SIGKILL'); process.exit(130); }, 5000).unref();
  console.error(`run-integration: ${sig}: stopping ${live.size} running file(s)`);
}
process.on('SIGINT', () => onSignal('SIGINT'));
process.on('SIGTERM', () => onSignal('SIGTERM'));

const results = [];
let next = 0;
async function worker() {
  while (next < files.length) {
    const i = next++;
    const r = await runFile(files[i], i);
    results.push(r);
    const c = r.counts;
    const why = r.timedOut ? `timed out after ${fileTimeoutS} s` : r.leftovers ? `left ${r.leftovers} process(es)` : c === null ? `no report (exit ${r.code ?? r.signal})` : '';
    process.stdout.write(`\n=== ${r.file} (${r.secs.toFixed(1)} s): ${r.ok ? 'ok' : 'FAILED'}${c ? `, ${c.pass} passed, ${c.fail + (c.cancelled || 0)} failed` : ''}${why ? ` — ${why}` : ''}\n`);
    process.stdout.write(r.out.endsWith('\n') ? r.out : r.out + '\n');
  }
}
await Promise.all(Array.from({ length: Math.min(concurrency, files.length) }, worker));
fs.rmSync(tapDir, { recursive: true, force: true });

let passed = 0;
let failed = 0;
let skipped = 0;
console.log('\nintegration files:');
for (const r of results.sort((a, b) => (a.file < b.file ? -1 : 1))) {
  const c = r.counts;
  if (c) {
    passed += c.pass;
    failed += c.fail + (c.cancelled || 0);
    skipped += (c.skipped || 0) + (c.todo || 0);
  }
  // a file that failed without a failing test of its own (timed out, crashed, left processes) counts once
  if (!r.ok && (!c || c.fail + (c.cancelled || 0) === 0)) failed += 1;
  console.log(`  ${r.ok ? 'ok    ' : 'FAILED'} ${r.file} (${r.secs.toFixed(1)} s)`);
}
console.log(`integration: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(results.every((r) => r.ok) ? 0 : 1);
