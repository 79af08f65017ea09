/**
 * HTTP header policy for guest requests, and the plain-object shape of response headers.
 *
 * Owns: which request headers a guest may set, their syntax and size limits, the headers dropped
 * on a cross-origin redirect or a switch to GET, and flattening undici's response headers.
 *
 * Invariant: the connection, framing and routing of a request are the host's: a guest never sets
 * `Host`, `Connection`, `Content-Length`, `Transfer-Encoding`, `TE`, `Trailer`, `Upgrade`,
 * `Keep-Alive`, `Expect`, `HTTP2-Settings` or any `Proxy-*` header (`DENIED`); names are RFC 9110
 * tokens and values carry no CR, LF or NUL (`INVALID`). Credentials (`Authorization`, `Cookie`,
 * `Proxy-Authorization`) never follow a redirect to another origin.
 *
 * Does not protect against: what a guest sends in the headers it may set (its own tokens).
 */

import { hostOwnedHeader } from '../abi/http-headers.ts';
import { NetError } from './net-error.ts';

export const MAX_REQUEST_HEADERS = 100;
export const MAX_REQUEST_HEADER_BYTES = 64 * 1024;

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const BAD_VALUE = /[\r\n\0]/;

/** Dropped when a redirect leaves the origin. */
const CREDENTIALS = ['authorization', 'cookie', 'proxy-authorization'];
/** Dropped when a redirect turns the request into a body-less GET. */
const BODY_HEADERS = ['content-type', 'content-encoding', 'content-language', 'content-location'];

/** A guest's headers → lowercase-named, validated headers, or a `NetError`. */
export function checkRequestHeaders(headers: unknown): Record<string, string> {
  if (headers === undefined || headers === null) return {};
  if (typeof headers !== 'object' || Array.isArray(headers)) throw new NetError('INVALID', 'headers must be an object of strings');
  const entries = Object.entries(headers);
  if (entries.length > MAX_REQUEST_HEADERS) throw new NetError('TOO_LARGE', `more than ${MAX_REQUEST_HEADERS} request headers`);
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  let bytes = 0;
  for (const [rawName, value] of entries) {
    if (typeof value !== 'string') throw new NetError('INVALID', 'header values must be strings');
    if (!TOKEN.test(rawName)) throw new NetError('INVALID', 'a header name is not a valid token');
    if (BAD_VALUE.test(value)) throw new NetError('INVALID', `the ${rawName} header carries CR, LF or NUL`);
    const name = rawName.toLowerCase();
    if (hostOwnedHeader(name)) throw new NetError('DENIED', `the ${name} header is set by the host, not the guest`);
    bytes += name.length + value.length + 4;
    if (bytes > MAX_REQUEST_HEADER_BYTES) throw new NetError('TOO_LARGE', `request headers over ${MAX_REQUEST_HEADER_BYTES} bytes`);
    out[name] = name in out ? `${out[name]}, ${value}` : value.trim();
  }
  return out;
}

/** The headers to send on the next hop of a redirect. */
export function redirectHeaders(headers: Record<string, string>, crossOrigin: boolean, toGet: boolean): Record<string, string> {
  const out = { ...headers };
  if (crossOrigin) for (const h of CREDENTIALS) delete out[h];
  if (toGet) for (const h of BODY_HEADERS) delete out[h];
  return out;
}

/** undici's response headers → a plain object, names lowercased, repeated values joined by `, `. */
export function flattenResponseHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}
