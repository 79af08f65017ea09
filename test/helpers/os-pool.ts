/** Test helper for the os_process tier's pool of pre-started children (src/engine/os-process/pool.ts). */

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import type { Engine } from '../../src/index.ts';
import { pooledChildren } from '../../src/engine/os-process/lane.ts';

/** Whether no process `pid` exists any more (not even a zombie). */
export const gone = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH';
  }
};

/** Wait until the engine's pool holds `n` ready children (its configurations together); their pids. */
export async function poolFull(engine: Engine, n: number, withinMs = 30_000): Promise<number[]> {
  const until = Date.now() + withinMs;
  for (;;) {
    const kids = pooledChildren(engine.config);
    if (kids.length >= n && kids.every((k) => k.ready)) return kids.map((k) => k.pid);
    if (Date.now() > until) throw new Error(`the pool did not fill: ${JSON.stringify(kids)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Wait (bounded) until every pid is gone; the ones still there. */
export async function waitGone(pids: readonly number[], withinMs = 10_000): Promise<number[]> {
  const until = Date.now() + withinMs;
  for (;;) {
    const left = pids.filter((p) => !gone(p));
    if (left.length === 0 || Date.now() > until) return left;
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A live child's environment (NAME=value list). */
export function environOf(pid: number): string[] {
  return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').filter(Boolean);
}

/** A live child's MEMBRANE_HOME (its private storage dir). */
export function homeOf(pid: number): string {
  const kv = environOf(pid).find((x) => x.startsWith('MEMBRANE_HOME='));
  if (!kv) throw new Error(`no MEMBRANE_HOME in ${pid}`);
  return kv.slice('MEMBRANE_HOME='.length);
}

export { existsSync };

/** The direct child processes of `pid` (every thread's `children` list; Linux /proc). */
export function childPids(pid: number): number[] {
  const out = new Set<number>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        for (const c of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/)) if (c) out.add(Number(c));
      } catch {
        // the thread ended meanwhile
      }
    }
  } catch {
    // the process ended
  }
  return [...out].sort((a, b) => a - b);
}

/** The number of threads of `pid` (0 once it is gone). */
export function threadCount(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/task`).length;
  } catch {
    return 0;
  }
}

/**
 * Sample a running os_process child every 20 ms until `call` settles: every process it started
 * (its direct children — the spawning caps must start none) and its most threads at once.
 */
export async function watchChild<T>(pidOf: () => number, call: Promise<T>): Promise<{ result: T; started: number[]; maxThreads: number; samples: number }> {
  const started = new Set<number>();
  let maxThreads = 0;
  let samples = 0;
  let done = false;
  const settled = call.finally(() => void (done = true));
  while (!done) {
    const pid = pidOf();
    if (pid > 0) {
      for (const c of childPids(pid)) started.add(c);
      maxThreads = Math.max(maxThreads, threadCount(pid));
      samples += 1;
    }
    await Promise.race([settled.then(() => undefined, () => undefined), new Promise((r) => setTimeout(r, 20))]);
  }
  return { result: await settled, started: [...started], maxThreads, samples };
}
