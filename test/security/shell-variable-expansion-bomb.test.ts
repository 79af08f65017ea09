// A short script that expands a huge variable into many arguments (issue #22: 272 bytes made a
// 64 MiB variable and expanded it into 24 arguments; the host reached 1.9 GiB RSS). The shell
// bounds its variables (MAX_SHELL_VARIABLE_BYTES) and one command's argv (MAX_ARGC words,
// MAX_ARGV_BYTES), measuring an expansion before it builds the string.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { CommandRegistry, MAX_ARGC, MAX_ARGV_BYTES, MAX_SHELL_VARIABLE_BYTES, runShell } from '../../src/shell/index.ts';
import { testEngine } from '../helpers/engine.ts';
import { shellPeakRss } from '../helpers/shell-peak-rss.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-sh-bomb-');
const engine = testEngine({ poolSize: 1 });
const registry = CommandRegistry.withBuiltins();
const MiB = 1024 * 1024;

test('a 16-byte variable doubled toward 64 MiB and expanded into 24 arguments stops at the variable bound, host RSS growth under 200 MiB', async () => {
  const doublings = Array.from({ length: 22 }, () => 'A=$A$A').join(';');
  const script = `A=xxxxxxxxxxxxxxxx;${doublings};echo ${Array.from({ length: 24 }, () => '$A').join(' ')}`;
  assert.ok(script.length < 300);
  const r = await shellPeakRss({ script });
  assert.equal(r.result.error?.code, 'MEMORY_LIMIT', r.result.stderr);
  assert.equal(r.result.error?.details['limit'], 'variableBytes');
  assert.match(r.result.stderr, /sh: A: variables would hold \d+ bytes, over the script's 1048576-byte limit/);
  assert.equal(r.result.exitCode, 2);
  assert.equal(r.result.stdout, '', 'echo never ran');
  assert.ok(r.growthBytes < 200 * MiB, `RSS grew ${(r.growthBytes / MiB).toFixed(1)} MiB`);
});

test('a variable within the bound expanded past MAX_ARGV_BYTES is refused before the arguments are built', async () => {
  const half = 'A=xxxxxxxxxxxxxxxx;' + Array.from({ length: 15 }, () => 'A=$A$A').join(';'); // 512 KiB
  const script = `${half};echo ${Array.from({ length: 24 }, () => '$A').join(' ')}`;
  const r = await shellPeakRss({ script });
  assert.equal(r.result.error?.code, 'MEMORY_LIMIT', r.result.stderr);
  assert.equal(r.result.error?.details['limit'], 'argvBytes');
  assert.equal(r.result.error?.details['wantedBytes'], 5 + 24 * (512 * 1024 + 1), '"echo\\0" and 24 × (512 KiB + NUL)');
  assert.match(r.result.stderr, /sh: echo: argument list too long: 12582941 bytes, over the 1048576-byte limit/);
  assert.equal(r.result.fuelUsed, 0, 'no command ran');
  assert.ok(r.growthBytes < 200 * MiB, `RSS grew ${(r.growthBytes / MiB).toFixed(1)} MiB`);
});

test('the argv bound counts prefix assignments, and just under it the command runs', async () => {
  const big = 'x'.repeat(MAX_ARGV_BYTES / 2);
  let r = await runShell(engine, registry, 'E=$B echo $B', { env: { B: big } });
  assert.equal(r.error?.code, 'MEMORY_LIMIT');
  assert.match(r.stderr, /argument list too long/);
  r = await runShell(engine, registry, 'echo $B | wc -c', { env: { B: 'x'.repeat(MAX_ARGV_BYTES - 1024) } });
  assert.equal(r.error, undefined, r.stderr);
  assert.equal(r.stdout, `${MAX_ARGV_BYTES - 1024 + 1}\n`);
});

test(`more than ${MAX_ARGC} words in one command is refused`, async () => {
  const r = await runShell(engine, registry, `echo ${Array.from({ length: MAX_ARGC }, () => 'w').join(' ')}`);
  assert.equal(r.error?.code, 'MEMORY_LIMIT');
  assert.match(r.stderr, /argument list too long: 1025 words, over the limit of 1024/);
});

test('an environment over the variable bound is refused before anything runs', async () => {
  const r = await runShell(engine, registry, 'echo never', { env: { A: 'y'.repeat(MAX_SHELL_VARIABLE_BYTES) } });
  assert.equal(r.error?.code, 'MEMORY_LIMIT');
  assert.match(r.stderr, /^sh: A: variables would hold 1048577 bytes, over the script's 1048576-byte limit\n$/);
  assert.equal(r.stdout, '');
  assert.equal(r.fuelUsed, 0);
});

test('a redirection target built from a huge expansion is refused like an argument', async () => {
  const r = await runShell(engine, registry, 'echo hi > $A$A$A', { env: { A: 'p'.repeat(MAX_SHELL_VARIABLE_BYTES / 2) } });
  assert.equal(r.error?.code, 'MEMORY_LIMIT');
  assert.match(r.stderr, /a redirection: expands to/);
});
