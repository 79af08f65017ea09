// Attack: keep a Python place after the caller gave up. A snippet spins (`while True: pass`) or
// parks in a host power that never answers, under a 60 s budget, and its caller aborts. The call
// must end CANCELLED at once, its interpreter process must be gone (not left spinning until the
// deadline), the lane's place (src/lanes/gate.ts) must be free — the next call starts without
// waiting for the cancelled one — and the power's host function sees its signal fire.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';

process.env['MEMBRANE_HOME'] = mkdtempSync(join(tmpdir(), 'membrane-py-cancel-place-'));
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

type Gate = { stats(): { running: number; waiting: number } };
const internals = engine as unknown as { lanes: { pythonGate: Gate; get(language: 'python'): Promise<{ warm(): Promise<void> }> } };
const poolFull = async (): Promise<void> => (await internals.lanes.get('python')).warm();

/** This process's child processes (the interpreters, or bubblewrap's outer halves). */
function children(): Set<number> {
  try {
    const out = execFileSync('ps', ['-o', 'pid=', '--ppid', String(process.pid)], { encoding: 'utf8' });
    return new Set(out.split('\n').map((s) => Number(s.trim())).filter((n) => n > 0));
  } catch {
    return new Set();
  }
}

async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return cond();
}

async function cancelWhen(code: string, ready: (out: string) => boolean, extra: { caps?: string[] } = {}) {
  await poolFull();
  const before = children();
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
  const running = internals.lanes.pythonGate.stats().running;
  return { r, settledMs, running, before, abortedAt };
}

test('a cancelled spin ends at once, its process is gone, its place is free, and the next call runs', async () => {
  const { r, settledMs, running, before } = await cancelWhen("print('spinning', flush=True)\nwhile True: pass", (o) => o.includes('spinning'));
  assert.equal(r.error?.code, 'CANCELLED', JSON.stringify(r.error));
  assert.ok(settledMs < 50 + LOAD_SLACK_MS, `settled ${settledMs.toFixed(0)} ms after the abort`);
  assert.equal(running, 0, 'the place was freed when the call settled');
  // The interpreter that ran it was one of the pool's children before the call: one of them is gone.
  assert.ok(await until(() => [...before].some((pid) => !children().has(pid)), LOAD_SLACK_MS), 'the spinning interpreter is still alive');
  const t0 = performance.now();
  const next = await engine.exec({ language: 'python', code: '6*7', timeoutMs: LONG_MS });
  assert.equal(next.result, 42);
  assert.ok(performance.now() - t0 < LONG_MS / 2);
});

test('a snippet blocked in a host power that never answers is cancelled too, and the power sees its signal', async () => {
  const before = signalled.length;
  const { r, settledMs, running, abortedAt } = await cancelWhen('acme_slow.never({})', () => false, { caps: ['acme:slow'] });
  assert.equal(r.error?.code, 'CANCELLED', JSON.stringify(r.error));
  assert.ok(settledMs < 50 + LOAD_SLACK_MS, `settled ${settledMs.toFixed(0)} ms after the abort`);
  assert.equal(running, 0);
  assert.ok(await until(() => signalled.length > before, LOAD_SLACK_MS), "the host function's signal did not fire");
  assert.ok(signalled.at(-1)! - abortedAt < LOAD_SLACK_MS);
});
