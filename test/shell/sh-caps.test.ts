// ShellOptions.caps narrows every command's grant (the agent's shell tool passes its grant):
// a command that imports run_command links under `minimal`, and not when the caps leave out
// `commands`.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { CommandRegistry } from '../../src/index.ts';
import { runShell } from '../../src/shell/index.ts';
import { testEngine } from '../helpers/engine.ts';

const registry = CommandRegistry.withBuiltins();
registry.register('nest', new Uint8Array(readFileSync(new URL('../fixtures/c/nest.wasm', import.meta.url))));
const engine = testEngine({ commands: registry });

test('caps narrow the commands a script runs', async () => {
  const full = await runShell(engine, registry, 'nest run seq 1 3', { profile: 'minimal' });
  assert.equal(full.exitCode, 0, full.stderr);
  assert.match(full.stdout, /1\n2\n3/);
  const narrowed = await runShell(engine, registry, 'nest run seq 1 3', { profile: 'minimal', caps: ['vfs'] });
  assert.notEqual(narrowed.exitCode, 0);
  assert.match(narrowed.stderr, /LINK_UNSATISFIED/);
});
