/**
 * `engine.exec({ language, code, context, ... })`: untrusted source in the JS/TS lane (QuickJS on
 * wasm) or the Python lane (CPython on WASI in the engine's own workers), under a profile like any
 * other guest (DESIGN §7, §8).
 *
 * Owns: resolving the profile into the lane request (time, fuel, memory, caps — a caller can only
 * lower them), starting each lane on first use (and warming its pool), the profile fallback's
 * audit record, and the result shape `{ ok, result?, stdout, stderr, error?, fuelUsed,
 * durationMs, profile, warnings, poolHit }`; one power server per call (power-server.ts: the
 * granted caps as powers, served through the brokers as the principal `tenant`/`exec-N`), ended
 * when the call ends.
 * Invariant: one lane object per language per engine, closed with the engine; a request never
 * reaches a lane with more than its profile grants.
 *
 * Does not protect against: what each lane's layers do not (see src/lanes/js, src/lanes/cpython).
 */

import { availableParallelism } from 'node:os';
import { SandboxError, toSandboxError } from '../errors.ts';
import { resolvePolicy, type PolicyOptions, type ResolveContext } from '../policy/resolve.ts';
import { PROFILE_NAMES } from '../policy/profiles.ts';
import type { ExecRequest, ExecResult, Language } from './types.ts';
import type { PowerServer } from './powers.ts';
import type { CPythonRunner } from './cpython/lane.ts';
import type { PolicyConfig } from '../policy/resolve.ts';
import { resolveVfs } from '../storage/index.ts';
import { checkName } from '../policy/names.ts';
import { hostCapGlobal } from '../policy/host-caps.ts';
import { abortedBefore, cancelled, unlessAborted, type CallControls } from './controls.ts';
import type { SignedExecReceipt } from '../provenance/exec-receipt.ts';

/**
 * Builds one call's power server: its principal is `tenant` and a fresh `exec-N` instance; `vfs`
 * names the persistent VFS the call's `vfs.*` powers and commands use (else a private one).
 * `end()` settles once the call's commands are stopped and its VFS is closed (a private one
 * removed); `fuelUsed()` is what its commands spent.
 */
export type PowersFor = (
  tenant: string,
  policy: PolicyConfig,
  vfs: string | undefined,
) => { readonly serve: PowerServer; end(): Promise<void>; fuelUsed(): number; readonly vfsFile?: () => string };

export interface ExecOptions extends PolicyOptions, CallControls {
  readonly language: Language | string;
  readonly code: string;
  /** JSON-serializable; a read-only value named `context` in the snippet. */
  readonly context?: unknown;
  readonly tenant?: string;
  /**
   * A named persistent VFS (`$MEMBRANE_HOME/vfs/NAME.sqlite`, the one `membrane run --vfs NAME`
   * uses) for the snippet's `vfs.*` powers and the commands it runs; without one a call granted
   * `vfs` gets a private VFS, created on first use and removed when the call ends.
   */
  readonly vfs?: string;
  /** Told what is happening while a lane starts (the CLI prints it). */
  readonly onProgress?: ((what: string) => void) | undefined;
  /** Also return `receipt`: a receipt of the call signed by the engine's key (engine/exec-receipts.ts). */
  readonly receipt?: boolean;
  /** Told the name of each power request the snippet makes (`"kv.get"`), before it is served — refused ones too. */
  readonly onPower?: ((power: string) => void) | undefined;
  /** `os_process`: the snippet runs in a child process of its own (src/engine/os-process/). */
  readonly tier?: 'instance' | 'os_process' | 'remote';
  /** With `tier: 'os_process'`: require bubblewrap namespaces (TIER_UNAVAILABLE without them). */
  readonly strictIsolation?: boolean;
}

export type ExecOutcome = ExecResult & { readonly profile: string; readonly receipt?: SignedExecReceipt };

/** What the engine's lanes look like from here (src/lanes implements them). */
export interface Lane {
  exec(req: ExecRequest): Promise<ExecResult>;
  warm(onProgress?: (done: number, total: number) => void): Promise<void>;
  close(): Promise<void>;
}

/** What the lanes take from the engine's configuration (the engine's `EngineConfig` is one). */
export interface LanesConfig extends ResolveContext {
  /** The engine's worker pool size: 0 (one-shot, the CLI) starts each lane with a pool of one. */
  readonly poolSize: number;
  readonly cacheDir: string | null;
  readonly outputLimitBytes: number;
  /** Whether fuel is metered at all. */
  readonly fuel: boolean;
}

export const MAX_CODE_BYTES = 1024 * 1024;

/**
 * Wasm fuel units per unit of interpreter fuel. The source lanes run an interpreter whose wasm
 * executes 4e10–1.2e11 metered wasm instructions a second here (stack-machine instructions: most
 * `local.get`/`i32.const` cost V8 nothing), so a profile's fuel counted in raw wasm units would
 * last well under a second (`compute`'s 1e9: ~10 ms of `while True: pass`) — fuel, not the
 * deadline, would end every long snippet and a profile's timeout would mean nothing in these
 * lanes. `engine.exec` therefore counts fuel in units of 1 000 wasm units: `compute`'s 1e9 is
 * ~8 s of a Python spin loop and ~25 s of a JS one, so the deadline is the wall a runaway meets
 * first, and fuel stays the deterministic budget (`--fuel 1e7` ≈ 0.1 s). `fuelUsed` is reported
 * in the same unit (rounded up). docs/lanes.md states this once.
 */
export const LANE_FUEL_UNIT = 1000;

/** Never-used Python interpreters a pooled engine keeps booted (per shape: memory cap and VFS grant). */
export const PYTHON_POOL_SIZE = 2;

/** The engine's lanes: one per interpreter family, started (its pool warmed) on first use. */
export class Lanes {
  private readonly started = new Map<'js' | 'python', Promise<Lane>>();

  constructor(
    private readonly config: LanesConfig,
    /** Runs the Python lane's interpreter on the engine's workers (the engine always gives one). */
    private readonly cpython: CPythonRunner | null = null,
  ) {}

  get(language: Language, onProgress?: (what: string) => void): Promise<Lane> {
    const key = language === 'python' ? 'python' : 'js';
    let lane = this.started.get(key);
    if (!lane) {
      // The engine's poolSize sizes the lanes' pools too (the CLI, running one snippet, asks for 0 → 1);
      // a pooled engine (a server) runs JS on one worker per core, up to 4.
      const serving = this.config.poolSize > 0;
      const poolSize = key === 'python' ? (serving ? PYTHON_POOL_SIZE : 1) : Math.max(1, Math.min(this.config.poolSize, 4));
      const workers = serving ? Math.max(1, Math.min(4, availableParallelism())) : 1;
      const cacheDir = (this.config.cacheDir ?? false) as string | false;
      const options = { poolSize, workers, cacheDir, outputLimitBytes: this.config.outputLimitBytes };
      const cpython = this.cpython;
      lane = (async (): Promise<Lane> => {
        if (key === 'python' && cpython === null) throw new SandboxError('INTERNAL', 'the python lane has no runner');
        const made: Lane =
          key === 'python' && cpython !== null
            ? new (await import('./cpython/index.ts')).CPythonLane(cpython, poolSize, profileShapes(this.config))
            : new (await import('./js/index.ts')).JsLane(options);
        let last = -1;
        await made.warm((done, total) => {
          if (done === last) return;
          last = done;
          onProgress?.(`starting the ${key} interpreter pool: ${done}/${total} ready`);
        });
        return made;
      })();
      // A lane that failed to start is dropped, so the next call tries again.
      lane.catch(() => this.started.delete(key));
      this.started.set(key, lane);
    }
    return lane;
  }

  async close(): Promise<void> {
    await Promise.all([...this.started.values()].map(async (l) => (await l.catch(() => null))?.close()));
    this.started.clear();
  }
}

/** The interpreter shapes the profiles give (with and without `vfs`; `compute`'s first): the only ones the Python lane parks. */
function profileShapes(config: LanesConfig): { memoryBytes: number; vfs: boolean }[] {
  return PROFILE_NAMES.flatMap((profile) => {
    const p = resolvePolicy({ profile }, config);
    return p.caps.includes('vfs') ? [{ memoryBytes: p.memoryBytes, vfs: true }, { memoryBytes: p.memoryBytes, vfs: false }] : [{ memoryBytes: p.memoryBytes, vfs: false }];
  });
}

/** A power server that tells `onPower` each request's name first (the receipt's count). */
function watched<S extends { readonly serve: PowerServer }>(server: S, onPower: ((power: string) => void) | undefined): S {
  if (!onPower) return server;
  return { ...server, serve: (req, deadline) => (onPower(typeof req.power === 'string' ? req.power : ''), server.serve(req, deadline)) };
}

export async function runExec(
  opts: ExecOptions,
  config: LanesConfig,
  lane: (language: Language, onProgress?: (what: string) => void) => Promise<Lane>,
  audit: (tenant: string, requested: string, ran: string) => void,
  powers: PowersFor,
): Promise<ExecOutcome> {
  const t0 = performance.now();
  let profile = 'compute';
  let warnings: readonly string[] = [];
  try {
    const language = opts.language;
    if (language !== 'js' && language !== 'ts' && language !== 'python') {
      throw new SandboxError('POLICY_INVALID', 'language must be "js", "ts" or "python"', { language: String(language).slice(0, 32) });
    }
    if (typeof opts.code !== 'string') throw new SandboxError('POLICY_INVALID', 'code must be a string');
    if (Buffer.byteLength(opts.code) > MAX_CODE_BYTES) throw new SandboxError('POLICY_INVALID', `code is larger than ${MAX_CODE_BYTES} bytes`);
    let context: unknown;
    try {
      context = opts.context === undefined ? undefined : JSON.parse(JSON.stringify(opts.context));
    } catch {
      throw new SandboxError('POLICY_INVALID', 'context must be JSON-serializable');
    }
    const tenant = checkName('tenant', opts.tenant ?? 'default');
    if (opts.vfs !== undefined) resolveVfs({ name: opts.vfs }); // a bad name is refused before anything runs
    const policy = resolvePolicy(opts, config);
    profile = policy.profile;
    warnings = policy.warnings;
    if (policy.requestedProfile !== policy.profile) audit(tenant, policy.requestedProfile, policy.profile);
    if (abortedBefore(opts.signal)) throw cancelled();
    // A lane's first start (its interpreter pool) can take seconds: a caller who gives up meanwhile is answered at once.
    const started = await unlessAborted(lane(language, opts.onProgress), opts.signal);
    if (abortedBefore(opts.signal)) throw cancelled();
    const server = policy.caps.length > 0 || policy.hostCaps.length > 0 ? watched(powers(tenant, policy, opts.vfs), opts.onPower) : null;
    const defined = config.hostFunctions ?? {};
    const hostPowers = policy.hostCaps.filter((c) => Object.hasOwn(defined, c)).map((cap) => ({ cap, global: hostCapGlobal(cap), fns: [...defined[cap]!] }));
    const r = await started.exec({
      language,
      code: opts.code,
      ...(context !== undefined ? { context } : {}),
      timeoutMs: policy.timeoutMs,
      fuel: config.fuel ? policy.fuel * LANE_FUEL_UNIT : Number.MAX_SAFE_INTEGER,
      memoryBytes: policy.memoryBytes,
      caps: policy.caps,
      ...(server ? { powers: server.serve } : {}),
      ...(server && hostPowers.length > 0 ? { hostPowers } : {}),
      ...(server?.vfsFile ? { vfsFile: server.vfsFile } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.onStdout ? { onStdout: opts.onStdout } : {}),
      ...(opts.onStderr ? { onStderr: opts.onStderr } : {}),
    }).finally(() => server?.end());
    // One budget: the lane's meter was charged its commands' fuel (LANE_FUEL_UNIT lane units per
    // core wasm unit), so its count includes them once. A lane that died reports 0: what its
    // commands spent (the server's own tally) still counts.
    const fuelUsed = Math.max(Math.ceil(r.fuelUsed / LANE_FUEL_UNIT), server?.fuelUsed() ?? 0);
    const error =
      r.error?.code === 'FUEL_EXHAUSTED' ? { code: 'FUEL_EXHAUSTED', message: `the call used more than its ${policy.fuel} units of fuel` } : r.error;
    return { ...r, ...(error ? { error } : {}), fuelUsed, profile, warnings: [...warnings, ...r.warnings] };
  } catch (e) {
    const err = toSandboxError(e);
    return {
      ok: false,
      stdout: '',
      stderr: '',
      error: { code: err.code, message: err.message },
      fuelUsed: 0,
      durationMs: performance.now() - t0,
      warnings,
      poolHit: false,
      profile,
    };
  }
}
