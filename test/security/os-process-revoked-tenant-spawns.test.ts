// Attack: on the os_process tier a guest's commands run inside its child, whose engine — and so
// its own broker cadence — is fresh for every call. A tenant the operator revoked, or one past its
// rate limit for a spawning cap, runs its commands there hoping the child's cadence has never
// heard of it. The cadence for `commands`, `exec` and `parallel` runs in the parent, as the call:
// a revoked tenant's run_command is REVOKED, the rate window is the tenant's across its calls on
// every tier (RATE_LIMITED), and the denial is recorded in the parent's log, marked os_process.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { CommandRegistry } from '../../src/index.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { testEngine } from '../helpers/engine.ts';

const NO_BWRAP = { tier: 'os_process', bwrapPath: '' } as const;
const nest = new Uint8Array(readFileSync(new URL('../fixtures/c/nest.wasm', import.meta.url)));
const registry = CommandRegistry.withBuiltins();
registry.register('nest', nest);
const records: { tenant: string; kind: string; detail: Record<string, unknown> }[] = [];
const engine = testEngine({
  commands: registry,
  poolSize: 1,
  brokers: { rate: { perBroker: { commands: { limit: 4, windowMs: 600_000 } } }, audit: () => ({ append: (e) => void records.push(e) }) },
});
const echo = (tenant: string, tier: object) => engine.run(nest, { profile: 'minimal', tenant, argv: ['run', 'echo', 'x'], ...tier });

test("a revoked tenant's commands are REVOKED in the child too, recorded in the parent marked os_process", { timeout: 60_000 }, async () => {
  assert.equal((await echo('gone', NO_BWRAP)).stdout, 'x\nstatus=0 error=\n');
  engine.revoke({ tenant: 'gone' });
  const here = await echo('gone', {});
  const there = await echo('gone', NO_BWRAP);
  assert.equal(here.stdout, `error ${GUEST_ERR.REVOKED}\n`);
  assert.equal(there.stdout, here.stdout, JSON.stringify(there.error));
  const js = await engine.exec({ language: 'js', profile: 'minimal', tenant: 'gone', code: "try { commands.run('echo', ['x']); 'ran' } catch (e) { e.code }", ...NO_BWRAP });
  assert.equal(js.result, 'REVOKED', JSON.stringify(js.error));
  const denied = records.filter((r) => r.tenant === 'gone' && r.kind === 'denied' && r.detail['tier'] === 'os_process');
  assert.deepEqual(denied.map((r) => [r.detail['broker'], r.detail['code']]), [['commands', 'REVOKED'], ['commands', 'REVOKED']]);
  engine.restore({ tenant: 'gone' });
  assert.equal((await echo('gone', NO_BWRAP)).stdout, 'x\nstatus=0 error=\n');
});

test("the rate window of a spawning cap is the tenant's across its calls and tiers: the child's fresh cadence does not reset it", { timeout: 60_000 }, async () => {
  const ok = 'x\nstatus=0 error=\n';
  // 4 run_commands per window: two on a worker, two in children, then the fifth is refused wherever it runs.
  assert.deepEqual([(await echo('busy', {})).stdout, (await echo('busy', NO_BWRAP)).stdout, (await echo('busy', {})).stdout, (await echo('busy', NO_BWRAP)).stdout], [ok, ok, ok, ok]);
  assert.equal((await echo('busy', NO_BWRAP)).stdout, `error ${GUEST_ERR.RATE_LIMITED}\n`);
  assert.equal((await echo('busy', {})).stdout, `error ${GUEST_ERR.RATE_LIMITED}\n`);
  const limited = records.filter((r) => r.tenant === 'busy' && r.kind === 'denied');
  assert.deepEqual(limited.map((r) => [r.detail['code'], r.detail['tier']]), [['RATE_LIMITED', 'os_process']]); // recorded once per window
  // Another tenant has its own window.
  assert.equal((await echo('calm', NO_BWRAP)).stdout, ok);
});
