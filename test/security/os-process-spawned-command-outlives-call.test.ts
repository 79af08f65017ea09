// Attack: on the os_process tier a guest's spawning caps run inside its child. A guest (or a JS
// snippet) spawns commands that run far past its call — a process_spawn'd spinner it never gets to
// wait out, an exec'd one — hoping something outlives the call: a host process started for the
// spawn, a thread, a slot of its tenant. Nothing may: the spawned commands are threads of the
// child (it starts no process at all), the call ends at its deadline, the child is killed and
// reaped, and the tenant's live-process slots (counted in the parent) come back.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { CommandRegistry } from '../../src/index.ts';
import { testEngine } from '../helpers/engine.ts';
import { childPids, waitGone, watchChild } from '../helpers/os-pool.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';

const NO_BWRAP = { tier: 'os_process', bwrapPath: '' } as const;
const registry = CommandRegistry.withBuiltins();
registry.register('nest', new Uint8Array(readFileSync(new URL('../fixtures/c/nest.wasm', import.meta.url))));
const nest = registry.get('nest')!;
// No pool: every process this test file's parent has is one the test can name.
// Only the deadline ends the spinners: minimal's 1e9 fuel ran out first on an idle machine (CI 22:10Z, Node 24).
const engine = testEngine({ commands: registry, poolSize: 1, osProcessPool: 0, operatorLimits: { minimal: { fuel: 1e13 } } });
const TIMEOUT_MS = 1_500;
/** The parent's deadline for a call: its budget + the child's boot allowance (5 s) + grace. */
const BOUND_MS = TIMEOUT_MS + 5_000 + 500 + LOAD_SLACK_MS;

type Outcome = { ok: boolean; error?: { code: string } | undefined };
const CASES: [string, (tenant: string, onChildSpawn: (p: number) => void) => Promise<Outcome>][] = [
  ['a core guest process_spawns spinners and waits past its deadline', (tenant: string, onChildSpawn: (p: number) => void) => engine.run(nest, { profile: 'minimal', tenant, argv: ['spawn', '3', 'nest', 'spin', '60000'], timeoutMs: TIMEOUT_MS, onChildSpawn, ...NO_BWRAP })],
  ['a core guest execs a spinner', (tenant: string, onChildSpawn: (p: number) => void) => engine.run(nest, { profile: 'minimal', tenant, argv: ['exec', 'nest', 'spin', '60000'], timeoutMs: TIMEOUT_MS, onChildSpawn, ...NO_BWRAP })],
  ['a JS snippet runs a command that spawns a spinner', (tenant: string, onChildSpawn: (p: number) => void) => engine.exec({ language: 'js', profile: 'minimal', tenant, code: "commands.run('nest', ['spawn', '1', 'nest', 'spin', '60000'])", timeoutMs: TIMEOUT_MS, onChildSpawn, ...NO_BWRAP })],
];

for (const [name, run] of CASES) {
  test(`${name}: TIMEOUT at its deadline, no process started by the spawn, the child reaped, no slot left`, { timeout: 60_000 }, async () => {
    const tenant = `outlive-${name.length}`;
    const before = childPids(process.pid);
    let pid = 0;
    const t0 = performance.now();
    const { result, started, samples } = await watchChild(() => pid, run(tenant, (p) => (pid = p)));
    const ms = performance.now() - t0;
    assert.equal(result.ok, false);
    assert.equal(result.error?.code, 'TIMEOUT', JSON.stringify(result.error));
    assert.ok(ms < BOUND_MS, `the call took ${ms} ms`);
    assert.ok(pid > 0 && samples > 0, 'the child was watched while it ran');
    assert.deepEqual(started, [], 'the spawned commands started no process: they are threads of the child');
    assert.deepEqual(await waitGone([pid]), [], 'the child is gone');
    assert.deepEqual(childPids(process.pid), before, 'no process of the call is left under the host');
    assert.deepEqual(engine.principalUsage(tenant), { execs: 0, processes: 0 });
  });
}
