/**
 * The network brokers for core-module guests: `net` (`http_fetch`, `http_fetch_many`),
 * `browse` (`browse_fetch`), `tcp`/`udp`/`tls` (`*_request`). Every byte goes through the guard
 * in src/net (resolve once, refuse non-public addresses, connect to the pinned IP, redirects
 * re-checked, body cap, deadline); this module adds the guest-facing layouts and revocation.
 *
 * Owns: the request/response JSON of the fetch calls (docs/abi.md), `"host:port"` targets of the
 * socket calls, the fixed limits (the guard's options are host configuration and are never
 * taken from a guest), and stopping a call in flight when its principal is revoked (REVOKED).
 * Invariant: the operator's `allowCidrs` (empty by default) is the only way past the guard's
 * floor; a guest chooses URLs, methods, headers and bodies, never limits or trust anchors.
 *
 * Does not protect against: a public address that forwards to a private one (see src/net).
 */

import { BATCH_PER_REQUEST_TIMEOUT_MS, DEFAULT_SOCKET_TIMEOUT_MS, DEFAULT_TIMEOUT_MS, MAX_BATCH_CONCURRENCY, MAX_BATCH_REQUESTS, NetError, guardedFetch, guardedFetchMany, tcpRequest, tlsRequest, udpRequest, toNetError, type FetchRequest, type FetchResponse, type Resolver } from '../net/index.ts';
import { GUEST_ERR } from '../abi/command.ts';
import { pageText } from './page-text.ts';

export interface NetBrokerOptions {
  /** CIDRs the guard admits despite the floor (tests: ['127.0.0.1/32']). Default none. */
  readonly allowCidrs?: readonly string[];
  /** Replace DNS (tests: simulate names and rebinding). */
  readonly resolver?: Resolver;
  /** Trust anchors replacing the system roots (tests only). */
  readonly ca?: string;
  /** Response body cap. Default 1 MiB. */
  readonly maxBodyBytes?: number;
  /** Per-call deadline. Default 10 s; never past the calling call's own deadline. */
  readonly timeoutMs?: number;
}

/** Calls this module serves, and the largest request each accepts (the cadence's size step). */
export const NET_CALLS: Readonly<Record<string, number>> = {
  http_fetch: 2 * 1024 * 1024,
  http_fetch_many: 4 * 1024 * 1024,
  browse_fetch: 8 * 1024,
  tcp_request: 1024 * 1024 + 512,
  udp_request: 65_507 + 512,
  tls_request: 1024 * 1024 + 512,
};

const decoder = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

/** `denied`: targets inside a batch that the guard refused (each gets its own audit record). */
export type NetAnswer = { ok: true; bytes: Uint8Array; denied: string[] } | { ok: false; errno: number };

export class NetBroker {
  constructor(private readonly options: NetBrokerOptions = {}) {}

  /**
   * Run one call; `signal` aborts it (revocation mid-flight, the job ending, the calling call's
   * deadline) and destroys its sockets; `limitMs` (what is left of the calling call) caps every
   * timeout of the call — the broker's own can only be shorter.
   */
  async call(name: string, args: readonly Uint8Array[], signal: AbortSignal, limitMs?: number): Promise<NetAnswer> {
    try {
      const denied: string[] = [];
      return { ok: true, bytes: await this.run(name, args, signal, denied, limitMs ?? Infinity), denied };
    } catch (e) {
      if (signal.aborted) return { ok: false, errno: GUEST_ERR.REVOKED };
      return { ok: false, errno: toNetError(e, signal).guestCode };
    }
  }

  private get guard(): { allowCidrs?: readonly string[]; resolver?: Resolver; ca?: string } {
    const o = this.options;
    return { ...(o.allowCidrs ? { allowCidrs: o.allowCidrs } : {}), ...(o.resolver ? { resolver: o.resolver } : {}), ...(o.ca ? { ca: o.ca } : {}) };
  }

  private async run(name: string, args: readonly Uint8Array[], signal: AbortSignal, denied: string[], limitMs: number): Promise<Uint8Array> {
    const limits = { ...(this.options.maxBodyBytes ? { maxBodyBytes: this.options.maxBodyBytes } : {}), signal };
    const within = (own: number): number => Math.max(1, Math.min(own, limitMs));
    const timeoutMs = within(this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    switch (name) {
      case 'http_fetch': {
        const request = parseRequest(json(args[0]!));
        const r = await guardedFetch(request, { ...this.guard, ...limits, timeoutMs });
        return encoder.encode(JSON.stringify(responseJson(r)));
      }
      case 'http_fetch_many': {
        const list = json(args[0]!);
        if (!Array.isArray(list)) throw new NetError('INVALID', 'http_fetch_many takes a JSON array of requests');
        if (list.length > MAX_BATCH_REQUESTS) throw new NetError('TOO_LARGE', `more than ${MAX_BATCH_REQUESTS} requests`);
        const requests = list.map(parseRequest);
        const results = await guardedFetchMany(requests, {
          ...this.guard,
          ...limits,
          concurrency: MAX_BATCH_CONCURRENCY,
          perRequestTimeoutMs: within(BATCH_PER_REQUEST_TIMEOUT_MS),
          max: MAX_BATCH_REQUESTS,
        });
        results.forEach((x, i) => {
          if (!x.ok && x.error.code === 'DENIED') denied.push(requests[i]!.url.slice(0, 512));
        });
        return encoder.encode(JSON.stringify(results.map((x) => (x.ok ? responseJson(x.response) : { error: x.error.code, errno: GUEST_ERR[x.error.code] }))));
      }
      case 'browse_fetch': {
        const url = text(args[0]!);
        const r = await guardedFetch({ url, headers: { accept: 'text/html, text/plain;q=0.9' } }, { ...this.guard, ...limits, timeoutMs });
        return encoder.encode(pageText(r.body, r.headers['content-type'] ?? '', r.status, r.url));
      }
      case 'tcp_request':
      case 'udp_request':
      case 'tls_request': {
        const { host, port } = target(text(args[0]!));
        const opts = { ...this.guard, signal, timeoutMs: within(this.options.timeoutMs ?? DEFAULT_SOCKET_TIMEOUT_MS) };
        const send = name === 'tcp_request' ? tcpRequest : name === 'tls_request' ? tlsRequest : udpRequest;
        return await send(host, port, args[1]!, opts);
      }
      default:
        throw new NetError('INVALID', 'not a network call');
    }
  }
}

function text(bytes: Uint8Array): string {
  try {
    return decoder.decode(bytes);
  } catch {
    throw new NetError('INVALID', 'not UTF-8');
  }
}

function json(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(text(bytes));
  } catch (e) {
    if (e instanceof NetError) throw e;
    throw new NetError('INVALID', 'the request is not JSON');
  }
}

/** `{url, method?, headers?, body?, bodyBase64?}` from a guest. */
function parseRequest(x: unknown): FetchRequest {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) throw new NetError('INVALID', 'a request is a JSON object');
  const o = x as Record<string, unknown>;
  if (typeof o['url'] !== 'string') throw new NetError('INVALID', 'a request needs a url');
  const out: FetchRequest = { url: o['url'] };
  if (o['method'] !== undefined) {
    if (typeof o['method'] !== 'string') throw new NetError('INVALID', 'method must be a string');
    out.method = o['method'];
  }
  if (o['headers'] !== undefined) {
    const h = o['headers'];
    if (typeof h !== 'object' || h === null || Array.isArray(h) || !Object.values(h).every((v) => typeof v === 'string')) {
      throw new NetError('INVALID', 'headers must be an object of strings');
    }
    out.headers = h as Record<string, string>;
  }
  if (typeof o['bodyBase64'] === 'string') out.body = Buffer.from(o['bodyBase64'], 'base64');
  else if (o['body'] !== undefined) {
    if (typeof o['body'] !== 'string') throw new NetError('INVALID', 'body must be a string (or use bodyBase64)');
    out.body = o['body'];
  }
  return out;
}

/** `{status, headers, body}`; a body that is not UTF-8 travels as `bodyBase64`. */
function responseJson(r: FetchResponse): Record<string, unknown> {
  try {
    return { status: r.status, headers: r.headers, body: decoder.decode(r.body) };
  } catch {
    return { status: r.status, headers: r.headers, bodyBase64: Buffer.from(r.body).toString('base64') };
  }
}

/** `host:port`, `[v6]:port`. */
function target(s: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(s);
  if (!m) throw new NetError('INVALID', 'a target is "host:port"');
  return { host: m[1] ?? m[2]!, port: Number(m[3]) };
}
