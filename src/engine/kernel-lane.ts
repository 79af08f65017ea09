/**
 * The kernel lane (DESIGN §7): `engine.kernel(bytes, opts)` → a handle whose `call(input)` writes
 * the input into a fixed arena of one long-lived instance, calls `entry(len) → outLen`, and reads
 * the output back. Instantiated once, called many times: the hot path.
 *
 * Owns: the two placements — in a dedicated worker (the default: isolated like `engine.start`,
 * the same linker, walls and host services; the call travels as one binary frame) and
 * `inProcess: true` (src/fabric/in-process.ts: on the host thread, fuel-only time wall) — the
 * per-call budget (fuel and deadline, narrowed per call, never raised), serialized calls, and
 * recovery: a call that times out (or whose worker dies) replaces the worker and re-instantiates
 * the kernel, so its state is lost; a trap or FUEL_EXHAUSTED keeps the instance.
 * Invariant: a kernel's worker is never shared with another guest; input never exceeds its arena
 * (POLICY_INVALID before anything runs); output is read only inside the guest memory (abi/kernel-arena.ts).
 * Live kernel handles are bounded by the engine's maxInstances (their own count).
 *
 * Does not protect against: a caller that queues unbounded calls on one handle (each holds its
 * input until its turn); an in-process kernel's CPU time between two fuel refills.
 */

import { admitSigned } from './signed.ts';
import { SandboxError, toSandboxError } from '../errors.ts';
import { narrowPolicy, resolvePolicy, type PolicyConfig, type PolicyOptions } from '../policy/resolve.ts';
import { resolveArena, type Arena, type ArenaOptions } from '../abi/kernel-arena.ts';
import { InProcessKernel } from '../fabric/in-process.ts';
import { instanceOnly } from '../fabric/tiers.ts';
import { planLinks } from './linker.ts';
import { buildSpec } from './guest-spec.ts';
import { budgetOf, graceFor } from './budget.ts';
import { AdaptiveSpin } from './bridge/channel.ts';
import { PROTOCOL_VERSION, type Budget, type GuestSpec } from './bridge/protocol.ts';
import { checkName } from '../policy/names.ts';
import type { EngineConfig } from './options.ts';
import type { PreparedModule } from './module-cache.ts';
import type { Awaited, HostHandler, WorkerHandle } from './bridge/worker-handle.ts';
import type { Caller, JobHost } from './bridge/host-services.ts';

export interface KernelOptions extends PolicyOptions, ArenaOptions {
  /** The export called per input: `(len: i32) → outLen: i32`. Default "process". */
  entry?: string;
  /** Run on the host thread (fuel-instrumented; the time wall is checked only at fuel refills). Default false. */
  inProcess?: boolean;
  tenant?: string;
  id?: string;
  /** The module's signed manifest, when the engine runs only signed modules (`requireSigned`). */
  artifact?: unknown;
  /** A kernel keeps one instance across calls: only `instance` (the default); `os_process` and `remote` are TIER_UNAVAILABLE. */
  tier?: 'instance' | 'os_process' | 'remote';
}

export interface KernelCallOptions {
  /** Lower this call's fuel below the kernel's. */
  fuel?: number;
  /** Lower this call's wall-clock budget below the kernel's. */
  timeoutMs?: number;
}

export interface KernelHandle {
  readonly id: string;
  readonly placement: 'worker' | 'inProcess';
  /** The input through the kernel; rejects with a SandboxError (GUEST_TRAP, FUEL_EXHAUSTED, TIMEOUT, ...). */
  call(input: Uint8Array, opts?: KernelCallOptions): Promise<Uint8Array>;
  /**
   * In process only: the same call, answered synchronously (no Promise per call); throws the
   * SandboxError `call` would reject with. A worker kernel's `callSync` throws NOT_CAPABLE: its
   * call is a round trip to another thread.
   */
  callSync(input: Uint8Array, opts?: KernelCallOptions): Uint8Array;
  /** Fuel the last settled call used. */
  readonly lastFuelUsed: number;
  close(): Promise<void>;
}

export interface KernelDeps {
  readonly config: EngineConfig;
  readonly prepare: (bytes: Uint8Array, policy: PolicyConfig) => Promise<PreparedModule>;
  readonly acquireDedicated: () => Promise<WorkerHandle>;
  readonly job: (caller: Caller) => JobHost;
  /** The engine's audit log (an `artifact.refused` record). */
  readonly record: (event: { tenant: string; instance: string; kind: string; detail: Record<string, unknown> }) => void;
}

let kernels = 0;
const EMPTY = new Uint8Array(0);

/** The engine's kernel handles (bounded by maxInstances). */
export class KernelLane {
  private readonly live = new Set<KernelHandle>();
  /** Opens in progress: counted before the first await so concurrent opens cannot pass the bound. */
  private opening = 0;

  constructor(private readonly deps: KernelDeps) {}

  async open(bytes: Uint8Array, opts: KernelOptions = {}): Promise<KernelHandle> {
    instanceOnly(opts.tier, 'a kernel'); // never a silent downgrade to the instance tier
    if (this.live.size + this.opening >= this.deps.config.maxInstances) {
      throw new SandboxError('MEMORY_LIMIT', `the engine already holds its maximum of ${this.deps.config.maxInstances} kernels`, { maxInstances: this.deps.config.maxInstances });
    }
    this.opening++;
    try {
      return await this.openNow(bytes, opts);
    } finally {
      this.opening--;
    }
  }

  private async openNow(bytes: Uint8Array, opts: KernelOptions): Promise<KernelHandle> {
    const policy = resolvePolicy(opts, this.deps.config);
    const id = checkName('id', opts.id ?? `kernel-${++kernels}`);
    const tenant = checkName('tenant', opts.tenant ?? 'default');
    const entry = String(opts.entry ?? 'process');
    const arena = resolveArena(opts);
    // `requireSigned` holds for kernels as for runs: an unsigned module is NOT_CAPABLE, audited, before it is prepared.
    bytes = await admitSigned(this.deps.config, bytes, opts.artifact, (d) => this.deps.record({ tenant, instance: id, kind: 'artifact.refused', detail: d }));
    const prepared = await this.deps.prepare(bytes, policy);
    const fn = prepared.desc.exports.find((e) => e.kind === 'func' && e.name === entry);
    if (!fn?.signature || fn.signature.params.join() !== 'i32' || fn.signature.results.join() !== 'i32') {
      throw new SandboxError('POLICY_INVALID', `a kernel exports "${entry.slice(0, 64)}" as (i32) → i32`, { export: entry.slice(0, 64) });
    }
    const forget = (h: KernelHandle): void => void this.live.delete(h);
    let h: KernelHandle;
    if (opts.inProcess === true) {
      if (!prepared.metered) throw new SandboxError('POLICY_INVALID', 'an in-process kernel needs fuel metering (the engine has fuel off)');
      // `memory.atomic.wait` on a shared memory blocks the thread it runs on, and fuel cannot end a
      // wait: on the host thread it would hang the whole process. Without a shared memory the
      // instruction traps (the threads proposal), so refusing shared memories closes it.
      const shared = prepared.limits.memories.find((m) => m.shared);
      if (shared) {
        throw new SandboxError('POLICY_INVALID', 'an in-process kernel cannot have a shared memory (an atomic wait would block the host thread); use the worker placement', { memoryIndex: shared.memoryIndex });
      }
      const k = new InProcessKernel({
        module: prepared.module,
        entry,
        arena,
        maxMemoryPages: prepared.maxMemoryPages,
        growFailedExport: prepared.limits.growFailedExport,
        poolMemory: prepared.limits.poolMemory ?? null,
        chunk: this.deps.config.fuelChunk,
      });
      h = inProcessHandle(id, k, policy, forget);
    } else {
      const plan = planLinks(prepared.desc, policy.caps, { defined: this.deps.config.hostFunctions, granted: policy.hostCaps });
      const spec = buildSpec(this.deps.config, prepared, plan, policy, { id, tenant }, {});
      const w = new WorkerKernel(id, entry, arena, policy, prepared, spec, this.deps, forget);
      await w.boot();
      h = w;
    }
    this.live.add(h);
    return h;
  }

  async close(): Promise<void> {
    await Promise.all([...this.live].map((h) => h.close()));
  }
}

function narrowed(policy: PolicyConfig, o: KernelCallOptions | undefined): PolicyConfig {
  if (!o || (o.fuel === undefined && o.timeoutMs === undefined)) return policy;
  return narrowPolicy(policy, { ...(o.fuel !== undefined ? { fuel: o.fuel } : {}), ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}) });
}

function inProcessHandle(id: string, k: InProcessKernel, policy: PolicyConfig, forget: (h: KernelHandle) => void): KernelHandle {
  let closed = false;
  const budget = budgetOf(policy); // a call without options runs on it as is: nothing narrowed per call
  const callSync = (input: Uint8Array, opts?: KernelCallOptions): Uint8Array => {
    try {
      if (closed) throw new SandboxError('INSTANCE_DEAD', `kernel "${id}" is closed`, { id });
      if (!(input instanceof Uint8Array)) throw new SandboxError('POLICY_INVALID', 'kernel input must be a Uint8Array');
      return k.call(input, opts === undefined ? budget : budgetOf(narrowed(policy, opts)));
    } catch (e) {
      throw toSandboxError(e);
    }
  };
  const h: KernelHandle = {
    id,
    placement: 'inProcess',
    get lastFuelUsed() {
      return k.fuelUsed;
    },
    call(input, opts) {
      try {
        return Promise.resolve(callSync(input, opts));
      } catch (e) {
        return Promise.reject(e as Error);
      }
    },
    callSync,
    close() {
      closed = true;
      forget(h);
      return Promise.resolve();
    },
  };
  return h;
}

/** A kernel on its own worker: boot as `engine.start` does, then one binary frame per call. */
class WorkerKernel implements KernelHandle {
  readonly placement = 'worker' as const;
  lastFuelUsed = 0;
  private worker: WorkerHandle | null = null;
  private host: JobHost | null = null;
  private closed = false;
  private job = 0;
  private queue: Promise<unknown> = Promise.resolve();
  private pending = 0;
  /** The kernel's own budget (a call without options uses it as is: nothing narrowed per call). */
  private readonly budget: Budget;
  private timeoutMs: number;
  private readonly frame: { job: number; budget: Budget; arena: Arena; entry: string; input: Uint8Array };
  /** How long the hot path spins for a result before it waits (bridge/adaptive-spin.ts). */
  private readonly spin: AdaptiveSpin;

  constructor(
    readonly id: string,
    private readonly entry: string,
    private readonly arena: Arena,
    private readonly policy: PolicyConfig,
    private readonly prepared: PreparedModule,
    private readonly spec: GuestSpec,
    private readonly deps: KernelDeps,
    private readonly forget: (h: KernelHandle) => void,
  ) {
    this.budget = budgetOf(policy);
    this.timeoutMs = this.budget.ms;
    this.frame = { job: 0, budget: this.budget, arena, entry, input: EMPTY };
    this.spin = new AdaptiveSpin(deps.config.spinMs);
  }

  async boot(): Promise<void> {
    this.host ??= this.deps.job({ tenant: this.spec.session.tenant, instance: this.id, policy: this.policy, spec: this.spec });
    const w = await this.deps.acquireDedicated();
    const startedAt = performance.now();
    w.post({ v: PROTOCOL_VERSION, kind: 'load', job: ++this.job, module: this.prepared.module, spec: this.spec, budget: budgetOf(this.policy) });
    const a = await w.awaitDone(startedAt + this.policy.timeoutMs, this.handler, graceFor(this.prepared));
    const err = errorOf(a, this.policy.timeoutMs);
    if (err || this.closed) {
      await w.terminate().catch(() => {});
      if (this.closed) throw new SandboxError('INSTANCE_DEAD', `kernel "${this.id}" was closed`, { id: this.id });
      this.endHost();
      throw err!;
    }
    this.worker = w;
  }

  private readonly handler: HostHandler = (req, blobs, handle, call) => {
    if (!this.host) throw new SandboxError('INSTANCE_DEAD');
    return this.host.handle(req, blobs, handle, call);
  };

  call(input: Uint8Array, opts?: KernelCallOptions): Promise<Uint8Array> {
    if (this.pending === 0 && this.worker !== null) {
      // The hot path: nothing queued and the worker live. Post now; a result that is there within
      // the spin (worker-handle.ts pollKernel) is answered without an async frame of our own.
      let deadline: number;
      try {
        deadline = this.post(this.worker, input, opts);
      } catch (e) {
        return Promise.reject(toSandboxError(e));
      }
      const ms = this.spin.next();
      let out: Uint8Array | null;
      try {
        out = this.worker.pollKernel(deadline, ms); // a malformed result frame throws INTERNAL here
      } catch (e) {
        return this.track(this.broken(e));
      }
      this.spin.record(ms, out !== null);
      if (out !== null) {
        this.lastFuelUsed = this.worker.kernelFuel;
        return Promise.resolve(out);
      }
      return this.track(this.finish(this.worker, deadline, null));
    }
    return this.track(this.pending === 0 ? this.callNow(input, opts) : this.queue.then(() => this.callNow(input, opts)));
  }

  callSync(): Uint8Array {
    throw new SandboxError('NOT_CAPABLE', `kernel "${this.id}" runs in a worker: callSync is for inProcess kernels (use call)`, { id: this.id });
  }

  /** Calls are serialized: the next one starts when this one has settled. */
  private track(next: Promise<Uint8Array>): Promise<Uint8Array> {
    this.pending++;
    const settled = next.finally(() => this.pending--);
    this.queue = settled.catch(() => {});
    return settled;
  }

  private async callNow(input: Uint8Array, opts: KernelCallOptions | undefined): Promise<Uint8Array> {
    if (!this.worker) {
      this.check(input);
      await this.boot(); // the last call's timeout replaced it
    }
    const w = this.worker!;
    return this.finish(w, this.post(w, input, opts), null);
  }

  private check(input: Uint8Array): void {
    if (this.closed) throw new SandboxError('INSTANCE_DEAD', `kernel "${this.id}" is closed`, { id: this.id });
    if (!(input instanceof Uint8Array)) throw new SandboxError('POLICY_INVALID', 'kernel input must be a Uint8Array');
    if (input.length > this.arena.inCap) {
      throw new SandboxError('POLICY_INVALID', `the input is ${input.length} bytes; the kernel's input arena holds ${this.arena.inCap}`, { inputBytes: input.length, inCap: this.arena.inCap });
    }
  }

  /** Check the input and post the call (one reused frame object); returns the call's deadline. */
  private post(w: WorkerHandle, input: Uint8Array, opts: KernelCallOptions | undefined): number {
    this.check(input);
    const budget = opts === undefined ? this.budget : budgetOf(narrowed(this.policy, opts));
    const f = this.frame;
    f.job = ++this.job;
    f.budget = budget;
    f.input = input;
    this.timeoutMs = budget.ms;
    const deadline = performance.now() + budget.ms;
    w.postKernel(f);
    f.input = EMPTY; // the frame does not keep the caller's bytes alive
    return deadline;
  }

  /** The rest of a posted call: wait (unless `quick` is its result already), then settle it. */
  private async finish(w: WorkerHandle, deadline: number, quick: Awaited | null): Promise<Uint8Array> {
    const timeoutMs = this.timeoutMs;
    let a: Awaited;
    try {
      a = quick ?? (await w.awaitDone(deadline, this.handler, graceFor(this.prepared)));
    } catch (e) {
      return this.broken(e);
    }
    if (a.kind === 'done') {
      this.lastFuelUsed = a.frame.fuelUsed;
      if (a.frame.outcome.ok) return a.output ?? new Uint8Array(0);
      const e = a.frame.outcome.error;
      if (e.code === 'TIMEOUT') await this.replace(); // state is half-updated: not trusted again
      throw new SandboxError(e.code, e.message, e.details);
    }
    this.lastFuelUsed = 0;
    await this.replace();
    throw errorOf(a, timeoutMs)!;
  }

  /** The worker answered with something it should not have: it goes, the call fails. */
  private async broken(e: unknown): Promise<never> {
    await this.replace();
    throw toSandboxError(e);
  }

  /** The worker timed out or died: it goes; the next call boots a fresh one. */
  private async replace(): Promise<void> {
    this.host?.interrupt();
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate().catch(() => {});
  }

  private endHost(): void {
    this.host?.end();
    this.host = null;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.forget(this);
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate().catch(() => {});
    await this.queue.catch(() => {});
    this.endHost();
  }
}

function errorOf(a: Awaited, timeoutMs: number): SandboxError | null {
  if (a.kind === 'done') return a.frame.outcome.ok ? null : SandboxError.fromSerialized(a.frame.outcome.error);
  if (a.kind === 'timeout') return new SandboxError('TIMEOUT', `the call ran past its ${timeoutMs} ms budget`, { timeoutMs });
  if (a.kind === 'dead') return a.error;
  return new SandboxError('INTERNAL', 'the kernel stopped in a host call');
}
