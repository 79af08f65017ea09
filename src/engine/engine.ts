/**
 * The engine: policy → prepared module → link plan → a worker → a result.
 *
 * Owns: `run` (a fresh instance per call, disposed after), `start` (a persistent instance on a
 * dedicated worker), `info`, `close`; the time wall's enforcement (a call that passes its
 * deadline is interrupted at its next fuel refill, or its worker is terminated and replaced — the
 * runaway never keeps a core); a caller's `signal` (lanes/controls.ts: aborted before the run,
 * nothing runs; during it, it ends like a timeout, CANCELLED) and streamed output
 * (`onStdout`/`onStderr`, bridge/stream-sink.ts); the instance-count bound; spawned processes (a
 * registered command run as its caller, one level deeper, killable) and the query service
 * `vfs_query` uses.
 * Invariant: nothing is instantiated before the linker accepted every import; every guest runs
 * in a worker thread with an empty environment, captured stdio and bounded resources; every
 * job's host calls go through one HostServices job that is ended when the job ends.
 *
 * Does not protect against: rate limits and revocation of brokered powers (issue #5); a deadline
 * is enforced from the host, so a guest's own clock reads are not a wall.
 */

import { SandboxError, toSandboxError } from '../errors.ts';
import { resolvePolicy, type PolicyConfig, type PolicyOptions } from '../policy/resolve.ts';
import { planLinks } from './linker.ts';
import { ModuleCache, type PreparedModule } from './module-cache.ts';
import { resolveEngine, type EngineConfig, type EngineOptions } from './options.ts';
import { budgetOf, graceFor } from './budget.ts';
import { WorkerPool, poolConfigFor } from './pool.ts';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { removeDatabase, storageDir } from '../storage/index.ts';
import { mountForRun } from './mounts.ts';
import { failure, type RunResult } from './results.ts';
import { locateRewriteWorker, locateWorker } from './worker-file.ts';
import { RewritePool } from './rewrite/pool.ts';
import { buildSpec, spawnsProcesses, type GuestOptions, type RunOptions, type StartOptions } from './guest-spec.ts';
export type { GuestOptions, RunOptions, StartOptions };
import { checkName } from '../policy/names.ts';
import { Instance, type InstanceInfo } from './instance.ts';
import { laneCaps, laneRunner, laneSpec } from './lane-runner.ts';
import { HostServices, type Caller, type JobHost, type PortHandler, type ProcessRun } from './bridge/host-services.ts';
import { serveTracked, type ServeHandle, type ServeOptions } from './serve.ts';
import { execPowerServer, Lanes, runExec, type ExecOptions, type ExecOutcome } from '../lanes/index.ts';
import { CommandRegistry } from './registry.ts';
import { build, type BuildOptions, type BuildResult } from '../build/build.ts';
import { execNative, isNativeLanguage } from '../build/exec.ts';
import { QueryService } from '../storage/query.ts';
import { Brokers, resolveHostFunctions, type Principal } from '../brokers/index.ts';
import { auditInDatabase } from './audit-sink.ts';
import { callReceipts, execWithReceipt, runWithReceipt } from './receipts.ts';
import { cancelled, unlessAborted } from '../lanes/controls.ts';
import { CallWatch, notRun, settledRun } from './call-controls.ts';
import { RunMemo, entryOf, runFrame } from './fresh-run.ts';
import { StreamSink } from './bridge/stream-sink.ts';
import { agentFor, closeAgent, type AgentSurface } from './agent-slot.ts';
import { admitSigned } from './signed.ts';
import { TenantScheduler } from '../fabric/tenant-scheduler.ts';
import { KernelLane, type KernelHandle, type KernelOptions } from './kernel-lane.ts';
import { checkTier, instanceOnly, closeOsProcess, closeRemote, fanout, osExec, osRun, remoteRun, type FanoutOptions, type FanResult, type OsProcessCall, type OsProcessDeps } from './fanout-lane.ts';
import { callerQuery } from './caller-query.ts';
import { isComponent, prepareComponentStart, runComponent, type ComponentLaneParts } from './component-instance.ts';

/** What a nested run (a spawned process) inherits from its caller instead of resolving options. */
interface Inherited {
  readonly policy: PolicyConfig;
  readonly argv0: string;
  readonly depth: number;
  readonly signal: AbortSignal;
  /** A lane's interpreter run: its port (src/wasi/port.ts). */
  readonly port?: PortHandler;
}

export interface EngineStats {
  readonly liveWorkers: number;
  readonly instances: number;
  /** Pool workers terminated and replaced (runaways that did not stop by themselves, deaths). */
  readonly workersReplaced: number;
}

export class Engine {
  readonly config: EngineConfig;
  /** The commands guests may run, and the toolchain the build lane uses (src/build). */
  readonly commands: CommandRegistry;
  private readonly modules: ModuleCache;
  private readonly rewriter: RewritePool;
  private readonly pool: WorkerPool;
  private readonly services: HostServices;
  private readonly brokers: Brokers;
  private queries: QueryService | null = null;
  private readonly instances = new Map<string, Instance>();
  private readonly instanceJobs = new Map<string, JobHost>();
  private readonly servers = new Set<ServeHandle>();
  private readonly lanes: Lanes;
  private readonly kernels: KernelLane;
  private readonly fair: TenantScheduler;
  private readonly memo: RunMemo;
  private readonly starting = new Set<string>();
  private runs = 0;
  private jobs = 0;
  private execs = 0;
  private closed = false;

  constructor(options: EngineOptions = {}) {
    const resolved = resolveEngine(options);
    const commands = options.commands ?? CommandRegistry.withBuiltins({ cacheDir: resolved.cacheDir });
    const forward = options.brokers?.forward;
    this.config = Object.freeze({ ...resolved, operatorModule: (b: Uint8Array) => commands.isRegisteredModule(b) });
    // Rewriting and compiling never run on this thread (module uploads, the Python interpreter).
    this.rewriter = new RewritePool({ file: locateRewriteWorker });
    this.modules = new ModuleCache(this.config.cacheDir, { maxDiskBytes: this.config.cacheMaxBytes, rewriter: this.rewriter });
    this.pool = new WorkerPool(poolConfigFor(this.config, locateWorker));
    this.pool.warm();
    this.memo = new RunMemo(this.config);
    this.fair = new TenantScheduler({ slots: this.config.maxWorkers, perTenant: this.config.maxWorkersPerTenant });
    this.brokers = new Brokers(options.brokers ?? {}, auditInDatabase, resolveHostFunctions(options.hostFunctions), options.onHostFunctionError ?? null);
    this.lanes = new Lanes(this.config, laneRunner({ config: this.config, pool: this.pool, services: { job: (c) => this.services.job(c) }, prepare: (b, p) => this.prepare(b, p), runResolved: this.runResolved.bind(this) }));
    this.commands = commands;
    this.services = new HostServices({
      registry: this.commands,
      onLog: this.config.onLog,
      prepare: (bytes, policy) => this.prepare(bytes, policy),
      runProcess: (caller, run) => this.runProcess(caller, run),
      query: (caller, sql, snapshot, deadline) => callerQuery(() => (this.queries ??= new QueryService()), caller, sql, snapshot, deadline),
      broker: (caller, name, args, cap) => this.brokers.call(caller, name, args, cap),
      admit: (caller, cap, op, bytes, max) => this.brokers.spawnAdmit({ tenant: caller.tenant, instance: caller.instance, caps: caller.policy.caps }, cap, op, bytes, max),
      record: (caller, kind, detail) => this.brokers.record({ tenant: caller.tenant, instance: caller.instance, kind, detail }),
      parallelism: Math.max(1, Math.min(16, this.config.maxWorkers)),
      net: (caller, name, args, stop, deadline) => this.brokers.net(caller, name, args, stop, deadline),
      hostFunctions: this.config.hostFunctions,
      hostCall: (caller, cap, fn, args, stops, deadline) =>
        this.brokers.hostCall({ tenant: caller.tenant, instance: caller.instance, hostCaps: caller.policy.hostCaps }, cap, fn, args, stops, deadline),
      signedOnly: this.config.requireSigned !== null,
      ...(forward?.slot ? { slots: (kind: 'exec' | 'process') => forward.slot!(kind) } : {}), // an os_process child: its tenant's slots are the parent's
    });
    this.kernels = new KernelLane({ config: this.config, prepare: (b, p) => this.prepare(b, p), acquireDedicated: () => this.pool.acquireDedicated(), job: (c) => this.services.job(c), record: (e) => this.brokers.record(e) });
  }

  kernel(bytes: Uint8Array, opts: KernelOptions = {}): Promise<KernelHandle> {
    this.assertOpen();
    return this.kernels.open(bytes, opts);
  }

  fanout(opts: FanoutOptions): Promise<FanResult[]> {
    this.assertOpen();
    return fanout({ run: (b, o) => this.run(b, o), commands: this.commands, kernel: (b, o) => this.kernel(b, o), redisUrl: this.config.remote?.redis ?? null }, opts);
  }

  /** Run a module once in a fresh instance: `_start` (WASI) or `opts.invoke`; `receipt: true` adds a signed receipt (receipts.ts). */
  run(bytes: Uint8Array, opts: RunOptions & OsProcessCall = {}): Promise<RunResult> {
    if (opts.tier === 'os_process') return osRun(this.osDeps, bytes, opts); // a child process per call (src/engine/os-process/)
    if (opts.tier === 'remote') return remoteRun(this, this.config, (e) => this.brokers.record(e), bytes, opts); // src/engine/remote-lane.ts
    if (bytes instanceof Uint8Array && isComponent(bytes)) return runComponent(this.componentParts, bytes, opts);
    return opts.receipt ? runWithReceipt({ config: this.config, anchor: (e) => this.brokers.anchor(e), watch: (id) => this.services.watch(id), execute: (b, o) => this.execute(b, o, null) }, bytes, opts) : this.execute(bytes, opts, null);
  }

  private async execute(bytes: Uint8Array, opts: RunOptions, inherited: Inherited | null): Promise<RunResult> {
    const t0 = performance.now();
    let policy: PolicyConfig | null = null;
    let scratch: string | null = null;
    let mounted: ReturnType<typeof mountForRun> = null;
    // The caller's signal (and a spawned process's caller's): aborted before a worker is handed
    // out, nothing runs (CANCELLED, fuelUsed 0); during the run it stops like a timeout, CANCELLED.
    const watch = CallWatch.of(opts.signal, inherited?.signal);
    let admitted: (() => void) | null = null;
    try {
      this.assertOpen();
      policy = inherited?.policy ?? this.memo.policy(opts);
      // A name the engine makes itself (`run-N`, `default`) is well-formed: only a caller's is checked.
      const id = opts.id === undefined || opts.id === null ? `run-${++this.runs}` : checkName('id', opts.id);
      const tenant = opts.tenant === undefined || opts.tenant === null ? 'default' : checkName('tenant', opts.tenant);
      if (opts.signal?.aborted) return notRun(policy, t0);
      if (checkTier(opts.tier) !== 'instance') throw new SandboxError('TIER_UNAVAILABLE', `the ${String(opts.tier)} tier is not available for this run`, { tier: String(opts.tier), reason: 'this path runs on the instance tier only' }); // never a silent downgrade
      if (!inherited) this.auditFallback(policy, tenant, id);
      if (!inherited) bytes = await admitSigned(this.config, bytes, opts.artifact, (d) => this.brokers.record({ tenant, instance: id, kind: 'artifact.refused', detail: d }));
      const prepared = await unlessAborted(this.prepare(bytes, policy), opts.signal); // a first compile can take seconds: an abort answers at once (the compile goes on into the cache)
      const frame = inherited ? runFrame(this.config, prepared, policy, inherited.port ? laneCaps(policy) : policy.caps) : this.memo.frame(prepared, policy); // fresh-run.ts
      const { entry, isCommand } = entryOf(frame, prepared, opts);
      if (opts.signal?.aborted) throw cancelled();
      mounted = opts.mounts === undefined || opts.mounts === null ? null : mountForRun(opts.mounts, opts.vfs, policy, id, this.config.maxMountFiles);
      let spec = buildSpec(this.config, prepared, frame.plan, policy, inherited ? { id, tenant, argv0: inherited.argv0 } : { id, tenant }, opts, inherited?.depth ?? 0, frame.spec);
      if (inherited?.port) spec = laneSpec(spec, this.config);
      if (mounted && spec.vfs) spec = { ...spec, vfs: { ...spec.vfs, file: mounted.file } };
      else if (spec.vfs?.file === ':memory:' && spawnsProcesses(spec)) {
        // Processes run on other workers: they can share a file VFS, not an in-memory one.
        scratch = join(storageDir('vfs'), `run-${id}-${randomUUID()}.sqlite`);
        spec = { ...spec, vfs: { ...spec.vfs, file: scratch } };
      }
      // Waiting for a turn (top-level calls, fair across tenants) and a worker is bounded by the call's own timeout: then OVERLOADED, nothing ran.
      if (!inherited) admitted = this.fair.tryAdmit(tenant, opts.signal) ?? (await this.fair.admit(tenant, policy.timeoutMs, opts.signal));
      const handle = this.pool.takeReady(opts.signal) ?? (await this.pool.acquire(policy.timeoutMs, opts.signal));
      if (opts.signal?.aborted) {
        this.pool.release(handle);
        throw cancelled();
      }
      const startedAt = performance.now();
      const deadline = startedAt + policy.timeoutMs;
      const jobId = ++this.jobs;
      const sink = StreamSink.for(jobId, opts, this.config.outputLimitBytes);
      handle.postRun(prepared.module, { job: jobId, spec, entry, budget: budgetOf(policy), stream: sink !== null });
      let awaited;
      const job = this.services.job(inherited?.port ? { tenant, instance: id, policy, spec, port: inherited.port } : { tenant, instance: id, policy, spec });
      try {
        awaited = await handle.awaitDone(deadline, job.handle, graceFor(prepared), watch.signal, sink);
      } catch (e) {
        void this.pool.discard(handle); // a broken frame: the worker is not trusted again
        throw e;
      } finally {
        job.end();
      }
      if (awaited.kind === 'done') this.pool.release(handle);
      else void this.pool.discard(handle);
      const result = settledRun(awaited, sink, { policy, isCommand, startedAt, deadline, outputLimitBytes: this.config.outputLimitBytes, watch });
      const withBytes = opts.captureBytes && awaited.kind === 'done' ? { ...result, stdoutBytes: awaited.stdout, stdoutTruncated: awaited.frame.stdoutTruncated } : result;
      return mounted ? mounted.finish(withBytes) : withBytes;
    } catch (e) {
      const err = toSandboxError(e);
      const r = failure(err, { profile: policy?.profile ?? 'compute', warnings: policy?.warnings ?? [] }, performance.now() - t0);
      return mounted ? mounted.finish(r) : r; // a failed run writes nothing back; its private copy goes
    } finally {
      admitted?.();
      watch.dispose();
      if (scratch) removeDatabase(scratch);
    }
  }

  /** A spawned process: the registered command as its caller (tenant, policy, VFS), one level deeper. */
  private runProcess(caller: Caller, run: ProcessRun): Promise<RunResult> {
    const opts: RunOptions = {
      tenant: caller.tenant,
      argv: this.commands.argsFor(run.request.name, run.request.args),
      stdin: run.request.stdin,
      captureBytes: true,
      ...(caller.spec.vfs ? { vfsFile: caller.spec.vfs.file, images: this.commands.imagesFor(run.request.name) } : {}),
    };
    return this.execute(run.bytes, opts, { policy: this.commands.policyFor(run.request.name, caller.policy), argv0: run.request.name, depth: run.depth, signal: run.signal });
  }

  /** Start a persistent instance; its calls are serialized and share its state. */
  async start(id: string, bytes: Uint8Array, opts: StartOptions = {}): Promise<Instance> {
    this.assertOpen();
    checkName('id', id);
    instanceOnly(opts.tier, 'a persistent instance'); // never a silent downgrade to the instance tier
    // Reserve the name and the slot before the first await: concurrent starts cannot exceed maxInstances or share an id.
    if (this.instances.has(id) || this.starting.has(id)) {
      throw new SandboxError('POLICY_INVALID', `an instance named "${id}" already exists`, { id });
    }
    if (this.instances.size + this.starting.size >= this.config.maxInstances) {
      throw new SandboxError('MEMORY_LIMIT', `the engine already runs its maximum of ${this.config.maxInstances} instances`, {
        maxInstances: this.config.maxInstances,
      });
    }
    this.starting.add(id);
    let scratch: string | null = null;
    try {
      const policy = resolvePolicy(opts, this.config);
      const tenant = checkName('tenant', opts.tenant ?? 'default');
      this.auditFallback(policy, tenant, id);
      bytes = await admitSigned(this.config, bytes, opts.artifact, (d) => this.brokers.record({ tenant, instance: id, kind: 'artifact.refused', detail: d }));
      const component = bytes instanceof Uint8Array && isComponent(bytes) ? await prepareComponentStart(this.componentParts, bytes, policy, { id, tenant }, opts) : null; // component-instance.ts
      const prepared = component?.prepared ?? (await this.prepare(bytes, policy));
      let spec = component?.spec ?? buildSpec(this.config, prepared, planLinks(prepared.desc, policy.caps, { defined: this.config.hostFunctions, granted: policy.hostCaps }), policy, { id, tenant }, opts);
      if (spec.vfs?.file === ':memory:' && spawnsProcesses(spec)) {
        scratch = join(storageDir('vfs'), `instance-${id}-${randomUUID()}.sqlite`);
        spec = { ...spec, vfs: { ...spec.vfs, file: scratch } };
      }
      const job = this.services.job({ tenant, instance: id, policy, spec });
      this.instanceJobs.set(id, job);
      const file = scratch;
      const instance = new Instance({
        id,
        tenant,
        policy,
        prepared,
        spec,
        engine: this.config,
        acquire: () => this.pool.acquireDedicated(),
        hostHandler: job.handle,
        onCallStopped: () => job.interrupt(),
        receipted: component?.receipted ?? callReceipts({ config: this.config, anchor: (e) => this.brokers.anchor(e), watch: (i) => this.services.watch(i), tenant, id, policy, module: { sha256: prepared.hash, bytes: bytes.length } }),
        ...(component ? { lane: component.lane } : {}),
        onGone: () => {
          job.end();
          this.instances.delete(id);
          this.instanceJobs.delete(id);
          if (file) removeDatabase(file);
        },
      });
      await instance.boot();
      if (this.closed) {
        await instance.stop();
        throw new SandboxError('INSTANCE_DEAD', 'the engine closed while the instance was starting');
      }
      this.instances.set(id, instance);
      scratch = null;
      return instance;
    } catch (e) {
      if (scratch) removeDatabase(scratch);
      throw toSandboxError(e);
    } finally {
      this.starting.delete(id);
    }
  }

  info(id: string): InstanceInfo {
    const i = this.instances.get(id);
    if (!i) throw new SandboxError('INSTANCE_DEAD', `no instance named "${id}"`, { id });
    return i.info();
  }
  get(id: string): Instance | undefined { return this.instances.get(id); }

  /** Rewrite and compile a module ahead of its first run under these limits (kept out of any call's deadline). */
  async warm(bytes: Uint8Array, opts: PolicyOptions = {}): Promise<void> {
    this.assertOpen();
    await this.prepare(bytes, resolvePolicy(opts, this.config));
  }
  /** Boot the JS/TS lane's interpreter pool ahead of any exec (an os_process tier's pooled child). */
  async warmExec(): Promise<void> { this.assertOpen(); await this.lanes.get('js'); }

  /** Internal to the build lane (src/build) and the CPython lane: run under a policy they resolved; `port` is a lane's (src/wasi/port.ts). */
  runResolved(bytes: Uint8Array, opts: RunOptions, policy: PolicyConfig, port?: PortHandler): Promise<RunResult> {
    this.assertOpen();
    return this.execute(bytes, opts, { policy, argv0: opts.argv0 ?? opts.id ?? 'main', depth: 0, signal: new AbortController().signal, ...(port ? { port } : {}) });
  }

  /** Internal to the build lane: a fair turn for one build or C/C++ exec (its steps are not admitted again). */
  turn(tenant: string, waitMs: number, signal?: AbortSignal): Promise<() => void> { return this.fair.admit(checkName('tenant', tenant), waitMs, signal); }

  /** Compile and link C/C++ sources inside the sandbox (the build lane, src/build/build.ts). */
  build(opts: BuildOptions): Promise<BuildResult> {
    this.assertOpen();
    return build(this, opts);
  }

  /** Append an engine-level record to the audit log (interfaces: a refused grant, say). No secrets in `detail`. */
  audit(event: { tenant: string; instance?: string; kind: string; detail: Record<string, unknown> }): void {
    this.brokers.record({ tenant: event.tenant, instance: event.instance ?? '', kind: event.kind, detail: event.detail });
  }

  /**
   * Revoke a principal — a tenant, or one instance of it: every later broker call (and a long
   * one in flight, at its next step) answers REVOKED; secrets scoped to that tenant alone are
   * zeroized. Held by the engine, so it survives instance restarts. Audited.
   */
  revoke(principal: Principal): void {
    this.brokers.revoke(principal);
  }

  /** Lift a revocation (secrets zeroized by it stay gone). Audited. */
  restore(principal: Principal): void {
    this.brokers.restore(principal);
  }

  /**
   * Run untrusted source — JavaScript, TypeScript (stripped inside the sandbox) or Python — in a
   * fresh interpreter under a profile: `{ ok, result?, stdout, stderr, error?, fuelUsed, ... }`.
   */
  exec(opts: ExecOptions & OsProcessCall): Promise<ExecOutcome> {
    this.assertOpen();
    if (opts.receipt) return execWithReceipt({ config: this.config, anchor: (e) => this.brokers.anchor(e), exec: (o) => this.exec(o) }, opts);
    if (opts.tier !== undefined && opts.tier !== 'instance') return osExec(this.osDeps, opts);
    if (isNativeLanguage(opts.language)) return execNative(this, opts);
    let release: (() => void) | null = null;
    return runExec(
      opts,
      this.config,
      async (language, onProgress) => {
        // The lane first (its boot is the engine's, once: no tenant's turn is held through it), then the snippet's fair turn.
        const lane = await this.lanes.get(language, onProgress);
        release = await this.fair.admit(opts.tenant ?? 'default', resolvePolicy(opts, this.config).timeoutMs, opts.signal);
        return lane;
      },
      (tenant, requested, ran) => this.brokers.record({ tenant, instance: '', kind: 'profile-fallback', detail: { requested: requested.slice(0, 64), ran } }),
      // The snippet's principal: its tenant and an exec-unique instance (revocable like any other).
      (tenant, policy, vfs) =>
        execPowerServer(
          {
            config: this.config,
            brokers: this.brokers,
            services: this.services,
            run: (bytes, o, inherited) => this.execute(bytes, { tenant, ...o }, inherited),
            query: (source, sql) => (this.queries ??= new QueryService()).query(source, sql),
            hostFunctions: this.config.hostFunctions,
          },
          tenant,
          `exec-${++this.execs}`,
          policy,
          vfs,
        ),
    ).finally(() => release?.());
  }

  /**
   * Serve inbound HTTP with a persistent instance (granted `net`) that exports
   * `serve_handle(request_len)`: each request passes revocation, a per-client rate and a size
   * cap, then reaches the guest as JSON (docs/abi.md). Closed with the engine.
   */
  async serve(id: string, options: ServeOptions = {}): Promise<ServeHandle> {
    this.assertOpen();
    const instance = this.instances.get(id);
    const job = this.instanceJobs.get(id);
    if (!instance || !job) throw new SandboxError('INSTANCE_DEAD', `no instance named "${id}"`, { id });
    const info = instance.info();
    if (!info.caps.includes('net')) throw new SandboxError('NOT_CAPABLE', 'serving HTTP needs the net cap', { id, caps: [...info.caps] });
    const record = (kind: string, detail: Record<string, unknown>): void => this.brokers.record({ tenant: info.tenant, instance: id, kind, detail });
    return serveTracked(this.servers, { instance, tenant: info.tenant, id, slot: job.serving, cadence: this.brokers.cadence, record }, options);
  }

  /** The agent loop (src/agent, DESIGN §13): run, sessions; its model and fetch calls go through the brokers. */
  get agent(): AgentSurface { return agentFor(this, { remote: (caller, name, args, stop, deadline) => this.brokers.net(caller, name, args, stop, deadline) }); }

  /** A tenant's running execs and live processes (the exec cap's per-principal counters). */
  principalUsage(tenant: string): { execs: number; processes: number } { return this.services.usage(tenant); }

  stats(): EngineStats { return { liveWorkers: this.pool.liveWorkers, instances: this.instances.size, workersReplaced: this.pool.replaced }; }

  async close(): Promise<void> {
    await closeAgent(this); // live agent sessions end `stopped`, resumable from their VFS
    this.closed = true;
    await Promise.all([...this.servers].map((h) => h.close()));
    await this.lanes.close();
    await Promise.all([this.kernels.close(), closeRemote(this), closeOsProcess(this.config)]);
    this.fair.close();
    await Promise.all([...this.instances.values()].map((i) => i.stop()));
    await this.pool.close();
    await this.modules.close();
    await this.rewriter.close();
    await this.queries?.close();
    this.brokers.close();
  }

  /** An unknown profile that ran as the fallback leaves an audit record, not just a warning. */
  private auditFallback(policy: PolicyConfig, tenant: string, instance: string): void {
    if (policy.requestedProfile === policy.profile) return;
    this.brokers.record({ tenant, instance, kind: 'profile-fallback', detail: { requested: policy.requestedProfile.slice(0, 64), ran: policy.profile } });
  }

  private get osDeps(): OsProcessDeps { return { config: this.config, fair: this.fair, record: (e) => this.brokers.record(e), closed: () => this.closed, brokers: this.brokers, commands: this.commands, slots: (t, k) => this.services.takeSlot(k, t), admit: (c, cap, op, bytes, max) => this.brokers.cadence.admit(c, cap, op, { bytes, max }) }; }
  private get componentParts(): ComponentLaneParts { return { config: this.config, pool: this.pool, services: this.services, prepare: (b, p) => this.prepare(b, p), admit: (t, w, s) => this.fair.admit(t, w, s), fallback: (p, t, i) => this.auditFallback(p, t, i), record: (t, i, kind, d) => this.brokers.record({ tenant: t, instance: i, kind, detail: d }) }; }

  private assertOpen(): void {
    if (this.closed) throw new SandboxError('INSTANCE_DEAD', 'the engine is closed');
  }

  private prepare(bytes: Uint8Array, policy: PolicyConfig): Promise<PreparedModule> {
    if (!(bytes instanceof Uint8Array)) throw new SandboxError('INVALID_MODULE', 'module bytes must be a Uint8Array');
    if (this.commands.isToolchainModule(bytes)) this.modules.trust(bytes);
    return this.modules.prepare(bytes, this.memo.prepareOptions(policy));
  }
}

export const createEngine = (options: EngineOptions = {}): Engine => new Engine(options);
