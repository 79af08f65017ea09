/**
 * What a guest's world is made of, decided on the main thread before a worker sees it: the
 * `GuestSpec` (link plan, limits, argv/env/stdin, VFS, nesting depth) and the entry point, from
 * the options a caller passes (`GuestOptions`, `RunOptions`, `StartOptions`, defined here so the
 * engine and the spec share them without a cycle).
 *
 * Owns: input validation of everything a caller passes into a spec (env without `=`/NUL, an
 * invoked export that exists with arguments of its signature; ids and tenants are checked by
 * policy/names.ts).
 * Invariant: a spec is plain data built only from the policy, the prepared module and validated
 * options; a guest never contributes to it.
 *
 * Does not protect against: an operator passing secrets in `env` — the guest sees them.
 */

import { SandboxError } from '../errors.ts';
import type { PolicyConfig } from '../policy/resolve.ts';
import { FUEL_REFILL_IMPORT, MEMBRANE_MODULE, importKey } from '../policy/catalog.ts';
import { resolveVfs } from '../storage/index.ts';
import { DEFAULT_PREOPENS, type ImageMount } from '../storage/vfs-config.ts';
import type { LinkPlan } from './linker.ts';
import type { PreparedModule } from './module-cache.ts';
import { HOST_WAIT_GRACE_MS, type EngineConfig } from './options.ts';
import type { Entry, GuestSpec, VfsSpec } from './bridge/protocol.ts';
import { parseArgs } from './values.ts';
import type { PolicyOptions } from '../policy/resolve.ts';
import type { MountSpec } from './mounts.ts';
import type { ArgValue } from './values.ts';
import type { CallControls } from '../lanes/controls.ts';

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
  /**
   * Read-only image VFSes preopened beside the guest's own (a registered toolchain command's
   * sysroot: `CommandRegistry.imagesFor`). Host-chosen files, never guest-chosen; only with `vfs`.
   */
  images?: readonly ImageMount[];
  /** argv[0] of a WASI command (default: the run's id); a multi-call module (LLVM) picks its tool by it. */
  argv0?: string;
  /** The module's signed manifest (`membrane sign`), checked when the engine has `requireSigned`. */
  artifact?: unknown;
}

export interface RunOptions extends GuestOptions, CallControls {
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
  /** Also return `receipt`: a receipt of the run signed by the engine's key (engine/receipts.ts). */
  receipt?: boolean;
  /** Where it runs (src/fabric/tiers.ts): `instance` (the default), `os_process` (src/engine/os-process/) or `remote` (src/engine/remote-lane.ts; TIER_UNAVAILABLE without `remote: { redis }`). */
  tier?: 'instance' | 'os_process' | 'remote';
  /** With `tier: 'os_process'`: require bubblewrap namespaces (TIER_UNAVAILABLE without them). */
  strictIsolation?: boolean;
}

export interface StartOptions extends GuestOptions {
  /** A persistent instance keeps one instance across calls: only `instance` (the default); `os_process` and `remote` are TIER_UNAVAILABLE. */
  tier?: 'instance' | 'os_process' | 'remote';
}

/** The part of a spec fixed by the module, its link plan, the policy and the engine: the same for every run of them. */
export type SpecFrame = Omit<GuestSpec, 'session' | 'wasi' | 'vfs' | 'depth'>;

export function specFrame(config: EngineConfig, prepared: PreparedModule, plan: LinkPlan, policy: PolicyConfig): SpecFrame {
  return {
    link: prepared.metered ? [...plan.link, importKey(FUEL_REFILL_IMPORT.module, FUEL_REFILL_IMPORT.name)] : plan.link,
    maxMemoryPages: prepared.maxMemoryPages,
    importedMemory: plan.importedMemory,
    growFailedExport: prepared.limits.growFailedExport,
    poolMemory: prepared.limits.poolMemory ?? null,
    output: { limitBytes: config.outputLimitBytes, failOnLimit: config.failOnOutputLimit },
    logSink: config.onLog ? 'host' : 'stderr',
    hostWaitMs: policy.timeoutMs + HOST_WAIT_GRACE_MS,
    fuel: { metered: prepared.metered, chunk: config.fuelChunk },
  };
}

export function buildSpec(
  config: EngineConfig,
  prepared: PreparedModule,
  plan: LinkPlan,
  policy: PolicyConfig,
  who: { id: string; tenant: string; argv0?: string },
  opts: GuestOptions,
  depth = 0,
  frame: SpecFrame = specFrame(config, prepared, plan, policy),
): GuestSpec {
  const env = opts.env === undefined ? [] : Object.entries(opts.env);
  for (const [k, v] of env) {
    if (k.includes('=') || k.includes('\0') || String(v).includes('\0')) {
      throw new SandboxError('POLICY_INVALID', 'environment names may not contain "=" or NUL, values may not contain NUL');
    }
  }
  const stdin = typeof opts.stdin === 'string' ? encoder.encode(opts.stdin) : (opts.stdin ?? new Uint8Array(0));
  return {
    session: { id: who.id, tenant: who.tenant, profile: policy.profile },
    link: frame.link,
    maxMemoryPages: frame.maxMemoryPages,
    importedMemory: frame.importedMemory,
    growFailedExport: frame.growFailedExport,
    poolMemory: frame.poolMemory,
    output: frame.output,
    wasi: { argv: opts.argv === undefined ? [who.argv0 ?? opts.argv0 ?? who.id] : [who.argv0 ?? opts.argv0 ?? who.id, ...opts.argv.map(String)], env: env.map(([k, v]) => [k, String(v)] as const), stdin },
    logSink: frame.logSink,
    hostWaitMs: frame.hostWaitMs,
    fuel: frame.fuel,
    vfs: policy.caps.includes('vfs') ? withImages(vfsSpec(opts.vfs, opts.vfsFile, config), opts.images) : null,
    depth,
  };
}

const encoder = new TextEncoder();

function withImages(spec: VfsSpec, images: readonly ImageMount[] | undefined): VfsSpec {
  return images && images.length > 0 ? { ...spec, images } : spec;
}

/** The guest's VFS spec: `/` is the workspace volume, `/tmp` and `/memory` the other two. */
export function vfsSpec(name: string | undefined, file: string | undefined, limits: { vfsMaxBytes: number; vfsMaxInodes: number }): VfsSpec {
  if (name === undefined && file === undefined) {
    // The common case, a fresh in-memory VFS: the same (frozen) spec for the same limits.
    const known = memoryVfs.get(limits);
    if (known && known.maxBytes === limits.vfsMaxBytes && known.maxInodes === limits.vfsMaxInodes) return known;
  }
  const where = file !== undefined ? { file } : name === undefined ? { file: ':memory:' } : { name };
  const config = resolveVfs({ ...where, maxBytes: limits.vfsMaxBytes, maxInodes: limits.vfsMaxInodes });
  const spec: VfsSpec = Object.freeze({ file: config.file, preopens: DEFAULT_PREOPENS, readOnly: false, maxBytes: config.maxBytes, maxInodes: config.maxInodes });
  if (name === undefined && file === undefined) memoryVfs.set(limits, spec);
  return spec;
}

/** In-memory VFS specs by the limits object they were made from (an engine's frozen config). */
const memoryVfs = new WeakMap<object, VfsSpec>();

export function chooseEntry(prepared: PreparedModule, opts: RunOptions): { entry: Entry; isCommand: boolean } {
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

const PROCESS_SPAWN = importKey(MEMBRANE_MODULE, 'process_spawn');

export function spawnsProcesses(spec: GuestSpec): boolean {
  return spec.link.includes(PROCESS_SPAWN);
}
