/**
 * URL and host normalization: what a guest wrote → the one canonical host the guard checks.
 *
 * Owns: URL acceptance (`http:` and `https:` only, no credentials, ≤ 8 KiB) and host
 * canonicalization for URLs and for bare hosts (the socket brokers).
 *
 * Invariant: every host reaching the guard went through the WHATWG host parser (`new URL`), so
 * the checked host and the host undici is given are the same text. That parser already turns
 * `2130706433`, `0177.0.0.1`, `0x7f.1`, `127.1`, `0x7f000001`, mixed radixes, percent-encoded
 * and full-width digits, and ideographic dots into `127.0.0.1`; lowercases; punycodes IDNs;
 * compresses IPv6 (`[::ffff:127.0.0.1]` → `::ffff:7f00:1`); and rejects zone ids and a numeric
 * last label that is not a valid IPv4 (`1.2.3.4.5`, `4294967296`). What it leaves, handled here:
 * a trailing dot on names (`localhost.` → `localhost`), brackets (stripped: the result is the
 * bare address), and, for bare hosts only, IPv6 zone ids (`fe80::1%eth0` → `fe80::1`, the zone
 * dropped — the address is what is checked and connected to).
 *
 * Does not protect against: nothing here decides reachability; a normalized host is only the
 * input to guard.ts.
 */

import { NetError } from './net-error.ts';
import { parseIp } from './address.ts';

/** Longest URL accepted from a guest. */
export const MAX_URL_BYTES = 8 * 1024;

export interface NormalizedHost {
  /** A lowercase name without a trailing dot, or a bare IP address (no brackets, no zone). */
  readonly host: string;
  /** 0 for a name, else the literal's family. */
  readonly ip: 0 | 4 | 6;
}

export interface Target extends NormalizedHost {
  /** The parsed URL (fragment removed); its `host` is what undici sends as `Host`. */
  readonly url: URL;
  readonly secure: boolean;
  readonly port: number;
}

/** Characters that would change a URL's structure if a bare host were pasted into one. */
const NOT_IN_A_HOST = /[\s/\\?#@:\[\]\u0000-\u001f\u007f]/;

function finish(hostname: string): NormalizedHost {
  if (hostname.startsWith('[')) {
    const inner = hostname.slice(1, -1);
    if (parseIp(inner)?.family !== 6) throw new NetError('INVALID', 'not a valid IPv6 literal');
    return { host: inner, ip: 6 };
  }
  if (parseIp(hostname)?.family === 4) return { host: hostname, ip: 4 };
  const name = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
  if (name === '' || name.length > 253 || name.split('.').some((label) => label === '' || label.length > 63)) {
    throw new NetError('INVALID', 'not a valid host name');
  }
  return { host: name, ip: 0 };
}

/** A host as WHATWG would parse it in an http URL, or `INVALID`. */
function whatwgHost(literal: string): string {
  let url: URL;
  try {
    url = new URL(`http://${literal}/`);
  } catch (err) {
    throw new NetError('INVALID', 'not a valid host', { cause: err });
  }
  if (url.port !== '' || url.username !== '' || url.password !== '' || url.pathname !== '/') {
    throw new NetError('INVALID', 'not a valid host');
  }
  return url.hostname;
}

/**
 * A bare host (socket brokers, or a URL's hostname) → its canonical form. Accepts names, any
 * IPv4 spelling WHATWG accepts, IPv6 with or without brackets and with an optional zone id.
 */
export function normalizeHost(input: string): NormalizedHost {
  if (typeof input !== 'string' || input.length === 0 || input.length > 1024) throw new NetError('INVALID', 'not a valid host');
  let text = input;
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  if (text.includes(':')) {
    const zone = text.indexOf('%');
    const bare = zone >= 0 ? text.slice(0, zone) : text;
    if (zone >= 0 && !/^%(25)?[A-Za-z0-9_.-]{1,64}$/.test(text.slice(zone))) throw new NetError('INVALID', 'not a valid IPv6 zone id');
    if (parseIp(bare)?.family !== 6) throw new NetError('INVALID', 'not a valid IPv6 literal');
    return finish(whatwgHost(`[${bare}]`));
  }
  if (NOT_IN_A_HOST.test(text)) throw new NetError('INVALID', 'not a valid host');
  return finish(whatwgHost(text));
}

/**
 * A guest's URL → a `Target`. `INVALID` when it does not parse; `DENIED` for another scheme or
 * for credentials (`user:pass@`); `TOO_LARGE` past `MAX_URL_BYTES`.
 */
export function parseTargetUrl(input: string): Target {
  if (typeof input !== 'string') throw new NetError('INVALID', 'the url must be a string');
  if (Buffer.byteLength(input) > MAX_URL_BYTES) throw new NetError('TOO_LARGE', `the url is longer than ${MAX_URL_BYTES} bytes`);
  let url: URL;
  try {
    url = new URL(input);
  } catch (err) {
    throw new NetError('INVALID', 'the url does not parse', { cause: err });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new NetError('DENIED', `the scheme ${url.protocol} is not allowed (http: and https: only)`);
  if (url.username !== '' || url.password !== '') throw new NetError('DENIED', 'credentials in a url are not allowed');
  if (url.hostname === '') throw new NetError('INVALID', 'the url has no host');
  url.hash = '';
  const secure = url.protocol === 'https:';
  const { host, ip } = finish(url.hostname);
  return { url, secure, port: url.port === '' ? (secure ? 443 : 80) : Number(url.port), host, ip };
}
