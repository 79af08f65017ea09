/**
 * `JsLane`: untrusted JavaScript and TypeScript in QuickJS-on-wasm (DESIGN §7), fresh every call.
 *
 * Owns: `workers` worker threads (slot.ts, default 1), each holding pools of pre-initialized,
 * never-used interpreters (worker.ts, interpreter.ts) and running one call at a time, admitted
 * by a LaneGate (../gate.ts: past `maxQueue` waiting calls one is OVERLOADED at once, and a call
 * that cannot start within its own timeout is OVERLOADED without running); replacing a worker when the time
 * wall's backstop had to terminate it; the pool statistics. The main
 * thread never runs QuickJS or the TypeScript stripper.
 * Defaults: `poolSize` 2 interpreters per language, `outputLimitBytes` 1 MiB per stream, the disk
 * cache under `$MEMBRANE_HOME/cache` (`cacheDir: false` disables it). Linear memory: each call's
 * `memoryBytes` (rounded down to whole 64 KiB pages) is the maximum of the wasm memory its
 * interpreter runs in — the cap on everything the snippet can make the host hold, typed arrays
 * and strings included; a growth past it ends the call MEMORY_LIMIT (heap.ts). Pools are kept
 * per limit (worker.ts), starting with `memoryBytes` (default: the compute profile's). A request
 * over `LINEAR_MEMORY_CEILING_BYTES` is clamped, with a warning; one too small for the
 * interpreter itself (16 MiB of initial memory for JS, more for TS) is MEMORY_LIMIT before it runs.
 * Caps: each granted cap with a lane power (src/lanes/powers.ts) becomes a global (`kv`, `queue`,
 * `secrets`, `fetch` for `net`, `llm`, `browse`, `tcp`/`udp`/`tls`) served by the request's
 * `powers` server; an ungranted cap's global is absent, never a stub. A granted cap without a lane
 * power (or any cap, when the request has no server) is named in `warnings`.
 *
 * Controls (../controls.ts, call.ts): `signal` — aborted before the call runs or while it waits,
 * nothing runs; while it runs, the interpreter is stopped (slot.ts) and the call answers CANCELLED
 * within CANCEL_SETTLE_MS; `onStdout`/`onStderr` — the job streams its output while it runs (only
 * then: a call without callbacks posts nothing extra), delivered through OutputTaps of the lane's
 * output limit, all before the result.
 *
 * Does not protect against: slow calls delaying later ones by up to those calls' own timeouts
 * (a call's deadline starts when it runs; its wait in the queue is bounded by the same timeout).
 */

import { createRequire } from 'node:module';
import { builtFiles } from '../../storage/package-root.ts';
import { membraneCacheDir } from '../../storage/sqlite.ts';
import type { ExecRequest, ExecResult } from '../types.ts';
import { DEFAULT_OUTPUT_LIMIT_BYTES } from './output.ts';
import type { ExecJob, JsWorkerData } from './protocol.ts';
import { lanePowerCaps, type PowerServer } from '../powers.ts';
import { WorkerSlot, type RunControls } from './slot.ts';
import { controlledCall } from './call.ts';
import { LaneGate } from '../gate.ts';
import { PROFILES } from '../../policy/profiles.ts';

export interface JsLaneOptions {
  /** Pre-initialized interpreters kept per language (js, ts). Default 2. */
  readonly poolSize?: number;
  /** Where the instrumented QuickJS is cached; `false` disables it. Default `$MEMBRANE_HOME/cache`. */
  readonly cacheDir?: string | false | undefined;
  /** Cap on each of stdout and stderr. Default 1 MiB. */
  readonly outputLimitBytes?: number | undefined;
  /** Fail with OUTPUT_LIMIT instead of truncating. Default false. */
  readonly failOnOutputLimit?: boolean | undefined;
  /** Worker threads running calls in parallel (one call each at a time). Default 1. */
  readonly workers?: number | undefined;
  /** Calls that may wait for a worker; one more is OVERLOADED at once. Default DEFAULT_MAX_QUEUE. */
  readonly maxQueue?: number | undefined;
  /** The memory limit the interpreter pools are first filled for. Default the compute profile's. */
  readonly poolMemoryBytes?: number | undefined;
}

export const DEFAULT_POOL_SIZE = 2;
export const MAX_WORKERS = 8;
/** Waiting calls beyond this are refused at once (OVERLOADED): a flood queues no unbounded work. */
export const DEFAULT_MAX_QUEUE = 256;
export const MAX_POOL_SIZE = 16;
export const LINEAR_MEMORY_CEILING_BYTES = 1024 * 1024 * 1024;
const PAGE = 65536;
const pageFloor = (n: number): number => Math.max(PAGE, Math.floor(n / PAGE) * PAGE);
const NO_SERVER = 'js: no power server was given; granted caps add no globals';


const failed = (code: string, message: string): ExecResult => ({
  ok: false,
  stdout: '',
  stderr: '',
  error: { code, message },
  fuelUsed: 0,
  durationMs: 0,
  warnings: [],
  poolHit: false,
});

async function workerFile(): Promise<string> {
  return (await builtFiles({ jsLaneOnly: true })).jsWorker;
}

interface Seat {
  slot: Promise<WorkerSlot> | null;
  current: WorkerSlot | null;
  busy: boolean;
}

export class JsLane {
  private readonly poolSize: number;
  private readonly cacheDir: string | null;
  private readonly outputLimitBytes: number;
  private readonly failOnOutputLimit: boolean;
  private readonly gate: LaneGate;
  private readonly seats: Seat[];
  private readonly poolMemoryBytes: number;
  private module: WebAssembly.Module | null = null;
  private wantTs = false;
  private closed = false;
  private hits = 0;
  private misses = 0;

  constructor(opts: JsLaneOptions = {}) {
    this.poolSize = Math.max(0, Math.min(MAX_POOL_SIZE, Math.floor(opts.poolSize ?? DEFAULT_POOL_SIZE)));
    this.cacheDir = opts.cacheDir === false ? null : (opts.cacheDir ?? membraneCacheDir());
    this.outputLimitBytes = Math.max(0, Math.floor(opts.outputLimitBytes ?? DEFAULT_OUTPUT_LIMIT_BYTES));
    this.failOnOutputLimit = opts.failOnOutputLimit ?? false;
    const workers = Math.max(1, Math.min(MAX_WORKERS, Math.floor(opts.workers ?? 1)));
    this.gate = new LaneGate('JS', workers, Math.max(0, Math.floor(opts.maxQueue ?? DEFAULT_MAX_QUEUE)));
    this.poolMemoryBytes = pageFloor(Math.min(LINEAR_MEMORY_CEILING_BYTES, opts.poolMemoryBytes ?? PROFILES.compute.memoryBytes));
    this.seats = Array.from({ length: workers }, () => ({ slot: null, current: null, busy: false }));
  }

  private getSlot(seat: Seat): Promise<WorkerSlot> {
    if (seat.slot) return seat.slot;
    const p = (async () => {
      const file = await workerFile();
      const resolve = createRequire(import.meta.url).resolve;
      const data: Omit<JsWorkerData, 'powerPort' | 'powerSignal'> = {
        v: 1,
        wasmPath: resolve('@jitl/quickjs-wasmfile-release-sync/wasm'),
        stripperPath: resolve('@swc/wasm-typescript'),
        cacheDir: this.cacheDir,
        compiled: this.module,
        poolSize: this.poolSize,
        wantTs: this.wantTs,
        outputLimitBytes: this.outputLimitBytes,
        failOnOutputLimit: this.failOnOutputLimit,
        memoryBytes: this.poolMemoryBytes,
        interrupt: new SharedArrayBuffer(4),
      };
      const slot = await WorkerSlot.spawn(file, data, () => {});
      this.module = slot.module;
      seat.current = slot;
      return slot;
    })();
    seat.slot = p;
    p.catch(() => {
      if (seat.slot === p) seat.slot = null;
    });
    return p;
  }

  /** Start the workers and fill their pools (JS and TypeScript); `onProgress` sees each step. */
  async warm(onProgress?: (done: number, total: number) => void): Promise<void> {
    this.wantTs = true;
    // The first worker prepares the instrumented QuickJS; the others reuse its compiled module.
    const first = await this.getSlot(this.seats[0]!);
    const slots = [first, ...(await Promise.all(this.seats.slice(1).map((s) => this.getSlot(s))))];
    const total = this.poolSize * 2 * slots.length;
    const done = (): number => Math.min(total, slots.reduce((n, s) => n + s.ready.js + s.ready.ts, 0));
    onProgress?.(done(), total);
    const tick = setInterval(() => onProgress?.(done(), total), 100);
    try {
      await Promise.all(slots.map((s) => s.warm(true)));
    } finally {
      clearInterval(tick);
    }
    onProgress?.(done(), total);
  }

  exec(req: ExecRequest): Promise<ExecResult> {
    if (this.closed) return Promise.resolve(failed('INSTANCE_DEAD', 'the JS lane is closed'));
    if (req.language !== 'js' && req.language !== 'ts') return Promise.resolve(failed('POLICY_INVALID', 'the JS lane runs "js" or "ts"'));
    if (typeof req.code !== 'string') return Promise.resolve(failed('POLICY_INVALID', 'code must be a string'));
    let contextJson = '';
    try {
      contextJson = req.context === undefined ? '' : (JSON.stringify(req.context) ?? '');
    } catch {
      return Promise.resolve(failed('POLICY_INVALID', 'context must be JSON-serializable'));
    }
    const warnings: string[] = [];
    const { powers, warning } = lanePowerCaps(req.caps, 'js');
    if (req.powers === undefined && req.caps.length > 0) warnings.push(`${NO_SERVER} (${req.caps.join(', ')})`);
    else if (warning !== null) warnings.push(warning);
    let memoryBytes = Math.floor(req.memoryBytes);
    if (memoryBytes > LINEAR_MEMORY_CEILING_BYTES) {
      memoryBytes = LINEAR_MEMORY_CEILING_BYTES;
      warnings.push(`memory capped at the JS lane's ceiling of ${LINEAR_MEMORY_CEILING_BYTES} bytes`);
    }
    if (req.language === 'ts') this.wantTs = true;
    const job: ExecJob = {
      language: req.language,
      code: req.code,
      contextJson,
      timeoutMs: Math.max(1, req.timeoutMs),
      fuel: Math.max(0, Math.floor(req.fuel)),
      memoryBytes: pageFloor(memoryBytes),
      powers: req.powers === undefined ? [] : [...powers, ...(req.hostPowers ?? [])],
      ...(req.onStdout || req.onStderr ? { stream: { stdout: req.onStdout !== undefined, stderr: req.onStderr !== undefined } } : {}),
    };
    // The gate admits one call per worker; the rest wait (bounded), none past its own timeout.
    return controlledCall(req, this.outputLimitBytes, (controls) =>
      this.gate.run(job.timeoutMs, () => this.runOnIdleSeat(job, req.powers ?? null, warnings, controls), req.signal),
    );
  }

  /** Run on an idle worker (the gate guarantees one), preferring one with a ready interpreter. */
  private async runOnIdleSeat(job: ExecJob, server: PowerServer | null, warnings: readonly string[], controls: RunControls): Promise<ExecResult> {
    const seat = this.seats.find((x) => !x.busy && (x.current?.ready.js ?? 0) > 0) ?? this.seats.find((x) => !x.busy);
    if (!seat) return failed('INTERNAL', 'the JS lane admitted a call with no idle worker');
    seat.busy = true;
    let r: ExecResult;
    try {
      const slot = await this.getSlot(seat);
      r = await slot.run(job, server, controls);
      if (!slot.alive && seat.slot) {
        // Terminated at the backstop (or died): the next call on this seat gets a fresh worker.
        seat.slot = null;
        seat.current = null;
        if (!this.closed) void this.getSlot(seat).catch(() => {});
      }
    } catch {
      r = failed('INTERNAL', 'the JS lane could not start its worker');
    } finally {
      seat.busy = false;
    }
    if (r.poolHit) this.hits++;
    else if (r.error?.code !== 'INTERNAL') this.misses++;
    return { ...r, warnings: [...warnings, ...r.warnings] };
  }

  stats(): { poolHits: number; poolMisses: number; ready: number; workers: number; busy: number; queued: number } {
    const ready = this.seats.reduce((n, x) => n + (x.current?.alive ? x.current.ready.js + x.current.ready.ts : 0), 0);
    return { poolHits: this.hits, poolMisses: this.misses, ready, workers: this.seats.length, busy: this.seats.filter((x) => x.busy).length, queued: this.gate.stats().waiting };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.gate.close();
    await Promise.all(
      this.seats.map(async (seat) => {
        const slot = seat.slot;
        seat.slot = null;
        seat.current = null;
        if (slot) await (await slot.catch(() => null))?.terminate();
      }),
    );
  }
}
