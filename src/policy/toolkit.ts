/**
 * Toolkit verification (DESIGN §2): before a toolkit is installed, check the caps its manifest
 * declares — every one a known cap word, and some profile granting the whole set.
 *
 * Owns: `verifyToolkitCaps` — the declared list in, the verdict out: the profiles that grant
 * every declared word (least-privileged first, from the one profile literal: the first is the
 * minimal grant), or the words no profile knows, or why no profile grants the set. Embedder host
 * caps (`vendor:name`) are not granted by a profile but by the operator (a token's
 * `--host-cap`): they are reported apart, never as unknown and never as granted.
 *
 * Invariant: an unknown word is always named, and a verdict with an unknown word is never ok.
 *
 * Also owns the declaration as a grant: `narrowToDeclaration` — a toolkit's command runs with its
 * caller's grant intersected with what the toolkit declared (never more than either).
 *
 * Does not protect against: a toolkit whose module imports more than it declared — that is the
 * installer's refusal (engine/toolkit-install.ts, LINK_UNSATISFIED), since what the installer
 * grants is the declaration.
 */

import { isHostCapName } from './host-caps.ts';
import { CAP_WORDS, PROFILES, isCapWord, profilesGranting, type CapWord, type ProfileName } from './profiles.ts';

/** A manifest may declare at most this many caps. */
export const MAX_DECLARED_CAPS = 256;

export interface ToolkitVerdict {
  readonly ok: boolean;
  /** The declared cap words, deduplicated, in the catalog's order. */
  readonly caps: readonly CapWord[];
  /** Embedder host caps declared (granted by the operator, not by a profile). */
  readonly hostCaps: readonly string[];
  /** Profiles that grant every declared word, least-privileged first (empty when none). */
  readonly profiles: readonly ProfileName[];
  /** The least-privileged of them, or null. */
  readonly minimal: ProfileName | null;
  /** Declared words that are neither cap words nor host caps. */
  readonly unknown: readonly string[];
  /** Why it is not ok, in a sentence (null when ok). */
  readonly reason: string | null;
}

export function verifyToolkitCaps(declared: unknown): ToolkitVerdict {
  const none = { caps: [], hostCaps: [], profiles: [], minimal: null, unknown: [] };
  if (!Array.isArray(declared)) return { ok: false, ...none, reason: 'the manifest declares no caps list (caps: [...])' };
  if (declared.length > MAX_DECLARED_CAPS) return { ok: false, ...none, reason: `a manifest declares at most ${MAX_DECLARED_CAPS} caps` };
  const caps = new Set<CapWord>();
  const hostCaps = new Set<string>();
  const unknown: string[] = [];
  for (const w of declared) {
    if (isCapWord(w)) caps.add(w);
    else if (isHostCapName(w)) hostCaps.add(w);
    else unknown.push(typeof w === 'string' ? w.slice(0, 64) : JSON.stringify(w)?.slice(0, 64) ?? String(w));
  }
  const ordered = CAP_WORDS.filter((c) => caps.has(c));
  const profiles = profilesGranting(ordered);
  const base = { caps: ordered, hostCaps: [...hostCaps].sort(), profiles, minimal: profiles[0] ?? null, unknown };
  if (unknown.length > 0) return { ok: false, ...base, reason: `unknown cap word${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')} (known: ${CAP_WORDS.join(', ')})` };
  if (profiles.length === 0) {
    const top = PROFILES.posix.caps;
    const missing = ordered.filter((c) => !top.includes(c));
    return { ok: false, ...base, reason: `no profile grants all of: ${ordered.join(', ')}${missing.length ? ` (no profile grants ${missing.join(', ')})` : ''}` };
  }
  return { ok: true, ...base, reason: null };
}

/** What an installed toolkit declared: the grant its commands run under (at most). */
export interface Declaration {
  readonly toolkit: string;
  readonly caps: readonly CapWord[];
  readonly hostCaps: readonly string[];
}

/** `policy` with its caps and host caps cut to the declaration (unchanged without one). */
export function narrowToDeclaration<P extends { readonly caps: readonly CapWord[]; readonly hostCaps: readonly string[] }>(policy: P, declared: Declaration | undefined): P {
  if (!declared) return policy;
  return { ...policy, caps: policy.caps.filter((c) => declared.caps.includes(c)), hostCaps: policy.hostCaps.filter((c) => declared.hostCaps.includes(c)) };
}
