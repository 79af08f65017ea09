/**
 * Structured logs: pino JSON lines on stderr (stdout belongs to the URL line and JSON output).
 *
 * Owns: the logger's configuration — the level, one line per request (`method`, `route` template,
 * `status`, `ms`, `tenant`, `requestId`), server lifecycle lines, and redaction of every field
 * that could hold a credential (authorization headers, tokens, secrets, keys). Errors are logged
 * by type and message only, with anything shaped like a bearer token masked. Also the request id:
 * a client's `X-Request-Id` when it matches REQUEST_ID_PATTERN, else a fresh UUID.
 * Invariant: no log line carries a bearer token: the server never logs headers or bodies, the
 * redact paths blank the usual places anyway, and `scrub` masks `mbt_…` strings in error text. A
 * request id that reaches a log line or a header is at most 128 characters of a plain alphabet
 * (no spaces, quotes, control characters or newlines), so a client cannot forge lines with it.
 *
 * Does not protect against: a guest writing a secret into its own stdout (that is the guest's
 * answer, never logged here) or an operator raising the level and logging bodies elsewhere.
 *
 * pino is loaded by a top-level `await import()` (a static import would be hoisted to the top of
 * the CLI bundle), so only a command that reaches this module (`serve`, `mcp`) pays for it.
 */

import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';

const { pino } = await import('pino');

/** Paths pino blanks in every line; censored with "[redacted]". */
export const REDACT_PATHS = [
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  'req.headers.cookie',
  'token',
  '*.token',
  'secret',
  '*.secret',
  'secrets',
  'key',
  '*.key',
  'password',
  '*.password',
];

const TOKEN_LIKE = /mbt_[A-Za-z0-9_-]{8,}/g;

/** Mask anything that looks like a bearer token. */
export function scrub(text: string): string {
  return text.replace(TOKEN_LIKE, 'mbt_[redacted]');
}

export type { Logger };

/** The levels `--log-level` and the config's `server.logLevel` accept. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const DEFAULT_LOG_LEVEL: LogLevel = 'info';

export function isLogLevel(v: unknown): v is LogLevel {
  return typeof v === 'string' && (LOG_LEVELS as readonly string[]).includes(v);
}

export interface LogOptions {
  /** Where lines go: a writable with `write(string)`; default stderr (fd 2, synchronous). */
  readonly destination?: { write(line: string): unknown };
  readonly level?: LogLevel | 'fatal';
}

/** A client's request id is kept only if it is this: trace ids, UUIDs, base64 — nothing that can break a line. */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** The request's id: a sane `X-Request-Id` as sent, otherwise a new UUID. */
export function requestIdOf(header: string | string[] | undefined): string {
  return typeof header === 'string' && REQUEST_ID_PATTERN.test(header) ? header : randomUUID();
}

export function createLogger(options: LogOptions = {}): Logger {
  const destination = options.destination ?? pino.destination({ fd: 2, sync: true });
  return pino(
    {
      level: options.level ?? DEFAULT_LOG_LEVEL,
      base: { service: 'membrane' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

/**
 * An error as a log field: its type and scrubbed message; the stack (host paths are fine in the
 * operator's log, tokens are not) only for unexpected errors, scrubbed too.
 */
export function errorField(err: unknown, withStack = false): { type: string; message: string; stack?: string } {
  if (err instanceof Error) {
    return { type: err.name, message: scrub(err.message).slice(0, 500), ...(withStack && err.stack ? { stack: scrub(err.stack).slice(0, 4000) } : {}) };
  }
  return { type: typeof err, message: scrub(String(err)).slice(0, 500) };
}
