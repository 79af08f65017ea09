// The attack: an os_process child that never answers, floods its reply, or dies mid-call, to
// hold the caller, exhaust the parent's memory, or leave processes behind. The parent kills the
// child's process group at its deadline (TIMEOUT), at the reply cap (OUTPUT_LIMIT), and reports
// a silent death as INSTANCE_DEAD; no child outlives its call.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SandboxError } from '../../src/errors.ts';
import { runChild, type SpawnPlan } from '../../src/engine/os-process/spawn.ts';

const PROBE = join(dirname(fileURLToPath(import.meta.url)), '../fixtures/os-process/probe.mjs');

const gone = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH';
  }
};

async function attempt(mode: string, plan: Partial<SpawnPlan>, extra: Record<string, unknown> = {}): Promise<{ error: unknown; pid: number; ms: number }> {
  let pid = 0;
  const t0 = performance.now();
  const base: SpawnPlan = { entry: PROBE, readDirs: [], bwrap: null, addons: false, shareNet: false, killAfterMs: 10_000, maxReplyBytes: 1 << 20, onSpawn: (p) => (pid = p) };
  const error = await runChild({ ...base, ...plan }, JSON.stringify({ mode, ...extra })).then(() => null, (e: unknown) => e);
  return { error, pid, ms: performance.now() - t0 };
}

const code = (c: string) => (e: unknown) => e instanceof SandboxError && e.code === c;

test('a child that never answers is SIGKILLed at its deadline: TIMEOUT, and the process is gone', async () => {
  const r = await attempt('hang', { killAfterMs: 300 });
  assert.ok(code('TIMEOUT')(r.error), String(r.error));
  assert.ok(r.ms < 10_000);
  assert.ok(r.pid > 0 && gone(r.pid));
});

test('a child that floods its reply is killed at the cap: OUTPUT_LIMIT, and the process is gone', async () => {
  const r = await attempt('flood', { maxReplyBytes: 64 * 1024 }, { bytes: 8 * 1024 * 1024 });
  assert.ok(code('OUTPUT_LIMIT')(r.error), String(r.error));
  assert.ok(r.pid > 0 && gone(r.pid));
});

test('a child that dies without a reply is INSTANCE_DEAD', async () => {
  const r = await attempt('crash', {});
  assert.ok(code('INSTANCE_DEAD')(r.error), String(r.error));
  assert.doesNotMatch((r.error as Error).message, /\//); // no host paths
});

test('a cancelled call kills its child: CANCELLED, and the process is gone', async () => {
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 200);
  const r = await attempt('hang', { signal: ac.signal });
  assert.ok(code('CANCELLED')(r.error), String(r.error));
  assert.ok(r.pid > 0 && gone(r.pid));
});
