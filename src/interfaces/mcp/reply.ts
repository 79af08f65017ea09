/**
 * How a tool answers: structured content plus a text rendering of the same facts, and the one
 * shape of an error shown to an MCP client.
 *
 * Owns: the split between a *refusal* (the request was not run: outside the grant, too large,
 * malformed — `isError: true`, so a model sees it as a failed tool call and can correct itself)
 * and a *result* (the guest ran and failed: TIMEOUT, FUEL_EXHAUSTED, an exception — `isError:
 * false`, `ok: false`, `error: { code, message }`). Refusals are tool results rather than
 * JSON-RPC errors because the SDK's McpServer turns every handler error into a tool result anyway,
 * and clients pass tool results to the model while they tend to show JSON-RPC errors only to the
 * user; the error still carries the table's `mcpCode` for programs that map codes.
 * Invariant: an error reaching a client is `toSandboxError(e).toPublic()` — a stable code, a
 * message, JSON details; never a stack trace or a host path (unknown errors become INTERNAL).
 *
 * Does not protect against: a guest printing whatever it likes on its own stdout/stderr — that is
 * its answer, passed through as text.
 */

import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ERROR_TABLE, isErrorCode, toSandboxError } from '../../errors.ts';
import type { ErrorResult } from './schemas.ts';
import { exceptionWhere } from '../exception-text.ts';

/** A public error: code, message, the code's MCP number and JSON details. */
export function publicError(e: unknown): ErrorResult {
  const p = toSandboxError(e).toPublic();
  return { code: p.code, message: p.message, mcpCode: ERROR_TABLE[p.code].mcpCode, ...(Object.keys(p.details).length ? { details: { ...p.details } } : {}) };
}

/** A guest-side error (`{ code, message, details? }` from a run or exec) with its MCP number. */
export function resultError(e: { readonly code: string; readonly message: string; readonly details?: object }): ErrorResult {
  return {
    code: e.code,
    message: e.message,
    ...(isErrorCode(e.code) ? { mcpCode: ERROR_TABLE[e.code].mcpCode } : {}),
    ...(e.details && Object.keys(e.details).length ? { details: { ...e.details } } : {}),
  };
}

export function reply(structured: { [key: string]: unknown }, text: string, isError = false): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: structured, ...(isError ? { isError: true } : {}) };
}

/** The text a refusal shows: "NOT_CAPABLE: capability "net" is not granted (…)". */
export function refusalText(error: ErrorResult): string {
  return `${error.code}: ${error.message}`;
}

/** A run or exec outcome as text: error line, stdout, stderr, result, clamps, warnings. */
export function renderOutcome(o: {
  readonly ok: boolean;
  readonly stdout: string;
  readonly stderr: string;
  readonly error?: ErrorResult | undefined;
  readonly result?: unknown;
  readonly exitCode?: number | undefined;
  readonly clamped: readonly string[];
  readonly warnings: readonly string[];
}): string {
  const parts: string[] = [];
  if (!o.ok && o.error) parts.push(`error: ${o.error.code}: ${o.error.message}${exceptionWhere(o.error.details)}`);
  if (o.stdout) parts.push(`stdout:\n${o.stdout}`);
  if (o.stderr) parts.push(`stderr:\n${o.stderr}`);
  if (o.exitCode !== undefined) parts.push(`exit code: ${o.exitCode}`);
  if (o.result !== undefined && o.result !== null) parts.push(`result: ${JSON.stringify(o.result)}`);
  for (const c of o.clamped) parts.push(`clamped: ${c}`);
  for (const w of o.warnings) parts.push(`warning: ${w}`);
  if (parts.length === 0) parts.push(o.ok ? '(no output)' : 'failed');
  return parts.join('\n');
}
