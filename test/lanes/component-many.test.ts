// membrane:engine/run-command-many for components (cap `parallel`): test/fixtures/components/many
// fans the registered command `wc -c` over its arguments through the same run_command_many host
// call a core guest makes — the fabric's fan-out on the pool, tasks as the caller, one deeper.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { MAX_PARALLEL_INPUTS } from '../../src/brokers/parallel.ts';
import { component } from '../helpers/components.ts';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-component-many-');
const engine = testEngine({ poolSize: 2 });

test('one command over many inputs: each input one task, outputs in input order', async () => {
  const inputs = ['a', 'bb', 'ccc', 'dddd', 'eeeee'];
  const r = await engine.run(component('many'), { profile: 'posix', argv: inputs });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(r.stdout, inputs.map((s) => `0 ${s.length}\n`).join(''));
});

test(`more than ${MAX_PARALLEL_INPUTS} inputs is too-large and runs nothing`, async () => {
  const r = await engine.run(component('many'), { profile: 'posix', argv: Array.from({ length: MAX_PARALLEL_INPUTS + 1 }, () => 'x') });
  assert.equal(r.stdout, 'error 3\n'); // case 3 of error-code: too-large
});

test('without parallel, run-command-many is not linked: LINK_UNSATISFIED before anything runs', async () => {
  const r = await engine.run(component('many'), { profile: 'network', argv: ['a'] });
  assert.equal(r.error?.code, 'LINK_UNSATISFIED');
  assert.match(r.error?.message ?? '', /membrane:engine\/run-command-many@0\.1\.1: needs cap "parallel".*granted by profiles posix/);
  assert.equal(r.fuelUsed, 0);
});
