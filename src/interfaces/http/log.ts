/**
 * Structured logs: pino JSON lines on stderr (stdout belongs to the URL line and JSON output).
 *
 * Owns: the logger's configuration — one line per request (`method`, `route` template, `status`,
 * `ms`, `tenant`), server lifecycle lines, and redaction of every field that could hold a
 * credential (authorization headers, tokens, secrets, keys). Errors are logged by type and
 * message only, with anything shaped like a bearer token masked.
 * Invariant: no log line carries a bearer token: the server never logs headers or bodies, the
 * redact paths blank the usual places anyway, and `scrub` masks `mbt_…` strings in error text.
 *
 * Does not protect against: a guest writing a secret into its own stdout (that is the guest's
 * answer, never logged here) or an operator raising the level and logging bodies elsewhere.
 */

import { pino, type Logger } from 'pino';

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

export interface LogOptions {
  /** Where lines go: a writable with `write(string)`; default stderr (fd 2, synchronous). */
  readonly destination?: { write(line: string): unknown };
  readonly level?: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';
}

export function createLogger(options: LogOptions = {}): Logger {
  const destination = options.destination ?? pino.destination({ fd: 2, sync: true });
  return pino(
    {
      level: options.level ?? 'info',
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
