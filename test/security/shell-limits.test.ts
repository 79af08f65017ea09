// The shell's own bounds: a script cannot run unbounded numbers of sandboxes or pipeline stages,
// and what it cannot parse never runs.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { CommandRegistry, MAX_PIPELINE_STAGES, MAX_SCRIPT_BYTES, runShell } from '../../src/shell/index.ts';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-sh-limits-');
const engine = testEngine({ poolSize: 1 });
const registry = CommandRegistry.withBuiltins();

test('a pipeline longer than the stage limit is refused before any stage runs', async () => {
  const script = Array.from({ length: MAX_PIPELINE_STAGES + 1 }, () => 'cat').join(' | ');
  const r = await runShell(engine, registry, script);
  assert.equal(r.exitCode, 2);
  assert.match(r.stderr, /more than 64 commands/);
  assert.equal(r.fuelUsed, 0);
});

test('a script that runs more commands than its step budget is stopped', async () => {
  const r = await runShell(engine, registry, 'echo 1; echo 2; echo 3; echo 4; echo 5', { maxSteps: 3 });
  assert.equal(r.exitCode, 2);
  assert.equal(r.stdout, '1\n2\n3\n');
  assert.match(r.stderr, /more than 3 commands/);
});

test('a script over 64 KiB, or one using backgrounding or command substitution, is a syntax error that runs nothing', async () => {
  for (const script of ['x'.repeat(MAX_SCRIPT_BYTES + 1), 'echo a & echo b', 'echo `echo pwned`', 'echo $(id)']) {
    await assert.rejects(runShell(engine, registry, script), /syntax error/);
  }
});
