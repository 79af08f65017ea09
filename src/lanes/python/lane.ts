/**
 * The Python lane (DESIGN §7, §8; issue #6): untrusted Python source run in hardened Pyodide, one
 * fresh interpreter per call, in the `os_process` tier.
 *
 * Owns: `PythonLane` — the pool of pre-initialized, never-used interpreter children (each loaded,
 * hardened and waiting; refilled in the background), the mapping of a child's answer to an
 * `ExecResult` and its error codes, and the tier and fuel warnings.
 * Layers (§8), where they live: 1 jsglobals/js/pyodide_js, 2 no code generation, 3 `system` → -1,
 * 5 fuel + memory cap — child.mjs; 4 the process, permission model and bubblewrap — spawn.ts;
 * 6 the `membrane` module — child.mjs: it exists in every run and has one attribute per granted
 * cap with a lane power (src/lanes/powers.ts), served by the request's `powers` server over the
 * child's power pipe (child-process.ts), and none for any other cap.
 *
 * Invariant: an interpreter serves exactly one call and is then killed — never reused; a call
 * always resolves to an `ExecResult` (never throws for guest behaviour): an uncaught Python
 * exception is GUEST_EXCEPTION with the snippet's frames and traceback (exception.ts; SystemExit
 * stays GUEST_TRAP with its line); CANCELLED when the request's signal aborts — while waiting for
 * an interpreter (nothing runs; an interpreter that arrives later goes back to the pool) or
 * while the snippet runs (the child is SIGKILLed at once, as at the deadline; the pool refills);
 * TIMEOUT when the deadline passes (the child stops itself at its next fuel refill or deadline
 * timer, or is SIGKILLed `KILL_GRACE_MS` later); FUEL_EXHAUSTED past the budget; MEMORY_LIMIT
 * when the heap would pass the call's cap (caught or not), when the child's resident set grew by
 * more than the call's memory, or when its V8 heap aborted; INTERNAL for anything else, with no
 * host stack or path.
 *
 * Streaming: `onStdout`/`onStderr` are relayed while the snippet runs (relay.ts); a killed
 * call's stdout/stderr are what was streamed before it was killed.
 *
 * Does not protect against: what a granted broker allows (the engine's brokers decide); the cost of a cold
 * start when the pool is empty (seconds: Pyodide boots its interpreter in each child).
 */

import { rmSync } from 'node:fs';
import type { ExecRequest, ExecResult } from '../types.ts';
import { MAX_POWER_FRAME_BYTES, POWER_ERROR_MESSAGES, lanePowerCaps } from '../powers.ts';
import { dirname } from 'node:path';
import { PythonChild, childModules, childScript, type ExecAnswer } from './child-process.ts';
import { guestExceptionError, pathScrubber } from './exception.ts';
import { OutputRelay } from './relay.ts';
import { CANCELLED_MESSAGE } from '../controls.ts';
import type { ExecMessage } from './protocol.ts';
import { childCommand, type ChildCommand, type PythonTier } from './spawn.ts';
import { preparePyodideWasm, pyodideDir, type PreparedWasm } from './wasm-prep.ts';

export interface PythonLaneOptions {
  /** Ready interpreters kept waiting. Default `DEFAULT_POOL_SIZE`; 0 boots one per call. */
  readonly poolSize?: number;
  /** Where the instrumented wasm is cached; `false` uses a private temp dir. Default `$MEMBRANE_HOME/cache`. */
  readonly cacheDir?: string | false;
  /** Cap per stream on captured stdout/stderr. Default 1 MiB. */
  readonly outputLimitBytes?: number;
  /**
   * Prepares the instrumented wasm off the caller's thread (the engine's rewrite pool); without
   * it `warm()` prepares it synchronously on this thread.
   */
  readonly prepareWasm?: () => Promise<PreparedWasm>;
}

export interface PythonLaneStats {
  readonly poolHits: number;
  readonly poolMisses: number;
  readonly ready: number;
  readonly tier: PythonTier;
}

export const DEFAULT_POOL_SIZE = 2;
export const DEFAULT_OUTPUT_LIMIT_BYTES = 1024 * 1024;
/** Hard ceiling on a pool, whatever the caller asks: each child holds a whole interpreter. */
export const MAX_POOL_SIZE = 16;

const TIER_WARNING = 'python: bubblewrap is not available; the interpreter runs in the weaker `os_process` tier (permission model only, no namespaces: the network is reachable if every other layer fails)';
const FUEL_WARNING = 'python: fuel instrumentation of Pyodide failed; the call ran without fuel metering (the deadline is still enforced by killing the interpreter)';

const ABORTED: unique symbol = Symbol('aborted');
/** `p`'s value, or ABORTED as soon as `signal` aborts (p is left to settle on its own). */
async function untilAborted<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T | typeof ABORTED> {
  if (signal === undefined) return p;
  if (signal.aborted) return ABORTED;
  let onAbort = (): void => undefined;
  const aborted = new Promise<typeof ABORTED>((resolve) => {
    onAbort = () => resolve(ABORTED);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([p, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

export class PythonLane {
  private readonly poolSize: number;
  private readonly outputLimit: number;
  private readonly cacheDir: string | false | undefined;
  private readonly ready: PythonChild[] = [];
  private readonly booting = new Set<PythonChild>();
  private prep: { wasm: PreparedWasm | null; cmd: ChildCommand } | null = null;
  private readonly prepareWasm: (() => Promise<PreparedWasm>) | null;
  private hits = 0;
  private misses = 0;
  private nextId = 1;
  private closed = false;

  constructor(opts: PythonLaneOptions = {}) {
    this.poolSize = Math.max(0, Math.min(MAX_POOL_SIZE, Math.floor(opts.poolSize ?? DEFAULT_POOL_SIZE)));
    this.outputLimit = Math.max(0, Math.floor(opts.outputLimitBytes ?? DEFAULT_OUTPUT_LIMIT_BYTES));
    this.cacheDir = opts.cacheDir;
    this.prepareWasm = opts.prepareWasm ?? null;
  }

  /** Prepare the wasm (once) and fill the pool; resolves when `poolSize` children are ready. */
  async warm(onProgress?: (done: number, total: number) => void): Promise<void> {
    if (this.prep === null && this.prepareWasm !== null) {
      const wasm = await this.prepareWasm().catch(() => null);
      this.prep ??= { wasm, cmd: this.commandFor(wasm) };
    }
    this.setup();
    this.refill();
    const total = this.poolSize;
    onProgress?.(this.ready.length, total);
    while (!this.closed && this.ready.length < total) {
      // The caller waits on these: they keep the process alive meanwhile.
      const waitedOn = [...this.booting];
      if (waitedOn.length === 0) break;
      for (const c of waitedOn) c.hold(true);
      try {
        await Promise.race(waitedOn.map((c) => c.ready.then(() => true, () => false)));
      } finally {
        for (const c of waitedOn) c.hold(false);
      }
      onProgress?.(Math.min(this.ready.length, total), total);
    }
  }

  stats(): PythonLaneStats {
    return { poolHits: this.hits, poolMisses: this.misses, ready: this.ready.length, tier: this.setup().cmd.tier };
  }

  async exec(req: ExecRequest): Promise<ExecResult> {
    const start = performance.now();
    const warnings: string[] = [];
    const { wasm, cmd } = this.setup();
    if (cmd.tier !== 'os_process+bwrap') warnings.push(TIER_WARNING);
    if (wasm?.file == null) warnings.push(FUEL_WARNING);
    const { powers, warning } = lanePowerCaps(req.caps, 'python');
    if (req.powers === undefined && req.caps.length > 0) warnings.push(`python: no power server was given; the membrane module has no powers (${req.caps.join(', ')})`);
    else if (warning !== null) warnings.push(warning);
    const fail = (code: string, message: string, extra: Partial<ExecResult> = {}): ExecResult => ({
      ok: false,
      stdout: '',
      stderr: '',
      fuelUsed: 0,
      poolHit: false,
      ...extra,
      error: { code, message },
      durationMs: performance.now() - start,
      warnings,
    });
    if (this.closed) return fail('INTERNAL', 'the python lane is closed');
    if (req.language !== 'python') return fail('INTERNAL', `the python lane cannot run ${String(req.language)}`);
    let contextJson: string;
    try {
      contextJson = JSON.stringify(req.context ?? null) ?? 'null';
    } catch {
      return fail('INTERNAL', 'context is not JSON-serializable');
    }
    const signal = req.signal;
    const taken = await this.takeUnless(signal);
    if (taken === null) return fail('CANCELLED', CANCELLED_MESSAGE);
    const { child, hit } = taken;
    if (hit) this.hits++;
    else this.misses++;
    this.refill();
    try {
      if ((await untilAborted(child.ready, signal)) === ABORTED) {
        this.giveBack(child);
        return fail('CANCELLED', CANCELLED_MESSAGE, { poolHit: hit });
      }
    } catch {
      child.kill();
      return fail('INTERNAL', 'the python interpreter failed to start', { poolHit: hit });
    }
    const relay = new OutputRelay(req, this.outputLimit);
    const msg: ExecMessage = {
      v: 1,
      kind: 'exec',
      id: this.nextId++,
      code: req.code,
      contextJson,
      powers: req.powers === undefined ? [] : [...powers, ...(req.hostPowers ?? [])],
      maxFrameBytes: MAX_POWER_FRAME_BYTES,
      powerMessages: JSON.stringify(POWER_ERROR_MESSAGES),
      timeoutMs: req.timeoutMs,
      fuel: req.fuel,
      memoryBytes: req.memoryBytes,
      outputLimitBytes: this.outputLimit,
      streamStdout: relay.wants('stdout'),
      streamStderr: relay.wants('stderr'),
    };
    const answer = await child.exec(msg, req.powers ?? null, { signal, relay });
    return this.toResult(answer, req, hit, start, warnings, relay);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const c of [...this.ready, ...this.booting]) c.kill();
    this.ready.length = 0;
    this.booting.clear();
    if (this.prep?.wasm?.scratch) rmSync(this.prep.wasm.scratch, { recursive: true, force: true });
  }

  /** Host paths this lane knows (the Pyodide package, the child's scripts, the prepared wasm), for error text. */
  private scrub(): (s: string) => string {
    const wasm = this.prep?.wasm?.file;
    return pathScrubber([pyodideDir(), dirname(childScript()), wasm ? dirname(wasm) : null]);
  }

  private setup(): { wasm: PreparedWasm | null; cmd: ChildCommand } {
    if (this.prep !== null) return this.prep;
    let wasm: PreparedWasm | null = null;
    try {
      wasm = preparePyodideWasm(this.cacheDir);
    } catch {
      wasm = null;
    }
    this.prep = { wasm, cmd: this.commandFor(wasm) };
    return this.prep;
  }

  private commandFor(wasm: PreparedWasm | null): ChildCommand {
    const script = childScript();
    return childCommand({ script, modules: childModules(script), pyodideDir: pyodideDir(), wasmFile: wasm?.file ?? null, useBwrap: true });
  }

  /** A new child; a pool child joins `ready` once booted, a direct one belongs to its caller. */
  private spawn(pool = true): PythonChild {
    const child = new PythonChild(this.setup().cmd, this.outputLimit * 2 + 1024);
    if (!pool) return child;
    child.hold(false);
    this.booting.add(child);
    child.ready.then(
      () => {
        this.booting.delete(child);
        if (this.closed || !child.alive) return child.kill();
        this.ready.push(child);
      },
      () => {
        this.booting.delete(child);
        if (!this.closed) setTimeout(() => this.refill(), 1000).unref();
      },
    );
    return child;
  }

  /** Keep ready + booting at the pool size. */
  private refill(): void {
    if (this.closed) return;
    while (this.ready.length + this.booting.size < this.poolSize) this.spawn();
  }

  /**
   * `take()`, unless `signal` aborts first (null): a child that arrives after that was never
   * used, so it goes back to the pool (or is killed when the lane is closed).
   */
  private async takeUnless(signal: AbortSignal | undefined): Promise<{ child: PythonChild; hit: boolean } | null> {
    if (signal?.aborted) return null;
    const taking = this.take();
    const first = await untilAborted(taking, signal);
    if (first !== ABORTED) return first;
    void taking.then(({ child }) => this.giveBack(child));
    return null;
  }

  /** An unused child back to the pool, if the pool has room for it (else it is killed). */
  private giveBack(child: PythonChild): void {
    child.ready.then(
      () => {
        if (this.closed || !child.alive || this.ready.length + this.booting.size >= this.poolSize) return child.kill();
        this.ready.push(child);
        child.hold(false);
      },
      () => child.kill(),
    );
  }

  /** A ready child (hit), else the first booting one to finish, else a fresh one (miss). */
  private async take(): Promise<{ child: PythonChild; hit: boolean }> {
    for (;;) {
      const c = this.ready.shift();
      if (c === undefined) break;
      if (c.alive) {
        c.hold(true);
        return { child: c, hit: true };
      }
    }
    if (this.booting.size === 0) {
      return { child: this.spawn(false), hit: false };
    }
    // A caller waits on these: they keep the process alive until one is taken.
    const waitedOn = [...this.booting];
    for (const c of waitedOn) c.hold(true);
    const first = await Promise.race(waitedOn.map((c) => c.ready.then(() => c, () => null)));
    for (const c of waitedOn) if (c !== first) c.hold(false);
    const idx = first === null ? -1 : this.ready.indexOf(first);
    if (first !== null && idx >= 0) {
      this.ready.splice(idx, 1);
      return { child: first, hit: false };
    }
    first?.hold(false);
    return this.take().then((t) => ({ child: t.child, hit: false }));
  }

  private toResult(a: ExecAnswer, req: ExecRequest, hit: boolean, start: number, warnings: string[], relay: OutputRelay): ExecResult {
    const base = { poolHit: hit, warnings, durationMs: 0 };
    if (a.kind === 'killed') {
      const error =
        a.reason === 'CANCELLED'
          ? { code: 'CANCELLED', message: CANCELLED_MESSAGE }
          : a.reason === 'TIMEOUT'
            ? { code: 'TIMEOUT', message: `the call ran past its ${req.timeoutMs} ms budget` }
            : a.reason === 'OUT_OF_MEMORY'
              ? { code: 'MEMORY_LIMIT', message: "the interpreter's JavaScript heap passed its cap" }
              : { code: 'INTERNAL', message: 'the python interpreter died' };
      // A killed child's output is what it streamed before (nothing when the call did not stream).
      return { ...base, ok: false, stdout: relay.text('stdout'), stderr: relay.text('stderr'), fuelUsed: 0, error, durationMs: performance.now() - start };
    }
    if (a.stdoutDropped > 0) warnings.push(`stdout truncated at ${this.outputLimit} bytes (${a.stdoutDropped} bytes dropped)`);
    if (a.stderrDropped > 0) warnings.push(`stderr truncated at ${this.outputLimit} bytes (${a.stderrDropped} bytes dropped)`);
    const io = { stdout: a.stdout, stderr: a.stderr, fuelUsed: a.fuelUsed };
    const o = a.outcome;
    if (o.ok) {
      if (o.warning) warnings.push(`python: ${o.warning}`);
      return { ...base, ok: true, ...io, ...(o.result !== undefined ? { result: o.result } : {}), durationMs: performance.now() - start };
    }
    const error =
      o.kind === 'TIMEOUT'
        ? { code: 'TIMEOUT', message: `the call ran past its ${req.timeoutMs} ms budget` }
        : o.kind === 'FUEL_EXHAUSTED'
          ? { code: 'FUEL_EXHAUSTED', message: `the call used more than its ${req.fuel} units of fuel` }
          : o.kind === 'MemoryError'
            ? { code: 'MEMORY_LIMIT', message: `the heap would pass the ${req.memoryBytes}-byte cap (${o.message ?? 'MemoryError'})` }
            : o.kind === 'MEMORY_LIMIT'
              ? { code: 'MEMORY_LIMIT', message: `${o.message ?? 'the snippet reached its memory limit'} (${req.memoryBytes} bytes)` }
            : o.kind === 'host'
              ? { code: 'INTERNAL', message: 'the python interpreter failed' }
              : o.kind === 'exception'
                ? guestExceptionError(o.exception, this.scrub())
                : { code: 'GUEST_TRAP', message: o.message ?? 'the snippet raised an exception' };
    return { ...base, ok: false, ...io, error, durationMs: performance.now() - start };
  }
}
