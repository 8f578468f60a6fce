// clients/rust/scripts/test-with-broker.mjs — the Rust SDK's suite against the real broker
// (make sdk-rust): starts the sanitizer build with its own embedded PostgreSQL through
// tests/integration/harness.mjs, runs `cargo test` (unit tests, the config_hash vectors and the
// integration tests in clients/rust/tests/, which read QUEEN_URL) and the spec's example
// (examples/spec_streams.rs), checks the example's output, and always stops the node: the
// harness stops whatever is left when this process ends, also on SIGINT/SIGTERM.
//   node clients/rust/scripts/test-with-broker.mjs [--bench]   (--bench: the streams bench instead)
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { startQueen, QUEEN_BIN } from '../../../tests/integration/harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const crate = path.resolve(here, '..');
const bench = process.argv.includes('--bench');

function run(cmd, args, env, { capture = false, timeoutMs = 15 * 60 * 1000 } = {}) {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { cwd: crate, env: { ...process.env, ...env }, stdio: ['ignore', capture ? 'pipe' : 'inherit', 'inherit'] });
    let out = '';
    if (capture) p.stdout.on('data', (d) => { out += d; process.stdout.write(d); });
    const t = setTimeout(() => { process.stderr.write(`sdk-rust: ${cmd} ${args.join(' ')} ran past ${timeoutMs / 1000} s: killed\n`); p.kill('SIGKILL'); }, timeoutMs);
    p.on('exit', (code, signal) => { clearTimeout(t); resolve({ code: code ?? 1, signal, out }); });
  });
}

// the cargo scripts/check-cargo.sh checked: a toolchain it brought (.tools/rust/bin), then
// rustup's ~/.cargo/bin, then PATH
function cargoPath() {
  return [path.resolve(crate, '../../.tools/rust/bin'), `${process.env.HOME || '/root'}/.cargo/bin`, process.env.PATH].join(':');
}

let failed = 0;
const node = await startQueen();
process.stderr.write(`sdk-rust: broker ${QUEEN_BIN} on ${node.url}\n`);
const env = { QUEEN_URL: node.url, QUEEN_PYTHON: path.resolve(crate, '../../build/venv/bin/python'), CARGO_TERM_COLOR: 'never', PATH: cargoPath() };
try {
  if (bench) {
    const r = await run('cargo', ['run', '--release', '--quiet', '--example', 'bench_streams'], env, { timeoutMs: 20 * 60 * 1000 });
    if (r.code !== 0) failed++;
  } else {
    const t = await run('cargo', ['test', '--quiet', '--', '--test-threads=2'], env);
    if (t.code !== 0) { failed++; process.stderr.write('sdk-rust: cargo test failed\n'); }
    const ex = await run('cargo', ['run', '--quiet', '--example', 'spec_streams'], env, { capture: true, timeoutMs: 5 * 60 * 1000 });
    if (ex.code !== 0 || !/^total count=6 sum=21$/m.test(ex.out)) {
      failed++;
      process.stderr.write('sdk-rust: the spec example did not print "total count=6 sum=21"\n');
    } else {
      process.stdout.write('sdk-rust: the spec example ran as printed: ok\n');
    }
  }
} finally {
  try { await node.stop(); } catch (e) { failed++; process.stderr.write(`sdk-rust: the broker did not stop cleanly: ${e.message}\n`); }
}
process.exitCode = failed ? 1 : 0;
