// check-cargo.test.mjs — scripts/check-cargo.sh's decision, which cargo the Rust SDK's suite uses
// and when install-deps.sh test brings the pinned Rust into .tools/rust, with fake cargos (a
// script printing a version) on a PATH of only those and the system's /usr/bin:/bin, and a fake
// HOME. The scripts run from a copy (a temporary repository root), so the repository's own
// .tools is never touched; the bring itself is tried only against an address that refuses, for
// its failure sentence (the real bring is checked by scripts/check-fresh-debian.sh).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { ROOT } from './harness.mjs';

const versions = fs.readFileSync(path.join(ROOT, 'scripts/versions.sh'), 'utf8');
const pin = /^QUEEN_RUST_PIN=(\S+)$/m.exec(versions)[1];
const min = /^QUEEN_CARGO_MIN=(\S+)$/m.exec(versions)[1];
const rustupPin = /^QUEEN_RUSTUP_PIN=(\S+)$/m.exec(versions)[1];

function repo() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'queen-check-cargo-'));
  fs.mkdirSync(path.join(dir, 'scripts'));
  for (const f of ['check-cargo.sh', 'versions.sh']) fs.copyFileSync(path.join(ROOT, 'scripts', f), path.join(dir, 'scripts', f));
  fs.chmodSync(path.join(dir, 'scripts/check-cargo.sh'), 0o755);
  fs.mkdirSync(path.join(dir, 'home'));
  return dir;
}
function fakeCargo(dir, version) { // dir/cargo printing `cargo VERSION (...)`, or failing when version is null
  fs.mkdirSync(dir, { recursive: true });
  const body = version === null ? 'exit 127' : `echo "cargo ${version} (0000000 2026-01-01)"`;
  fs.writeFileSync(path.join(dir, 'cargo'), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return path.join(dir, 'cargo');
}
function run(root, args, { pathDirs = [], env = {} } = {}) {
  const r = spawnSync(path.join(root, 'scripts/check-cargo.sh'), args, {
    encoding: 'utf8',
    env: { PATH: [...pathDirs, '/usr/bin', '/bin'].join(':'), HOME: path.join(root, 'home'), ...env },
  });
  return { status: r.status, out: r.stdout.trim(), err: r.stderr.trim() };
}

test('no cargo at all, or an older one (Debian 12: 0.66): the pinned Rust is brought', (t) => {
  const root = repo();
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  if (!fs.existsSync('/usr/bin/cargo')) {
    const none = run(root, ['--decide']);
    assert.equal(none.status, 0, none.err);
    assert.equal(none.out, `bring Rust ${pin} into .tools/rust (no cargo on PATH)`);
  }
  const old = fakeCargo(path.join(root, 'old'), '0.66.0');
  const r = run(root, ['--decide'], { pathDirs: [path.dirname(old)] });
  assert.equal(r.out, `bring Rust ${pin} into .tools/rust (cargo 0.66.0 at ${old})`);
  // just below the minimum, and one that does not run
  const below = fakeCargo(path.join(root, 'below'), '1.87.9');
  assert.match(run(root, ['--decide'], { pathDirs: [path.dirname(below)] }).out, /^bring /);
  const broken = fakeCargo(path.join(root, 'broken'), null);
  assert.equal(run(root, ['--decide'], { pathDirs: [path.dirname(broken)] }).out,
    `bring Rust ${pin} into .tools/rust (a cargo that does not run at ${broken})`);
  // without --bring, one sentence that names what was found and what brings it
  const c = run(root, [], { pathDirs: [path.dirname(old)] });
  assert.equal(c.status, 1);
  assert.equal(c.err, `check-cargo: the Rust SDK's tests need cargo >= ${min} and found cargo 0.66.0 at ${old}: scripts/install-deps.sh test (make test runs it) brings Rust ${pin} into .tools/rust`);
});

test("a cargo new enough on PATH or in ~/.cargo/bin (rustup's) is used, and ~/.cargo/bin goes before PATH", (t) => {
  const root = repo();
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  const onPath = fakeCargo(path.join(root, 'new'), min);
  let r = run(root, ['--decide'], { pathDirs: [path.dirname(onPath)] });
  assert.equal(r.out, `use cargo ${min} at ${onPath}`);
  assert.equal(run(root, [], { pathDirs: [path.dirname(onPath)] }).status, 0);
  r = run(root, ['--bring'], { pathDirs: [path.dirname(onPath)] });
  assert.equal(r.status, 0, r.err);
  assert.equal(r.out, `cargo: cargo ${min} at ${onPath} (the Rust SDK's tests need >= ${min})`);
  assert.ok(!fs.existsSync(path.join(root, '.tools')), 'nothing brought');

  const old = fakeCargo(path.join(root, 'old'), '0.66.0');
  const rustup = fakeCargo(path.join(root, 'home/.cargo/bin'), '1.95.0');
  r = run(root, ['--decide'], { pathDirs: [path.dirname(old)] });
  assert.equal(r.out, `use cargo 1.95.0 at ${rustup}`);
});

test('a brought toolchain of the pin comes first; one of another pin or half installed goes', (t) => {
  const root = repo();
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  fakeCargo(path.join(root, 'home/.cargo/bin'), '1.99.0');
  const brought = fakeCargo(path.join(root, '.tools/rust/bin'), pin);
  let r = run(root, ['--decide']);
  assert.equal(r.out, `use cargo ${pin} at ${brought}`);

  fakeCargo(path.join(root, '.tools/rust/bin'), '1.90.0'); // an earlier pin
  r = run(root, ['--decide']);
  assert.equal(r.out, `remove .tools/rust (not a complete Rust ${pin}), then use cargo 1.99.0 at ${path.join(root, 'home/.cargo/bin/cargo')}`);
  r = run(root, ['--bring']);
  assert.equal(r.status, 0, r.err);
  assert.ok(!fs.existsSync(path.join(root, '.tools/rust')), 'the stale toolchain was removed');

  fs.mkdirSync(path.join(root, '.tools/rust/rustup'), { recursive: true }); // a bring that stopped halfway
  fs.rmSync(path.join(root, 'home/.cargo'), { recursive: true });
  const old = fakeCargo(path.join(root, 'old'), '0.66.0');
  r = run(root, ['--decide'], { pathDirs: [path.dirname(old)] });
  assert.equal(r.out, `remove .tools/rust (not a complete Rust ${pin}), then bring Rust ${pin} into .tools/rust (cargo 0.66.0 at ${old})`);
});

test('a bring that cannot download fails in one sentence naming what it tried, and leaves no .tools/rust', (t) => {
  const root = repo();
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  const old = fakeCargo(path.join(root, 'old'), '0.66.0');
  const base = 'https://127.0.0.1:9'; // the discard port: refused
  const r = run(root, ['--bring'], { pathDirs: [path.dirname(old)], env: { QUEEN_RUSTUP_BASE: base } });
  assert.equal(r.status, 1);
  const lines = r.err.split('\n');
  const last = lines[lines.length - 1];
  const triple = `${os.arch() === 'arm64' ? 'aarch64' : 'x86_64'}-unknown-linux-gnu`;
  const what = `Rust ${pin} (rustup-init ${rustupPin} from ${base}/rustup/archive/${rustupPin}/${triple}/rustup-init) into .tools/rust`;
  assert.equal(last, `check-cargo: the Rust SDK's tests need cargo >= ${min}, found cargo 0.66.0 at ${old}, and bringing ${what} failed: the download of rustup-init (curl, above) did not succeed`);
  assert.ok(!fs.existsSync(path.join(root, '.tools/rust')));
});
