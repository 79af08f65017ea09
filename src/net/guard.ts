/**
 * The network guard (DESIGN §5): a host → one checked, pinned address, or a refusal.
 *
 * Owns: the refused-name list, the single resolution of a name (injectable resolver), the check
 * of every resolved address, and `PinnedAddress` — which only `resolveAndCheck` constructs, so
 * holding one proves the check ran.
 *
 * Invariant: a name is resolved exactly once per call; if ANY resolved address is refused, the
 * whole name is refused (no picking the good one out of a mixed answer); a failed or empty
 * resolution is refused (`DENIED`, fail closed); the pinned address is the first resolved one,
 * and callers connect to it and nothing else, so a later DNS answer (rebinding) can never be
 * used. IP literals are checked without any resolution.
 *
 * Refused names (checked before resolving, whatever `allowCidrs` says; case-insensitive,
 * trailing dot ignored): `localhost` and `*.localhost` (RFC 6761); cloud metadata names
 * `metadata`, `metadata.google.internal`, `metadata.goog`, `instance-data`,
 * `instance-data.ec2.internal`; every `*.internal` (ICANN's private-use TLD, 2024) and
 * `*.local` (mDNS, RFC 6762) and `*.home.arpa` (RFC 8375); and any single-label name, which the
 * host's resolver would complete with its own search domains (`kubernetes`, `metadata`, …).
 *
 * Does not protect against: a public address that is itself a proxy to something private; a
 * resolver (the injected one in particular) that lies — the address check still applies to
 * whatever it returns.
 */

import { lookup } from 'node:dns/promises';
import { NO_CIDRS, classifyAddress, parseAllowCidrs, type CidrSet, type IpFamily } from './address.ts';
import { NetError, raceAbort } from './net-error.ts';
import { normalizeHost } from './normalize.ts';

export interface ResolvedAddress {
  readonly address: string;
  readonly family: number;
}

/** host → every address it resolves to. Rejecting means "could not resolve". */
export type Resolver = (host: string) => Promise<readonly ResolvedAddress[]>;

/** The default: the OS resolver, every address, in the order it returned them. */
export const systemResolver: Resolver = (host) => lookup(host, { all: true, verbatim: true });

/** Most addresses one name may resolve to before the answer itself is refused. */
export const MAX_RESOLVED_ADDRESSES = 64;

export const REFUSED_NAMES: readonly string[] = Object.freeze([
  'localhost',
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'instance-data',
  'instance-data.ec2.internal',
]);

export const REFUSED_SUFFIXES: readonly string[] = Object.freeze(['.localhost', '.internal', '.local', '.home.arpa']);

export interface GuardOptions {
  /** Defaults to `systemResolver`. */
  resolver?: Resolver;
  /** Operator allowlist (CIDR strings or a parsed set); empty by default. */
  allowCidrs?: readonly string[] | CidrSet;
  /** Aborting it stops waiting for the resolver (the lookup itself runs to completion). */
  signal?: AbortSignal;
}

const PIN = Symbol('PinnedAddress');

/** A host and the one address it was checked to be, ready to connect to. */
export class PinnedAddress {
  /** The normalized host: a name, or the literal address. */
  readonly host: string;
  /** The address to connect to (no brackets, no zone id). */
  readonly address: string;
  readonly family: IpFamily;
  /** True when `host` was an IP literal (no resolution, no SNI). */
  readonly literal: boolean;

  constructor(token: typeof PIN, host: string, address: string, family: IpFamily, literal: boolean) {
    if (token !== PIN) throw new TypeError('a PinnedAddress is made only by resolveAndCheck');
    this.host = host;
    this.address = address;
    this.family = family;
    this.literal = literal;
    Object.freeze(this);
  }
}

/** Why `name` (normalized) is refused before resolution, or null. */
export function refusedNameReason(name: string): string | null {
  const n = name.toLowerCase().replace(/\.$/, '');
  if (REFUSED_NAMES.includes(n)) return `the name ${n} is a local or metadata name`;
  const suffix = REFUSED_SUFFIXES.find((s) => n.endsWith(s));
  if (suffix) return `names under ${suffix.slice(1)} are not reachable from the sandbox`;
  if (!n.includes('.')) return 'single-label names are not allowed (they resolve through the host\'s search domains)';
  return null;
}

export function toCidrSet(allow: GuardOptions['allowCidrs']): CidrSet {
  if (allow === undefined) return NO_CIDRS;
  return Array.isArray(allow) ? parseAllowCidrs(allow) : (allow as CidrSet);
}

/**
 * Resolve `host` once and check every address; the pinned address, or a `NetError`:
 * `INVALID` for a malformed host, `DENIED` for a refused name, a refused address, or a
 * resolution that failed or came back empty; the signal's reason when it aborts first.
 */
export async function resolveAndCheck(host: string, options: GuardOptions = {}): Promise<PinnedAddress> {
  const allow = toCidrSet(options.allowCidrs);
  const target = normalizeHost(host);
  if (target.ip !== 0) {
    const v = classifyAddress(target.host, allow);
    if (!v.allowed) throw new NetError('DENIED', `the address is not reachable from the sandbox: ${v.reason}`);
    return new PinnedAddress(PIN, target.host, v.address, v.family, true);
  }
  const refused = refusedNameReason(target.host);
  if (refused) throw new NetError('DENIED', refused);

  const resolver = options.resolver ?? systemResolver;
  let answer: readonly ResolvedAddress[];
  try {
    const pending = Promise.resolve().then(() => resolver(target.host));
    answer = options.signal ? await raceAbort(pending, options.signal) : await pending;
  } catch (err) {
    if (err instanceof NetError) throw err;
    throw new NetError('DENIED', `the name ${target.host} did not resolve`, { cause: err });
  }
  if (!Array.isArray(answer) || answer.length === 0) throw new NetError('DENIED', `the name ${target.host} resolved to no address`);
  if (answer.length > MAX_RESOLVED_ADDRESSES) throw new NetError('DENIED', `the name ${target.host} resolved to too many addresses`);
  const verdicts = answer.map((a) => classifyAddress(typeof a?.address === 'string' ? a.address : '', allow));
  const bad = verdicts.find((v) => !v.allowed);
  if (bad) throw new NetError('DENIED', `the name ${target.host} resolves to an address not reachable from the sandbox: ${bad.reason}`);
  const first = verdicts[0]!;
  return new PinnedAddress(PIN, target.host, first.address, first.family, false);
}
