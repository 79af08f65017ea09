/**
 * `engine.fanout`: one command, module or kernel over many inputs at a chosen width and tier
 * (DESIGN §7), on the fabric's fan-out (src/fabric/fanout.ts).
 *
 * Owns: what one input is for each shape — a registered command or a WASI module: a fresh run
 * with the input as stdin, the output its stdout bytes (a non-zero exit is that input's error);
 * a kernel: one call, over a set of at most `width` kernel handles (and no more than the cores)
 * opened for this fan-out and closed after it (a handle the caller passes is used as is: its calls are serialized) — the tier
 * check before anything runs, and the result shape.
 * Invariant: results are in input order, one per input; a failed input does not stop the others
 * unless `failFast`; every run goes through the engine's own walls, pool and tenant scheduling.
 *
 * Does not protect against: inputs the caller holds in memory — an iterable is pulled at most
 * `width` ahead, an array is the caller's.
 */

import { availableParallelism } from 'node:os';
import { SandboxError, type SerializedError } from '../errors.ts';
import { fanMap, resolveWidth, type FanOutcome } from '../fabric/fanout.ts';
import { checkTier, instanceOnly, type Tier } from '../fabric/tiers.ts';

export { checkTier, instanceOnly };
export { closeOsProcess, osExec, osRun, type OsProcessCall, type OsProcessDeps } from './os-process/lane.ts';
export { closeRemote, remoteRun } from './remote-lane.ts'; // for engine.ts (one import line there)
import { positive, type PolicyOptions } from '../policy/resolve.ts';
import type { KernelHandle, KernelOptions } from './kernel-lane.ts';
import type { RunOptions } from './guest-spec.ts';
import type { RunResult } from './results.ts';
import type { CommandRegistry } from './registry.ts';

export interface FanoutOptions extends PolicyOptions {
  /** A registered command (each input its stdin); `args` after its name. */
  command?: string;
  args?: readonly string[];
  /** A WASI module run fresh per input (each input its stdin). */
  module?: Uint8Array;
  /** The module's signed manifest, when the engine runs only signed modules (`requireSigned`). */
  artifact?: unknown;
  /** A kernel: module bytes (opened here, `width` handles, with `kernelOptions`) or an open handle. */
  kernel?: Uint8Array | KernelHandle;
  kernelOptions?: Omit<KernelOptions, keyof PolicyOptions | 'tenant'>;
  inputs: Iterable<Uint8Array | string> | AsyncIterable<Uint8Array | string>;
  /** Inputs in flight at once (1..256, default 16). */
  width?: number;
  tier?: Tier;
  /** With `tier: 'os_process'`: require bubblewrap namespaces. */
  strictIsolation?: boolean;
  /** The first failed input stops the rest (they are reported CANCELLED). Default false. */
  failFast?: boolean;
  tenant?: string;
  signal?: AbortSignal;
}

export type FanResult =
  | { readonly ok: true; readonly output: Uint8Array; readonly fuelUsed: number; readonly durationMs: number }
  | { readonly ok: false; readonly error: SerializedError };

export interface FanoutDeps {
  readonly run: (bytes: Uint8Array, opts: RunOptions) => Promise<RunResult>;
  readonly commands: CommandRegistry;
  readonly kernel: (bytes: Uint8Array, opts: KernelOptions) => Promise<KernelHandle>;
  /** The engine's Redis URL (the remote tier), or null. */
  readonly redisUrl?: string | null;
}

const encoder = new TextEncoder();
const asBytes = (x: Uint8Array | string): Uint8Array => (typeof x === 'string' ? encoder.encode(x) : x);

export async function fanout(deps: FanoutDeps, o: FanoutOptions): Promise<FanResult[]> {
  const tier = checkTier(o.tier, { strictIsolation: o.strictIsolation === true, redisUrl: deps.redisUrl ?? null });
  if (o.kernel !== undefined) instanceOnly(tier, 'a kernel');
  const width = resolveWidth(o.width);
  const shapes = [o.command !== undefined, o.module !== undefined, o.kernel !== undefined].filter(Boolean).length;
  if (shapes !== 1) throw new SandboxError('POLICY_INVALID', 'fanout takes exactly one of command, module or kernel');
  const limits: PolicyOptions = pick(o);
  // A malformed limit is the whole call's error, before any input runs (not N copies of it).
  for (const name of ['timeoutMs', 'fuel', 'memoryBytes'] as const) positive(name, limits[name]);
  const tenant = o.tenant ?? 'default';
  const signal = o.signal;
  let task: (input: Uint8Array, signal: AbortSignal) => Promise<FanResult>;
  let cleanup = async (): Promise<void> => {};
  if (o.kernel !== undefined) {
    const k = o.kernel;
    const handles = k instanceof Uint8Array ? new KernelSet(() => deps.kernel(k, { ...o.kernelOptions, ...limits, tenant }), Math.min(width, availableParallelism())) : null;
    cleanup = async () => handles?.close();
    task = async (input) => {
      const h = handles ? await handles.take() : (k as KernelHandle);
      const t0 = performance.now();
      try {
        const output = await h.call(input);
        return { ok: true, output, fuelUsed: h.lastFuelUsed, durationMs: performance.now() - t0 };
      } finally {
        handles?.give(h);
      }
    };
  } else {
    let bytes: Uint8Array;
    let argv: string[] = [];
    let images = {};
    if (o.command !== undefined) {
      const b = deps.commands.get(o.command);
      if (!b) throw new SandboxError('POLICY_INVALID', `no registered command "${String(o.command).slice(0, 64)}"`, { command: String(o.command).slice(0, 64) });
      bytes = b;
      if (tier !== 'remote') images = { images: deps.commands.imagesFor(o.command) }; // a worker resolves its own
      argv = deps.commands.argsFor(o.command, (o.args ?? []).map(String));
    } else {
      bytes = o.module!;
    }
    task = async (input, sig) => {
      const r = await deps.run(bytes, { ...limits, ...images, tenant, argv, ...(tier === 'remote' ? { tier } : {}), ...(o.module !== undefined && o.artifact !== undefined ? { artifact: o.artifact } : {}), ...(o.command !== undefined ? { argv0: o.command } : {}), stdin: input, captureBytes: true, signal: sig, ...(tier === 'os_process' ? { tier, strictIsolation: o.strictIsolation === true } : {}) });
      if (!r.ok) throw SandboxError.fromSerialized(r.error ?? new SandboxError('INTERNAL').toPublic());
      return { ok: true, output: r.stdoutBytes ?? encoder.encode(r.stdout), fuelUsed: r.fuelUsed, durationMs: r.durationMs };
    };
  }
  try {
    const outcomes = await fanMap(mapInputs(o.inputs), (input, _i, sig) => task(input, sig), { width, failFast: o.failFast === true, ...(signal ? { signal } : {}) });
    return outcomes.map((x: FanOutcome<FanResult>) => (x.ok ? x.value : { ok: false, error: x.error }));
  } finally {
    await cleanup();
  }
}

function pick(o: FanoutOptions): PolicyOptions {
  const out: PolicyOptions = {};
  if (o.profile !== undefined) out.profile = o.profile;
  if (o.timeoutMs !== undefined) out.timeoutMs = o.timeoutMs;
  if (o.fuel !== undefined) out.fuel = o.fuel;
  if (o.memoryBytes !== undefined) out.memoryBytes = o.memoryBytes;
  if (o.caps !== undefined) out.caps = o.caps;
  return out;
}

function mapInputs(inputs: FanoutOptions['inputs']): Iterable<Uint8Array> | AsyncIterable<Uint8Array> {
  if (Array.isArray(inputs)) return inputs.map(asBytes);
  if (Symbol.asyncIterator in inputs) {
    const src = inputs as AsyncIterable<Uint8Array | string>;
    return (async function* () {
      for await (const x of src) yield asBytes(x);
    })();
  }
  const src = inputs as Iterable<Uint8Array | string>;
  return (function* () {
    for (const x of src) yield asBytes(x);
  })();
}

/**
 * Kernel handles for one fan-out: opened on demand, at most `max` of them (the width, and no more
 * than the machine's cores: a kernel call is pure CPU on its worker, so a handle past the cores
 * only adds a worker boot and contention), reused, closed at the end. An input that finds every
 * handle busy waits for the next one given back; a handle that fails to open frees its place for a
 * waiting input to try again, so a failing open is every waiting input's error, never a hang.
 */
class KernelSet {
  private readonly free: KernelHandle[] = [];
  private readonly all: Promise<KernelHandle>[] = [];
  private readonly waiting: { resolve: (h: KernelHandle) => void; reject: (e: unknown) => void }[] = [];
  private opened = 0;

  constructor(
    private readonly open: () => Promise<KernelHandle>,
    private readonly max: number,
  ) {}

  take(): Promise<KernelHandle> {
    const h = this.free.pop();
    if (h) return Promise.resolve(h);
    if (this.opened < this.max) return this.openOne();
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  give(h: KernelHandle): void {
    const w = this.waiting.shift();
    if (w) w.resolve(h);
    else this.free.push(h);
  }

  private openOne(): Promise<KernelHandle> {
    this.opened++;
    const p = this.open();
    this.all.push(p);
    p.catch(() => {
      this.opened--;
      const w = this.waiting.shift();
      if (w) this.openOne().then(w.resolve, w.reject);
    });
    return p;
  }

  async close(): Promise<void> {
    const hs = await Promise.allSettled(this.all);
    await Promise.all(hs.map((r) => (r.status === 'fulfilled' ? r.value.close() : undefined)));
  }
}
