/**
 * WASI preview 2, `wasi:http/types` and `wasi:http/outgoing-handler` (0.2.x) for the component
 * lane — the `net` cap's outgoing HTTP, as resources in the shape jco's glue calls, over ONE
 * brokered call per request (`send`, which the worker routes to the `http_fetch` broker: the
 * network guard, pinned-IP connects, the body cap, the deadline, the cadence and the audit record
 * of any other guest's request).
 *
 * Owns: fields (headers), the outgoing request and its body (buffered, at most
 * MAX_REQUEST_BODY_BYTES), the future response — sent when it is first polled or read, so a body
 * written after `handle` goes with it — the incoming response, its body as an input stream, and
 * the mapping of broker refusals to wasi:http `error-code`s.
 * Invariant: nothing here opens a socket or resolves a name: the one way out is `send`; a header
 * the host owns (Host, Content-Length, Connection, Proxy-*, … — src/net/headers.ts) is
 * `forbidden` when set; a response's headers are immutable.
 *
 * Does not protect against: anything about the destination — that is the broker's guard; this
 * module does not stream (a request and its answer are whole, within their caps).
 */

import { hostOwnedHeader } from '../../abi/http-headers.ts';
import { InputStream, OutputStream, Pollable, failed, ownBytes } from './streams.ts';

/** A request body larger than this is refused (`HTTP-request-body-size`); the broker's cap is 1 MiB. */
export const MAX_REQUEST_BODY_BYTES = 1 << 20;

/** A wasi:http `error-code` value as jco's glue lowers it. */
export type HttpErrorCode = { tag: string; val?: unknown };

export interface HttpRequestOut {
  readonly url: string;
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly body: Uint8Array | null;
}

export type HttpAnswer =
  | { readonly ok: true; readonly status: number; readonly headers: readonly (readonly [string, string])[]; readonly body: Uint8Array }
  | { readonly ok: false; readonly error: HttpErrorCode };

/** One whole request out, one whole answer (or refusal) back — the worker's brokered call. */
export type HttpSend = (request: HttpRequestOut) => HttpAnswer;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const BAD_VALUE = /[\r\n\0]/;
const METHODS = new Set(['get', 'head', 'post', 'put', 'delete', 'connect', 'options', 'trace', 'patch']);

const code = (tag: string, val?: unknown): HttpErrorCode => (val === undefined ? { tag } : { tag, val });

type Entry = [string, Uint8Array];

class Fields {
  private list: Entry[] = [];
  immutable = false;

  static fromList(entries: readonly (readonly [string, unknown])[]): Fields {
    const f = new Fields();
    for (const [name, value] of entries) f.append(name, value);
    return f;
  }
  /** Immutable fields holding `entries` (a response's headers). */
  static frozen(entries: readonly (readonly [string, string])[]): Fields {
    const f = new Fields();
    f.list = entries.map(([k, v]): Entry => [k.toLowerCase(), encoder.encode(v)]);
    f.immutable = true;
    return f;
  }
  private check(name: string, values: readonly Uint8Array[]): string {
    if (this.immutable) throw { tag: 'immutable' };
    if (!TOKEN.test(name) || values.some((v) => BAD_VALUE.test(decoder.decode(v)))) throw { tag: 'invalid-syntax' };
    const lower = name.toLowerCase();
    if (hostOwnedHeader(lower)) throw { tag: 'forbidden' };
    return lower;
  }
  get(name: string): Uint8Array[] {
    const lower = name.toLowerCase();
    return this.list.filter(([k]) => k === lower).map(([, v]) => v.slice());
  }
  has(name: string): boolean {
    const lower = name.toLowerCase();
    return this.list.some(([k]) => k === lower);
  }
  set(name: string, values: readonly unknown[]): void {
    const own = Array.from(values, ownBytes);
    const lower = this.check(name, own);
    this.list = [...this.list.filter(([k]) => k !== lower), ...own.map((v): Entry => [lower, v])];
  }
  delete(name: string): void {
    const lower = this.check(name, []);
    this.list = this.list.filter(([k]) => k !== lower);
  }
  append(name: string, value: unknown): void {
    const v = ownBytes(value);
    this.list.push([this.check(name, [v]), v]);
  }
  entries(): [string, Uint8Array][] {
    return this.list.map(([k, v]) => [k, v.slice()]);
  }
  clone(): Fields {
    const f = new Fields();
    f.list = this.entries();
    return f;
  }
  /** The broker's shape: one string per name, repeated values joined. */
  flat(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [k, v] of this.list) out[k] = k in out ? `${out[k]}, ${decoder.decode(v)}` : decoder.decode(v);
    return out;
  }
}

class OutgoingBody {
  private readonly chunks: Uint8Array[] = [];
  private size = 0;
  private stream: OutputStream | null = null;
  finished = false;
  tooLarge = false;

  write(): OutputStream {
    if (this.stream || this.finished) throw undefined;
    this.stream = new OutputStream((data) => {
      if (this.finished) throw failed('the body is finished');
      if (this.size + data.length > MAX_REQUEST_BODY_BYTES) {
        this.tooLarge = true;
        throw failed(`the request body is over ${MAX_REQUEST_BODY_BYTES} bytes`);
      }
      this.chunks.push(data);
      this.size += data.length;
    });
    return this.stream;
  }
  static finish(body: OutgoingBody, _trailers: Fields | undefined): void {
    body.finished = true;
    if (body.tooLarge) throw code('HTTP-request-body-size', BigInt(body.size));
  }
  bytes(): Uint8Array {
    const out = new Uint8Array(this.size);
    let at = 0;
    for (const c of this.chunks) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  }
}

type Scheme = { tag: string; val?: string };

class OutgoingRequest {
  private methodValue: { tag: string; val?: string } = { tag: 'get' };
  private pathValue: string | undefined = undefined;
  private schemeValue: Scheme | undefined = undefined;
  private authorityValue: string | undefined = undefined;
  private bodyValue: OutgoingBody | null = null;
  constructor(private readonly fields: Fields) {
    fields.immutable = true; // the request owns its headers now (WASI: they become immutable)
  }
  body(): OutgoingBody {
    if (this.bodyValue) throw undefined;
    this.bodyValue = new OutgoingBody();
    return this.bodyValue;
  }
  method(): { tag: string; val?: string } {
    return this.methodValue;
  }
  setMethod(m: { tag: string; val?: string }): void {
    if (m.tag === 'other' && !TOKEN.test(String(m.val ?? ''))) throw undefined;
    this.methodValue = m;
  }
  pathWithQuery(): string | undefined {
    return this.pathValue;
  }
  setPathWithQuery(p: string | undefined): void {
    if (p !== undefined && (BAD_VALUE.test(p) || /\s/.test(p))) throw undefined;
    this.pathValue = p;
  }
  scheme(): Scheme | undefined {
    return this.schemeValue;
  }
  setScheme(s: Scheme | undefined): void {
    this.schemeValue = s;
  }
  authority(): string | undefined {
    return this.authorityValue;
  }
  setAuthority(a: string | undefined): void {
    if (a !== undefined && !/^[^\s/?#@]+$/.test(a)) throw undefined;
    this.authorityValue = a;
  }
  headers(): Fields {
    return this.fields;
  }
  /** The request as the broker takes it, or the error-code `handle` answers. */
  toSend(): { request: HttpRequestOut; body: OutgoingBody | null } | HttpErrorCode {
    const scheme = this.schemeValue ?? { tag: 'HTTPS' };
    if (scheme.tag !== 'HTTP' && scheme.tag !== 'HTTPS') return code('HTTP-protocol-error');
    if (!this.authorityValue) return code('HTTP-request-URI-invalid');
    const m = this.methodValue;
    const method = m.tag === 'other' ? String(m.val) : METHODS.has(m.tag) ? m.tag.toUpperCase() : null;
    if (method === null || method === 'CONNECT') return code('HTTP-request-method-invalid');
    const path = this.pathValue ?? '/';
    const url = `${scheme.tag === 'HTTP' ? 'http' : 'https'}://${this.authorityValue}${path.startsWith('/') ? path : `/${path}`}`;
    return { request: { url, method, headers: this.fields.flat(), body: null }, body: this.bodyValue };
  }
}

class RequestOptions {
  connectTimeout(): bigint | undefined {
    return undefined;
  }
  /** The broker's own timeouts (and the call's deadline) bound every request; a guest's wish is not taken. */
  setConnectTimeout(): void {
    throw undefined;
  }
  firstByteTimeout(): bigint | undefined {
    return undefined;
  }
  setFirstByteTimeout(): void {
    throw undefined;
  }
  betweenBytesTimeout(): bigint | undefined {
    return undefined;
  }
  setBetweenBytesTimeout(): void {
    throw undefined;
  }
}

class FutureTrailers {
  private taken = false;
  subscribe(): Pollable {
    return new Pollable(null, null);
  }
  get(): { tag: string; val?: unknown } {
    if (this.taken) return { tag: 'err' };
    this.taken = true;
    return { tag: 'ok', val: { tag: 'ok', val: undefined } };
  }
}

class IncomingBody {
  private streamed = false;
  constructor(private readonly bytes: Uint8Array) {}
  stream(): InputStream {
    if (this.streamed) throw undefined;
    this.streamed = true;
    const bytes = this.bytes;
    return new InputStream({ read: (at, len) => bytes.slice(at, at + len), size: () => bytes.length });
  }
  static finish(_body: IncomingBody): FutureTrailers {
    return new FutureTrailers();
  }
}

class IncomingResponse {
  private consumed = false;
  constructor(private readonly statusValue: number, private readonly fields: Fields, private readonly bytes: Uint8Array) {}
  status(): number {
    return this.statusValue;
  }
  headers(): Fields {
    return this.fields;
  }
  consume(): IncomingBody {
    if (this.consumed) throw undefined;
    this.consumed = true;
    return new IncomingBody(this.bytes);
  }
}

class FutureIncomingResponse {
  private answer: { tag: 'ok'; val: IncomingResponse } | { tag: 'err'; val: HttpErrorCode } | null = null;
  private taken = false;
  constructor(private readonly send: HttpSend, private readonly request: HttpRequestOut, private readonly body: OutgoingBody | null) {}
  /** The request goes out when the response is first awaited (its body, if any, written by then). */
  private settle(): void {
    if (this.answer) return;
    if (this.body?.tooLarge) {
      this.answer = { tag: 'err', val: code('HTTP-request-body-size', undefined) };
      return;
    }
    const body = this.body ? this.body.bytes() : null;
    const a = this.send({ ...this.request, body });
    this.answer = a.ok ? { tag: 'ok', val: new IncomingResponse(a.status, Fields.frozen(a.headers), a.body) } : { tag: 'err', val: a.error };
  }
  subscribe(): Pollable {
    this.settle();
    return new Pollable(null, null);
  }
  get(): { tag: string; val?: unknown } {
    if (this.taken) return { tag: 'err' };
    this.settle();
    this.taken = true;
    return { tag: 'ok', val: this.answer };
  }
}

/** Server-side resources of wasi:http/types: a command component is never handed one. */
class IncomingRequest {}
class OutgoingResponse {}
class ResponseOutparam {
  static set(): void {
    throw new TypeError('this component is not serving a request');
  }
}

/** The two interfaces, keyed as jco's glue asks for them. */
export function httpP2(send: HttpSend): Record<string, Record<string, unknown>> {
  return {
    'wasi:http/types': {
      Fields, OutgoingRequest, RequestOptions, OutgoingBody, FutureIncomingResponse, IncomingResponse, IncomingBody, FutureTrailers,
      IncomingRequest, OutgoingResponse, ResponseOutparam,
      httpErrorCode: (): undefined => undefined,
    },
    'wasi:http/outgoing-handler': {
      handle: (request: OutgoingRequest, _options: RequestOptions | undefined): FutureIncomingResponse => {
        if (!(request instanceof OutgoingRequest)) throw code('internal-error', 'not an outgoing-request');
        const out = request.toSend();
        if (!('request' in out)) throw out;
        return new FutureIncomingResponse(send, out.request, out.body);
      },
    },
  };
}
