// clients/go/scripts/test-with-broker.mjs — the Go SDK's suite against the real broker
// (make sdk-go): starts the sanitizer build with its own embedded PostgreSQL through
// tests/integration/harness.mjs, runs `go vet ./...` and `go test ./...` (the unit tests and the
// broker tests, which read QUEEN_URL), runs each example of EXAMPLES below and checks its
// output, and always stops the node: the harness stops whatever is left when this process ends,
// also on SIGINT/SIGTERM. The go is .tools/go/bin's (scripts/bring-go.sh) when present, else
// PATH's; GOTOOLCHAIN=local, so nothing is downloaded (the module is stdlib only).
//   node clients/go/scripts/test-with-broker.mjs [-run REGEXP] [--bench]
//   (-run: passed to go test; --bench: the streams bench, examples/bench_streams, instead)
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { startQueen, QUEEN_BIN, ROOT } from '../../../tests/integration/harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const mod = path.resolve(here, '..');
const runIdx = process.argv.indexOf('-run');
const runArg = runIdx > 0 ? ['-run', process.argv[runIdx + 1]] : [];
const bench = process.argv.includes('--bench');

// Each example: its directory under clients/go/examples and what its output must contain.
const EXAMPLES = [
  { name: 'quickstart', expect: /^quickstart: ok$/m },
  // the spec's streams example (shared/spec/streams.txt), the chain of clients/rust/examples/spec_streams.rs
  { name: 'spec_streams', expect: /^total count=6 sum=21$/m },
];

function run(cmd, args, env, { capture = false, timeoutMs = 15 * 60 * 1000 } = {}) {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { cwd: mod, env: { ...process.env, ...env }, stdio: ['ignore', capture ? 'pipe' : 'inherit', 'inherit'] });
    let out = '';
    if (capture) p.stdout.on('data', (d) => { out += d; process.stdout.write(d); });
    const t = setTimeout(() => { process.stderr.write(`sdk-go: ${cmd} ${args.join(' ')} ran past ${timeoutMs / 1000} s: killed\n`); p.kill('SIGKILL'); }, timeoutMs);
    p.on('error', (e) => { clearTimeout(t); process.stderr.write(`sdk-go: ${cmd}: ${e.message}\n`); resolve({ code: 1, out }); });
    p.on('exit', (code, signal) => { clearTimeout(t); resolve({ code: code ?? 1, signal, out }); });
  });
}

let failed = 0;
const t0 = Date.now();
const node = await startQueen();
process.stderr.write(`sdk-go: broker ${QUEEN_BIN} on ${node.url}\n`);
const env = {
  QUEEN_URL: node.url,
  QUEEN_REQUIRE_BROKER: '1', // a broker test may not skip itself here
  GOTOOLCHAIN: 'local',
  GOFLAGS: process.env.GOFLAGS || '',
  PATH: `${path.join(ROOT, '.tools/go/bin')}:${process.env.PATH}`,
  // the 2.x Python runtime of the streams cross-runtime tests (streams/cross_runtime_test.go)
  QUEEN_PYTHON: path.join(ROOT, 'build/venv/bin/python'),
};
// go needs a build cache: without HOME (a bare chroot, env -i) it has no default one
if (!process.env.GOCACHE && !process.env.HOME && !process.env.XDG_CACHE_HOME) env.GOCACHE = path.join(ROOT, 'build/go-cache');
try {
  if (bench) {
    const b = await run('go', ['run', './examples/bench_streams'], env, { timeoutMs: 20 * 60 * 1000 });
    if (b.code !== 0) failed++;
  } else {
    const v = await run('go', ['vet', './...'], env);
    if (v.code !== 0) { failed++; process.stderr.write('sdk-go: go vet failed\n'); }
    const t = await run('go', ['test', '-count=1', '-p', '2', ...runArg, './...'], env);
    if (t.code !== 0) { failed++; process.stderr.write('sdk-go: go test failed\n'); }
    if (runArg.length === 0) {
      for (const ex of EXAMPLES) {
        const r = await run('go', ['run', `./examples/${ex.name}`], env, { capture: true, timeoutMs: 5 * 60 * 1000 });
        if (r.code !== 0 || !ex.expect.test(r.out)) {
          failed++;
          process.stderr.write(`sdk-go: the example ${ex.name} failed or did not print ${ex.expect}\n`);
        } else {
          process.stdout.write(`sdk-go: the example ${ex.name} ran as documented: ok\n`);
        }
      }
    }
  }
} finally {
  try { await node.stop(); } catch (e) { failed++; process.stderr.write(`sdk-go: the broker did not stop cleanly: ${e.message}\n`); }
}
process.stderr.write(`sdk-go: ${failed ? 'FAILED' : 'ok'} in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
process.exitCode = failed ? 1 : 0;
