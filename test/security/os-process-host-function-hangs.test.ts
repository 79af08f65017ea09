// Attack: park a guest on the os_process tier inside an embedder host function that never
// answers. The function runs in the parent; the child waits on its answer line. The call ends
// TIMEOUT at its own budget — not later, whatever the function does — the function's
// `ctx.signal` fires in the parent (reason TIMEOUT) and the child is gone. A hijacked child that
// claims an unbounded deadline for its request (`leftMs`) and never replies gets no more: the
// function's deadline is never past the child's kill time, and its signal fires when the child
// is killed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { HostFunctionContext } from '../../src/index.ts';
import { SandboxError } from '../../src/errors.ts';
import { hostGuest } from '../helpers/host-functions.ts';
import { testEngine } from '../helpers/engine.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';
import { callerOf, forged, hostRequest, testBrokers, waitGone, type Record_ } from '../helpers/forged-child.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-os-hostfn-hung-');
const OS = { tier: 'os_process', bwrapPath: '' } as const;
const BUDGET_MS = 1000;
/** The property is "ends at the budget"; the slack is for a loaded machine, far below forever. */
const BOUND_MS = BUDGET_MS + LOAD_SLACK_MS;

const signals: { reason: unknown; deadline: number; at: number }[] = [];
const never = (_a: unknown, ctx: HostFunctionContext): Promise<never> => {
  ctx.signal.addEventListener('abort', () => signals.push({ reason: ctx.signal.reason, deadline: ctx.deadline, at: Date.now() }));
  return new Promise(() => {});
};
const engine = testEngine({ poolSize: 1, osProcessPool: 1, hostFunctions: { 'acme:slow': { never, quick: () => 'ok' } } });

test('a WAT guest and a JS snippet on os_process: TIMEOUT at the budget, ctx.signal fired, the child gone', async () => {
  const g = await hostGuest('acme:slow', 'never', '{}');
  // The lanes warm first, so no bound below includes a cold start.
  assert.equal((await engine.exec({ language: 'js', code: '1', caps: ['acme:slow'], ...OS })).ok, true);
  for (const call of [
    (onChildSpawn: (pid: number) => void) => engine.run(g.bytes, { invoke: 'call', args: [2, 4096], caps: ['acme:slow'], timeoutMs: BUDGET_MS, onChildSpawn, ...OS }),
    (onChildSpawn: (pid: number) => void) => engine.exec({ language: 'js', code: 'acme_slow.never({})', caps: ['acme:slow'], timeoutMs: BUDGET_MS, onChildSpawn, ...OS }),
  ]) {
    const before = signals.length;
    let pid = 0;
    const t0 = performance.now();
    const r = await call((p) => (pid = p));
    const took = performance.now() - t0;
    assert.equal(r.ok, false);
    assert.equal(r.error?.code, 'TIMEOUT', JSON.stringify(r.error));
    assert.ok(took < BOUND_MS, `took ${took.toFixed(0)} ms`);
    assert.ok(pid > 0);
    assert.deepEqual(await waitGone([pid]), [], 'the child is gone');
    await new Promise((r) => setTimeout(r, 100)); // the parent's own timer may fire a moment after the child's reply
    assert.equal(signals.length, before + 1, 'ctx.signal fired once');
    const s = signals.at(-1)!;
    assert.ok(['TIMEOUT', 'CANCELLED'].includes((s.reason as SandboxError).code), String(s.reason));
    assert.ok(s.deadline - t0 - performance.timeOrigin <= BUDGET_MS + LOAD_SLACK_MS, 'ctx.deadline within the budget');
  }
  const q = await hostGuest('acme:slow', 'quick', '');
  const next = await engine.run(q.bytes, { invoke: 'call', args: [0, 64], caps: ['acme:slow'], ...OS });
  assert.equal(next.stdout, '"ok"');
});

test("a hijacked child claiming an unbounded deadline: the function's deadline is the child's kill time; its signal fires when the child dies", async () => {
  const records: Record_[] = [];
  const at: { deadline: number; fired: number | null }[] = [];
  const brokers = testBrokers(records, {}, {
    'acme:slow': {
      never: (_a, ctx) => {
        const me = { deadline: ctx.deadline, fired: null as number | null };
        at.push(me);
        ctx.signal.addEventListener('abort', () => (me.fired = Date.now()));
        return new Promise(() => {});
      },
    },
  });
  const KILL_MS = 1500;
  const t0 = Date.now();
  const r = await forged(brokers, callerOf('mallory', [], ['acme:slow']), { lines: [hostRequest(1, 'acme:slow', 'never', '{}', { leftMs: 1e15 })], hang: true }, KILL_MS);
  assert.ok(r.error instanceof SandboxError, String(r.error));
  assert.equal(at.length, 1);
  assert.ok(at[0]!.deadline - t0 <= KILL_MS + LOAD_SLACK_MS, `deadline ${at[0]!.deadline - t0} ms after the start`);
  assert.ok(at[0]!.fired !== null, 'ctx.signal fired');
  assert.ok(at[0]!.fired! - t0 < KILL_MS + LOAD_SLACK_MS);
  assert.deepEqual(await waitGone([r.pid]), []);
});
