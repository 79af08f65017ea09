// Attack: park a guest inside an embedder host function that never answers (or answers long
// after). The call ends TIMEOUT at its own deadline — not later, whatever the function does —
// the function's `ctx.signal` fires (reason: a TIMEOUT SandboxError) and `ctx.deadline` told it
// when; the worker is freed for the next call, and a late answer reaches no one. A core guest,
// a JS snippet and a Python snippet; fuel does not run while the guest waits.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { HostFunctionContext } from '../../src/index.ts';
import { hostGuest } from '../helpers/host-functions.ts';
import { testEngine } from '../helpers/engine.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-hostfn-hung-');
const BUDGET_MS = 1000;
/** The property is "ends at the deadline"; the slack is for a loaded machine, far below the 60 s the function would hang. */
const BOUND_MS = BUDGET_MS + LOAD_SLACK_MS;
const HANG_MS = 60_000;

const signals: { reason: unknown; deadline: number; at: number }[] = [];
const timers = new Set<NodeJS.Timeout>();
const watch = (ctx: HostFunctionContext): void => {
  ctx.signal.addEventListener('abort', () => signals.push({ reason: ctx.signal.reason, deadline: ctx.deadline, at: Date.now() }));
};
const engine = testEngine({
  poolSize: 1,
  hostFunctions: {
    'acme:slow': {
      // Ignores its signal: never settles.
      never: (_a, ctx) => {
        watch(ctx);
        return new Promise(() => {});
      },
      // Answers long after the deadline (the timer is cleared when the test ends).
      late: (_a, ctx) => {
        watch(ctx);
        return new Promise((resolve) => {
          const t = setTimeout(() => resolve({ late: true }), HANG_MS);
          timers.add(t);
        });
      },
      quick: () => 'ok',
    },
  },
});
test.after(() => {
  for (const t of timers) clearTimeout(t);
});

test('core guest: a host function that never answers ends the call TIMEOUT at its deadline; the signal fires; the worker is free', async () => {
  for (const fn of ['never', 'late']) {
    const g = await hostGuest('acme:slow', fn, '{}');
    const before = signals.length;
    const t0 = performance.now();
    const r = await engine.run(g.bytes, { invoke: 'call', args: [2, 4096], caps: ['acme:slow'], timeoutMs: BUDGET_MS });
    const took = performance.now() - t0;
    assert.equal(r.ok, false, fn);
    assert.equal(r.error?.code, 'TIMEOUT', `${fn}: ${JSON.stringify(r.error)}`);
    assert.ok(took < BOUND_MS, `${fn} took ${took.toFixed(0)} ms`);
    assert.ok(took >= BUDGET_MS * 0.9, `${fn} ended early: ${took.toFixed(0)} ms`);
    assert.equal(signals.length, before + 1, 'ctx.signal fired once');
    const s = signals.at(-1)!;
    assert.equal((s.reason as { code?: string }).code, 'TIMEOUT');
    assert.ok(Math.abs(s.at - s.deadline) < 500 + LOAD_SLACK_MS, 'ctx.deadline is when the signal fired');
    assert.ok(r.fuelUsed < 1e6, `fuel ran while the guest waited: ${r.fuelUsed}`);
  }
  const q = await hostGuest('acme:slow', 'quick', '');
  const next = await engine.run(q.bytes, { invoke: 'call', args: [0, 64], caps: ['acme:slow'] });
  assert.equal(next.ok, true, next.error?.message);
  assert.equal(next.stdout, '"ok"');
});

test('JS and Python snippets: the same wall', async () => {
  // Each lane started once first, so no bound below includes an interpreter's cold start.
  for (const language of ['js', 'python'] as const) assert.equal((await engine.exec({ language, code: '1', caps: ['acme:slow'] })).ok, true);
  for (const [language, code] of [
    ['js', 'acme_slow.never({})'],
    ['python', 'acme_slow.never({})'],
  ] as const) {
    const before = signals.length;
    const t0 = performance.now();
    const r = await engine.exec({ language, code, caps: ['acme:slow'], timeoutMs: BUDGET_MS });
    const took = performance.now() - t0;
    assert.equal(r.ok, false, language);
    assert.equal(r.error?.code, 'TIMEOUT', `${language}: ${JSON.stringify(r.error)}`);
    assert.ok(took < BOUND_MS, `${language} took ${took.toFixed(0)} ms`);
    // The function saw its signal fire (the lane's deadline or the job's end, whichever first).
    await new Promise((r2) => setTimeout(r2, 200));
    assert.equal(signals.length, before + 1, `${language}: ctx.signal fired`);
  }
  const ok = await engine.exec({ language: 'js', code: 'acme_slow.quick()', caps: ['acme:slow'] });
  assert.equal(ok.result, 'ok');
});
