// Attack: keep a Python place after the caller gave up. A snippet spins (`while True: pass`) or
// parks in a host power that never answers, under a 60 s budget, and its caller aborts. The call
// must end CANCELLED at once, its interpreter must be gone (no thread left spinning until the
// deadline: the process spends almost no CPU once the lane's pool has refilled), the engine's
// worker must be free — the next call starts without waiting for the cancelled one — and the
// power's host function sees its signal fire. (That no child process is spawned is in
// test/lanes/cpython.test.ts.)
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { LOAD_SLACK_MS, cpuMsDuring } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-py-cancel-place-');
const LONG_MS = 60_000;
const signalled: number[] = [];
/** Called when the host function is entered (the test aborts there: the snippet is then blocked in it). */
let entered: (() => void) | null = null;
const engine = testEngine({
  poolSize: 1,
  hostFunctions: {
    'acme:slow': {
      // Never answers; records when the call's signal fires.
      never: (_a, ctx) => {
        ctx.signal.addEventListener('abort', () => signalled.push(performance.now()));
        entered?.();
        return new Promise(() => {});
      },
    },
  },
});

const internals = engine as unknown as { lanes: { get(language: 'python'): Promise<{ warm(): Promise<void> }> } };
/** Resolves when the lane's pool is full and no interpreter is booting. */
const poolFull = async (): Promise<void> => (await internals.lanes.get('python')).warm();

async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return cond();
}

async function cancelWhen(code: string, ready: (out: string) => boolean, extra: { caps?: string[] } = {}) {
  await poolFull();
  const ac = new AbortController();
  let abortedAt = 0;
  let out = '';
  entered = () => {
    abortedAt = performance.now();
    ac.abort();
  };
  const pending = engine.exec({
    language: 'python',
    code,
    timeoutMs: LONG_MS,
    signal: ac.signal,
    ...extra,
    onStdout: (c) => {
      out += c;
      if (abortedAt === 0 && ready(out)) {
        abortedAt = performance.now();
        ac.abort();
      }
    },
  });
  const r = await pending;
  const settledMs = performance.now() - abortedAt;
  return { r, settledMs, abortedAt };
}

/** CPU this process spends in half a second once the pool has refilled: a spinning interpreter would take ~500 ms. */
async function idleCpuMs(): Promise<number> {
  await poolFull();
  return cpuMsDuring(500);
}

test('a cancelled spin ends at once, its interpreter stops, its worker is free, and the next call runs', async () => {
  const { r, settledMs } = await cancelWhen("print('spinning', flush=True)\nwhile True: pass", (o) => o.includes('spinning'));
  assert.equal(r.error?.code, 'CANCELLED', JSON.stringify(r.error));
  assert.ok(settledMs < 50 + LOAD_SLACK_MS, `settled ${settledMs.toFixed(0)} ms after the abort`);
  const cpu = await idleCpuMs();
  assert.ok(cpu < 250, `${cpu.toFixed(0)} ms of CPU in 500 ms after the abort: the interpreter still spins`);
  const t0 = performance.now();
  const next = await engine.exec({ language: 'python', code: '6*7', timeoutMs: LONG_MS });
  assert.equal(next.result, 42);
  assert.ok(performance.now() - t0 < LONG_MS / 2);
});

test('a snippet blocked in a host power that never answers is cancelled too, and the power sees its signal', async () => {
  const before = signalled.length;
  const { r, settledMs, abortedAt } = await cancelWhen('acme_slow.never({})', () => false, { caps: ['acme:slow'] });
  assert.equal(r.error?.code, 'CANCELLED', JSON.stringify(r.error));
  assert.ok(settledMs < 50 + LOAD_SLACK_MS, `settled ${settledMs.toFixed(0)} ms after the abort`);
  const next = await engine.exec({ language: 'python', code: '6*7', timeoutMs: LONG_MS });
  assert.equal(next.result, 42, 'the worker was not freed');
  assert.ok(await until(() => signalled.length > before, LOAD_SLACK_MS), "the host function's signal did not fire");
  assert.ok(signalled.at(-1)! - abortedAt < LOAD_SLACK_MS);
});
