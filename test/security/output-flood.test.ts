// The output wall: stdout/stderr are captured (never inherited) and capped; truncation is marked.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { wat } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';

test('a guest writing 4 MiB to stdout keeps 1 MiB, marked as truncated', async () => {
  const engine = testEngine({ poolSize: 1 });
  const r = await engine.run(await wat('output-flood'), { invoke: 'flood', args: [64] });
  assert.equal(r.ok, true);
  assert.equal(r.result, 64);
  assert.match(r.stdout, /\[membrane: stdout truncated at 1048576 bytes\]\n$/);
  assert.equal(r.stdout.indexOf('\n[membrane'), 1024 * 1024);
  assert.deepEqual(r.warnings, ['stdout truncated at 1048576 bytes']);
});

test('with failOnOutputLimit the call ends with OUTPUT_LIMIT', async () => {
  const engine = testEngine({ poolSize: 1, failOnOutputLimit: true, outputLimitBytes: 100_000 });
  const r = await engine.run(await wat('output-flood'), { invoke: 'flood', args: [4] });
  assert.equal(r.error?.code, 'OUTPUT_LIMIT');
  assert.equal(r.stdout.length, 65536);
});
