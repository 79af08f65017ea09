/**
 * IP address classification: is this address one a guest may reach?
 *
 * Owns: a strict parser for canonical IPv4 (dotted decimal, no leading zeros) and IPv6 text
 * (zone id stripped), the table of refused ranges, the embedded-IPv4 rules for IPv6 forms, and
 * the operator's allowlist (`allowCidrs`, empty by default).
 *
 * Invariant: only public unicast is allowed. An IPv4 address is refused if it lies in any entry
 * of the IANA IPv4 Special-Purpose Address Registry — whether or not the registry marks it
 * globally reachable — or in multicast 224/4. An IPv6 address is allowed only inside global
 * unicast 2000::/3 and outside every entry of the IANA IPv6 Special-Purpose Address Registry,
 * with one exception: NAT64 64:ff9b::/96 is judged by the IPv4 address it embeds. IPv4-mapped
 * (::ffff:0:0/96) forms are judged by their IPv4 address; IPv4-compatible (::/96), translated
 * (::ffff:0:0:0/96), local-use NAT64 (64:ff9b:1::/48), 6to4 (2002::/16) and Teredo (2001::/32)
 * are refused outright. An address matching `allowCidrs` is allowed before any of this (an
 * IPv4-mapped address also matches the IPv4 entries).
 *
 * Sources (checked 2025): https://www.iana.org/assignments/iana-ipv4-special-registry/,
 * https://www.iana.org/assignments/iana-ipv6-special-registry/,
 * https://www.iana.org/assignments/multicast-addresses/, https://www.iana.org/assignments/ipv6-address-space/.
 *
 * Does not protect against: a public address that routes somewhere private on this host's
 * network (a NAT64 gateway, a cloud's public-IP hairpin), nor an operator whose allowlist is
 * wide (`0.0.0.0/0` allows everything). Non-canonical literals (`0177.0.0.1`) are not parsed
 * here: normalize.ts turns them into canonical text first, and anything unparseable is refused.
 */

import { NetError } from './net-error.ts';

export type IpFamily = 4 | 6;

export interface ParsedIp {
  readonly family: IpFamily;
  /** 4 or 16 bytes, network order. */
  readonly bytes: Uint8Array;
}

export interface AddressVerdict {
  /** The address as given, zone id removed. */
  readonly address: string;
  readonly family: IpFamily;
  readonly allowed: boolean;
  /** `public`, `allowlisted`, or the name of the refused range. */
  readonly reason: string;
}

interface Range {
  readonly net: Uint8Array;
  readonly bits: number;
  readonly name: string;
}

const V4_DEC = /^(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})$/;

function parseV4(text: string): Uint8Array | null {
  const m = V4_DEC.exec(text);
  if (!m) return null;
  const bytes = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const n = Number(m[i + 1]);
    if (n > 255) return null;
    bytes[i] = n;
  }
  return bytes;
}

function parseV6(text: string): Uint8Array | null {
  if (text.length > 45 || !/^[0-9a-fA-F:.]+$/.test(text)) return null;
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const groups = (s: string): string[] => (s === '' ? [] : s.split(':'));
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  const words: number[] = [];
  const all = [...head, ...(halves.length === 2 ? ['::'] : []), ...tail];
  for (let i = 0; i < all.length; i++) {
    const g = all[i]!;
    if (g === '::') continue;
    if (g.includes('.')) {
      if (i !== all.length - 1) return null;
      const v4 = parseV4(g);
      if (!v4) return null;
      words.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
    } else {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
      words.push(parseInt(g, 16));
    }
  }
  const headWords = head.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0);
  if (halves.length === 1 && words.length !== 8) return null;
  if (halves.length === 2 && words.length > 7) return null;
  const missing = 8 - words.length;
  const full = halves.length === 2 ? [...words.slice(0, headWords), ...new Array<number>(missing).fill(0), ...words.slice(headWords)] : words;
  const bytes = new Uint8Array(16);
  full.forEach((w, i) => {
    bytes[2 * i] = w >> 8;
    bytes[2 * i + 1] = w & 0xff;
  });
  return bytes;
}

/** Canonical IPv4 or any valid IPv6 text (brackets and a `%zone` suffix allowed) → bytes, else null. */
export function parseIp(text: string): ParsedIp | null {
  let t = text;
  if (t.startsWith('[') && t.endsWith(']')) t = t.slice(1, -1);
  const v4 = parseV4(t);
  if (v4) return { family: 4, bytes: v4 };
  const zone = t.indexOf('%');
  if (zone >= 0) t = t.slice(0, zone);
  const v6 = parseV6(t);
  return v6 ? { family: 6, bytes: v6 } : null;
}

function cidr(text: string, name: string): Range {
  const slash = text.lastIndexOf('/');
  const ip = parseIp(slash < 0 ? text : text.slice(0, slash));
  const max = ip?.family === 4 ? 32 : 128;
  const prefix = slash < 0 ? String(max) : text.slice(slash + 1);
  const bits = Number(prefix);
  if (!ip || !/^\d{1,3}$/.test(prefix) || bits > max) {
    throw new NetError('INVALID', `not a CIDR range: ${JSON.stringify(text)}`);
  }
  return { net: ip.bytes, bits, name };
}

function inRange(bytes: Uint8Array, r: Range): boolean {
  if (bytes.length !== r.net.length) return false;
  let left = r.bits;
  for (let i = 0; left > 0; i++, left -= 8) {
    const mask = left >= 8 ? 0xff : (0xff << (8 - left)) & 0xff;
    if ((bytes[i]! & mask) !== (r.net[i]! & mask)) return false;
  }
  return true;
}

/** IANA IPv4 Special-Purpose Address Registry, every entry, plus multicast; most specific first. */
const V4_REFUSED: readonly Range[] = [
  ['255.255.255.255/32', 'limited broadcast (RFC 919, RFC 8190)'],
  ['0.0.0.0/8', 'unspecified / "this network" (RFC 791)'],
  ['10.0.0.0/8', 'private (RFC 1918)'],
  ['100.64.0.0/10', 'shared address space / CGNAT (RFC 6598)'],
  ['127.0.0.0/8', 'loopback (RFC 1122)'],
  ['169.254.0.0/16', 'link-local, incl. cloud metadata 169.254.169.254 (RFC 3927)'],
  ['172.16.0.0/12', 'private (RFC 1918)'],
  ['192.0.0.0/24', 'IETF protocol assignments (RFC 6890)'],
  ['192.0.2.0/24', 'documentation TEST-NET-1 (RFC 5737)'],
  ['192.31.196.0/24', 'AS112-v4 (RFC 7535)'],
  ['192.52.193.0/24', 'AMT (RFC 7450)'],
  ['192.88.99.0/24', 'deprecated 6to4 relay anycast (RFC 7526)'],
  ['192.168.0.0/16', 'private (RFC 1918)'],
  ['192.175.48.0/24', 'direct delegation AS112 (RFC 7534)'],
  ['198.18.0.0/15', 'benchmarking (RFC 2544)'],
  ['198.51.100.0/24', 'documentation TEST-NET-2 (RFC 5737)'],
  ['203.0.113.0/24', 'documentation TEST-NET-3 (RFC 5737)'],
  ['224.0.0.0/4', 'multicast (RFC 5771)'],
  ['240.0.0.0/4', 'reserved (RFC 1112)'],
].map(([c, n]) => cidr(c!, n!));

/** IANA IPv6 Special-Purpose Address Registry (entries not handled as embedded forms) + IPv6 space. */
const V6_REFUSED: readonly Range[] = [
  ['::/128', 'unspecified (RFC 4291)'],
  ['::1/128', 'loopback (RFC 4291)'],
  ['100::/64', 'discard-only (RFC 6666)'],
  ['100:0:0:1::/64', 'dummy prefix (RFC 9780)'],
  ['2001::/32', 'Teredo (RFC 4380)'],
  ['2001::/23', 'IETF protocol assignments (RFC 2928)'],
  ['2001:db8::/32', 'documentation (RFC 3849)'],
  ['2620:4f:8000::/48', 'direct delegation AS112 (RFC 7534)'],
  ['3fff::/20', 'documentation (RFC 9637)'],
  ['5f00::/16', 'SRv6 SIDs (RFC 9602)'],
  ['fc00::/7', 'unique local (RFC 4193)'],
  ['fe80::/10', 'link-local (RFC 4291)'],
  ['fec0::/10', 'deprecated site-local (RFC 3879)'],
  ['ff00::/8', 'multicast (RFC 4291)'],
].map(([c, n]) => cidr(c!, n!));

const GLOBAL_UNICAST = cidr('2000::/3', 'global unicast');
const V4_MAPPED = cidr('::ffff:0:0/96', 'IPv4-mapped');
const V4_TRANSLATED = cidr('::ffff:0:0:0/96', 'IPv4-translated (RFC 2765)');
const V4_COMPATIBLE = cidr('::/96', 'deprecated IPv4-compatible (RFC 4291)');
const NAT64 = cidr('64:ff9b::/96', 'NAT64 (RFC 6052)');
const NAT64_LOCAL = cidr('64:ff9b:1::/48', 'local-use NAT64 (RFC 8215)');
const SIX_TO_FOUR = cidr('2002::/16', '6to4 (RFC 3056)');

/** The operator's allowlist: ranges admitted before any refusal. Build with `parseAllowCidrs`. */
export interface CidrSet {
  readonly ranges: readonly Range[];
}

export const NO_CIDRS: CidrSet = Object.freeze({ ranges: Object.freeze([]) });

/** `['127.0.0.1/32', '::1']` → a `CidrSet`; a malformed entry is `INVALID`. */
export function parseAllowCidrs(cidrs: readonly string[] = []): CidrSet {
  if (!Array.isArray(cidrs)) throw new NetError('INVALID', 'allowCidrs must be an array of CIDR strings');
  return Object.freeze({ ranges: Object.freeze(cidrs.map((c) => cidr(String(c), `allowlisted ${c}`))) });
}

function v4Verdict(bytes: Uint8Array): { allowed: boolean; reason: string } {
  const hit = V4_REFUSED.find((r) => inRange(bytes, r));
  return hit ? { allowed: false, reason: hit.name } : { allowed: true, reason: 'public' };
}

function embedded(bytes: Uint8Array, at: number): Uint8Array {
  return bytes.slice(at, at + 4);
}

function v6Verdict(bytes: Uint8Array): { allowed: boolean; reason: string } {
  const exact = V6_REFUSED.slice(0, 2).find((r) => inRange(bytes, r));
  if (exact) return { allowed: false, reason: exact.name };
  if (inRange(bytes, V4_MAPPED)) {
    const v = v4Verdict(embedded(bytes, 12));
    return { allowed: v.allowed, reason: v.allowed ? 'public' : `IPv4-mapped ${v.reason}` };
  }
  if (inRange(bytes, NAT64)) {
    const v = v4Verdict(embedded(bytes, 12));
    return { allowed: v.allowed, reason: v.allowed ? 'public' : `NAT64 (RFC 6052) of ${v.reason}` };
  }
  for (const [range, at] of [[V4_COMPATIBLE, 12], [V4_TRANSLATED, 12], [NAT64_LOCAL, 12], [SIX_TO_FOUR, 2]] as const) {
    if (inRange(bytes, range)) {
      const v = v4Verdict(embedded(bytes, at));
      return { allowed: false, reason: v.allowed ? range.name : `${range.name} of ${v.reason}` };
    }
  }
  const hit = V6_REFUSED.find((r) => inRange(bytes, r));
  if (hit) return { allowed: false, reason: hit.name };
  if (!inRange(bytes, GLOBAL_UNICAST)) return { allowed: false, reason: 'not global unicast (outside 2000::/3)' };
  return { allowed: true, reason: 'public' };
}

function allowlisted(ip: ParsedIp, allow: CidrSet): boolean {
  if (allow.ranges.some((r) => inRange(ip.bytes, r))) return true;
  return ip.family === 6 && inRange(ip.bytes, V4_MAPPED) && allow.ranges.some((r) => inRange(embedded(ip.bytes, 12), r));
}

/**
 * Classify one address (canonical IPv4 or IPv6 text). Anything that does not parse is refused,
 * never guessed at.
 */
export function classifyAddress(address: string, allow: CidrSet = NO_CIDRS): AddressVerdict {
  const ip = parseIp(address);
  const text = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (!ip) return { address: text, family: address.includes(':') ? 6 : 4, allowed: false, reason: 'not an IP address' };
  if (allowlisted(ip, allow)) return { address: text, family: ip.family, allowed: true, reason: 'allowlisted' };
  const v = ip.family === 4 ? v4Verdict(ip.bytes) : v6Verdict(ip.bytes);
  return { address: text, family: ip.family, ...v };
}

/** True when `address` is public unicast or allowlisted. */
export function isAllowedAddress(address: string, allow: CidrSet = NO_CIDRS): boolean {
  return classifyAddress(address, allow).allowed;
}
