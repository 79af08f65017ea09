/**
 * A grant and what a request may ask within it — one rule for every remote interface (the MCP
 * tools and the HTTP API). A grant is the profile a server was started with (`membrane mcp
 * --profile P`) or a bearer token's maximum profile; a request may name a lower profile, a
 * capability subset, a timeout and a fuel budget.
 *
 * Owns: the comparison of a request with its grant. Invariant: the effective caps are the grant's
 * (or the requested lower profile's) ∩ the subset; a cap or profile outside the grant is
 * `NOT_CAPABLE` naming it, with one audit record — never silently dropped (the engine's own
 * narrowing drops with a warning, which a remote caller might not read); a timeout or fuel above
 * the ceiling is clamped to it and the clamp is reported in `clamped`.
 *
 * A grant may also name embedder host caps (`vendor:name`, DESIGN §9): they are in effect when
 * the request names no subset, and a subset naming one outside the grant is NOT_CAPABLE like any
 * cap; a name the engine does not define is POLICY_INVALID (an unknown cap word).
 *
 * Does not protect against: an operator granting a generous profile; the engine then applies the
 * same walls as for any other caller.
 */

import { SandboxError } from '../errors.ts';
import { PROFILE_NAMES, PROFILES, isCapWord, isProfileName, type CapWord, type ProfileName } from '../policy/profiles.ts';
import { resolvePolicy } from '../policy/resolve.ts';
import { isHostCapName } from '../policy/host-caps.ts';
import type { Engine } from '../engine/index.ts';

export interface Grant {
  readonly tenant: string;
  /** The most this caller may use. */
  readonly profile: ProfileName;
  /** Embedder host caps (`vendor:name`) granted on top of the profile; none by default. */
  readonly hostCaps?: readonly string[];
  /** Where the request came from, for the audit record: `mcp`, `http`, … */
  readonly surface: string;
}

export interface GrantRequest {
  readonly profile?: string | undefined;
  readonly capabilitySubset?: readonly string[] | undefined;
  readonly timeoutMs?: number | undefined;
  readonly fuel?: number | undefined;
}

export interface Granted {
  readonly profile: ProfileName;
  /** Present when the request named a subset or the grant has host caps: cap words, then host caps. */
  readonly caps?: readonly (CapWord | string)[];
  readonly timeoutMs: number;
  readonly fuel: number;
  /** Human-readable notes, one per clamped value (e.g. "timeout_ms 10000000 clamped to 5000"). */
  readonly clamped: readonly string[];
}

/** Whether `wanted` sits at or below `grant` on the profile ladder (compute ⊂ minimal ⊂ network ⊂ posix). */
export function profileWithin(wanted: ProfileName, grant: ProfileName): boolean {
  return PROFILE_NAMES.indexOf(wanted) <= PROFILE_NAMES.indexOf(grant);
}

function refuse(engine: Engine, grant: Grant, what: Record<string, unknown>, message: string): never {
  engine.audit({ tenant: grant.tenant, kind: 'denied', detail: { broker: 'grant', op: grant.surface, code: 'NOT_CAPABLE', why: 'outside the grant', granted: grant.profile, ...what } });
  throw new SandboxError('NOT_CAPABLE', message, { granted: grant.profile, ...what });
}

/** Resolve a request against its grant, or throw NOT_CAPABLE (audited) / POLICY_INVALID. */
export function resolveGrant(engine: Engine, grant: Grant, req: GrantRequest): Granted {
  let profile = grant.profile;
  if (req.profile !== undefined) {
    if (!isProfileName(req.profile)) throw new SandboxError('POLICY_INVALID', `unknown profile "${String(req.profile).slice(0, 64)}"`);
    if (!profileWithin(req.profile, grant.profile)) {
      refuse(engine, grant, { profile: req.profile }, `profile "${req.profile}" is above this grant ("${grant.profile}")`);
    }
    profile = req.profile;
  }
  let caps: (CapWord | string)[] | undefined;
  const hostGranted = (grant.hostCaps ?? []).filter((c) => Object.hasOwn(engine.config.hostFunctions, c));
  if (req.capabilitySubset !== undefined) {
    const defined = (c: unknown): boolean => isHostCapName(c) && Object.hasOwn(engine.config.hostFunctions, c);
    const unknown = req.capabilitySubset.filter((c) => !isCapWord(c) && !defined(c));
    if (unknown.length > 0) throw new SandboxError('POLICY_INVALID', `unknown cap word(s): ${unknown.map((c) => `"${String(c).slice(0, 32)}"`).join(', ')}`);
    const words = req.capabilitySubset.filter((c): c is CapWord => isCapWord(c));
    const hosts = req.capabilitySubset.filter((c) => defined(c));
    const outside = [...new Set([...words.filter((c) => !PROFILES[profile].caps.includes(c)), ...hosts.filter((c) => !hostGranted.includes(c))])];
    if (outside.length > 0) {
      const also = hostGranted.length > 0 ? ` ${hostGranted.join(' ')}` : '';
      refuse(engine, grant, { caps: outside }, `capability ${outside.map((c) => `"${c}"`).join(', ')} is not granted (${profile} grants: ${PROFILES[profile].caps.join(' ')}${also})`);
    }
    caps = [...new Set([...words, ...hosts])];
  } else if (hostGranted.length > 0) {
    caps = [...PROFILES[profile].caps, ...hostGranted];
  }
  const ceiling = resolvePolicy({ profile }, engine.config);
  const clamped: string[] = [];
  const clamp = (name: string, want: number | undefined, max: number): number => {
    if (want === undefined) return max;
    if (typeof want !== 'number' || !Number.isFinite(want) || want <= 0) throw new SandboxError('POLICY_INVALID', `${name} must be a positive number`);
    if (want > max) {
      clamped.push(`${name} ${want} clamped to ${max}`);
      return max;
    }
    return want;
  };
  const timeoutMs = clamp('timeout_ms', req.timeoutMs, ceiling.timeoutMs);
  const fuel = clamp('fuel', req.fuel, ceiling.fuel);
  return { profile, ...(caps ? { caps } : {}), timeoutMs, fuel, clamped };
}
