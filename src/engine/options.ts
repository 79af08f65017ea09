/**
 * Engine configuration: what an operator passes (`EngineOptions`) → a complete, frozen
 * `EngineConfig`. Every default lives here, once.
 *
 * Invariant: options that widen access default to off (`allow*`-style switches are false);
 * numeric limits are validated as positive and finite.
 *
 * Does not protect against: an operator choosing generous limits.
 */

import { defaultPerTenant } from '../fabric/tenant-scheduler.ts';
import { publicKeyOfDidKey } from '../provenance/did.ts';
import { DidResolver, didWebUrl } from '../provenance/did-resolve.ts';
import { SandboxError } from '../errors.ts';
import { DEFAULT_MAX_BYTES, DEFAULT_MAX_INODES, membraneCacheDir } from '../storage/index.ts';
import { MAX_MOUNT_FILES } from './mounts.ts';
import { DEFAULT_CACHE_MAX_BYTES } from './module-cache.ts';
import { resolveStoreQuotas } from '../storage/store-quotas.ts';
import type { OperatorLimits } from '../policy/resolve.ts';
import type { CommandRegistry } from './registry.ts';
import { hostFunctionNames, resolveHostFunctions, type BrokerOptions, type HostFailure, type HostFunctionsOptions } from '../brokers/index.ts';

export interface LogEntry {
  readonly tenant: string;
  readonly instance: string;
  readonly level: 'trace' | 'debug' | 'info' | 'warn' | 'error';
  readonly message: string;
}

export interface RemoteOptions {
  /** redis://[user:password@]host:port[/db] */
  readonly redis: string;
  /** The BullMQ queue name (default `membrane-runs`); submitters and workers must agree. */
  readonly queue?: string;
  /** How long a run may wait for a free worker before it is TIMEOUT (default 60 s), on top of its own budget. */
  readonly queueWaitMs?: number;
  /**
   * Jobs this engine keeps queued or running in the fleet at once (default 32), and for one tenant
   * (default half of that): the rest wait here, admitted round-robin across tenants, so one
   * tenant's backlog never fills the shared queue ahead of another's jobs.
   */
  readonly maxInFlight?: number;
  readonly maxInFlightPerTenant?: number;
}

export interface EngineOptions {
  /** Warm workers kept for fresh runs. Default 2. */
  poolSize?: number;
  /** Pre-started children kept per configuration for the os_process tier (src/engine/os-process/pool.ts). Default 2, at most 16; 0 turns the pool off. */
  osProcessPool?: number;
  /** Live worker threads for fresh runs. Default 8. */
  maxWorkers?: number;
  /**
   * Top-level calls (`run`, `exec`, fan-out inputs) one tenant may have in flight; the rest wait,
   * admitted round-robin across tenants (src/fabric/tenant-scheduler.ts). Default half of
   * maxWorkers (at least 1); set it to maxWorkers for a single-tenant engine.
   */
  maxWorkersPerTenant?: number;
  /** Persistent instances (each owns a thread). Default 64. */
  maxInstances?: number;
  /** Unknown profile names become POLICY_INVALID instead of falling back to `compute`. */
  strictProfiles?: boolean;
  /** The only way to raise a profile's memory, timeout or fuel. */
  operatorLimits?: OperatorLimits;
  /** Per-stream capture limit for stdout and stderr. Default 1 MiB. */
  outputLimitBytes?: number;
  /** End the call with OUTPUT_LIMIT instead of truncating. Default false. */
  failOnOutputLimit?: boolean;
  /** A memory.grow past the cap traps with MEMORY_LIMIT (true) or returns -1 (false). Default true. */
  trapOnGrowFailure?: boolean;
  /** Maximum elements per table. Default MAX_TABLE_ELEMENTS. */
  maxTableElements?: number;
  /** JS heap of each worker in MiB (guest memory is separate). Default 64. */
  workerHeapMb?: number;
  /** Thread stack of each worker in MiB: the stack wall. Default 4. */
  workerStackMb?: number;
  /** What a persistent instance does after a timeout: `retire` (dead) or `restart` (fresh state). */
  onTimeout?: 'retire' | 'restart';
  /** Receives `membrane.log` lines (then they travel over the sync channel). Default: stderr. */
  onLog?: (entry: LogEntry) => void;
  /** How long either side spins on the channel before sleeping, in microseconds. Default 100. */
  spinMicros?: number;
  /**
   * Fuel metering (the work wall). On by default; `false` is the operator's switch for trusted
   * code (`--no-fuel`): modules are not instrumented and `fuelUsed` is 0.
   */
  fuel?: boolean;
  /** Fuel granted per refill: bounds how long a runaway runs past its deadline. Default 1e6. */
  fuelChunk?: number;
  /** Where instrumented modules are cached on disk; `false` disables it. Default `$MEMBRANE_CACHE_DIR`, else `$MEMBRANE_HOME/cache`. */
  cacheDir?: string | false;
  /**
   * Bytes the disk cache may hold; least recently used modules are evicted to stay under it, and
   * a module whose entry is larger is not cached. Default 512 MiB (DEFAULT_CACHE_MAX_BYTES).
   */
  cacheMaxBytes?: number;
  /** Bytes a guest's VFS may hold. Default 256 MiB (storage's DEFAULT_MAX_BYTES). */
  vfsMaxBytes?: number;
  /** Files, directories and links a guest's VFS may hold. Default 100 000. */
  vfsMaxInodes?: number;
  /** Regular files one `--mount` may copy in. Default MAX_MOUNT_FILES (20 000). */
  maxMountFiles?: number;
  /** The commands guests may run (`commands`/`exec` caps). Default: the built-in set. */
  commands?: CommandRegistry;
  /** Secrets, rate limits, the engine database and audit sink of the brokers (src/brokers). */
  brokers?: BrokerOptions;
  /**
   * The embedder's own capabilities (`'vendor:name'` → functions, or `{ functions, rate?,
   * maxArgBytes?, maxResultBytes?, description? }`): a guest sees one only when its grant names
   * the cap (`caps: [..., 'acme:orders']`); every call passes the broker cadence
   * (src/brokers/host-functions.ts, docs/capabilities.md).
   */
  hostFunctions?: HostFunctionsOptions;
  /** Receives what a host function threw (host side only: the guest sees UNAVAILABLE). */
  onHostFunctionError?: (failure: HostFailure) => void;
  /**
   * Run only modules signed by one of these DIDs (src/provenance/artifact.ts): a did:key, or a
   * host-form did:web (`did:web:example.com`) whose document is in `didDocuments` or, with
   * `didWebFetch`, fetched. A run or start must pass the module's signed manifest as `artifact`;
   * anything else is refused NOT_CAPABLE, audited. Default: no requirement.
   */
  requireSigned?: readonly string[];
  /** Operator-supplied DID documents for did:web signers, keyed by DID (`membrane identity did-web` prints one). */
  didDocuments?: Readonly<Record<string, unknown>>;
  /**
   * Fetch a trusted did:web signer's `https://HOST/.well-known/did.json` (not in `didDocuments`)
   * through the network guard — `brokers.net`'s allowCidrs and resolver apply; no redirects,
   * 64 KiB, 5 s, cached 60 s. Default false: no document is ever fetched.
   */
  didWebFetch?: boolean;
  /** The remote tier: runs with `tier: 'remote'` go to `membrane worker`s through this Redis (src/engine/remote-lane.ts). Default: none (TIER_UNAVAILABLE). */
  remote?: RemoteOptions;
}

/** 100 000 table elements (~0.8 MB of host memory per table in V8): ample for QuickJS or CPython. */
export const MAX_TABLE_ELEMENTS = 100_000;
export const DEFAULT_OUTPUT_LIMIT_BYTES = 1024 * 1024;
/** Most pre-started os_process children per configuration (each is a Node process: tens of MB). */
export const MAX_OS_PROCESS_POOL = 16;
/** Grace past a call's budget before a worker waiting on the host gives up on its own. */
export const HOST_WAIT_GRACE_MS = 1_000;
/**
 * After a deadline, how long a metered guest has to reach its next fuel refill and stop by itself
 * before its worker is terminated (the backstop for code blocked in a host call).
 */
export const INTERRUPT_GRACE_MS = 100;
/** 1e6 units is ~0.2-2 ms of guest code: the refill rate stays negligible, overshoot small. */
export const DEFAULT_FUEL_CHUNK = 1_000_000;

export interface EngineConfig {
  readonly poolSize: number;
  readonly osProcessPool: number;
  readonly maxWorkers: number;
  readonly maxWorkersPerTenant: number;
  readonly maxInstances: number;
  readonly strictProfiles: boolean;
  readonly operatorLimits: OperatorLimits;
  readonly outputLimitBytes: number;
  readonly failOnOutputLimit: boolean;
  readonly trapOnGrowFailure: boolean;
  readonly maxTableElements: number;
  readonly workerHeapMb: number;
  readonly workerStackMb: number;
  readonly onTimeout: 'retire' | 'restart';
  readonly onLog: ((entry: LogEntry) => void) | null;
  readonly spinMs: number;
  readonly fuel: boolean;
  readonly fuelChunk: number;
  readonly cacheDir: string | null;
  readonly cacheMaxBytes: number;
  readonly vfsMaxBytes: number;
  readonly vfsMaxInodes: number;
  readonly maxMountFiles: number;
  /** The embedder's host caps and their function names (the functions stay with the brokers). */
  readonly hostFunctions: Readonly<Record<string, readonly string[]>>;
  /** The DIDs a module must be signed by, or null (no requirement). */
  readonly requireSigned: readonly string[] | null;
  /** Where a trusted did:web signer's document comes from (null without requireSigned). */
  readonly didResolver: DidResolver | null;
  /** The operator's own modules (a registered command's buffer), which `requireSigned` does not gate; set by the engine. */
  readonly operatorModule?: (bytes: Uint8Array) => boolean;
  readonly remote: RemoteOptions | null;
}

/** A requireSigned entry: a did:key (its key must decode) or a host-form did:web. */
function trustedDid(d: string): string {
  if (typeof d === 'string' && d.startsWith('did:web:')) {
    if (didWebUrl(d) === null) throw new SandboxError('POLICY_INVALID', 'a requireSigned did:web is did:web:HOST or did:web:HOST%3APORT');
    return d;
  }
  publicKeyOfDidKey(d);
  return d;
}

function count(name: string, v: number | undefined, dflt: number, min = 1): number {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min) {
    throw new SandboxError('POLICY_INVALID', `engine option ${name} must be a number ≥ ${min}`, { option: name });
  }
  return v;
}

export function resolveEngine(o: EngineOptions = {}): EngineConfig {
  if (o.onTimeout !== undefined && o.onTimeout !== 'retire' && o.onTimeout !== 'restart') {
    throw new SandboxError('POLICY_INVALID', 'onTimeout must be "retire" or "restart"');
  }
  resolveStoreQuotas(o.brokers?.quotas); // refused here, before any worker starts
  if (o.osProcessPool !== undefined && o.osProcessPool > MAX_OS_PROCESS_POOL) {
    throw new SandboxError('POLICY_INVALID', `engine option osProcessPool must be ≤ ${MAX_OS_PROCESS_POOL}`, { option: 'osProcessPool' });
  }

  return Object.freeze({
    poolSize: Math.floor(count('poolSize', o.poolSize, 2, 0)),
    osProcessPool: Math.floor(count('osProcessPool', o.osProcessPool, 2, 0)),
    maxWorkers: Math.floor(count('maxWorkers', o.maxWorkers, 8)),
    maxWorkersPerTenant: Math.floor(count('maxWorkersPerTenant', o.maxWorkersPerTenant, defaultPerTenant(Math.floor(count('maxWorkers', o.maxWorkers, 8))))),
    maxInstances: Math.floor(count('maxInstances', o.maxInstances, 64)),
    strictProfiles: o.strictProfiles === true,
    operatorLimits: frozenLimits(o.operatorLimits),
    outputLimitBytes: Math.floor(count('outputLimitBytes', o.outputLimitBytes, DEFAULT_OUTPUT_LIMIT_BYTES, 0)),
    failOnOutputLimit: o.failOnOutputLimit === true,
    trapOnGrowFailure: o.trapOnGrowFailure !== false,
    maxTableElements: Math.floor(count('maxTableElements', o.maxTableElements, MAX_TABLE_ELEMENTS)),
    workerHeapMb: count('workerHeapMb', o.workerHeapMb, 64, 16),
    workerStackMb: count('workerStackMb', o.workerStackMb, 4, 0.5),
    onTimeout: o.onTimeout ?? 'retire',
    onLog: o.onLog ?? null,
    spinMs: count('spinMicros', o.spinMicros, 100, 0) / 1000,
    fuel: o.fuel !== false,
    fuelChunk: Math.floor(count('fuelChunk', o.fuelChunk, DEFAULT_FUEL_CHUNK)),
    cacheDir: o.cacheDir === false ? null : (o.cacheDir ?? membraneCacheDir()),
    cacheMaxBytes: Math.floor(count('cacheMaxBytes', o.cacheMaxBytes, DEFAULT_CACHE_MAX_BYTES, 0)),
    vfsMaxBytes: Math.floor(count('vfsMaxBytes', o.vfsMaxBytes, DEFAULT_MAX_BYTES)),
    vfsMaxInodes: Math.floor(count('vfsMaxInodes', o.vfsMaxInodes, DEFAULT_MAX_INODES)),
    maxMountFiles: Math.floor(count('maxMountFiles', o.maxMountFiles, MAX_MOUNT_FILES)),
    // Served elsewhere (an os_process child): the other side's table of the call's granted caps.
    hostFunctions: o.brokers?.forward?.hostFunctions ?? hostFunctionNames(resolveHostFunctions(o.hostFunctions)),
    requireSigned: o.requireSigned === undefined ? null : Object.freeze(o.requireSigned.map(trustedDid)),
    didResolver: o.requireSigned === undefined ? null : new DidResolver({ documents: o.didDocuments ?? {}, fetch: o.didWebFetch === true, net: { ...(o.brokers?.net?.allowCidrs ? { allowCidrs: o.brokers.net.allowCidrs } : {}), ...(o.brokers?.net?.resolver ? { resolver: o.brokers.net.resolver } : {}), ...(o.brokers?.net?.ca ? { ca: o.brokers.net.ca } : {}) } }),
    remote: resolveRemote(o.remote),
  });
}

/** The operator's limits as they were at construction: a later change of the caller's object does not reach a running engine. */
function frozenLimits(limits: OperatorLimits | undefined): OperatorLimits {
  const out: Record<string, object> = {};
  for (const [profile, l] of Object.entries(limits ?? {})) out[profile] = Object.freeze({ ...l });
  return Object.freeze(out) as OperatorLimits;
}

function resolveRemote(r: RemoteOptions | undefined): RemoteOptions | null {
  if (r === undefined) return null;
  if (typeof r?.redis !== 'string' || !/^rediss?:\/\/\S+$/.test(r.redis)) throw new SandboxError('POLICY_INVALID', 'engine option remote.redis must be a redis:// or rediss:// URL', { option: 'remote' });
  if (r.queueWaitMs !== undefined) count('remote.queueWaitMs', r.queueWaitMs, 60_000);
  if (r.maxInFlight !== undefined) count('remote.maxInFlight', r.maxInFlight, 32);
  if (r.maxInFlightPerTenant !== undefined) count('remote.maxInFlightPerTenant', r.maxInFlightPerTenant, 16);
  return Object.freeze({ ...r });
}
