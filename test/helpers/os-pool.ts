/** Test helper for the os_process tier's pool of pre-started children (src/engine/os-process/pool.ts). */

import { existsSync, readFileSync } from 'node:fs';
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
