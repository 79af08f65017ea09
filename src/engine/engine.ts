/**
 * The engine: policy → prepared module → link plan → a worker → a result.
 *
 * Owns: `run` (a fresh instance per call, disposed after), `start` (a persistent instance on a
 * dedicated worker), `info`, `close`; the time wall's enforcement (a call that passes its
 * deadline gets TIMEOUT and its worker is terminated and replaced — the runaway never keeps a
 * core); the instance-count bound.
 * Invariant: nothing is instantiated before the linker accepted every import; every guest runs
 * in a worker thread with an empty environment, captured stdio and bounded resources.
 *
 * Does not protect against: fuel/work (issue #3 adds metering) and brokered powers (issue #5);
 * a deadline is enforced from the host, so a guest's own clock reads are not a wall.
 */

import { SandboxError, toSandboxError } from '../errors.ts';
import { memoryPages, resolvePolicy, type PolicyConfig, type PolicyOptions } from '../policy/resolve.ts';
import { planLinks, type LinkPlan } from './linker.ts';
import { ModuleCache, type PreparedModule } from './module-cache.ts';
import { resolveEngine, HOST_WAIT_GRACE_MS, type EngineConfig, type EngineOptions } from './options.ts';
import { budgetOf, graceFor } from './budget.ts';
import { FUEL_REFILL_IMPORT, importKey } from '../policy/catalog.ts';
import { WorkerPool } from './pool.ts';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Vfs, removeDatabase, resolveVfs, storageDir } from '../storage/index.ts';
import { checkMount, copyIn, parseMount, writeBack, type MountSnapshot, type MountSpec } from './mounts.ts';
import { PROTOCOL_VERSION, type VfsSpec, type Entry, type GuestSpec, type HostReply, type HostRequest } from './protocol.ts';
import { failure, fromAwaited, type RunResult } from './results.ts';
import { parseArgs, type ArgValue } from './values.ts';
import { locateWorker } from './worker-file.ts';
import type { HostHandler } from './worker-handle.ts';
import { Instance, type InstanceInfo } from './instance.ts';

export interface GuestOptions extends PolicyOptions {
  /** Who the guest runs for; captured at start, never named by the guest. Default "default". */
  tenant?: string;
  /** Command-line arguments after argv[0] for a WASI command. */
  argv?: readonly string[];
  /** Environment variables (a guest's environment is empty unless the operator passes some). */
  env?: Readonly<Record<string, string>>;
  stdin?: Uint8Array | string;
  /**
   * A named persistent VFS (`$MEMBRANE_HOME/vfs/NAME.sqlite`) for the guest's files; without one a
   * guest granted `vfs` gets a fresh, empty, in-memory VFS that disappears with it.
   */
  vfs?: string;
  /** The VFS database as a host path chosen by the operator (wins over `vfs`); never guest-chosen. */
  vfsFile?: string;
}

export interface RunOptions extends GuestOptions {
  /**
   * Host directories copied into the guest's VFS before the run (`HOSTDIR:/guest[:ro]` or a
   * MountSpec); read-write ones get the guest's changes written back after a successful run.
   */
  mounts?: readonly (string | MountSpec)[];
  /** Call this export instead of `_start`. */
  invoke?: string;
  args?: readonly ArgValue[];
  /** The id reported by `session_info`; default a fresh `run-N`. */
  id?: string;
  /** Also return the raw stdout bytes (`stdoutBytes`), e.g. to pipe binary output onward. */
  captureBytes?: boolean;
}

export type StartOptions = GuestOptions;

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;
const ID_PATTERN = /^[A-Za-z0-9._:@-]{1,128}$/;

export interface EngineStats {
  readonly liveWorkers: number;
  readonly instances: number;
  /** Pool workers terminated and replaced (runaways that did not stop by themselves, deaths). */
  readonly workersReplaced: number;
}

export class Engine {
  readonly config: EngineConfig;
  private readonly modules: ModuleCache;
  private readonly pool: WorkerPool;
  private readonly instances = new Map<string, Instance>();
  private readonly starting = new Set<string>();
  private runs = 0;
  private closed = false;

  constructor(options: EngineOptions = {}) {
    this.config = resolveEngine(options);
    this.modules = new ModuleCache(this.config.cacheDir);
    this.pool = new WorkerPool({
      file: locateWorker,
      size: this.config.poolSize,
      maxWorkers: this.config.maxWorkers,
      acquireTimeoutMs: 30_000,
      limits: {
        heapMb: this.config.workerHeapMb,
        stackMb: this.config.workerStackMb,
        spinMs: this.config.spinMs,
        idleWaitMs: 1_000,
      },
    });
    this.pool.warm();
  }

  /** Run a module once in a fresh instance: `_start` (WASI) or `opts.invoke`. */
  async run(bytes: Uint8Array, opts: RunOptions = {}): Promise<RunResult> {
    const t0 = performance.now();
    let policy: PolicyConfig | null = null;
    try {
      this.assertOpen();
      policy = resolvePolicy(opts, this.config);
      const id = checkName('id', opts.id ?? `run-${++this.runs}`);
      const tenant = checkName('tenant', opts.tenant ?? 'default');
      const prepared = await this.prepare(bytes, policy);
      const plan = planLinks(prepared.desc, policy.caps);
      const { entry, isCommand } = chooseEntry(prepared, opts);
      const mounted = this.mount(opts, policy, id);
      let spec = this.spec(prepared, plan, policy, { id, tenant }, opts);
      if (mounted && spec.vfs) spec = { ...spec, vfs: { ...spec.vfs, file: mounted.file } };
      const handle = await this.pool.acquire();
      const startedAt = performance.now();
      const deadline = startedAt + policy.timeoutMs;
      handle.post({ v: PROTOCOL_VERSION, kind: 'run', job: 1, module: prepared.module, spec, entry, budget: budgetOf(policy) });
      let awaited;
      try {
        awaited = await handle.awaitDone(deadline, this.hostHandler(tenant, id), graceFor(prepared));
      } catch (e) {
        void this.pool.discard(handle); // a broken frame: the worker is not trusted again
        throw e;
      }
      if (awaited.kind === 'done') this.pool.release(handle);
      else void this.pool.discard(handle);
      const result = fromAwaited(awaited, {
        profile: policy.profile,
        warnings: policy.warnings,
        isCommand,
        timeoutMs: policy.timeoutMs,
        startedAt,
        outputLimitBytes: this.config.outputLimitBytes,
      });
      const withBytes = opts.captureBytes && awaited.kind === 'done' ? { ...result, stdoutBytes: awaited.stdout } : result;
      return mounted ? mounted.finish(withBytes) : withBytes;
    } catch (e) {
      const err = toSandboxError(e);
      return failure(err, { profile: policy?.profile ?? 'compute', warnings: policy?.warnings ?? [] }, performance.now() - t0);
    }
  }

  /** Start a persistent instance; its calls are serialized and share its state. */
  async start(id: string, bytes: Uint8Array, opts: StartOptions = {}): Promise<Instance> {
    this.assertOpen();
    checkName('id', id);
    // Reserve the name and the slot before the first await, so concurrent starts cannot exceed
    // maxInstances or share an id.
    if (this.instances.has(id) || this.starting.has(id)) {
      throw new SandboxError('POLICY_INVALID', `an instance named "${id}" already exists`, { id });
    }
    if (this.instances.size + this.starting.size >= this.config.maxInstances) {
      throw new SandboxError('MEMORY_LIMIT', `the engine already runs its maximum of ${this.config.maxInstances} instances`, {
        maxInstances: this.config.maxInstances,
      });
    }
    this.starting.add(id);
    try {
      const policy = resolvePolicy(opts, this.config);
      const tenant = checkName('tenant', opts.tenant ?? 'default');
      const prepared = await this.prepare(bytes, policy);
      const plan = planLinks(prepared.desc, policy.caps);
      const spec = this.spec(prepared, plan, policy, { id, tenant }, opts);
      const instance = new Instance({
        id,
        tenant,
        policy,
        prepared,
        spec,
        engine: this.config,
        acquire: () => this.pool.acquireDedicated(),
        hostHandler: this.hostHandler(tenant, id),
        onGone: () => this.instances.delete(id),
      });
      await instance.boot();
      if (this.closed) {
        await instance.stop();
        throw new SandboxError('INSTANCE_DEAD', 'the engine closed while the instance was starting');
      }
      this.instances.set(id, instance);
      return instance;
    } catch (e) {
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

  get(id: string): Instance | undefined {
    return this.instances.get(id);
  }

  stats(): EngineStats {
    return { liveWorkers: this.pool.liveWorkers, instances: this.instances.size, workersReplaced: this.pool.replaced };
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.instances.values()].map((i) => i.stop()));
    await this.pool.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new SandboxError('INSTANCE_DEAD', 'the engine is closed');
  }

  private prepare(bytes: Uint8Array, policy: PolicyConfig): Promise<PreparedModule> {
    if (!(bytes instanceof Uint8Array)) throw new SandboxError('INVALID_MODULE', 'module bytes must be a Uint8Array');
    return this.modules.prepare(bytes, {
      maxMemoryPages: memoryPages(policy),
      maxTableElements: this.config.maxTableElements,
      trapOnGrowFailure: this.config.trapOnGrowFailure,
      metered: this.config.fuel,
    });
  }

  /**
   * Copy mounts into the run's VFS (a named one, or a private file removed after the run) and
   * return what to do when the run ends: write read-write mounts back after a success.
   */
  private mount(opts: RunOptions, policy: PolicyConfig, id: string): { file: string; finish: (r: RunResult) => RunResult } | null {
    const specs = (opts.mounts ?? []).map((m) => (typeof m === 'string' ? parseMount(m) : checkMount(m)));
    if (specs.length === 0) return null;
    if (!policy.caps.includes('vfs')) throw new SandboxError('POLICY_INVALID', 'mounts need the vfs cap', { caps: [...policy.caps] });
    const temporary = opts.vfs === undefined;
    const file = temporary ? join(storageDir('vfs'), `run-${id}-${randomUUID()}.sqlite`) : resolveVfs({ name: opts.vfs }).file;
    const cleanup = (): void => {
      if (temporary) removeDatabase(file);
    };
    let snapshots: MountSnapshot[];
    try {
      const vfs = Vfs.open({ file });
      try {
        snapshots = copyIn(vfs, specs, this.config.maxMountFiles);
      } finally {
        vfs.close();
      }
    } catch (e) {
      cleanup();
      throw e;
    }
    const skipped = snapshots.filter((s) => s.skipped.length).map((s) => `mount ${s.mount.guestPath}: skipped ${s.skipped.length} entries that are not regular files or directories`);
    return {
      file,
      finish: (r) => {
        try {
          const warnings = [...r.warnings, ...skipped];
          if (!r.ok || (r.exitCode ?? 0) !== 0) return { ...r, warnings };
          const vfs = Vfs.open({ file });
          try {
            for (const s of snapshots) writeBack(vfs, s);
          } finally {
            vfs.close();
          }
          return { ...r, warnings };
        } catch (e) {
          const err = toSandboxError(e);
          return { ...r, ok: false, error: err.toPublic(), warnings: [...r.warnings, 'the mount write-back failed'] };
        } finally {
          cleanup();
        }
      },
    };
  }

  private spec(
    prepared: PreparedModule,
    plan: LinkPlan,
    policy: PolicyConfig,
    who: { id: string; tenant: string },
    opts: GuestOptions,
  ): GuestSpec {
    const env = Object.entries(opts.env ?? {});
    for (const [k, v] of env) {
      if (k.includes('=') || k.includes('\0') || String(v).includes('\0')) {
        throw new SandboxError('POLICY_INVALID', 'environment names may not contain "=" or NUL, values may not contain NUL');
      }
    }
    const stdin = typeof opts.stdin === 'string' ? new TextEncoder().encode(opts.stdin) : (opts.stdin ?? new Uint8Array(0));
    return {
      session: { id: who.id, tenant: who.tenant, profile: policy.profile },
      link: prepared.metered ? [...plan.link, importKey(FUEL_REFILL_IMPORT.module, FUEL_REFILL_IMPORT.name)] : plan.link,
      maxMemoryPages: prepared.maxMemoryPages,
      importedMemory: plan.importedMemory,
      growFailedExport: prepared.limits.growFailedExport,
      output: { limitBytes: this.config.outputLimitBytes, failOnLimit: this.config.failOnOutputLimit },
      wasi: { argv: [who.id, ...(opts.argv ?? []).map(String)], env: env.map(([k, v]) => [k, String(v)] as const), stdin },
      logSink: this.config.onLog ? 'host' : 'stderr',
      hostWaitMs: policy.timeoutMs + HOST_WAIT_GRACE_MS,
      fuel: { metered: prepared.metered, chunk: this.config.fuelChunk },
      vfs: policy.caps.includes('vfs') ? vfsSpec(opts.vfs, opts.vfsFile, this.config) : null,
    };
  }

  private hostHandler(tenant: string, instance: string): HostHandler {
    const onLog = this.config.onLog;
    return (req: HostRequest): HostReply => {
      if (req.op === 'log' && onLog) {
        try {
          onLog({ tenant, instance, level: LOG_LEVELS[req.level] ?? 'info', message: req.message });
        } catch {
          // an operator's logger failing is not the guest's problem
        }
      }
      return { v: PROTOCOL_VERSION, kind: 'host-reply', ok: true, value: 0 };
    };
  }
}

/** What the guest sees: `/` is the workspace volume, `/tmp` and `/memory` the other two. */
export const DEFAULT_PREOPENS = Object.freeze([
  { guestPath: '/', volume: 'workspace' as const },
  { guestPath: '/tmp', volume: 'tmp' as const },
  { guestPath: '/memory', volume: 'memory' as const },
]);

function vfsSpec(name: string | undefined, file: string | undefined, limits: { vfsMaxBytes: number; vfsMaxInodes: number }): VfsSpec {
  const where = file !== undefined ? { file } : name === undefined ? { file: ':memory:' } : { name };
  const config = resolveVfs({ ...where, maxBytes: limits.vfsMaxBytes, maxInodes: limits.vfsMaxInodes });
  return { file: config.file, preopens: DEFAULT_PREOPENS, readOnly: false, maxBytes: config.maxBytes, maxInodes: config.maxInodes };
}

function chooseEntry(prepared: PreparedModule, opts: RunOptions): { entry: Entry; isCommand: boolean } {
  const exports = prepared.desc.exports;
  if (opts.invoke !== undefined) {
    const ex = exports.find((e) => e.name === opts.invoke && e.kind === 'func');
    if (!ex || !ex.signature) {
      throw new SandboxError('POLICY_INVALID', `the module has no exported function "${String(opts.invoke).slice(0, 64)}"`, {
        export: String(opts.invoke).slice(0, 64),
        exports: exports.filter((e) => e.kind === 'func').map((e) => e.name).slice(0, 50),
      });
    }
    const args = parseArgs(ex.name, ex.signature.params, opts.args ?? []);
    return { entry: { kind: 'invoke', export: ex.name, args }, isCommand: false };
  }
  if (exports.some((e) => e.name === '_start' && e.kind === 'func')) {
    return { entry: { kind: 'start' }, isCommand: true };
  }
  throw new SandboxError('POLICY_INVALID', 'the module has no _start export; name an export to invoke', {
    exports: exports.filter((e) => e.kind === 'func').map((e) => e.name).slice(0, 50),
  });
}

function checkName(what: string, value: string): string {
  if (typeof value !== 'string' || !ID_PATTERN.test(value)) {
    throw new SandboxError('POLICY_INVALID', `${what} must be 1-128 characters of [A-Za-z0-9._:@-]`, { [what]: String(value).slice(0, 64) });
  }
  return value;
}

export function createEngine(options: EngineOptions = {}): Engine {
  return new Engine(options);
}

