/**
 * The engine's side of the remote tier (`tier: 'remote'`, DESIGN §7): a run submitted to a
 * `membrane worker` fleet through BullMQ on Redis (src/fabric/remote/), its reply turned back
 * into a RunResult, and the worker's audit records merged into this engine's own chain.
 *
 * Owns: which run options travel (argv, argv0, env, stdin, profile, caps, timeoutMs, fuel,
 * memoryBytes, tenant — anything else, a mount, a named VFS, an export call, a receipt, a host
 * cap, is POLICY_INVALID here, never silently dropped); the grant resolved locally first (a grant
 * this engine would refuse is refused before it is queued); the records `remote.run` (job,
 * worker, attempt, outcome) and `remote.<kind>` (each of the worker's records, with the worker's
 * id and the original record in `detail`).
 * Tenant fairness on the submitting side (fabric/tenant-scheduler.ts): at most `maxInFlight` of
 * this engine's jobs are in the fleet's queue or running, at most `maxInFlightPerTenant` of one
 * tenant's, admitted round-robin across tenants — Redis is one FIFO, so a tenant's backlog waits
 * here, not ahead of other tenants' jobs there. A run not admitted within `queueWaitMs` is
 * OVERLOADED (nothing was queued).
 * Invariant: one run → one job → exactly one RunResult; without a Redis URL the remote tier is
 * TIER_UNAVAILABLE "redis not configured".
 *
 * Does not protect against: a worker that lies about its result or records (the fleet is trusted
 * like the Redis it shares); the worker's own log keeps its records too.
 */

import { admitSigned } from './signed.ts';
import { SandboxError } from '../errors.ts';
import { resolvePolicy } from '../policy/resolve.ts';
import { checkTier } from '../fabric/tiers.ts';
import { TenantScheduler, defaultPerTenant } from '../fabric/tenant-scheduler.ts';
import { REMOTE_VERSION, retrySafe, type RemoteJob, type RemoteReply } from '../fabric/remote/protocol.ts';
import { RemoteQueue, LOCK_MS, STALLED_INTERVAL_MS } from '../fabric/remote/queue.ts';
import { failure, type RunResult } from './results.ts';
import type { EngineConfig, RemoteOptions } from './options.ts';
import type { RunOptions } from './guest-spec.ts';
import type { CapWord } from '../policy/profiles.ts';


type Record_ = (e: { tenant: string; instance: string; kind: string; detail: Record<string, unknown> }) => void;

const CARRIED = new Set(['argv', 'argv0', 'env', 'stdin', 'profile', 'caps', 'timeoutMs', 'fuel', 'memoryBytes', 'tenant', 'id', 'captureBytes', 'signal', 'tier', 'artifact']);
/** The engine's jobs in the fleet at once, by default (remote.maxInFlight). */
export const DEFAULT_REMOTE_IN_FLIGHT = 32;
const KIND = /^[a-z][a-z0-9_.:-]{0,55}$/;
const decoder = new TextDecoder('utf-8', { fatal: false });

export class RemoteLane {
  private readonly queue: RemoteQueue;
  private readonly fair: TenantScheduler;
  private n = 0;

  constructor(
    private readonly o: RemoteOptions,
    private readonly config: EngineConfig,
    private readonly record: Record_,
  ) {
    this.queue = new RemoteQueue({ redis: o.redis, ...(o.queue ? { queue: o.queue } : {}) });
    const slots = o.maxInFlight ?? DEFAULT_REMOTE_IN_FLIGHT;
    this.fair = new TenantScheduler({ slots, perTenant: Math.min(slots, o.maxInFlightPerTenant ?? defaultPerTenant(slots)) });
  }

  async run(bytes: Uint8Array, opts: RunOptions): Promise<RunResult> {
    const t0 = performance.now();
    let profile = opts.profile ?? 'compute';
    let release: (() => void) | null = null;
    try {
      const extra = Object.keys(opts).filter((k) => !CARRIED.has(k) && (opts as Record<string, unknown>)[k] !== undefined);
      if (extra.length > 0) throw new SandboxError('POLICY_INVALID', `the remote tier does not carry ${extra.join(', ')}`, { options: extra.slice(0, 8) });
      const policy = resolvePolicy({ ...opts, profile: opts.profile ?? 'compute' }, { strictProfiles: true, operatorLimits: this.config.operatorLimits });
      profile = policy.profile;
      if (policy.hostCaps.length > 0) throw new SandboxError('POLICY_INVALID', 'host caps do not travel to remote workers');
      const tenant = opts.tenant ?? 'default';
      const id = opts.id ?? `remote-${++this.n}`;
      const stdin = typeof opts.stdin === 'string' ? new TextEncoder().encode(opts.stdin) : (opts.stdin ?? new Uint8Array(0));
      // `requireSigned` is this engine's gate, on the bytes it hands the queue (a worker has no trusted DIDs of its own).
      bytes = await admitSigned(this.config, bytes, opts.artifact, (d) => this.record({ tenant, instance: id, kind: 'artifact.refused', detail: { ...d, tier: 'remote' } }));
      release = await this.fair.admit(tenant, this.o.queueWaitMs ?? 60_000, opts.signal);
      const job: RemoteJob = {
        v: REMOTE_VERSION,
        module: await this.queue.putModule(bytes),
        tenant,
        argv: (opts.argv ?? []).map(String),
        ...(opts.argv0 !== undefined ? { argv0: opts.argv0 } : {}),
        ...(opts.env ? { env: { ...opts.env } } : {}),
        stdin: Buffer.from(stdin.buffer, stdin.byteOffset, stdin.byteLength).toString('base64'),
        profile: policy.profile,
        ...(opts.caps !== undefined ? { caps: [...policy.caps] as CapWord[] } : {}),
        timeoutMs: policy.timeoutMs,
        fuel: policy.fuel,
        memoryBytes: policy.memoryBytes,
      };
      const safe = retrySafe(job);
      // Two attempts at most, each its budget, plus lock expiry and the stall check between them.
      const waitMs = (this.o.queueWaitMs ?? 60_000) + 2 * policy.timeoutMs + 2 * (LOCK_MS + STALLED_INTERVAL_MS) + 5_000;
      let reply: RemoteReply;
      try {
        reply = await this.queue.submit(job, waitMs, safe, opts.signal);
      } catch (e) {
        const err = e instanceof SandboxError ? e : new SandboxError('INTERNAL', 'the remote tier failed');
        this.record({ tenant, instance: id, kind: 'remote.run', detail: { module: job.module, outcome: err.code, retrySafe: safe } });
        throw err;
      }
      this.merge(reply, tenant, id, job.module);
      const out = Buffer.from(reply.stdout, 'base64');
      const stdoutBytes = new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
      return {
        ok: reply.ok,
        ...(typeof reply.exitCode === 'number' ? { exitCode: reply.exitCode } : {}),
        stdout: decoder.decode(stdoutBytes),
        stderr: reply.stderr,
        fuelUsed: Number(reply.fuelUsed) || 0,
        durationMs: Number(reply.durationMs) || 0,
        memoryBytes: Number(reply.memoryBytes) || 0,
        profile: String(reply.profile),
        warnings: Array.isArray(reply.warnings) ? reply.warnings.map(String) : [],
        ...(reply.error ? { error: reply.error } : {}),
        ...(opts.captureBytes ? { stdoutBytes, stdoutTruncated: reply.stdoutTruncated === true } : {}),
      };
    } catch (e) {
      const err = e instanceof SandboxError ? e : new SandboxError('INTERNAL', 'the remote tier failed');
      return failure(err, { profile, warnings: [] }, Math.round(performance.now() - t0));
    } finally {
      release?.();
    }
  }

  /** The worker's records into this engine's chain: one `remote.run`, then one `remote.<kind>` per record. */
  private merge(reply: RemoteReply, tenant: string, instance: string, module: string): void {
    const worker = reply.worker.slice(0, 128);
    this.record({ tenant, instance, kind: 'remote.run', detail: { module, worker, attempt: Number(reply.attempt) || 1, outcome: reply.ok ? 'ok' : (reply.error?.code ?? 'failed') } });
    for (const r of reply.records) {
      const kind = typeof r?.kind === 'string' && KIND.test(r.kind) ? r.kind : 'unknown';
      this.record({ tenant, instance, kind: `remote.${kind}`, detail: { worker, record: { instance: String(r?.instance ?? '').slice(0, 128), kind: String(r?.kind ?? '').slice(0, 64), time: String(r?.time ?? '').slice(0, 40), detail: r?.detail ?? {} } } });
    }
  }

  close(): Promise<void> {
    this.fair.close();
    return this.queue.close();
  }
}

// One lane per engine, opened on its first remote run (bullmq and ioredis load then), closed with it.
const lanes = new WeakMap<object, RemoteLane>();
const closed = new WeakSet<object>();

/** `engine.run(…, { tier: 'remote' })`: the engine's lane runs it, or TIER_UNAVAILABLE "redis not configured" as a result. */
export async function remoteRun(engine: object, config: EngineConfig, record: Record_, bytes: Uint8Array, opts: RunOptions): Promise<RunResult> {
  const ctx = { profile: opts.profile ?? 'compute', warnings: [] };
  if (closed.has(engine)) return failure(new SandboxError('INSTANCE_DEAD', 'the engine is closed'), ctx);
  if (!config.remote) {
    try {
      checkTier('remote', {});
    } catch (e) {
      return failure(e as SandboxError, ctx);
    }
    return failure(new SandboxError('INTERNAL', 'the remote tier failed'), ctx);
  }
  let lane = lanes.get(engine);
  if (!lane) lanes.set(engine, (lane = new RemoteLane(config.remote, config, record)));
  return lane.run(bytes, opts);
}

export async function closeRemote(engine: object): Promise<void> {
  closed.add(engine);
  const lane = lanes.get(engine);
  lanes.delete(engine);
  await lane?.close();
}
