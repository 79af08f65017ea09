/**
 * The process `vfs_query` statements run in, seen from the host: spawning it, one query at a
 * time over its IPC channel, and killing it at the deadline or the memory cap.
 *
 * Owns: locating the child's code (query-child.mjs beside this module under tsx, or beside the
 * bundle in dist/), the versioned message protocol, the deadline, the RSS watchdog, and scrubbing
 * host paths out of error messages.
 *
 * Invariant: the child starts with an empty environment, no inspector or loader flags, a capped
 * V8 heap and cwd = the OS temp dir; at most one query is in flight (the caller serializes); a
 * query that passes its deadline or memory cap gets its child SIGKILLed — the next query gets a
 * fresh one; every answer is a `QueryOutcome` whose message names no host path and holds no stack.
 *
 * Does not protect against: memory spikes shorter than one watchdog poll (`MEMORY_POLL_MS`), and
 * on a platform without /proc there is no RSS watchdog at all (only V8's heap cap); the child runs
 * as the host's OS user, so its confinement is SQLite's read-only connection, not the kernel.
 */

import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export type QueryErrorCode = 'DENIED' | 'INVALID' | 'TOO_LARGE' | 'TIMEOUT' | 'UNAVAILABLE';
export type QueryOutcome = { ok: true; json: Uint8Array; rows: number } | { ok: false; code: QueryErrorCode; message: string };

/** Where the rows come from: a database file chosen by the engine, or a serialized database. */
export type ChildSource = { kind: 'file'; file: string } | { kind: 'bytes'; bytes: Uint8Array };

export interface ChildRequest {
  readonly source: ChildSource;
  readonly sql: string;
  readonly timeoutMs: number;
  readonly maxResultBytes: number;
}

/** How long a new child may take to load SQLite and say it is ready. */
export const SPAWN_TIMEOUT_MS = 10_000;
/** How often the RSS watchdog looks at a running query's child. */
export const MEMORY_POLL_MS = 10;
const KILL_WAIT_MS = 2_000;
const MiB = 1024 * 1024;

type ToChild = { v: 1; kind: 'query'; id: number; source: ChildSource; sql: string; timeoutMs: number; maxResultBytes: number; heapBytes: number };
type FromChild =
  | { v: 1; kind: 'ready' }
  | { v: 1; kind: 'result'; id: number; json: string; rows: number }
  | { v: 1; kind: 'error'; id: number; code: QueryErrorCode; message: string };

const CODES: ReadonlySet<string> = new Set(['DENIED', 'INVALID', 'TOO_LARGE', 'TIMEOUT', 'UNAVAILABLE']);

function parseReply(m: unknown): FromChild | null {
  if (m === null || typeof m !== 'object') return null;
  const r = m as Record<string, unknown>;
  if (r['v'] !== 1) return null;
  if (r['kind'] === 'ready') return { v: 1, kind: 'ready' };
  if (typeof r['id'] !== 'number') return null;
  if (r['kind'] === 'result' && typeof r['json'] === 'string' && typeof r['rows'] === 'number') {
    return { v: 1, kind: 'result', id: r['id'], json: r['json'], rows: r['rows'] };
  }
  if (r['kind'] === 'error' && typeof r['code'] === 'string' && CODES.has(r['code']) && typeof r['message'] === 'string') {
    return { v: 1, kind: 'error', id: r['id'], code: r['code'] as QueryErrorCode, message: r['message'] };
  }
  return null;
}

/** The child's code: beside this module (src/ under tsx, dist/ in a bundle), else in src/storage. */
export function locateChild(): string {
  for (const rel of ['./query-child.mjs', '../src/storage/query-child.mjs']) {
    const file = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(file)) return file;
  }
  throw new Error('query-child.mjs not found');
}

const PATH_LIKE = /(?:file:)?(?:[A-Za-z]:)?(?:[\\/]+[^\s'"`,;()\\/]+)+[\\/]?/g;

/** A message a guest may see: host paths cut out, one line, at most 200 characters. */
export function scrubMessage(message: string, hostPaths: readonly string[] = []): string {
  let m = message.split('\n')[0] ?? '';
  const known = [...hostPaths, tmpdir(), homedir(), process.cwd()].filter((p) => p.length > 1).sort((a, b) => b.length - a.length);
  for (const p of known) m = m.split(p).join('<path>');
  m = m.replace(PATH_LIKE, '<path>');
  return m.length > 200 ? `${m.slice(0, 197)}...` : m;
}

async function residentBytes(pid: number): Promise<number | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

const fail = (code: QueryErrorCode, message: string): QueryOutcome => ({ ok: false, code, message });

/** One long-lived query child, replaced when it is killed or dies. Not reentrant: one run at a time. */
export class QueryProcess {
  private child: ChildProcess | null = null;
  private starting: Promise<ChildProcess> | null = null;
  private nextId = 1;

  constructor(private readonly heapMb: number) {}

  /** The pid of the current child, if one is running (for tests and diagnostics). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  private spawnChild(): Promise<ChildProcess> {
    return new Promise((resolve, reject) => {
      let child: ChildProcess;
      try {
        child = fork(locateChild(), [], {
          env: {},
          execArgv: [`--max-old-space-size=${this.heapMb}`, '--disallow-code-generation-from-strings'],
          cwd: tmpdir(),
          stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
          serialization: 'advanced',
        });
      } catch (err) {
        reject(err);
        return;
      }
      const cleanup = () => {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
        child.off('error', onExit);
      };
      const timer = setTimeout(() => {
        cleanup();
        child.kill('SIGKILL');
        reject(new Error('the query process did not start in time'));
      }, SPAWN_TIMEOUT_MS);
      const onMessage = (m: unknown) => {
        if (parseReply(m)?.kind !== 'ready') return;
        cleanup();
        resolve(child);
      };
      const onExit = () => {
        cleanup();
        reject(new Error('the query process exited while starting'));
      };
      child.on('message', onMessage);
      child.once('exit', onExit);
      child.once('error', onExit);
    });
  }

  private async ensure(): Promise<ChildProcess> {
    if (this.child !== null && this.child.exitCode === null && this.child.signalCode === null && this.child.connected) return this.child;
    this.starting ??= this.spawnChild().then(
      (child) => {
        this.starting = null;
        this.child = child;
        child.once('exit', () => {
          if (this.child === child) this.child = null;
        });
        child.on('error', () => this.discard(child));
        // An idle child does not keep the host's event loop alive; a running query's deadline does.
        child.unref();
        child.channel?.unref();
        return child;
      },
      (err: unknown) => {
        this.starting = null;
        throw err;
      },
    );
    return this.starting;
  }

  private discard(child: ChildProcess): void {
    if (this.child === child) this.child = null;
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }

  /** Run one statement (already checked by the caller) under the request's deadline and caps. */
  async run(req: ChildRequest): Promise<QueryOutcome> {
    let child: ChildProcess;
    try {
      child = await this.ensure();
    } catch {
      return fail('UNAVAILABLE', 'the query service could not start');
    }
    const id = this.nextId++;
    const sourceBytes = req.source.kind === 'bytes' ? req.source.bytes.byteLength : 0;
    const heapBytes = this.heapMb * MiB;
    // V8's heap, SQLite's heap and page cache, the received source and its deserialized copy.
    const memoryCap = 2 * heapBytes + 64 * MiB + 2 * sourceBytes;
    const hostPaths = req.source.kind === 'file' ? [req.source.file, dirname(req.source.file)] : [];
    const msg: ToChild = { v: 1, kind: 'query', id, source: req.source, sql: req.sql, timeoutMs: req.timeoutMs, maxResultBytes: req.maxResultBytes, heapBytes };

    return new Promise<QueryOutcome>((resolve) => {
      let done = false;
      let polling = false;
      const finish = (o: QueryOutcome) => {
        if (done) return;
        done = true;
        clearTimeout(deadline);
        clearInterval(watchdog);
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(o);
      };
      const deadline = setTimeout(() => {
        this.discard(child);
        finish(fail('TIMEOUT', `the query ran past its ${req.timeoutMs} ms budget`));
      }, req.timeoutMs);
      const watchdog = setInterval(() => {
        if (polling || done || child.pid === undefined || process.platform !== 'linux') return;
        polling = true;
        void residentBytes(child.pid).then((rss) => {
          polling = false;
          if (done || rss === null || rss <= memoryCap) return;
          this.discard(child);
          finish(fail('TOO_LARGE', `the query used more than ${Math.round(memoryCap / MiB)} MiB of memory`));
        });
      }, MEMORY_POLL_MS);
      watchdog.unref();
      const onMessage = (m: unknown) => {
        const r = parseReply(m);
        if (r === null || r.kind === 'ready' || r.id !== id) return;
        if (r.kind === 'error') return finish(fail(r.code, scrubMessage(r.message, hostPaths)));
        const json = new TextEncoder().encode(r.json);
        if (json.byteLength > req.maxResultBytes) return finish(fail('TOO_LARGE', `the result is larger than ${req.maxResultBytes} bytes`));
        finish({ ok: true, json, rows: r.rows });
      };
      const onExit = () => {
        this.discard(child);
        finish(fail('UNAVAILABLE', 'the query process failed'));
      };
      child.on('message', onMessage);
      child.once('exit', onExit);
      try {
        child.send(msg, (err) => {
          if (err === null || err === undefined) return;
          this.discard(child);
          finish(fail('UNAVAILABLE', 'the query could not be sent'));
        });
      } catch {
        this.discard(child);
        finish(fail('UNAVAILABLE', 'the query could not be sent'));
      }
    });
  }

  /** Kill the child (if any) and wait, boundedly, for it to be gone. */
  async close(): Promise<void> {
    const starting = this.starting;
    if (starting !== null) await starting.catch(() => undefined);
    const child = this.child;
    this.child = null;
    if (child === null || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, KILL_WAIT_MS);
      child.once('exit', () => {
        clearTimeout(t);
        resolve();
      });
      child.kill('SIGKILL');
    });
  }
}
