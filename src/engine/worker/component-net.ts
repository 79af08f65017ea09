/**
 * The network interfaces of components (cap `net`) on the worker side: the `send` of
 * wasi:http (src/wasi/p2/http.ts) and the `exchange` of wasi:sockets TCP (src/wasi/p2/sockets.ts),
 * made of the same brokered calls a core guest makes — `http_fetch` and `tcp_request` — so a
 * component's request goes through the one network guard (names resolved once, non-public
 * addresses refused unless the operator's allowlist says so, the pinned IP connected to,
 * redirects re-checked), the broker's size caps and deadline, the cadence (the cap — `net`,
 * and `tcp` for a connection — checked again on every call) and the audit record of a refusal.
 *
 * Owns: the request as the broker's JSON (`{url, method, headers, bodyBase64}`), its answer back
 * into status, headers and body bytes, and a broker refusal as the error-code a client expects
 * (wasi:http: DENIED → `destination-IP-prohibited`, TOO_LARGE → `HTTP-response-body-size`,
 * TIMEOUT → `connection-timeout`, …; wasi:sockets: DENIED → `access-denied`, …).
 * Invariant: nothing here decides anything — the main thread does, per call.
 *
 * Does not protect against: nothing beyond the broker.
 */

import { GUEST_ERR } from '../../abi/command.ts';
import type { CallState } from '../../abi/signals.ts';
import type { HttpAnswer, HttpErrorCode, HttpRequestOut, TcpExchange } from '../../wasi/p2/index.ts';
import { remoteCall } from './component-imports.ts';
import type { HostBridge } from './host-bridge.ts';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A broker refusal as wasi:http's error-code (cases of WASI 0.2's `error-code` variant). */
export function httpErrorFor(errno: number): HttpErrorCode {
  switch (errno) {
    case GUEST_ERR.DENIED:
      return { tag: 'destination-IP-prohibited' };
    case GUEST_ERR.TIMEOUT:
      return { tag: 'connection-timeout' };
    case GUEST_ERR.TOO_LARGE:
      return { tag: 'HTTP-response-body-size', val: undefined };
    case GUEST_ERR.INVALID:
      return { tag: 'HTTP-request-URI-invalid' };
    case GUEST_ERR.NOT_FOUND:
      return { tag: 'destination-not-found' };
    case GUEST_ERR.RATE_LIMITED:
    case GUEST_ERR.QUOTA:
      return { tag: 'connection-limit-reached' };
    case GUEST_ERR.REVOKED:
      return { tag: 'HTTP-request-denied' };
    case GUEST_ERR.UNAVAILABLE:
      return { tag: 'destination-unavailable' };
    default:
      return { tag: 'internal-error', val: undefined };
  }
}

interface BrokerAnswer {
  status?: unknown;
  headers?: unknown;
  body?: unknown;
  bodyBase64?: unknown;
}

export function httpSend(host: HostBridge, state: CallState): (request: HttpRequestOut) => HttpAnswer {
  return (request) => {
    const json: Record<string, unknown> = { url: request.url, method: request.method, headers: request.headers };
    if (request.body && request.body.length > 0) json['bodyBase64'] = Buffer.from(request.body).toString('base64');
    const answer = remoteCall(host, state, 'http_fetch', [encoder.encode(JSON.stringify(json))]);
    if (typeof answer === 'number') return { ok: false, error: httpErrorFor(answer) };
    let parsed: BrokerAnswer;
    try {
      parsed = JSON.parse(decoder.decode(answer)) as BrokerAnswer;
    } catch {
      return { ok: false, error: { tag: 'HTTP-protocol-error' } };
    }
    const headers = typeof parsed.headers === 'object' && parsed.headers !== null ? Object.entries(parsed.headers).filter((e): e is [string, string] => typeof e[1] === 'string') : [];
    const body = typeof parsed.bodyBase64 === 'string' ? new Uint8Array(Buffer.from(parsed.bodyBase64, 'base64')) : encoder.encode(typeof parsed.body === 'string' ? parsed.body : '');
    return { ok: true, status: Number(parsed.status) | 0, headers, body };
  };
}

/** A broker refusal as a wasi:sockets error-code, with what the guest may read of it. */
const SOCKET_ERRORS: Readonly<Record<number, readonly [string, string]>> = {
  [GUEST_ERR.DENIED]: ['access-denied', 'the network guard refused the destination'],
  [GUEST_ERR.TIMEOUT]: ['timeout', 'the exchange did not end within its deadline'],
  [GUEST_ERR.TOO_LARGE]: ['out-of-memory', 'the answer is over the broker cap'],
  [GUEST_ERR.INVALID]: ['invalid-argument', 'not a destination the broker takes'],
  [GUEST_ERR.RATE_LIMITED]: ['new-socket-limit', 'rate limited'],
  [GUEST_ERR.QUOTA]: ['new-socket-limit', 'over quota'],
  [GUEST_ERR.REVOKED]: ['access-denied', 'revoked'],
  [GUEST_ERR.NOT_FOUND]: ['name-unresolvable', 'no such destination'],
  [GUEST_ERR.UNAVAILABLE]: ['remote-unreachable', 'the destination could not be reached'],
};

export function tcpExchange(host: HostBridge, state: CallState): TcpExchange {
  return (target, payload) => {
    const answer = remoteCall(host, state, 'tcp_request', [encoder.encode(target), payload]);
    if (typeof answer !== 'number') return answer;
    const [code, message] = SOCKET_ERRORS[answer] ?? ['unknown', 'the exchange failed'];
    return { code, message };
  };
}
