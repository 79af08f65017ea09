// `A=$A$A` forty times: each line doubles a variable (issue #22: ~600 MiB before V8 refused).
// The shell measures the value before building it and bounds all variables of a script to
// MAX_SHELL_VARIABLE_BYTES, so the script stops at the 20th doubling with MEMORY_LIMIT.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { CommandRegistry, MAX_SHELL_VARIABLE_BYTES, runShell } from '../../src/shell/index.ts';
import { testEngine } from '../helpers/engine.ts';
import { shellPeakRss } from '../helpers/shell-peak-rss.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-sh-doubling-');
const engine = testEngine({ poolSize: 1 });
const registry = CommandRegistry.withBuiltins();
const MiB = 1024 * 1024;
const doubling = (n: number) => `A=x\n${Array.from({ length: n }, (_, i) => `A=$A$A; echo ${i + 1}`).join('\n')}`;

test('A=$A$A × 40 ends with MEMORY_LIMIT at the 20th doubling, host RSS growth under 200 MiB', async () => {
  const r = await shellPeakRss({ script: doubling(40) });
  assert.equal(r.result.error?.code, 'MEMORY_LIMIT', r.result.stderr);
  assert.equal(r.result.error?.details['limit'], 'variableBytes');
  assert.equal(r.result.error?.details['wantedBytes'], 1 + 2 ** 20, "'A' and 2^20 bytes");
  assert.match(r.result.stderr, /sh: A: variables would hold 1048577 bytes, over the script's 1048576-byte limit\n$/);
  assert.equal(r.result.stdout.trim().split('\n').at(-1), '19', 'the 19th doubling (512 KiB) was the last to fit');
  assert.equal(r.result.exitCode, 2);
  assert.ok(r.growthBytes < 200 * MiB, `RSS grew ${(r.growthBytes / MiB).toFixed(1)} MiB`);
  assert.ok(r.wallMs < 30_000, `took ${r.wallMs} ms`);
});

test('the bound is on all variables together: many half-full variables stop at the same total', async () => {
  const half = 'x'.repeat(MAX_SHELL_VARIABLE_BYTES / 4 - 8); // H, B, C and D fit; E does not
  const r = await runShell(engine, registry, 'B=$H; C=$H; D=$H; echo three; E=$H; echo never', { env: { H: half } });
  assert.equal(r.error?.code, 'MEMORY_LIMIT');
  assert.equal(r.stdout, 'three\n');
  assert.match(r.stderr, /sh: E: variables would hold/);
});

test('reassigning a variable frees its old size: a value rewritten 100 times stays within the bound', async () => {
  const r = await runShell(engine, registry, `${Array.from({ length: 100 }, () => 'A=$H').join('; ')}; echo ok`, { env: { H: 'z'.repeat(MAX_SHELL_VARIABLE_BYTES / 3) } });
  assert.equal(r.error, undefined, r.stderr);
  assert.equal(r.stdout, 'ok\n');
});
