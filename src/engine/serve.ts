/**
 * Serving inbound HTTP with a guest: the host listens (127.0.0.1 by default) and hands each
 * request to a persistent instance's exported `serve_handle(request_len)`, which reads the
 * request with `membrane.serve_request` and answers with `membrane.serve_respond` (docs/abi.md).
 *
 * Owns: the listener, the per-serve queue (one request in the instance at a time: the request
 * slot is the instance's), the cadence for every request — revoked? (403) → per-client rate
 * (429) → size (413) → do it — with denials audited, the request/response JSON, the response
 * cap (502 when over), and revocation mid-flight: a request in the guest when its principal is
 * revoked is answered 403 at once and the next one never reaches the guest.
 * Invariant: the guest never sees the socket — only the request JSON; the host writes only what
 * the guest's answer JSON says, status and headers validated, hop-by-hop headers dropped.
 *
 * Does not protect against: clients the operator exposes the listener to — bind to loopback
 * unless a proxy in front authenticates them.
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SandboxError } from '../errors.ts';
import type { Cadence, RateLimit } from '../brokers/index.ts';
import type { ServeSlot } from './bridge/host-services.ts';
import type { Instance } from './instance.ts';

export interface ServeOptions {
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** Default 0 (any free port). */
  readonly port?: number;
  /** The guest's handler export. Default `serve_handle`. */
  readonly export?: string;
  /** Request body cap. Default 1 MiB. */
  readonly maxBodyBytes?: number;
  /** Per-request time budget (lowers the instance's). */
  readonly timeoutMs?: number;
  /** Per client address. Default 600 requests per 60 s. */
  readonly perClientRate?: RateLimit;
}

export interface ServeHandle {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

export interface ServeDeps {
  readonly instance: Instance;
  readonly tenant: string;
  readonly id: string;
  readonly slot: ServeSlot;
  readonly cadence: Cadence;
  readonly record: (kind: string, detail: Record<string, unknown>) => void;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authenticate', 'proxy-authorization', 'content-length']);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;

/** `serveInstance`, its handle kept in `open` until closed (the engine closes what is left). */
export async function serveTracked(open: Set<ServeHandle>, deps: ServeDeps, options: ServeOptions = {}): Promise<ServeHandle> {
  const handle = await serveInstance(deps, options);
  open.add(handle);
  return {
    url: handle.url,
    port: handle.port,
    close: async () => {
      open.delete(handle);
      await handle.close();
    },
  };
}

export async function serveInstance(deps: ServeDeps, options: ServeOptions = {}): Promise<ServeHandle> {
  const handler = options.export ?? 'serve_handle';
  const maxBody = options.maxBodyBytes ?? 1024 * 1024;
  const rate = options.perClientRate ?? { limit: 600, windowMs: 60_000 };
  const buckets = new Map<string, { bucket: number; count: number; recorded: boolean }>();
  let queue: Promise<unknown> = Promise.resolve();
  const who = { tenant: deps.tenant, instance: deps.id, caps: ['net' as const] };

  const deny = (res: ServerResponse, status: number, code: string, client: string): void => {
    deps.record('denied', { broker: 'serve', op: 'request', code, client });
    send(res, status, { 'content-type': 'text/plain' }, Buffer.from(`${code}\n`));
  };

  const server: Server = createServer((req, res) => {
    void (async () => {
      const client = req.socket.remoteAddress ?? '';
      if (deps.cadence.isRevoked(deps.tenant, deps.id)) return deny(res, 403, 'REVOKED', client);
      const bucket = Math.floor(Date.now() / rate.windowMs);
      const b = buckets.get(client);
      const current = b && b.bucket === bucket ? b : { bucket, count: 0, recorded: false };
      buckets.set(client, current);
      if (current.count >= rate.limit) {
        if (!current.recorded) deps.record('denied', { broker: 'serve', op: 'request', code: 'RATE_LIMITED', client });
        current.recorded = true;
        return send(res, 429, { 'content-type': 'text/plain', 'retry-after': String(Math.ceil(rate.windowMs / 1000)) }, Buffer.from('RATE_LIMITED\n'));
      }
      current.count++;
      const body = await readBody(req, maxBody);
      if (body === null) return deny(res, 413, 'TOO_LARGE', client);
      const request = Buffer.from(JSON.stringify(requestJson(req, body, client)));
      // One request in the guest at a time: the request slot belongs to the instance.
      const turn = queue.then(() => handleOne(request, client));
      queue = turn.catch(() => undefined);
      const answer = await turn;
      send(res, answer.status, answer.headers, answer.body);
    })().catch(() => {
      if (!res.headersSent) send(res, 500, { 'content-type': 'text/plain' }, Buffer.from('INTERNAL\n'));
    });
  });

  const handleOne = async (request: Buffer, client: string): Promise<Answer> => {
    if (deps.cadence.isRevoked(deps.tenant, deps.id)) {
      deps.record('denied', { broker: 'serve', op: 'request', code: 'REVOKED', client });
      return text(403, 'REVOKED');
    }
    let unwatch = (): void => {};
    const revoked = new Promise<Answer>((resolve) => {
      unwatch = deps.cadence.watch(who, () => {
        deps.record('denied', { broker: 'serve', op: 'request', code: 'REVOKED', client, inFlight: true });
        resolve(text(403, 'REVOKED'));
      });
    });
    deps.slot.request = request;
    deps.slot.response = null;
    try {
      const call = deps.instance.call(handler, [request.length], options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}).then((r): Answer => {
        if (!r.ok) return text(r.error?.code === 'TIMEOUT' ? 504 : 502, r.error?.code ?? 'GUEST_TRAP');
        const out = deps.slot.response;
        return out ? parseAnswer(out) : text(502, 'NO_RESPONSE');
      });
      return await Promise.race([call, revoked]);
    } finally {
      unwatch();
      deps.slot.request = null;
      deps.slot.response = null;
    }
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', (e) => reject(new SandboxError('POLICY_INVALID', 'could not listen for serve', {}, e)));
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}`,
    port: addr.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

function text(status: number, code: string): Answer {
  return { status, headers: { 'content-type': 'text/plain' }, body: Buffer.from(`${code}\n`) };
}

function requestJson(req: IncomingMessage, body: Buffer, client: string): Record<string, unknown> {
  const url = new URL(req.url ?? '/', 'http://serve.invalid');
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  let bodyField: Record<string, string>;
  try {
    bodyField = { body: utf8.decode(body) };
  } catch {
    bodyField = { bodyBase64: body.toString('base64') };
  }
  return { method: req.method ?? 'GET', path: url.pathname, query: url.search.slice(1), headers, ...bodyField, client };
}

/** The guest's answer JSON → status, safe headers, body. Anything malformed is a 502. */
function parseAnswer(bytes: Uint8Array): Answer {
  let x: unknown;
  try {
    x = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    return text(502, 'BAD_RESPONSE');
  }
  if (typeof x !== 'object' || x === null) return text(502, 'BAD_RESPONSE');
  const o = x as Record<string, unknown>;
  const status = typeof o['status'] === 'number' && Number.isInteger(o['status']) && o['status'] >= 200 && o['status'] <= 599 ? o['status'] : 502;
  const headers: Record<string, string> = {};
  if (typeof o['headers'] === 'object' && o['headers'] !== null) {
    for (const [k, v] of Object.entries(o['headers'] as Record<string, unknown>)) {
      if (typeof v === 'string' && HEADER_NAME.test(k) && !HOP_BY_HOP.has(k.toLowerCase()) && !/[\r\n\0]/.test(v)) headers[k.toLowerCase()] = v;
    }
  }
  const body = typeof o['bodyBase64'] === 'string' ? Buffer.from(o['bodyBase64'], 'base64') : Buffer.from(typeof o['body'] === 'string' ? o['body'] : '');
  return { status, headers, body };
}

async function readBody(req: IncomingMessage, max: number): Promise<Buffer | null> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > max) {
    req.resume();
    return null;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) {
      req.resume();
      return null;
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function send(res: ServerResponse, status: number, headers: Record<string, string>, body: Buffer): void {
  if (res.headersSent) return;
  res.writeHead(status, { ...headers, 'content-length': String(body.length) });
  res.end(body);
}
