/**
 * A remote-tier worker (`membrane worker --redis URL`, DESIGN §7): a local Engine that serves
 * jobs from the BullMQ queue (src/fabric/remote/queue.ts) and replies with the RunResult and the
 * audit records the run left.
 *
 * Owns: turning a checked job (protocol.ts `checkJob`) into `engine.run` options — the job's
 * limits are requests that the worker's own engine resolves against its profiles and operator
 * limits (a request can only lower them: policy/resolve.ts), host caps never travel, the run
 * gets a fresh in-memory VFS and no mounts — and capturing, per job, the records its run
 * appended to the worker's audit log (the worker keeps its own chain; the submitter merges a
 * copy into its own).
 * Invariant: a job runs under the same walls as a local run of this engine; nothing a job
 * carries can raise the worker's limits.
 *
 * Does not protect against: a hostile submitter's workload beyond those walls (it is sandboxed
 * like any guest) nor a hostile Redis (see queue.ts).
 */

import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { Engine } from './engine.ts';
import { serveQueue } from '../fabric/remote/queue.ts';
import { MAX_REPLY_RECORDS, REMOTE_VERSION, retrySafe, type RemoteRecord, type RemoteReply } from '../fabric/remote/protocol.ts';
import type { EngineOptions } from './options.ts';

export interface RemoteWorkerOptions {
  readonly redis: string;
  readonly concurrency: number;
  readonly queue?: string;
  /** The local engine's options (its operator limits are the ceiling of every job). */
  readonly engine?: Omit<EngineOptions, 'remote'>;
}

export interface RemoteWorker {
  readonly id: string;
  close(): Promise<void>;
}

/**
 * The worker's engine options: the operator's, room for `concurrency` jobs, and a copy of each
 * job's audit records into `captures` (keyed by the job's run id). The worker's own log stays the
 * engine's log (`auditCopy`, not a replaced sink): started with its database like any engine's.
 */
export function workerEngineOptions(o: Pick<RemoteWorkerOptions, 'concurrency' | 'engine'>, captures: Map<string, RemoteRecord[]>): EngineOptions {
  return {
    ...o.engine,
    maxWorkers: Math.max(o.engine?.maxWorkers ?? 8, o.concurrency),
    maxWorkersPerTenant: Math.max(o.engine?.maxWorkersPerTenant ?? 1, o.concurrency),
    brokers: {
      ...o.engine?.brokers,
      auditCopy: (e) => {
        const key = [...captures.keys()].find((k) => e.instance === k || e.instance.startsWith(`${k}.`) || e.instance.startsWith(`${k}-`));
        const list = key !== undefined ? captures.get(key) : undefined;
        if (list && list.length < MAX_REPLY_RECORDS) list.push({ instance: e.instance, kind: e.kind, time: new Date().toISOString(), detail: e.detail });
        o.engine?.brokers?.auditCopy?.(e);
      },
    },
  };
}

export async function startRemoteWorker(o: RemoteWorkerOptions): Promise<RemoteWorker> {
  const id = `${hostname().slice(0, 64)}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const captures = new Map<string, RemoteRecord[]>();
  const engine = new Engine(workerEngineOptions(o, captures));
  const served = await serveQueue(
    { redis: o.redis, concurrency: o.concurrency, worker: id, ...(o.queue ? { queue: o.queue } : {}) },
    async (job, bytes, meta): Promise<RemoteReply> => {
      const runId = `job-${meta.jobId}`.slice(0, 128);
      const records: RemoteRecord[] = [];
      captures.set(runId, records);
      try {
        const r = await engine.run(bytes, {
          id: runId,
          tenant: job.tenant,
          argv: job.argv,
          ...(job.argv0 !== undefined ? { argv0: job.argv0 } : {}),
          ...(job.env ? { env: job.env } : {}),
          stdin: Buffer.from(job.stdin, 'base64'),
          profile: job.profile,
          ...(job.caps ? { caps: job.caps } : {}),
          ...(job.timeoutMs !== undefined ? { timeoutMs: job.timeoutMs } : {}),
          ...(job.fuel !== undefined ? { fuel: job.fuel } : {}),
          ...(job.memoryBytes !== undefined ? { memoryBytes: job.memoryBytes } : {}),
          captureBytes: true,
        });
        const out = r.stdoutBytes ?? new TextEncoder().encode(r.stdout);
        return {
          v: REMOTE_VERSION,
          worker: id,
          attempt: meta.attempt,
          ok: r.ok,
          ...(r.exitCode !== undefined ? { exitCode: r.exitCode } : {}),
          stdout: Buffer.from(out.buffer, out.byteOffset, out.byteLength).toString('base64'),
          ...(r.stdoutTruncated ? { stdoutTruncated: true } : {}),
          stderr: r.stderr,
          fuelUsed: r.fuelUsed,
          durationMs: r.durationMs,
          memoryBytes: r.memoryBytes,
          profile: r.profile,
          warnings: r.warnings,
          ...(r.error ? { error: r.error } : {}),
          records,
        };
      } finally {
        captures.delete(runId);
      }
    },
    retrySafe,
  );
  return {
    id,
    async close() {
      await served.close();
      await engine.close();
    },
  };
}
