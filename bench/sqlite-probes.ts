/**
 * The probes bench/sqlite-features.ts shares between the two bindings: running a snippet in a
 * fresh Node (warnings on load, surviving the garbage collector), a busy lock held against a
 * second connection, the heap limit, and the helpers that turn an outcome into a table cell.
 *
 * Invariant: a probe never throws past `attempt`; files live in one private temp directory that
 * `removeProbeFiles` removes.
 */

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './lib.ts';

export type Probe = () => string;

export const BIG = 2n ** 53n + 1n;
/** How long the idle-GC probe waits; the collector's idle pass comes well within it. */
export const IDLE_MS = 1500;
const dir = mkdtempSync(join(tmpdir(), 'membrane-sqlite-features-'));
let files = 0;
/** Remove every file `freshFile` named. */
export const removeProbeFiles = () => rmSync(dir, { recursive: true, force: true });
export const freshFile = () => join(dir, `db${files++}.sqlite`);

export function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const e = err as Error & { code?: unknown; errcode?: unknown; errstr?: unknown };
  const code = e.code !== undefined ? ` ${String(e.code)}` : '';
  const errcode = e.errcode !== undefined ? `/errcode ${String(e.errcode)}` : '';
  return `${e.constructor.name}${code}${errcode}: ${e.message.split('\n')[0]!.slice(0, 70)}`;
}

export function attempt(fn: () => unknown): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: fn() };
  } catch (err) {
    return { ok: false, error: errorText(err) };
  }
}

/** Does loading this module print an ExperimentalWarning? Runs a fresh Node so nothing is cached. */
export function warningOnLoad(script: string): string {
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', cwd: ROOT, timeout: 30_000 });
  if (r.status !== 0) return `load failed: ${(r.stderr ?? '').trim().split('\n').slice(-1)[0]}`;
  const warn = (r.stderr ?? '').split('\n').find((l) => /Warning/.test(l));
  return warn !== undefined ? `yes: "${warn.replace(/^\(node:\d+\) /, '').slice(0, 60)}"` : 'no';
}

/**
 * Drop a closed connection and its statement, make garbage, idle: the collector then finalizes
 * them from a task outside JavaScript. Runs in a fresh Node; the exit says whether it survived.
 */
export function survivesIdleGc(setup: string): string {
  const script = `${setup}
(function () { const db = open(); db.prepare('SELECT 1').get(); db.close(); })();
let junk = []; for (let i = 0; i < 2e5; i++) junk.push({ i, s: 'x'.repeat(50) }); junk = null;
setTimeout(() => {}, ${IDLE_MS});`;
  const r = spawnSync(process.execPath, ['--no-warnings', '-e', script], { encoding: 'utf8', timeout: 30_000 });
  if (r.status === 0) return `yes (exit 0 after ${IDLE_MS} ms idle)`;
  const assertion = /Assertion failed[^\n]*/.exec(r.stderr ?? '')?.[0];
  const frame = /(\w+::~\w+)\(\)/.exec(r.stderr ?? '')?.[1];
  return `**no: killed by ${r.signal ?? `exit ${String(r.status)}`}**${assertion !== undefined ? ` (${assertion.trim()}` : ''}${frame !== undefined ? ` in ${frame})` : assertion !== undefined ? ')' : ''}`;
}

/** Hold a write lock on one connection; time how long a second one waits for it. */
export function busyProbe(
  holder: (file: string) => { exec(sql: string): unknown; close(): unknown },
  waiter: (file: string) => { exec(sql: string): unknown; close(): unknown },
  how: string,
): string {
  const file = freshFile();
  const a = holder(file);
  a.exec('PRAGMA journal_mode = WAL; CREATE TABLE t (x); BEGIN IMMEDIATE; INSERT INTO t VALUES (1)');
  const b = waiter(file);
  const t = performance.now();
  const r = attempt(() => b.exec('BEGIN IMMEDIATE'));
  const waited = performance.now() - t;
  a.exec('ROLLBACK');
  a.close();
  b.close();
  if (r.ok) return 'no: got the lock while another connection held it';
  return waited >= 250 ? `yes: ${how}; waited ${waited.toFixed(0)} ms of 300, then ${r.error.split(':')[0]}` : `no: gave up after ${waited.toFixed(0)} ms (${r.error.split(':')[0]})`;
}

/** Whether `PRAGMA hard_heap_limit` is enforced (it is not under SQLITE_DEFAULT_MEMSTATUS=0). */
export function heapLimitProbe(get: (sql: string) => unknown): string {
  get('PRAGMA hard_heap_limit = 33554432');
  const r = attempt(() => get('SELECT length(randomblob(67108864)) AS n'));
  get('PRAGMA hard_heap_limit = 0');
  return r.ok ? 'no: 64 MiB blob allocated under a 32 MiB hard_heap_limit' : `yes: ${r.error.split(':')[0]}`;
}
