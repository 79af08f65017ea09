/**
 * What the build lane needs of the engine, as an interface: the engine (a higher layer) hands
 * itself in, so src/build never imports the engine and the engine can offer `build()` and the
 * C/C++ exec lane.
 *
 * Owns: the shapes only. Invariant: every step the build lane runs goes through `runResolved`,
 * i.e. the engine's own run path (rewritten module, worker, walls), under a policy the lane
 * resolved with `resolvePolicy` — never a lighter path.
 *
 * Does not protect against: nothing; this module only declares.
 */

import type { SerializedError } from '../errors.ts';
import type { CallControls } from '../lanes/controls.ts';
import type { PolicyConfig, PolicyOptions, ResolveContext } from '../policy/resolve.ts';
import type { ImageMount } from '../storage/vfs-config.ts';

/** A run of one module, as the build lane reads it (the engine's RunResult has these fields). */
export interface StepRun {
  readonly ok: boolean;
  readonly exitCode?: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly fuelUsed: number;
  readonly durationMs: number;
  readonly warnings: readonly string[];
  readonly error?: SerializedError;
}

/** The run options the build lane uses (a subset of the engine's RunOptions). */
export interface StepOptions extends CallControls {
  argv?: readonly string[];
  argv0?: string;
  id?: string;
  tenant?: string;
  stdin?: string;
  vfs?: string;
  vfsFile?: string;
  images?: readonly ImageMount[];
}

export interface BuildHost {
  readonly config: ResolveContext & {
    readonly cacheDir: string | null;
    readonly fuel: boolean;
    readonly vfsMaxBytes: number;
    readonly vfsMaxInodes: number;
    readonly outputLimitBytes: number;
  };
  /** Run a module under an already-resolved policy (its limits are not clamped again). */
  runResolved(bytes: Uint8Array, opts: StepOptions, policy: PolicyConfig): Promise<StepRun>;
  /** Rewrite and compile a module ahead of its first run (out of any call's deadline). */
  warm(bytes: Uint8Array, opts: PolicyOptions): Promise<void>;
  audit(event: { tenant: string; kind: string; detail: Record<string, unknown> }): void;
  /**
   * A turn from the engine's tenant scheduler (src/fabric/tenant-scheduler.ts) for one build or
   * C/C++ exec: its steps run inside it and are not admitted again. Rejects OVERLOADED when not
   * admitted within `waitMs`, CANCELLED on `signal`.
   */
  turn(tenant: string, waitMs: number, signal?: AbortSignal): Promise<() => void>;
}
