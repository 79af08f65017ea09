/**
 * The four profiles: the whole of Membrane's policy, as one literal (DESIGN §2).
 *
 * Owns: each profile's memory cap, per-call wall-clock budget, per-call fuel budget and cap words.
 * Invariant: this literal is the only place these numbers and word lists are written; everything
 * else reads them from here. Profiles form a ladder: compute ⊂ minimal ⊂ network ⊂ posix (by caps).
 *
 * Does not protect against: an operator who raises limits in the engine configuration — that is
 * their call to make, and it is the only way to raise one.
 */

export const CAP_WORDS = [
  'vfs',
  'commands',
  'exec',
  'kv',
  'secrets',
  'queue',
  'tcp',
  'udp',
  'tls',
  'net',
  'llm',
  'browse',
  'posix',
  'parallel',
] as const;

export type CapWord = (typeof CAP_WORDS)[number];

export const PROFILE_NAMES = ['compute', 'minimal', 'network', 'posix'] as const;

export type ProfileName = (typeof PROFILE_NAMES)[number];

export interface Profile {
  readonly name: ProfileName;
  readonly memoryBytes: number;
  readonly timeoutMs: number;
  readonly fuel: number;
  readonly caps: readonly CapWord[];
}

const MiB = 1024 * 1024;

const MINIMAL_CAPS = ['vfs', 'commands', 'exec', 'kv', 'secrets', 'queue', 'tcp', 'udp', 'tls'] as const;
const NETWORK_CAPS = [...MINIMAL_CAPS, 'net', 'llm', 'browse'] as const;
const POSIX_CAPS = [...NETWORK_CAPS, 'posix', 'parallel'] as const;

export const PROFILES: Readonly<Record<ProfileName, Profile>> = deepFreeze({
  compute: { name: 'compute', memoryBytes: 64 * MiB, timeoutMs: 5_000, fuel: 1e9, caps: ['vfs'] },
  minimal: { name: 'minimal', memoryBytes: 64 * MiB, timeoutMs: 5_000, fuel: 1e9, caps: [...MINIMAL_CAPS] },
  network: { name: 'network', memoryBytes: 128 * MiB, timeoutMs: 30_000, fuel: 1e10, caps: [...NETWORK_CAPS] },
  posix: { name: 'posix', memoryBytes: 256 * MiB, timeoutMs: 60_000, fuel: 1e10, caps: [...POSIX_CAPS] },
});

/** The least-privileged profile; unknown names fail closed to it. */
export const FALLBACK_PROFILE: ProfileName = 'compute';

export function isProfileName(value: unknown): value is ProfileName {
  return typeof value === 'string' && (PROFILE_NAMES as readonly string[]).includes(value);
}

export function isCapWord(value: unknown): value is CapWord {
  return typeof value === 'string' && (CAP_WORDS as readonly string[]).includes(value);
}

/** The one switch for ambient egress: true only when `net` or `browse` is granted. */
export function allowHttp(caps: readonly CapWord[]): boolean {
  return caps.includes('net') || caps.includes('browse');
}

/** Profiles that grant every word in `caps`, least-privileged first (the table's ladder order). */
export function profilesGranting(caps: readonly CapWord[]): ProfileName[] {
  return PROFILE_NAMES.filter((p) => caps.every((c) => PROFILES[p].caps.includes(c)));
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
