// A script of spinners under `--timeout 500` (issue #22: the timeout applied per command, so
// 8 spinners ran 4.3 s). `--timeout` is now the whole script's budget: each command gets what is
// left of it, and a script whose budget is spent ends TIMEOUT (CLI exit 68).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { CommandRegistry, runShell } from '../../src/shell/index.ts';
import { runCli } from '../helpers/cli.ts';
import { testEngine } from '../helpers/engine.ts';
import { FIXTURES, wat } from '../helpers/wat.ts';
import { tempDir } from '../helpers/tmp.ts';

const home = tempDir('membrane-sh-deadline-');
process.env['MEMBRANE_HOME'] = home;
// The spinners burn ~3e9 fuel a second on an idle machine: network's own 1e10 ran out inside the
// 3 s budget below (CI 20:41Z), so the operator raises it and only the deadline can stop them.
const engine = testEngine({ poolSize: 2, operatorLimits: { network: { fuel: 1e13 } } });
const registry = CommandRegistry.withBuiltins();
registry.register('spin', await wat('spin-command'));
registry.register('sleep', await wat('sleep-command'));
const SPIN = `spin=${join(FIXTURES, 'wat', 'spin-command.wat')}`;
// Spinners run under `network` (its fuel raised above) so that the deadline, not the fuel wall, stops them.
const NETWORK = { profile: 'network' } as const;
// The budget, plus the engine's grace to stop a runaway and a loaded shared machine's slack;
// far below the 8 × 500 ms the per-command timeout allowed.
const SLACK_MS = 1500;

test('membrane sh --timeout 500 with 8 spinners ends TIMEOUT after ~0.5 s, not 4 s', async () => {
  const script = Array.from({ length: 8 }, () => 'spin').join('; ');
  const r = await runCli(['sh', '--json', '--profile', 'network', '--timeout', '500', '--register', SPIN, '-c', script], { MEMBRANE_HOME: home });
  assert.equal(r.code, 68, r.stderr);
  const out = JSON.parse(r.stdout) as { error: { code: string; message: string }; durationMs: number; stderr: string };
  assert.equal(out.error.code, 'TIMEOUT');
  assert.equal(out.error.message, 'sh: the script ran past its 500 ms budget');
  assert.equal(out.stderr.match(/sh: spin: TIMEOUT/g)?.length, 1, 'the first spinner spent the budget; no other started');
  assert.ok(out.durationMs >= 500 && out.durationMs < 500 + SLACK_MS, `took ${out.durationMs} ms`);
});

test('the deadline holds across ||, && and pipelines', async () => {
  for (const script of ['spin || spin || spin || spin', 'true && spin; true && spin; spin', 'spin | spin | spin | spin']) {
    const t0 = performance.now();
    const r = await runShell(engine, registry, script, { ...NETWORK, timeoutMs: 500 });
    const ms = performance.now() - t0;
    assert.equal(r.error?.code, 'TIMEOUT', `${script}: ${r.stderr}`);
    assert.equal(r.exitCode, 2);
    assert.ok(ms < 500 + SLACK_MS, `${script} took ${ms} ms`);
  }
});

test('each command gets only what is left: work before a spinner shortens it', async () => {
  // 3 s, not 1: seq's part must finish inside the budget even on a loaded CI machine.
  const r = await runShell(engine, registry, 'seq 1 20000 | wc -l; spin; echo never', { ...NETWORK, timeoutMs: 3000 });
  assert.equal(r.error?.code, 'TIMEOUT');
  assert.equal(r.stdout, '20000\n', r.stderr);
  assert.ok(r.durationMs < 3000 + SLACK_MS, `took ${r.durationMs} ms`);
});

test("without --timeout a script's budget is the profile's time per call, and a larger --timeout is clamped to it", async () => {
  const limited = testEngine({ poolSize: 1, operatorLimits: { posix: { timeoutMs: 1200 } } });
  for (const timeoutMs of [undefined, 60_000]) {
    const r = await runShell(limited, registry, 'sleep; sleep', { profile: 'posix', ...(timeoutMs ? { timeoutMs } : {}) });
    assert.equal(r.error?.code, 'TIMEOUT', r.stderr);
    assert.match(r.error?.message ?? '', /ran past its 1200 ms budget/);
    assert.equal(r.stderr.match(/sh: sleep: TIMEOUT/g)?.length, 1);
    assert.ok(r.durationMs < 1200 + SLACK_MS, `took ${r.durationMs} ms`);
    if (timeoutMs) assert.ok(r.warnings.some((w) => /timeoutMs 60000 ms exceeds the posix ceiling of 1200 ms: clamped/.test(w)), r.warnings.join('; '));
  }
});

test('a script that finishes in time has no error', async () => {
  const r = await runShell(engine, registry, 'seq 1 5 | wc -l; echo done', { timeoutMs: 10_000 });
  assert.equal(r.error, undefined, r.stderr);
  assert.equal(r.stdout, '5\ndone\n');
});
