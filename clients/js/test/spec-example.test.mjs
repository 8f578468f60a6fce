// The spec's JS example (examples/spec-example.mjs, verbatim) runs as printed against the real
// broker — only its url literal is pointed at the test's node — and its output is checked: one
// message per closed minute on orders.per_minute with the count and sum of the positive orders.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { broker, readSink, waitFor, client, sleep } from './_broker.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

test('the spec\'s JS example runs as printed and emits one {count, sum} per minute', { timeout: 150000 }, async (t) => {
  const node = await broker(t);
  const queen = client(node);
  const text = fs.readFileSync(path.join(here, '../examples/spec-example.mjs'), 'utf8');
  assert.ok(text.includes("import { Queen, Stream } from 'queen-mq'") && text.includes("const url = 'http://localhost:6632'"));
  // a copy inside the package, so that 'queen-mq' resolves to this package by its own name
  const copy = path.join(here, `../examples/.spec-run-${process.pid}.mjs`);
  fs.writeFileSync(copy, text.replace("'http://localhost:6632'", `'${node.url}'`));
  t.after(() => fs.rmSync(copy, { force: true }));
  // all orders inside one minute: wait for a fresh one when fewer than 20 s are left
  const s = new Date().getUTCSeconds();
  if (s > 40) await sleep((61 - s) * 1000);
  const child = spawn(process.execPath, [copy], { stdio: ['ignore', 'inherit', 'inherit'] });
  t.after(() => child.kill('SIGKILL'));
  const amounts = [10, -5, 7, 0, 25, 3.5];
  await queen.queue('orders').push(amounts.map((amount, i) => ({ data: { id: i, amount } })));
  const rows = await waitFor(async () => { const r = await readSink(queen, 'orders.per_minute'); return r.length ? r : null; }, 100000, 'the minute to close');
  await sleep(1000);
  const all = await readSink(queen, 'orders.per_minute');
  assert.equal(all.length, 1, 'one message for the minute');
  assert.deepEqual(rows[0].payload, { count: 4, sum: 45.5 });
  assert.equal(rows[0].partition, 'Default');
  process.stdout.write(`# spec example emitted ${JSON.stringify(rows[0].payload)} on orders.per_minute\n`);
});
