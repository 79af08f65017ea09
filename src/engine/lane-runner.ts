/**
 * The engine side of the CPython lane (src/lanes/cpython): an interpreter run from boot to exit
 * under a call's policy (`run`, through `runResolved`), and a **parked** interpreter — booted on
 * a worker of the engine's pool up to the request for its snippet, held there, then resumed with
 * one call (`park`, `ParkedInterpreter.resume`), so a call never pays for a boot.
 *
 * Owns: booting a parked run (the boot policy's walls bound the boot and the wait), the hand-over
 * (a fresh host job for the call — its principal, its policy, its port — then the parked host call
 * is answered with the snippet's start: its own time and fuel budget, its VFS, whether to stream) and the call's
 * wait (its deadline, its signal: TIMEOUT/CANCELLED as for any run, the worker terminated when a
 * wall cut it). A parked interpreter serves exactly one call; its worker goes back to the pool
 * afterwards only if the job ended by itself.
 * Invariant: nothing of the boot is billed to the call (the worker restarts its meter at the
 * start), and a parked interpreter has run no snippet's code: it has only booted.
 *
 * Does not protect against: a parked worker held past its boot policy's time — the worker then
 * ends the run itself (its host-call wait is bounded); the lane replaces parked interpreters
 * well before that.
 */

import { PROTOCOL_VERSION, encodeStart, type GuestSpec, type SnippetStart } from './bridge/protocol.ts';
import type { Caller, JobHost } from './bridge/host-services.ts';
import type { WorkerHandle } from './bridge/worker-handle.ts';
import { StreamSink } from './bridge/stream-sink.ts';
import { buildSpec, vfsSpec, type RunOptions } from './guest-spec.ts';
import { planLinks } from './linker.ts';
import { graceFor } from './budget.ts';
import { CallWatch, settledRun } from './call-controls.ts';
import { failure, type RunResult } from './results.ts';
import type { EngineConfig } from './options.ts';
import type { PreparedModule } from './module-cache.ts';
import type { PolicyConfig } from '../policy/resolve.ts';
import { PARK, type PortHandler } from '../wasi/port.ts';
import { SandboxError, toSandboxError } from '../errors.ts';

/** What the runner takes from the engine. */
export interface LaneRunnerParts {
  readonly config: EngineConfig;
  readonly pool: { acquireDedicated(): Promise<WorkerHandle>; adopt(h: WorkerHandle): void; discard(h: WorkerHandle): Promise<void> };
  readonly services: { job(caller: Caller): JobHost };
  prepare(bytes: Uint8Array, policy: PolicyConfig): Promise<PreparedModule>;
  runResolved(bytes: Uint8Array, opts: RunOptions, policy: PolicyConfig, port?: PortHandler): Promise<RunResult>;
}

/** One call handed to a parked interpreter. */
export interface ParkedCall {
  readonly tenant: string;
  /** The call's walls: its time and fuel restart at the hand-over; its caps name its principal's grant. */
  readonly policy: PolicyConfig;
  /** The call's port: every request after the snippet's. */
  readonly port: PortHandler;
  /** The answer to the snippet request, and the start that precedes it. */
  readonly answer: Uint8Array;
  readonly start: SnippetStart;
  readonly signal?: AbortSignal | undefined;
  /** Stream the snippet's output (the interpreter booted without: the start turns it on). */
  readonly onStdout?: ((chunk: string) => void) | undefined;
  readonly onStderr?: ((chunk: string) => void) | undefined;
}

export interface ParkedInterpreter {
  /** Run one call on it (once). */
  resume(call: ParkedCall): Promise<RunResult>;
  /** Give it up unused (its worker is terminated). */
  discard(): void;
  /** `performance.now()` when it finished booting. */
  readonly parkedAt: number;
}

/**
 * The caps a lane interpreter is linked with: the call's, and always the filesystem calls — an
 * interpreter reads its own embedded library through them; without `vfs` they find no preopen
 * (laneSpec), so nothing of the host or of any VFS is reachable.
 */
export function laneCaps(policy: PolicyConfig): PolicyConfig['caps'] {
  return policy.caps.includes('vfs') ? policy.caps : [...policy.caps, 'vfs'];
}

/** A lane interpreter's spec: its port, and without `vfs` an empty, read-only filesystem with no preopen. */
export function laneSpec(spec: GuestSpec, config: EngineConfig): GuestSpec {
  const vfs = spec.vfs ?? { ...vfsSpec(undefined, undefined, config), preopens: [], readOnly: true };
  return { ...spec, vfs, wasi: { ...spec.wasi, port: true } };
}

/** Job ids of parked runs: far from the engine's own counter, so no two jobs of a worker share one. */
let nextJob = 2 ** 40;
let nextId = 1;

export function laneRunner(parts: LaneRunnerParts): {
  run: LaneRunnerParts['runResolved'];
  warm(bytes: Uint8Array, policy: PolicyConfig): Promise<void>;
  park(bytes: Uint8Array, opts: RunOptions, policy: PolicyConfig): Promise<ParkedInterpreter>;
} {
  return {
    run: (bytes, opts, policy, port) => parts.runResolved(bytes, opts, policy, port),
    warm: async (bytes, policy) => void (await parts.prepare(bytes, policy)),
    park: (bytes, opts, policy) => park(parts, bytes, opts, policy),
  };
}

async function park(parts: LaneRunnerParts, bytes: Uint8Array, opts: RunOptions, policy: PolicyConfig): Promise<ParkedInterpreter> {
  const { config, pool, services } = parts;
  const prepared = await parts.prepare(bytes, policy);
  const plan = planLinks(prepared.desc, laneCaps(policy), { defined: config.hostFunctions, granted: policy.hostCaps });
  const id = `lane-${nextId++}`;
  // Its VFS, with `vfs`, is an empty placeholder until a call names its own (late-vfs.ts).
  const base = buildSpec(config, prepared, plan, policy, { id, tenant: 'default', ...(opts.argv0 ? { argv0: opts.argv0 } : {}) }, { ...opts, vfs: undefined, vfsFile: undefined });
  const spec = laneSpec(base, config);
  // A worker outside the pool's count (the lane bounds how many it parks): a parked interpreter
  // never holds a worker that the engine's fresh runs, admitted up to maxWorkers, are counting on.
  const handle = await pool.acquireDedicated();
  let asked = false;
  const boot: PortHandler = async (request) => {
    if (request[0] !== 0x4e /* N */ || asked) return -4;
    asked = true;
    return PARK;
  };
  const bootJob = services.job({ tenant: 'default', instance: id, policy, spec, port: boot });
  const jobId = nextJob++;
  let parked = false;
  try {
    handle.post({ v: PROTOCOL_VERSION, kind: 'run', job: jobId, module: prepared.module, spec, entry: { kind: 'start' }, budget: { ms: policy.timeoutMs, fuel: policy.fuel }, stream: false });
    const a = await handle.awaitDone(performance.now() + policy.timeoutMs, bootJob.handle, graceFor(prepared));
    if (a.kind !== 'parked') throw new SandboxError('INTERNAL', `the interpreter did not reach its snippet request (${a.kind === 'dead' ? a.error.code : a.kind === 'done' ? (a.frame.outcome.ok ? 'exited' : a.frame.outcome.error.code) : a.kind})`);
    parked = true;
  } finally {
    bootJob.end();
    if (!parked) void pool.discard(handle);
  }
  let used = false;
  return {
    parkedAt: performance.now(),
    discard: () => {
      if (used) return;
      used = true;
      void pool.discard(handle);
    },
    resume: async (call) => {
      if (used) throw new SandboxError('INTERNAL', 'a parked interpreter serves one call');
      used = true;
      return resume(parts, handle, prepared, spec, { id, jobId }, call);
    },
  };
}

async function resume(parts: LaneRunnerParts, handle: WorkerHandle, prepared: PreparedModule, spec: Caller['spec'], run: { id: string; jobId: number }, call: ParkedCall): Promise<RunResult> {
  const { pool, services, config } = parts;
  const { policy } = call;
  const startedAt = performance.now();
  const deadline = startedAt + policy.timeoutMs;
  const watch = new CallWatch(call.signal);
  const job = services.job({ tenant: call.tenant, instance: run.id, policy, spec, port: call.port });
  // The worker streams the boot job's output from the start on, when the call asked for it.
  const sink = StreamSink.for(run.jobId, call, config.outputLimitBytes);
  let awaited;
  try {
    const start = { ...call.start, ms: Math.min(call.start.ms, policy.timeoutMs), ...(sink ? { stream: true } : {}) };
    handle.answerParked({ v: PROTOCOL_VERSION, kind: 'host-reply', ok: true, value: 1, payload: encodeStart(start, call.answer) });
    awaited = await handle.awaitDone(deadline, job.handle, graceFor(prepared), watch.signal, sink);
  } catch (e) {
    void pool.discard(handle);
    return failure(toSandboxError(e), { profile: policy.profile, warnings: policy.warnings }, performance.now() - startedAt);
  } finally {
    job.end();
    watch.dispose();
  }
  if (awaited.kind === 'done') pool.adopt(handle);
  else void pool.discard(handle);
  return settledRun(awaited, sink, { policy, isCommand: true, startedAt, deadline, outputLimitBytes: config.outputLimitBytes, watch });
}
