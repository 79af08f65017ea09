/**
 * MCP over streamable HTTP, stateless: `membrane serve` routes `POST /mcp` here after bearer
 * authentication, with the token's tenant and profile as the grant.
 *
 * Owns: one fresh `McpServer` + `StreamableHTTPServerTransport` (`sessionIdGenerator: undefined`,
 * JSON responses — an event stream only for a call that carries a `progressToken`, so its
 * progress notifications can precede its result) per request, both closed when the response
 * ends (closing aborts a tool call still running: the client went away, the guest is cancelled);
 * a `notifications/cancelled` for a call in flight (sent in a POST of its own) closes that call's
 * server the same way and answers the call with a CANCELLED JSON-RPC error; `GET` and `DELETE` (a
 * standalone event stream, session teardown) are 405 — a stateless server has no session to
 * stream on or end.
 * Invariant: nothing survives a request — no session id, no server, no transport — so one
 * tenant's request can never be answered on another's connection, and the grant is exactly the
 * one the caller authenticated with. The handler returns when the response ends, whatever the
 * SDK still awaits, so a cancelled or abandoned call never holds an in-flight slot.
 *
 * Does not protect against: body size, rates and authentication — the HTTP layer enforces them
 * before calling here (MAX_MCP_BODY_BYTES is the body a maximal run_wasm upload needs).
 *
 * The SDK's transport is loaded by a top-level `await import()` (a static import would be hoisted
 * to the top of the CLI bundle), so only a command that reaches this module pays for it.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { ERROR_TABLE } from '../../errors.ts';
import type { McpContext } from './context.ts';
import { MAX_MODULE_BYTES } from './schemas.ts';
import { createMcpServer } from './server.ts';

const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');

/** A JSON-RPC envelope around a base64 module of MAX_MODULE_BYTES, plus 1 MiB for the rest. */
export const MAX_MCP_BODY_BYTES = Math.ceil(MAX_MODULE_BYTES / 3) * 4 + 1024 * 1024;

function jsonRpcError(res: ServerResponse, status: number, code: number, message: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/** Whether a JSON-RPC message (or a batch) carries a `_meta.progressToken`. */
function asksForProgress(body: unknown): boolean {
  const messages = Array.isArray(body) ? body : [body];
  return messages.some((m) => {
    if (typeof m !== 'object' || m === null) return false;
    const params = (m as { params?: unknown }).params;
    if (typeof params !== 'object' || params === null) return false;
    const meta = (params as { _meta?: unknown })._meta;
    return typeof meta === 'object' && meta !== null && (meta as { progressToken?: unknown }).progressToken !== undefined;
  });
}

/**
 * Requests in flight, by engine, tenant and JSON-RPC id. A stateless server sees a client's
 * `notifications/cancelled` in a POST of its own, on a fresh server that never saw the call: this
 * is how it reaches the request it names. A tenant can only reach its own requests (the key holds
 * the tenant its token authenticated as); entries leave when their response closes.
 */
const inFlight = new WeakMap<object, Map<string, () => void>>();

function callsOf(ctx: McpContext): Map<string, () => void> {
  let m = inFlight.get(ctx.engine);
  if (!m) inFlight.set(ctx.engine, (m = new Map()));
  return m;
}

const keyOf = (tenant: string, id: string | number): string => `${tenant}\u0000${typeof id}:${String(id)}`;

/** The ids of the JSON-RPC requests (not notifications) in a message or a batch. */
function requestIds(body: unknown): (string | number)[] {
  const messages = Array.isArray(body) ? body : [body];
  const ids: (string | number)[] = [];
  for (const m of messages) {
    if (typeof m !== 'object' || m === null) continue;
    const { id, method } = m as { id?: unknown; method?: unknown };
    if (typeof method === 'string' && (typeof id === 'string' || typeof id === 'number')) ids.push(id);
  }
  return ids;
}

/** Cancel the caller's in-flight requests that `notifications/cancelled` messages in `body` name. */
function cancelNamed(ctx: McpContext, body: unknown): void {
  const messages = Array.isArray(body) ? body : [body];
  for (const m of messages) {
    if (typeof m !== 'object' || m === null || (m as { method?: unknown }).method !== 'notifications/cancelled') continue;
    const params = (m as { params?: unknown }).params;
    const id = typeof params === 'object' && params !== null ? (params as { requestId?: unknown }).requestId : undefined;
    if (typeof id !== 'string' && typeof id !== 'number') continue;
    callsOf(ctx).get(keyOf(ctx.tenant, id))?.();
  }
}

/**
 * Serve one MCP request. `body` is the already-parsed JSON body (POST); `ctx` is the grant of the
 * authenticated caller (plus, optionally, the command registry and a logger).
 */
export async function handleMcpRequest(req: IncomingMessage, res: ServerResponse, body: unknown, ctx: McpContext): Promise<void> {
  if (req.method !== 'POST') {
    jsonRpcError(res, 405, ERROR_TABLE.METHOD_NOT_ALLOWED.mcpCode, 'this MCP endpoint is stateless: use POST', { allow: 'POST' });
    return;
  }
  const server = createMcpServer(ctx);
  // A call that asked for progress, from a client that reads event streams, is answered as one
  // (its notifications, then its result); every other answer is plain JSON.
  const events = asksForProgress(body) && /\btext\/event-stream\b/i.test(req.headers['accept'] ?? '');
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !events });
  let closed = false;
  const close = (): void => {
    if (closed) return;
    closed = true;
    void transport.close().catch(() => undefined);
    void server.close().catch(() => undefined);
  };
  res.on('close', close);
  cancelNamed(ctx, body);
  const ids = requestIds(body);
  const calls = callsOf(ctx);
  const cancel = (): void => {
    // Closing this request's own server aborts its handler: the guest ends CANCELLED at once.
    close();
    if (!res.headersSent) {
      const id = ids.length === 1 ? ids[0]! : null;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id, error: { code: ERROR_TABLE.CANCELLED.mcpCode, message: `CANCELLED: ${ERROR_TABLE.CANCELLED.message}`, data: { code: 'CANCELLED' } } }));
    } else if (!res.writableEnded) res.end();
  };
  const keys = ids.map((id) => keyOf(ctx.tenant, id));
  for (const k of keys) calls.set(k, cancel);
  res.once('close', () => {
    for (const k of keys) if (calls.get(k) === cancel) calls.delete(k);
  });
  // The response's end is this request's end: a cancelled or abandoned call is answered (or gone)
  // while the SDK's handleRequest may still wait for a result its closed server never sends.
  const ended = new Promise<void>((resolve) => {
    res.once('close', resolve);
    res.once('finish', resolve);
  });
  try {
    await server.connect(transport);
    const handled = transport.handleRequest(req, res, body);
    handled.catch(() => undefined);
    await Promise.race([handled, ended]);
  } catch {
    ctx.log?.warn({ tenant: ctx.tenant }, 'mcp request failed');
    jsonRpcError(res, 500, ERROR_TABLE.INTERNAL.mcpCode, ERROR_TABLE.INTERNAL.message);
    close();
  }
}
