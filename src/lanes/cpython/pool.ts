/**
 * The CPython lane's pool: interpreters booted up to the request for their snippet and parked on
 * the engine's workers (engine/lane-runner.ts), each serving exactly one call — fresh, never
 * reused, yet with no boot on the call's path. Kept per shape (the memory cap the interpreter
 * was instantiated with, and whether it has the `vfs` preopens), refilled in the background after
 * every call that took from it (refillAfter), replaced before its boot's walls would end it.
 *
 * Owns: which parked interpreters exist, their ages, the refill (at most `size` parked or booting
 * per shape, at most `maxParked` over all shapes, and only for the `pooled` shapes — the
 * profiles' own) and the hit/miss counts. Invariant: an interpreter is handed out at most once,
 * and never after `close()` (those still booting are discarded when they arrive); a parked
 * interpreter holds one of the engine's workers, so a caller choosing odd limits (every distinct
 * memory cap is a shape) cannot make the pool park interpreters until no worker is left: such a
 * call boots its own, within its own admission, and nothing is parked for it.
 *
 * Does not protect against: memory held by parked interpreters (each is a worker and its
 * interpreter's heap, ~15 MB: the pool is small by design); a tenant that keeps calling with
 * the profiles' other shapes can crowd the default shape's interpreters out (those calls then
 * boot: slower, never refused).
 */

import type { PolicyConfig } from '../../policy/resolve.ts';
import type { PortHandler } from '../../wasi/port.ts';
import type { CallControls } from '../controls.ts';

/** How the interpreter runs: the engine's `RunOptions`, as far as this lane sets them. */
export interface InterpreterRunOptions extends CallControls {
  readonly argv0: string;
  readonly argv: readonly string[];
  /** The call's VFS database (the power server's): the guest's preopens, with `vfs`. */
  readonly vfsFile?: string;
}

/** What comes back: the engine's `RunResult`, as far as this lane reads it. */
export interface InterpreterRun {
  readonly ok: boolean;
  readonly exitCode?: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly fuelUsed: number;
  readonly warnings: readonly string[];
  readonly error?: { readonly code: string; readonly message: string };
}

/** How long a parked interpreter may wait for a call (the boot policy's time is twice this). */
export const MAX_PARKED_MS = 5 * 60_000;
/** The boot's fuel (wasm units): CPython's start-up and the driver's imports take ~0.5e9. */
const BOOT_FUEL = 2e10;

/** A parked interpreter, as the engine hands it over (engine/lane-runner.ts). */
export interface Parked {
  resume(call: {
    readonly tenant: string;
    readonly policy: PolicyConfig;
    readonly port: PortHandler;
    readonly answer: Uint8Array;
    readonly start: { readonly ms: number; readonly fuel: number; readonly vfsFile?: string };
    readonly signal?: AbortSignal | undefined;
    readonly onStdout?: ((chunk: string) => void) | undefined;
    readonly onStderr?: ((chunk: string) => void) | undefined;
  }): Promise<InterpreterRun>;
  discard(): void;
  readonly parkedAt: number;
}

export type Park = (opts: InterpreterRunOptions, policy: PolicyConfig) => Promise<Parked>;

/** The shape an interpreter was booted for: a call takes one only of its own shape. */
export interface Shape {
  readonly memoryBytes: number;
  readonly vfs: boolean;
}

const keyOf = (s: Shape): string => `${s.memoryBytes}:${s.vfs ? 'vfs' : '-'}`;

export class InterpreterPool {
  private readonly parked = new Map<string, Parked[]>();
  private readonly booting = new Map<string, number>();
  private readonly inflight = new Set<Promise<void>>();
  private closed = false;
  hits = 0;
  misses = 0;

  private readonly pooled: ReadonlySet<string>;

  /**
   * `size` per shape; `pooled`: the shapes worth parking (default: every shape); `maxParked`:
   * parked or booting over all shapes (default twice `size`).
   */
  constructor(
    private readonly park: Park,
    private readonly opts: InterpreterRunOptions,
    private readonly size: number,
    bounds: { readonly pooled?: readonly Shape[]; readonly maxParked?: number } = {},
  ) {
    this.pooled = new Set((bounds.pooled ?? []).map(keyOf));
    this.maxParked = bounds.maxParked ?? 2 * size;
    this.anyShape = bounds.pooled === undefined;
  }

  private readonly maxParked: number;
  private readonly anyShape: boolean;

  /** Whether interpreters of this shape are parked at all (a profile's own limits). */
  pools(shape: Shape): boolean {
    return this.anyShape || this.pooled.has(keyOf(shape));
  }

  /**
   * A parked interpreter of this shape, or null (a miss). The caller refills the pool with
   * `refillAfter` (booting beside the call would take the CPU the call needs on a small machine).
   */
  take(shape: Shape): Parked | null {
    const key = keyOf(shape);
    const list = this.parked.get(key) ?? [];
    let found: Parked | null = null;
    while (found === null && list.length > 0) {
      const p = list.shift()!;
      if (performance.now() - p.parkedAt < MAX_PARKED_MS) found = p;
      else p.discard();
    }
    if (found) this.hits++;
    else this.misses++;
    return found;
  }

  /**
   * Refill this shape when the call that took from it ends (`now()`), or after `delayMs` if it is
   * still running then — a short call never shares the CPU with a boot, a long one does not
   * leave the pool empty for its whole length.
   */
  refillAfter(shape: Shape, delayMs: number): { now(): void } {
    let timer: ReturnType<typeof setTimeout> | null = setTimeout(() => go(), delayMs);
    timer.unref?.();
    const go = (): void => {
      if (timer === null) return;
      clearTimeout(timer);
      timer = null;
      void this.refill(shape);
    };
    return { now: go };
  }

  /** Boot until `size` of this shape are parked or booting; resolves when those started now have parked. */
  async refill(shape: Shape): Promise<void> {
    const key = keyOf(shape);
    const boots: Promise<void>[] = [];
    if (!this.pools(shape)) return;
    while (!this.closed && (this.parked.get(key)?.length ?? 0) + (this.booting.get(key) ?? 0) < this.size && this.held() < this.maxParked) {
      this.booting.set(key, (this.booting.get(key) ?? 0) + 1);
      const boot = this.park(this.opts, bootPolicy(shape))
        .then((p) => {
          if (this.closed) p.discard();
          else this.parked.set(key, [...(this.parked.get(key) ?? []), p]);
        })
        // A boot that failed leaves a gap the next take refills; the call that needs it runs cold.
        .catch(() => {})
        .finally(() => {
          this.booting.set(key, (this.booting.get(key) ?? 1) - 1);
          this.inflight.delete(boot);
        });
      this.inflight.add(boot);
      boots.push(boot);
    }
    await Promise.all(boots);
  }

  /** Interpreters parked or booting, over all shapes. */
  private held(): number {
    let n = this.ready;
    for (const b of this.booting.values()) n += b;
    return n;
  }

  /** Resolves when every boot started so far has parked (or failed). */
  async settled(): Promise<void> {
    while (this.inflight.size > 0) await Promise.all([...this.inflight]);
  }

  get ready(): number {
    let n = 0;
    for (const list of this.parked.values()) n += list.length;
    return n;
  }

  close(): void {
    this.closed = true;
    for (const list of this.parked.values()) for (const p of list) p.discard();
    this.parked.clear();
  }
}

/** The walls of a boot: the shape's memory, room to boot and then to wait MAX_PARKED_MS. */
function bootPolicy(shape: Shape): PolicyConfig {
  return {
    profile: 'compute',
    requestedProfile: 'compute',
    caps: shape.vfs ? ['vfs'] : [],
    hostCaps: [],
    memoryBytes: shape.memoryBytes,
    timeoutMs: 2 * MAX_PARKED_MS,
    fuel: BOOT_FUEL,
    allowHttp: false,
    warnings: [],
  };
}
