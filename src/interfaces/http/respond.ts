/**
 * Writing HTTP answers: JSON bodies and the one error shape `{ error: { code, message } }` (a
 * JSON-RPC error object on /mcp).
 *
 * Owns: the mapping of a thrown value to a status (the error table's `httpStatus`), and the rule
 * that an unexpected exception becomes a bare 500 INTERNAL whose text the client never sees.
 * Invariant: an error body carries only a code and a message — no stack, no `details` (they may
 * name host-side facts), no `cause`; SandboxError messages are written for clients already.
 *
 * Does not protect against: a handler that writes its own body with host details in it.
 */

import type { ServerResponse } from 'node:http';
import { ERROR_TABLE, SandboxError, type ErrorCode } from '../../errors.ts';

/** Headers every answer carries: no sniffing, no caching of tenant data, no framing. */
const COMMON_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
};

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { ...COMMON_HEADERS, 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}

export function sendText(res: ServerResponse, status: number, type: string, body: string | Buffer): void {
  res.writeHead(status, { ...COMMON_HEADERS, 'content-type': type, 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

export interface PublicError {
  readonly status: number;
  readonly code: ErrorCode;
  readonly message: string;
  /** True when the thrown value was not a SandboxError: log it, show nothing. */
  readonly unexpected: boolean;
}

/** What the client may learn of a thrown value. */
export function publicError(err: unknown): PublicError {
  if (err instanceof SandboxError && err.code !== 'INTERNAL') {
    return { status: ERROR_TABLE[err.code].httpStatus, code: err.code, message: err.message, unexpected: false };
  }
  return { status: 500, code: 'INTERNAL', message: ERROR_TABLE.INTERNAL.message, unexpected: true };
}

/** Seconds a client is told to wait before retrying a declared overload (503 OVERLOADED). */
export const OVERLOAD_RETRY_AFTER_S = 1;

export function sendError(res: ServerResponse, err: unknown, headers: Record<string, string> = {}): PublicError {
  const e = publicError(err);
  const retry: Record<string, string> = e.code === 'OVERLOADED' ? { 'retry-after': String(OVERLOAD_RETRY_AFTER_S) } : {};
  sendJson(res, e.status, { error: { code: e.code, message: e.message } }, { ...retry, ...headers });
  return e;
}

/**
 * The same refusal for an MCP client: a JSON-RPC error object (`id: null`, the request was never
 * read as JSON-RPC) whose message is `CODE: message` and whose `data.code` is the table's code —
 * MCP clients show a JSON-RPC error's message, and ignore `{ error: { code, message } }`.
 */
export function sendJsonRpcError(res: ServerResponse, err: unknown, headers: Record<string, string> = {}): PublicError {
  const e = publicError(err);
  const retry: Record<string, string> = e.code === 'OVERLOADED' ? { 'retry-after': String(OVERLOAD_RETRY_AFTER_S) } : {};
  const body = { jsonrpc: '2.0', error: { code: ERROR_TABLE[e.code].mcpCode, message: `${e.code}: ${e.message}`, data: { code: e.code } }, id: null };
  sendJson(res, e.status, body, { ...retry, ...headers });
  return e;
}

/** Shorthand for the HTTP-only refusals. */
export function httpError(code: ErrorCode, message?: string): SandboxError {
  return new SandboxError(code, message ?? ERROR_TABLE[code].message);
}
