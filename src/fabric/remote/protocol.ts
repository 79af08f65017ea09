/**
 * The remote tier's wire format (DESIGN §7): what a submitter puts on the BullMQ queue and what a
 * `membrane worker` sends back, and the worker's checks on a job — a job is untrusted input from
 * the queue, whoever wrote it.
 *
 * Owns: `RemoteJob` (module hash, argv, stdin as base64, grant, limits, tenant) and its
 * validation (`checkJob`: every size, name and word bounded; the limits can only lower what the
 * worker's own engine allows, because the worker resolves them against its own operator limits),
 * `RemoteReply` (a RunResult with stdout as base64, plus the worker's audit records), the module
 * key (content hash), and `retrySafe` — which grants may run a second time after a worker died.
 * Invariant: `checkJob` returns only plain, bounded data (no prototype tricks, no extra fields);
 * anything else is POLICY_INVALID before the worker touches the module.
 *
 * Does not protect against: a hostile worker — a submitter trusts its fleet's replies (shape-checked
 * only) exactly as it trusts its Redis; the queue has no authentication beyond Redis's own.
 */

import { createHash } from 'node:crypto';
import { SandboxError, type SerializedError } from '../../errors.ts';
import { isCapWord, isProfileName, PROFILES, type CapWord, type ProfileName } from '../../policy/profiles.ts';

/** Wire version: a worker refuses any other. */
export const REMOTE_VERSION = 1;
export const MAX_REMOTE_MODULE_BYTES = 64 * 1024 * 1024;
export const MAX_REMOTE_STDIN_BYTES = 16 * 1024 * 1024;
export const MAX_REMOTE_ARGS = 256;
export const MAX_REMOTE_ARGV_CHARS = 64 * 1024;
export const MAX_REMOTE_ENV = 64;
const MAX_RECORDS = 256;
const HASH = /^[0-9a-f]{64}$/;
const TENANT = /^[A-Za-z0-9._:@-]{1,128}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/**
 * Caps whose effects end with the run: a fresh in-memory VFS, and commands run inside the same
 * sandbox. A grant of only these may run again after its worker died; any other cap (kv, queue,
 * secrets, the network, posix, host caps) may have changed something outside the first attempt.
 */
export const RETRY_SAFE_CAPS: readonly CapWord[] = Object.freeze(['vfs', 'commands', 'exec']);

export interface RemoteJob {
  readonly v: number;
  /** sha256 of the module bytes (hex): the key of `moduleKey`. */
  readonly module: string;
  readonly tenant: string;
  readonly argv: readonly string[];
  readonly argv0?: string;
  readonly env?: Readonly<Record<string, string>>;
  /** base64 */
  readonly stdin: string;
  readonly profile: ProfileName;
  /** The grant's cap words (absent: the profile's). */
  readonly caps?: readonly CapWord[];
  readonly timeoutMs?: number;
  readonly fuel?: number;
  readonly memoryBytes?: number;
}

export interface RemoteRecord {
  readonly instance: string;
  readonly kind: string;
  readonly time: string;
  readonly detail: Record<string, unknown>;
}

export interface RemoteReply {
  readonly v: number;
  readonly worker: string;
  /** 1 on the first attempt, 2 when the job ran again after a worker died. */
  readonly attempt: number;
  readonly ok: boolean;
  readonly exitCode?: number;
  /** base64 of the captured stdout bytes. */
  readonly stdout: string;
  readonly stdoutTruncated?: boolean;
  readonly stderr: string;
  readonly fuelUsed: number;
  readonly durationMs: number;
  readonly memoryBytes: number;
  readonly profile: string;
  readonly warnings: readonly string[];
  readonly error?: SerializedError;
  readonly records: readonly RemoteRecord[];
}

export const sha256Hex = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');
export const moduleKey = (prefix: string, hash: string): string => `${prefix}:module:${hash}`;

function bad(why: string, field?: string): SandboxError {
  return new SandboxError('POLICY_INVALID', `remote job refused: ${why}`, field ? { field } : {});
}

function positive(v: unknown, field: string): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw bad(`${field} must be a positive number`, field);
  return v;
}

const isPlain = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x) && Object.getPrototypeOf(x) === Object.prototype;

/** A job as read from the queue → a checked copy, or POLICY_INVALID. Unknown fields are refused. */
export function checkJob(raw: unknown): RemoteJob {
  if (!isPlain(raw)) throw bad('not an object');
  const known = new Set(['v', 'module', 'tenant', 'argv', 'argv0', 'env', 'stdin', 'profile', 'caps', 'timeoutMs', 'fuel', 'memoryBytes']);
  for (const k of Object.keys(raw)) if (!known.has(k)) throw bad(`unknown field ${k.slice(0, 32)}`, 'job');
  if (raw['v'] !== REMOTE_VERSION) throw bad(`wire version must be ${REMOTE_VERSION}`, 'v');
  const module = raw['module'];
  if (typeof module !== 'string' || !HASH.test(module)) throw bad('module must be a sha256 hex digest', 'module');
  const tenant = raw['tenant'];
  if (typeof tenant !== 'string' || !TENANT.test(tenant)) throw bad('tenant must be 1-128 characters of [A-Za-z0-9._:@-]', 'tenant');
  const argv = raw['argv'];
  if (!Array.isArray(argv) || argv.length > MAX_REMOTE_ARGS || !argv.every((a) => typeof a === 'string')) throw bad(`argv must be at most ${MAX_REMOTE_ARGS} strings`, 'argv');
  const argv0 = raw['argv0'];
  if (argv0 !== undefined && typeof argv0 !== 'string') throw bad('argv0 must be a string', 'argv0');
  if ((argv as string[]).reduce((n, a) => n + a.length, (argv0 as string | undefined)?.length ?? 0) > MAX_REMOTE_ARGV_CHARS) throw bad('argv is too long', 'argv');
  const env = raw['env'];
  let envOut: Record<string, string> | undefined;
  if (env !== undefined) {
    if (!isPlain(env) || Object.keys(env).length > MAX_REMOTE_ENV) throw bad(`env must be an object of at most ${MAX_REMOTE_ENV} strings`, 'env');
    envOut = {};
    for (const [k, v] of Object.entries(env)) {
      if (!ENV_NAME.test(k) || typeof v !== 'string' || v.length > 4096) throw bad('env names are identifiers, values strings of at most 4096 characters', 'env');
      envOut[k] = v;
    }
  }
  const stdin = raw['stdin'];
  if (typeof stdin !== 'string' || stdin.length > Math.ceil(MAX_REMOTE_STDIN_BYTES / 3) * 4 || !/^[A-Za-z0-9+/]*={0,2}$/.test(stdin)) throw bad('stdin must be base64 of at most 16 MiB', 'stdin');
  const profile = raw['profile'];
  if (!isProfileName(profile)) throw bad('profile must be a known profile name', 'profile');
  const caps = raw['caps'];
  if (caps !== undefined && (!Array.isArray(caps) || caps.length > 64 || !caps.every(isCapWord))) throw bad('caps must be cap words (host caps do not travel)', 'caps');
  const out: RemoteJob = {
    v: REMOTE_VERSION,
    module,
    tenant,
    argv: [...(argv as string[])],
    ...(argv0 !== undefined ? { argv0: argv0 as string } : {}),
    ...(envOut ? { env: envOut } : {}),
    stdin,
    profile,
    ...(caps !== undefined ? { caps: [...new Set(caps as CapWord[])] } : {}),
  };
  const limits: { timeoutMs?: number; fuel?: number; memoryBytes?: number } = {};
  for (const f of ['timeoutMs', 'fuel', 'memoryBytes'] as const) {
    const v = positive(raw[f], f);
    if (v !== undefined) limits[f] = v;
  }
  return { ...out, ...limits };
}

/** The caps a job's grant resolves to (the profile's, narrowed by `caps`). */
export function grantedCaps(job: Pick<RemoteJob, 'profile' | 'caps'>): CapWord[] {
  const base = PROFILES[job.profile].caps;
  return job.caps ? base.filter((c) => job.caps!.includes(c)) : [...base];
}

/** May this job run a second time after its first worker died mid-run? Only when nothing it may do outlives the run. */
export function retrySafe(job: Pick<RemoteJob, 'profile' | 'caps'>): boolean {
  return grantedCaps(job).every((c) => RETRY_SAFE_CAPS.includes(c));
}

/** A worker's reply, shape-checked on the submitter (the fleet is trusted; this catches version skew, not lies). */
export function checkReply(raw: unknown): RemoteReply {
  if (!isPlain(raw) || raw['v'] !== REMOTE_VERSION) throw new SandboxError('INTERNAL', 'a remote worker sent a reply this engine does not read');
  const r = raw as unknown as RemoteReply;
  if (typeof r.ok !== 'boolean' || typeof r.stdout !== 'string' || typeof r.stderr !== 'string' || typeof r.worker !== 'string' || !Array.isArray(r.records)) {
    throw new SandboxError('INTERNAL', 'a remote worker sent a malformed reply');
  }
  return { ...r, records: r.records.slice(0, MAX_RECORDS) };
}

export const MAX_REPLY_RECORDS = MAX_RECORDS;
