/**
 * The `vfs_query` service: read-only SQL from a guest against its own VFS database.
 *
 * Owns: the query limits and their defaults (`DEFAULT_QUERY_LIMITS`), the FIFO queue that runs
 * one query at a time, and the three walls every query passes in order: the lexical gate
 * (query-check.ts), then a child process (query-process.ts, query-child.mjs) that opens the
 * database read-only with `query_only`, refuses any statement SQLite does not call a read-only
 * reader, streams rows up to the result cap, and is SIGKILLed at the deadline or memory cap.
 *
 * Invariant: a guest query reaches only the database it was given — no ATTACH, VACUUM, pragma,
 * write, extension or file function passes the gate, and the connection could not write or attach
 * if one did; an answer is at most `maxResultBytes` of JSON `{"columns":[..],"rows":[[..],..]}`
 * (blobs as `{"$base64":".."}`, integers past 2^53 as strings); a query runs at most `timeoutMs`
 * from its start and waits at most `maxWaitMs` in the queue; every failure is a `QueryOutcome` with
 * a guest error code and a message without host paths or stacks. Per-query limits only narrow the
 * service's.
 *
 * Does not protect against: the read-only connection itself reveals the database's host path to
 * `pragma_database_list` — only the lexical gate stands in front of that; a `{ file }` source must
 * be a path the engine chose (it is opened as given, resolved to an absolute path).
 */

import { resolve as resolvePath } from 'node:path';
import { SandboxError } from '../errors.ts';
import { checkQuery as checkSql, DEFAULT_MAX_SQL_BYTES, type CheckResult } from './query-check.ts';
import { QueryProcess, type ChildSource, type QueryErrorCode, type QueryOutcome } from './query-process.ts';

export type { QueryErrorCode, QueryOutcome } from './query-process.ts';

export interface QueryLimits {
  timeoutMs: number;
  maxResultBytes: number;
  maxSqlBytes: number;
}

export const DEFAULT_QUERY_LIMITS: Readonly<QueryLimits> = Object.freeze({
  timeoutMs: 1_000,
  maxResultBytes: 1024 * 1024,
  maxSqlBytes: DEFAULT_MAX_SQL_BYTES,
});
/** V8 heap of the query child, in MiB; SQLite's heap cap and the RSS watchdog derive from it. */
export const DEFAULT_QUERY_HEAP_MB = 256;
/** Longest a query may wait behind others before it is answered TIMEOUT without running. */
export const DEFAULT_MAX_WAIT_MS = 30_000;
/** Queries waiting at once; more are refused UNAVAILABLE rather than queued without bound. */
export const MAX_QUEUE_DEPTH = 256;

export type QueryServiceOptions = Partial<QueryLimits> & { heapMb?: number; maxWaitMs?: number };
export type QuerySource = { file: string } | { bytes: Uint8Array };

/** Whether a guest's SQL may be run at all (the lexical gate; the default SQL size cap). */
export function checkQuery(sql: string): CheckResult {
  return checkSql(sql, DEFAULT_QUERY_LIMITS.maxSqlBytes);
}

function positive(v: unknown, fallback: number, what: string): number {
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new SandboxError('POLICY_INVALID', `${what} must be a positive number`);
  return v;
}

interface Job {
  readonly source: ChildSource;
  readonly sql: string;
  readonly limits: QueryLimits;
  readonly resolve: (o: QueryOutcome) => void;
  readonly waitTimer: ReturnType<typeof setTimeout>;
}

const fail = (code: QueryErrorCode, message: string): QueryOutcome => ({ ok: false, code, message });

function toChildSource(source: QuerySource): ChildSource | null {
  if (source === null || typeof source !== 'object') return null;
  if ('bytes' in source && source.bytes instanceof Uint8Array) return { kind: 'bytes', bytes: source.bytes };
  if ('file' in source && typeof source.file === 'string' && source.file !== '' && !source.file.includes('\0')) {
    // Absolute, so SQLite (built with SQLITE_USE_URI) never reads it as a `file:` URI.
    return { kind: 'file', file: resolvePath(source.file) };
  }
  return null;
}

export class QueryService {
  readonly limits: Readonly<QueryLimits>;
  private readonly maxWaitMs: number;
  private readonly process: QueryProcess;
  private readonly queue: Job[] = [];
  private running = false;
  private closed = false;

  constructor(options: QueryServiceOptions = {}) {
    this.limits = Object.freeze({
      timeoutMs: positive(options.timeoutMs, DEFAULT_QUERY_LIMITS.timeoutMs, 'timeoutMs'),
      maxResultBytes: positive(options.maxResultBytes, DEFAULT_QUERY_LIMITS.maxResultBytes, 'maxResultBytes'),
      maxSqlBytes: positive(options.maxSqlBytes, DEFAULT_QUERY_LIMITS.maxSqlBytes, 'maxSqlBytes'),
    });
    this.maxWaitMs = positive(options.maxWaitMs, DEFAULT_MAX_WAIT_MS, 'maxWaitMs');
    this.process = new QueryProcess(Math.ceil(positive(options.heapMb, DEFAULT_QUERY_HEAP_MB, 'heapMb')));
  }

  /** The query child's pid while one is running (tests and diagnostics). */
  get childPid(): number | undefined {
    return this.process.pid;
  }

  private narrow(limits: Partial<QueryLimits>): QueryLimits {
    const pick = (k: keyof QueryLimits) => Math.min(this.limits[k], positive(limits[k], this.limits[k], k));
    return { timeoutMs: pick('timeoutMs'), maxResultBytes: pick('maxResultBytes'), maxSqlBytes: pick('maxSqlBytes') };
  }

  /** Run a guest's `sql` against `source`. Never rejects for anything the guest controls. */
  query(source: QuerySource, sql: string, limits: Partial<QueryLimits> = {}): Promise<QueryOutcome> {
    let l: QueryLimits;
    try {
      l = this.narrow(limits);
    } catch (err) {
      return Promise.reject(err);
    }
    const checked = checkSql(sql, l.maxSqlBytes);
    if (!checked.ok) return Promise.resolve(checked);
    const child = toChildSource(source);
    if (child === null) return Promise.resolve(fail('UNAVAILABLE', 'there is no VFS to query'));
    if (this.closed) return Promise.resolve(fail('UNAVAILABLE', 'the query service is closed'));
    if (this.queue.length >= MAX_QUEUE_DEPTH) return Promise.resolve(fail('UNAVAILABLE', 'too many queries are waiting'));
    return new Promise<QueryOutcome>((resolve) => {
      const job: Job = {
        source: child,
        sql,
        limits: l,
        resolve,
        waitTimer: setTimeout(() => {
          const i = this.queue.indexOf(job);
          if (i < 0) return;
          this.queue.splice(i, 1);
          resolve(fail('TIMEOUT', `the query waited more than ${this.maxWaitMs} ms to run`));
        }, this.maxWaitMs),
      };
      this.queue.push(job);
      this.pump();
    });
  }

  private pump(): void {
    if (this.running) return;
    const job = this.queue.shift();
    if (job === undefined) return;
    clearTimeout(job.waitTimer);
    this.running = true;
    this.process
      .run({ source: job.source, sql: job.sql, timeoutMs: job.limits.timeoutMs, maxResultBytes: job.limits.maxResultBytes })
      .catch(() => fail('UNAVAILABLE', 'the query failed'))
      .then((outcome) => {
        this.running = false;
        job.resolve(outcome);
        this.pump();
      });
  }

  /** Refuse waiting queries, kill the child. Later queries answer UNAVAILABLE. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) {
      clearTimeout(job.waitTimer);
      job.resolve(fail('UNAVAILABLE', 'the query service is closed'));
    }
    await this.process.close();
  }
}
