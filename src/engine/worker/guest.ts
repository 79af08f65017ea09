/**
 * One guest instance inside a worker: builds its import object from the link plan, instantiates,
 * calls exports, and turns every ending into an `Outcome`.
 *
 * Owns: the presence rule on the worker side — the import object holds exactly the keys the
 * main thread's linker planned (each backed by an implementation here) and nothing else; the
 * ambient `membrane` imports (`session_info`, `log`, `clock_ms`); per-call state and output.
 * Invariant: a plan naming an import this worker cannot implement is INTERNAL before
 * instantiation, so the guest's start function never runs against a partial world.
 *
 * Does not protect against: time — the main thread's watchdog owns the deadline and terminates
 * this thread when it is passed.
 */

import { SandboxError } from '../../errors.ts';
import { CATALOG, FUEL_GLOBAL_EXPORT, FUEL_REFILL_IMPORT, MEMBRANE_MODULE, MEMORY_IMPORT, POOL_MEMORY_IMPORT, WASI_MODULE, importKey } from '../../policy/catalog.ts';
import { decodeStart, fromWire, wireFromResult, type Budget, type GuestSpec, type Outcome, type WireValue } from '../bridge/protocol.ts';
import type { HostBridge } from './host-bridge.ts';
import { Commands } from './commands.ts';
import { vfsImports } from './vfs-imports.ts';
import { imagePreopens } from './images.ts';
import { brokerImports } from './broker-imports.ts';
import { hostFunctionImports, isHostFunctionKey } from './host-function-imports.ts';
import { FuelMeter } from './fuel.ts';
import { GuestMemory } from '../../abi/memory.ts';
import { membraneAmbient } from './membrane-ambient.ts';
import { CallState, ExitSignal, GuestFault, classify, type GrowProbe } from '../../abi/signals.ts';
import { Vfs } from '../../storage/index.ts';
import { lateVfs, type LateVfs } from './late-vfs.ts';
import type { MemoryPool } from './memory-pool.ts';
import { GUEST_ERR } from '../../abi/command.ts';
import { ambientWasi, CappedStream, vfsWasi, type WasiContext } from '../../wasi/index.ts';

/** Imports that mean the guest uses files: every WASI call the `vfs` cap links. */
const FS_IMPORTS = new Set(CATALOG.filter((e) => e.module === WASI_MODULE && e.grant === 'vfs').map((e) => importKey(e.module, e.name)));

/** What the worker lends a guest besides the bridge (main.ts); a nested command shares its caller's. */
export interface GuestHooks {
  /** Sleep up to `ms`, waking at once when the job is interrupted (the channel's interrupt word). */
  readonly nap: (ms: number) => void;
  /** A fuel refill: streamed output that is due goes out (output-forward.ts). */
  readonly tick: () => void;
  /** The guest is about to block (a host call, a sleep): streamed output goes out now. */
  readonly idle: () => void;
  /** From now on the current job's output is streamed (a parked lane interpreter's call asked for it). */
  readonly stream: (stdout: CappedStream, stderr: CappedStream) => void;
}

export class Guest {
  readonly memory = new GuestMemory();
  readonly stdout: CappedStream;
  readonly stderr: CappedStream;
  readonly state = new CallState();
  private instance: WebAssembly.Instance | null = null;
  private deadline = 0;
  /** The current job's fuel budget (a lane port restarts the count from it). */
  private budgetFuel = 0;
  private late: LateVfs | null = null;
  /** The memory this guest imports from the pool (wasm/memory-import.ts), until it is disposed. */
  private pooledMemory: WebAssembly.Memory | null = null;
  private growGlobal: WebAssembly.Global | null = null;
  private readonly wasi: WasiContext;
  private readonly meter: FuelMeter | null;
  private vfs: Vfs | null = null;
  private ownsVfs = false;
  /** Fuel used by the last instantiate or call. */
  fuelUsed = 0;

  /** The bridge as the guest's imports use it: a staged file creation commits before any host call. */
  private readonly host: HostBridge;

  /** `sharedVfs`: a nested command runs against its caller's open VFS, not a new connection. */
  constructor(
    private readonly module: WebAssembly.Module,
    private readonly spec: GuestSpec,
    bridge: HostBridge,
    private readonly interrupted: () => boolean,
    private readonly sharedVfs: Vfs | null = null,
    private readonly hooks: GuestHooks | null = null,
    /** A top-level fresh run's: its memory (when the module imports it from the pool) is recycled at dispose. */
    private readonly memories: MemoryPool | null = null,
  ) {
    this.host = settlingBridge(bridge, () => this.vfs?.flush(), () => hooks?.idle(), this.state);
    this.meter = spec.fuel.metered ? new FuelMeter(spec.fuel.chunk, interrupted, this.state, hooks?.tick ?? null) : null;
    this.stdout = new CappedStream('stdout', spec.output.limitBytes, spec.output.failOnLimit);
    this.stderr = new CappedStream('stderr', spec.output.limitBytes, spec.output.failOnLimit);
    this.wasi = {
      memory: this.memory,
      stdout: this.stdout,
      stderr: this.stderr,
      argv: spec.wasi.argv,
      env: spec.wasi.env,
      state: this.state,
      stdin: spec.wasi.stdin,
      stdinOffset: 0,
      ...(spec.wasi.port ? { port: { exchange: (request: Uint8Array) => this.exchange(request) } } : {}),
      remainingMs: () => this.deadline - performance.now(),
      interrupted: () => this.interrupted(),
      ...(hooks ? { nap: hooks.nap, idle: hooks.idle } : {}),
    };
  }

  /** Build the world and instantiate (runs the start function) within `budget`. */
  instantiate(budget: Budget): Outcome {
    return this.guard(budget, () => {
      const imports = this.buildImports();
      this.instance = new WebAssembly.Instance(this.module, imports);
      const exports = this.instance.exports;
      const exported = exports['memory'];
      if (exported instanceof WebAssembly.Memory) this.memory.attach(exported);
      const g = this.spec.growFailedExport ? exports[this.spec.growFailedExport] : undefined;
      this.growGlobal = g instanceof WebAssembly.Global ? g : null;
      if (this.meter) {
        const fuel = exports[FUEL_GLOBAL_EXPORT];
        if (!(fuel instanceof WebAssembly.Global)) throw new SandboxError('INTERNAL', 'a metered module lacks its fuel global');
        this.meter.attach(fuel);
      }
      return [];
    });
  }

  /** Call an export (or `_start` for a WASI command). */
  call(name: string, args: readonly WireValue[], budget: Budget): Outcome {
    return this.guard(budget, () => {
      const fn = this.instance?.exports[name];
      if (typeof fn !== 'function') {
        throw new SandboxError('POLICY_INVALID', `the module has no exported function "${name}"`, { export: name });
      }
      const result: unknown = (fn as (...a: unknown[]) => unknown)(...args.map(fromWire));
      if (result === undefined) return [];
      if (Array.isArray(result)) return result.map(wireFromResult);
      return [wireFromResult(result)];
    });
  }

  /** One lane port exchange (src/wasi/port.ts): the host's answer; it may restart the fuel count and charge fuel. */
  private exchange(request: Uint8Array): Uint8Array | number {
    const answer = this.host.call({ op: 'port', fuelUsed: this.meter ? this.meter.used() : 0 }, [request]);
    if (!answer.ok) return answer.errno;
    let payload = answer.payload ?? new Uint8Array(0);
    if (answer.value % 2 === 1) {
      // The snippet starts: its own budget from now, over its call's VFS when the host names one.
      const { start, answer: rest } = decodeStart(payload);
      if (start.vfsFile !== undefined && !this.bindVfs(start.vfsFile)) return GUEST_ERR.UNAVAILABLE;
      if (start.stream === true) this.hooks?.stream(this.stdout, this.stderr);
      this.deadline = performance.now() + start.ms;
      this.budgetFuel = start.fuel;
      this.meter?.begin(start.fuel, this.deadline);
      payload = rest;
    }
    const charge = Math.floor(answer.value / 2);
    if (charge > 0) this.meter?.spend(charge);
    return payload;
  }

  hasExport(name: string): boolean {
    return typeof this.instance?.exports[name] === 'function';
  }

  /**
   * The kernel lane's hot path (kernel-call.ts): `fn(arg)` under `budget`, with every wall of
   * `call` — its result when it returned a number and nothing else needs settling, else the
   * Outcome `call` would give (a failure, or a result of another type).
   */
  callI32(fn: (arg: number) => unknown, arg: number, budget: Budget): number | Outcome {
    this.begin(budget);
    let result: unknown;
    let thrown: unknown = null;
    try {
      result = fn(arg);
    } catch (e) {
      thrown = e;
    }
    if (thrown === null && typeof result === 'number' && this.vfs === null && this.state.fault === null && this.state.exit === null) {
      this.fuelUsed = this.meter ? this.meter.used() : 0;
      return result;
    }
    return this.settle(thrown === null ? () => [wireFromResult(result)] : null, thrown);
  }

  /** An exported function by name, or null. */
  exportedFunction(name: string): ((...a: unknown[]) => unknown) | null {
    const fn = this.instance?.exports[name];
    return typeof fn === 'function' ? (fn as (...a: unknown[]) => unknown) : null;
  }

  private guard(budget: Budget, body: () => WireValue[]): Outcome {
    this.begin(budget);
    return this.settle(body, null);
  }

  private begin(budget: Budget): void {
    this.state.reset();
    this.deadline = performance.now() + budget.ms;
    this.budgetFuel = budget.fuel;
    this.meter?.begin(budget.fuel, this.deadline);
  }

  /** The outcome of `body` (not run when null: `thrown` is what the call threw), every wall settled. */
  private settle(body: (() => WireValue[]) | null, thrown: unknown): Outcome {
    let values: WireValue[] = [];
    try {
      if (body) values = body();
    } catch (e) {
      thrown = e;
    }
    try {
      // A call's files are committed when it ends, however it ends (a staged creation included).
      this.vfs?.flush();
    } catch (e) {
      thrown ??= e;
    }
    // A trap unwinds frames whose latest charges were still in locals: bill what was granted.
    const trapped = thrown instanceof WebAssembly.RuntimeError || thrown instanceof RangeError;
    this.fuelUsed = this.meter ? (trapped ? this.meter.billed() : this.meter.used()) : 0;
    // A signal the guest swallowed (wasm catch_all) still decides the outcome.
    if (this.state.fault) thrown = this.state.fault;
    else if (this.state.exit) thrown = this.state.exit;
    if (thrown === null) return { ok: true, values, exitCode: null };
    if (thrown instanceof ExitSignal) {
      if (thrown.code === 0) return { ok: true, values: [], exitCode: 0 };
      const err = new SandboxError('GUEST_EXIT', `the guest exited with status ${thrown.code}`, { exitCode: thrown.code });
      return { ok: false, error: err.toPublic(), exitCode: thrown.code };
    }
    const error = classify(thrown, this.probe());
    if (error.code === 'FUEL_EXHAUSTED') this.fuelUsed = this.budgetFuel;
    return { ok: false, error: error.toPublic(), exitCode: null };
  }

  private probe(): GrowProbe | null {
    const g = this.growGlobal;
    if (!g) return null;
    return {
      failedDelta: () => Number(g.value) | 0,
      currentPages: () => this.memory.byteLength / 65536,
      maxPages: this.spec.maxMemoryPages,
    };
  }

  /** Whether `dispose` closes a database connection of this guest's own. */
  get holdsStorage(): boolean {
    return this.ownsVfs && this.vfs !== null;
  }

  /** Close the guest's VFS (its database connection) unless it is its caller's; the guest is not called again. */
  dispose(): void {
    if (this.ownsVfs) this.vfs?.close();
    this.vfs = null;
    const pooled = this.pooledMemory;
    this.pooledMemory = null;
    if (pooled && this.memories && this.spec.poolMemory) this.memories.give(pooled, this.spec.poolMemory.initialPages, this.spec.poolMemory.maxPages);
  }

  /** The guest's VFS, opened on first use (a guest that never touches files never opens one). */
  private openVfs(): Vfs | null {
    const spec = this.spec.vfs;
    if (!spec) return null;
    if (!this.vfs) {
      if (this.sharedVfs) {
        this.vfs = this.sharedVfs;
      } else {
        const own = Vfs.open({ file: spec.file, maxBytes: spec.maxBytes, maxInodes: spec.maxInodes });
        // A lane interpreter may get its call's VFS only when its snippet arrives (late-vfs.ts).
        if (this.spec.wasi.port) this.late = lateVfs(own);
        this.vfs = this.late?.vfs ?? own;
        this.ownsVfs = true;
      }
    }
    return this.vfs;
  }

  /** Put the call's VFS database under the guest's preopens (a pooled lane interpreter's snippet start). */
  private bindVfs(file: string): boolean {
    const spec = this.spec.vfs;
    this.openVfs();
    if (!spec || !this.late) return false;
    this.late.bind(file, { maxBytes: spec.maxBytes, maxInodes: spec.maxInodes }, spec.preopens.map((p) => p.volume));
    return true;
  }

  private buildImports(): WebAssembly.Imports {
    // Each family of imports is made only when the plan links one of it (a small WASI command
    // links a call or two: the rest of the world is never built for it).
    let wasiAll: Record<string, unknown> | null = null;
    let membraneAll: Record<string, unknown> | null = null;
    let hostFns: ReturnType<typeof hostFunctionImports> | null = null;
    const imports: Record<string, Record<string, unknown>> = {};
    const pool = this.spec.poolMemory;
    if (pool) {
      // The module's own memory, made an import by the rewriter (wasm/memory-import.ts): all zero, its declared limits.
      const memory = this.memories ? this.memories.take(pool.initialPages, pool.maxPages) : new WebAssembly.Memory({ initial: pool.initialPages, maximum: pool.maxPages });
      this.pooledMemory = memory;
      imports[POOL_MEMORY_IMPORT.module] = { [POOL_MEMORY_IMPORT.name]: memory };
    }
    for (const key of this.spec.link) {
      const dot = key.indexOf('.');
      const mod = key.slice(0, dot);
      const name = key.slice(dot + 1);
      let value: unknown;
      if (mod === WASI_MODULE) {
        if (!wasiAll) {
          const ambient = ambientWasi(this.wasi);
          wasiAll = { ...ambient, ...this.filesystem(ambient) };
        }
        value = wasiAll[name];
      } else if (mod === MEMBRANE_MODULE) {
        value = (membraneAll ??= { ...membraneAmbient({ spec: this.spec, memory: this.memory, state: this.state, host: this.host, stderr: this.stderr }), ...this.brokered() })[name];
      } else if (isHostFunctionKey(key)) {
        value = (hostFns ??= hostFunctionImports(this.spec.link, this.host, this.memory, this.state))[mod]?.[name];
      } else if (key === importKey(MEMORY_IMPORT.module, MEMORY_IMPORT.name)) {
        value = this.createImportedMemory();
      } else if (key === importKey(FUEL_REFILL_IMPORT.module, FUEL_REFILL_IMPORT.name) && this.meter) {
        value = this.meter.refill;
      }
      if (value === undefined) {
        throw new SandboxError('INTERNAL', `the worker has no implementation for ${key}`, { import: key });
      }
      (imports[mod] ??= {})[name] = value;
    }
    return imports as WebAssembly.Imports;
  }

  /**
   * WASI's filesystem calls over the guest's VFS, when it was granted one and imports any of
   * them (a guest that only writes to stdout never opens a database).
   */
  private filesystem(stdio: ReturnType<typeof ambientWasi>): Record<string, unknown> {
    const spec = this.spec.vfs;
    if (!spec || !this.spec.link.some((k) => FS_IMPORTS.has(k))) return {};
    const vfs = this.openVfs()!;
    const preopens = [...spec.preopens, ...imagePreopens(spec.images)];
    return vfsWasi({ memory: this.memory, vfs, preopens, readOnly: spec.readOnly, state: this.state, wasi: this.wasi }, stdio);
  }

  /** The `membrane` imports of granted caps that run in the worker (commands, exec, vfs_*). */
  private brokered(): Record<string, unknown> {
    const linked = new Set(this.spec.link);
    const uses = (...names: string[]): boolean => names.some((n) => linked.has(importKey(MEMBRANE_MODULE, n)));
    let out: Record<string, unknown> = {};
    if (uses('run_command', 'exec', 'process_spawn', 'process_wait', 'process_kill')) {
      const commands = new Commands({
        host: this.host,
        spec: this.spec,
        memory: this.memory,
        state: this.state,
        vfs: () => this.openVfs(),
        fuelLeft: () => (this.meter ? this.meter.remaining() : Number.MAX_SAFE_INTEGER),
        spendFuel: (n) => this.meter?.spend(n),
        stop: (code) => {
          if (this.meter) this.meter.stop(code);
          throw (this.state.fault = new GuestFault(new SandboxError(code, code === 'TIMEOUT' ? 'the call ran past its budget' : 'the call used its whole fuel budget', {})));
        },
        remainingMs: () => this.deadline - performance.now(),
        child: (module, spec, vfs) => new Guest(module, spec, this.host, this.interrupted, vfs, this.hooks),
      });
      out = { ...out, ...commands.imports() };
    }
    out = { ...out, ...brokerImports(this.spec.link, this.host, this.memory, this.state) };
    if (uses('vfs_read', 'vfs_write', 'vfs_list', 'vfs_delete', 'vfs_query') && this.spec.vfs) {
      out = { ...out, ...vfsImports({ host: this.host, memory: this.memory, state: this.state, spec: this.spec.vfs, vfs: () => this.openVfs()! }) };
    }
    return out;
  }

  private createImportedMemory(): WebAssembly.Memory {
    const m = this.spec.importedMemory;
    if (!m) throw new SandboxError('INTERNAL', 'memory import planned without a memory spec');
    const maximum = Math.min(m.maximum ?? this.spec.maxMemoryPages, this.spec.maxMemoryPages);
    const memory = new WebAssembly.Memory({ initial: m.initial, maximum, ...(m.shared ? { shared: true } : {}) });
    this.memory.attach(memory);
    return memory;
  }
}

/**
 * The bridge as a guest's imports use it: what the guest wrote is in the database before anything
 * outside this worker (a broker, a process on another worker, the host) can look at it, and a host
 * call cut at the deadline is recorded, so a guest that catches it still ends TIMEOUT.
 */
export function settlingBridge(bridge: HostBridge, flush: () => void, idle: () => void, state: CallState): HostBridge {
  return {
    call: (op, blobs) => {
      flush();
      idle();
      try {
        return bridge.call(op, blobs);
      } catch (e) {
        if (e instanceof GuestFault) state.fault ??= e;
        throw e;
      }
    },
    receiveModule: () => bridge.receiveModule(),
  };
}
