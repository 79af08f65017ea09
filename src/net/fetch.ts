/**
 * `guardedFetch` and `guardedFetchMany`: HTTP(S) for guests, through the guard, with undici@7.
 *
 * Owns: request validation (method, headers, body ≤ 1 MiB), one undici `Client` per hop whose
 * only connector reaches the pinned address, redirects followed by hand, the response body cap,
 * the deadline, and the batch form (≤ 64 requests, ≤ 16 at a time, 15 s each).
 *
 * Invariant: before any byte leaves the host for a hop, that hop's host was normalized, resolved
 * once and checked (guard.ts), and the connection goes to the checked address only — for http
 * and https alike, with `Host` and SNI the original host and certificates verified. At most
 * `maxRedirects` (5) redirects, each a new hop re-resolved and re-checked; 301/302 turn POST
 * into GET, 303 turns anything but HEAD into GET; credentials are dropped across origins. The
 * body is read as a stream and the read stops at `maxBodyBytes` (TOO_LARGE), so no more than
 * the cap plus one chunk is held. One deadline (10 s) covers every hop's resolution, connection,
 * headers and body. No connection is reused across hops or requests.
 *
 * Options are the host's configuration (a broker's), never a guest's. Outcomes: `DENIED` (the
 * guard, a forbidden header, scheme or credentials), `TOO_LARGE` (request or response body,
 * headers, redirect count, batch size), `TIMEOUT`, `UNAVAILABLE` (the upstream failed, including
 * a certificate that does not verify, or a caller's cancel), `INVALID` (a malformed request).
 *
 * Does not protect against: what a public server sends back within the caps; slow-drip bodies
 * are bounded only by the deadline.
 *
 * undici is imported by the first fetch, before its deadline starts, not with this module, so a
 * process that never fetches (a `membrane build`) does not pay its ~0.1 s load.
 */

import type * as Undici from 'undici';
import { parseAllowCidrs, type CidrSet } from './address.ts';
import { pinnedConnector } from './connect.ts';
import { resolveAndCheck, type Resolver } from './guard.ts';
import { checkRequestHeaders, flattenResponseHeaders, redirectHeaders } from './headers.ts';
import { NetError, positive, startDeadline, toNetError } from './net-error.ts';
import { parseTargetUrl, type Target } from './normalize.ts';

export const MAX_REDIRECT_HOPS = 5;
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
export const MAX_REQUEST_BODY_BYTES = 1024 * 1024;
export const DEFAULT_TIMEOUT_MS = 10_000;

let undiciLoad: Promise<typeof Undici> | undefined;
const undici = (): Promise<typeof Undici> => (undiciLoad ??= import('undici'));

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export interface FetchRequest {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
}

export interface FetchResponse {
  status: number;
  /** Lowercased names; repeated headers joined by `, `. */
  headers: Record<string, string>;
  body: Uint8Array;
  /** The URL that answered (after redirects). */
  url: string;
}

export interface FetchOptions {
  resolver?: Resolver;
  allowCidrs?: readonly string[];
  maxBodyBytes?: number;
  timeoutMs?: number;
  maxRedirects?: number;
  /** PEM trust anchors replacing the system roots. Tests only: trust a test CA. */
  ca?: string | Buffer;
  signal?: AbortSignal;
}

interface Hop {
  target: Target;
  method: string;
  headers: Record<string, string>;
  body: Uint8Array | undefined;
}

function checkRequest(request: FetchRequest): Hop {
  if (typeof request !== 'object' || request === null) throw new NetError('INVALID', 'the request must be an object');
  const target = parseTargetUrl(request.url);
  const method = (request.method ?? 'GET').toUpperCase();
  if (!METHODS.has(method)) {
    throw new NetError(/^[A-Z]+$/.test(method) ? 'DENIED' : 'INVALID', `the method ${JSON.stringify(method).slice(0, 40)} is not allowed`);
  }
  const headers = checkRequestHeaders(request.headers);
  let body: Uint8Array | undefined;
  if (request.body !== undefined && request.body !== null) {
    if (typeof request.body === 'string') body = Buffer.from(request.body, 'utf8');
    else if (request.body instanceof Uint8Array) body = request.body;
    else throw new NetError('INVALID', 'the body must be a string or bytes');
    if (body.byteLength > MAX_REQUEST_BODY_BYTES) throw new NetError('TOO_LARGE', `the request body is over ${MAX_REQUEST_BODY_BYTES} bytes`);
    if (method === 'GET' || method === 'HEAD') throw new NetError('INVALID', `a ${method} request has no body`);
  }
  return { target, method, headers, body };
}

interface HopResult {
  status: number;
  headers: Record<string, string>;
  body?: Uint8Array;
}

/** Stop reading a body; destroying it without a listener would surface undici's abort error. */
function discard(body: NodeJS.ReadableStream & { destroy(): void }): void {
  body.on('error', () => {});
  body.destroy();
}

/** One request to one checked origin; the body is read (capped) unless the answer redirects. */
async function exchange(Client: typeof Undici.Client, hop: Hop, allow: CidrSet, options: FetchOptions, maxBody: number, signal: AbortSignal): Promise<HopResult> {
  const pin = await resolveAndCheck(hop.target.host, { allowCidrs: allow, signal, ...(options.resolver ? { resolver: options.resolver } : {}) });
  const origin = new URL(hop.target.url.origin);
  const client = new Client(origin, {
    connect: pinnedConnector(pin, origin, { signal, ca: options.ca }),
    pipelining: 1,
    headersTimeout: 0,
    bodyTimeout: 0,
  });
  try {
    const res = await client.request({
      path: `${hop.target.url.pathname}${hop.target.url.search}`,
      method: hop.method as 'GET',
      headers: hop.headers,
      body: hop.body ?? null,
      signal,
      reset: true,
    });
    const headers = flattenResponseHeaders(res.headers);
    if (REDIRECTS.has(res.statusCode) && headers['location'] !== undefined) {
      discard(res.body);
      return { status: res.statusCode, headers };
    }
    const declared = Number(headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBody && hop.method !== 'HEAD') {
      discard(res.body);
      throw new NetError('TOO_LARGE', `the response body is over ${maxBody} bytes`);
    }
    const chunks: Buffer[] = [];
    let total = 0;
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      total += chunk.byteLength;
      if (total > maxBody) {
        discard(res.body);
        throw new NetError('TOO_LARGE', `the response body is over ${maxBody} bytes`);
      }
      chunks.push(chunk);
    }
    return { status: res.statusCode, headers, body: new Uint8Array(Buffer.concat(chunks, total)) };
  } finally {
    client.destroy().catch(() => {});
  }
}

/** The request for the hop after a redirect to `location`, or a `NetError`. */
function nextHop(hop: Hop, status: number, location: string): Hop {
  let href: string;
  try {
    href = new URL(location, hop.target.url).href;
  } catch (err) {
    throw new NetError('UNAVAILABLE', 'the redirect location does not parse', { cause: err });
  }
  const target = parseTargetUrl(href);
  const toGet = (status === 303 && hop.method !== 'HEAD') || ((status === 301 || status === 302) && hop.method === 'POST');
  const crossOrigin = target.url.origin !== hop.target.url.origin;
  return {
    target,
    method: toGet ? 'GET' : hop.method,
    headers: redirectHeaders(hop.headers, crossOrigin, toGet),
    body: toGet ? undefined : hop.body,
  };
}

/**
 * Fetch through the guard. Resolves with the final response or rejects with a `NetError`;
 * never with anything else.
 */
export async function guardedFetch(request: FetchRequest, options: FetchOptions = {}): Promise<FetchResponse> {
  let deadline: ReturnType<typeof startDeadline> | undefined;
  try {
    const maxBody = positive(options.maxBodyBytes, DEFAULT_MAX_BODY_BYTES, 'maxBodyBytes');
    const timeoutMs = positive(options.timeoutMs, DEFAULT_TIMEOUT_MS, 'timeoutMs');
    const maxRedirects = options.maxRedirects ?? MAX_REDIRECT_HOPS;
    if (!Number.isInteger(maxRedirects) || maxRedirects < 0) throw new NetError('INVALID', 'maxRedirects must be a non-negative integer');
    const allow = parseAllowCidrs(options.allowCidrs ?? []);
    let hop = checkRequest(request);
    const { Client } = await undici(); // before the deadline: loading undici is not the upstream's time
    deadline = startDeadline(timeoutMs, options.signal);
    const { signal } = deadline;
    for (let redirects = 0; ; redirects++) {
      const res = await exchange(Client, hop, allow, options, maxBody, signal);
      if (res.body !== undefined) return { status: res.status, headers: res.headers, body: res.body, url: hop.target.url.href };
      if (redirects >= maxRedirects) throw new NetError('TOO_LARGE', `more than ${maxRedirects} redirects`);
      hop = nextHop(hop, res.status, res.headers['location']!);
    }
  } catch (err) {
    throw toNetError(err, deadline?.signal);
  } finally {
    deadline?.dispose();
  }
}

export const MAX_BATCH_REQUESTS = 64;
export const MAX_BATCH_CONCURRENCY = 16;
export const BATCH_PER_REQUEST_TIMEOUT_MS = 15_000;

export interface FetchManyOptions extends Omit<FetchOptions, 'timeoutMs'> {
  /** Requests in flight at once; default 16. */
  concurrency?: number;
  /** Each request's own deadline; default 15 s. */
  perRequestTimeoutMs?: number;
  /** Most requests in one batch; default 64 (more is `TOO_LARGE`). */
  max?: number;
}

export type FetchManyResult =
  | { readonly ok: true; readonly response: FetchResponse }
  | { readonly ok: false; readonly error: { readonly code: NetError['code']; readonly message: string } };

/** Fetch each request through the guard; one result per request, in order, never a rejection per item. */
export async function guardedFetchMany(requests: readonly FetchRequest[], options: FetchManyOptions = {}): Promise<FetchManyResult[]> {
  const max = positive(options.max, MAX_BATCH_REQUESTS, 'max');
  const concurrency = Math.floor(positive(options.concurrency, MAX_BATCH_CONCURRENCY, 'concurrency'));
  const perRequestTimeoutMs = positive(options.perRequestTimeoutMs, BATCH_PER_REQUEST_TIMEOUT_MS, 'perRequestTimeoutMs');
  if (!Array.isArray(requests)) throw new NetError('INVALID', 'requests must be an array');
  if (requests.length > max) throw new NetError('TOO_LARGE', `more than ${max} requests in one batch`);
  const { concurrency: _c, perRequestTimeoutMs: _t, max: _m, ...fetchOptions } = options;
  const results = new Array<FetchManyResult>(requests.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < requests.length && !options.signal?.aborted) {
      const i = next++;
      try {
        results[i] = { ok: true, response: await guardedFetch(requests[i]!, { ...fetchOptions, timeoutMs: perRequestTimeoutMs }) };
      } catch (err) {
        const e = toNetError(err);
        results[i] = { ok: false, error: e.toJSON() };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, requests.length) }, worker));
  // A batch cut by its caller's signal is one failure, not 64 per-item ones.
  if (options.signal?.aborted) throw toNetError(options.signal.reason, options.signal);
  return results;
}
