/**
 * The error-code table and `SandboxError`, the one error class Membrane raises.
 *
 * Owns: the append-only list of stable codes (DESIGN §10) and, per code, its default message,
 * CLI exit code, HTTP status and MCP error number; serialization across the worker boundary
 * (structured clone drops custom fields, so errors travel as plain `SerializedError` records).
 *
 * Invariant: every error that reaches a caller, a guest-facing surface or the CLI is a
 * `SandboxError` with one of these codes. `toPublic()` is the only shape shown outside the
 * engine: it never carries a stack trace, a `cause`, or a host path.
 *
 * Does not protect against: a caller who logs `cause` themselves; `cause` stays host-side for
 * operators and may hold anything.
 *
 * This module imports nothing.
 */

export const ERROR_CODES = [
  'POLICY_INVALID',
  'LINK_UNSATISFIED',
  'INVALID_MODULE',
  'NOT_CAPABLE',
  'TIMEOUT',
  'FUEL_EXHAUSTED',
  'MEMORY_LIMIT',
  'STACK_OVERFLOW',
  'GUEST_TRAP',
  'GUEST_EXIT',
  'OUTPUT_LIMIT',
  'RATE_LIMITED',
  'REVOKED',
  'INSTANCE_DEAD',
  'TIER_UNAVAILABLE',
  'INTERNAL',
  // HTTP-surface codes (issue #7): a request that never reached the engine.
  'UNAUTHENTICATED',
  'NOT_FOUND',
  'BAD_REQUEST',
  'TOO_LARGE',
  'OVERLOADED',
  'METHOD_NOT_ALLOWED',
  'UNSUPPORTED_MEDIA_TYPE',
  // Issue #15: the caller aborted; an uncaught language-level exception in a source lane.
  'CANCELLED',
  'GUEST_EXCEPTION',
  // Issue #16: the build lane's sources did not compile or link (diagnostics in details).
  'BUILD_FAILED',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface ErrorCodeInfo {
  /** Default message when none is given. */
  readonly message: string;
  /** Process exit code used by the CLI (a WASI guest's own exit code wins for GUEST_EXIT). */
  readonly exitCode: number;
  /** HTTP status for the JSON API. */
  readonly httpStatus: number;
  /** JSON-RPC error number used by the MCP server (-32000..-32099 is the server range). */
  readonly mcpCode: number;
}

/**
 * One row per code. Exit codes live in 64..79 (sysexits' range, above any shell meaning) so they
 * never collide with 0 (success), 1/2 (usage) or the 126+ range shells reserve.
 */
export const ERROR_TABLE: Readonly<Record<ErrorCode, ErrorCodeInfo>> = Object.freeze({
  POLICY_INVALID: { message: 'the policy or options are invalid', exitCode: 64, httpStatus: 400, mcpCode: -32602 },
  LINK_UNSATISFIED: { message: 'the module imports something this instance was not granted', exitCode: 65, httpStatus: 403, mcpCode: -32001 },
  INVALID_MODULE: { message: 'the bytes are not a valid WebAssembly module', exitCode: 66, httpStatus: 422, mcpCode: -32002 },
  NOT_CAPABLE: { message: 'the capability is not granted', exitCode: 67, httpStatus: 403, mcpCode: -32003 },
  TIMEOUT: { message: 'the call ran past its wall-clock budget', exitCode: 68, httpStatus: 408, mcpCode: -32004 },
  FUEL_EXHAUSTED: { message: 'the call ran out of fuel', exitCode: 69, httpStatus: 429, mcpCode: -32005 },
  MEMORY_LIMIT: { message: 'the guest reached its memory limit', exitCode: 70, httpStatus: 413, mcpCode: -32006 },
  STACK_OVERFLOW: { message: 'the guest overflowed its stack', exitCode: 71, httpStatus: 422, mcpCode: -32007 },
  GUEST_TRAP: { message: 'the guest trapped', exitCode: 72, httpStatus: 422, mcpCode: -32008 },
  GUEST_EXIT: { message: 'the guest exited with a non-zero status', exitCode: 73, httpStatus: 422, mcpCode: -32009 },
  OUTPUT_LIMIT: { message: 'the guest wrote more output than allowed', exitCode: 74, httpStatus: 413, mcpCode: -32010 },
  RATE_LIMITED: { message: 'the rate limit was reached', exitCode: 75, httpStatus: 429, mcpCode: -32011 },
  REVOKED: { message: 'the principal was revoked', exitCode: 76, httpStatus: 403, mcpCode: -32012 },
  INSTANCE_DEAD: { message: 'the instance is no longer running', exitCode: 77, httpStatus: 410, mcpCode: -32013 },
  TIER_UNAVAILABLE: { message: 'the requested isolation tier is not available', exitCode: 78, httpStatus: 503, mcpCode: -32014 },
  INTERNAL: { message: 'internal error', exitCode: 79, httpStatus: 500, mcpCode: -32603 },
  UNAUTHENTICATED: { message: 'a valid bearer token is required', exitCode: 80, httpStatus: 401, mcpCode: -32015 },
  NOT_FOUND: { message: 'not found', exitCode: 81, httpStatus: 404, mcpCode: -32016 },
  BAD_REQUEST: { message: 'the request is malformed', exitCode: 82, httpStatus: 400, mcpCode: -32600 },
  TOO_LARGE: { message: 'the request body is too large', exitCode: 83, httpStatus: 413, mcpCode: -32017 },
  OVERLOADED: { message: 'the server is overloaded; retry later', exitCode: 84, httpStatus: 503, mcpCode: -32018 },
  METHOD_NOT_ALLOWED: { message: 'the method is not allowed on this route', exitCode: 85, httpStatus: 405, mcpCode: -32019 },
  UNSUPPORTED_MEDIA_TYPE: { message: 'the request body must be application/json', exitCode: 86, httpStatus: 415, mcpCode: -32020 },
  // 499 is nginx's "client closed request": an HTTP client that went away never reads it, but a
  // call cancelled another way (an MCP cancellation, an embedder's signal) reports it over HTTP.
  CANCELLED: { message: 'the call was cancelled by its caller', exitCode: 87, httpStatus: 499, mcpCode: -32021 },
  GUEST_EXCEPTION: { message: 'the guest raised an uncaught exception', exitCode: 88, httpStatus: 422, mcpCode: -32022 },
  BUILD_FAILED: { message: 'the sources did not compile or link', exitCode: 89, httpStatus: 422, mcpCode: -32023 },
});

/** JSON-safe detail values: what may travel in `details`. */
export type DetailValue =
  | string
  | number
  | boolean
  | null
  | readonly DetailValue[]
  | { readonly [key: string]: DetailValue };

export type ErrorDetails = { readonly [key: string]: DetailValue };

/** The wire and public form of an error. */
export interface SerializedError {
  readonly code: ErrorCode;
  readonly message: string;
  readonly details: ErrorDetails;
}

export class SandboxError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetails;

  constructor(code: ErrorCode, message?: string, details: ErrorDetails = {}, cause?: unknown) {
    super(message ?? ERROR_TABLE[code].message, cause === undefined ? undefined : { cause });
    this.name = 'SandboxError';
    this.code = code;
    this.details = details;
  }

  /** The shape shown to API clients, guests and CLI users: no stack, no cause. */
  toPublic(): SerializedError {
    return { code: this.code, message: this.message, details: this.details };
  }

  toJSON(): SerializedError {
    return this.toPublic();
  }

  static fromSerialized(s: SerializedError): SandboxError {
    return new SandboxError(s.code, s.message, s.details);
  }
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && (ERROR_CODES as readonly string[]).includes(value);
}

/**
 * Any thrown value → a SandboxError. Unknown errors become `INTERNAL` with a bare message, so a
 * host exception's text (which may hold paths) never reaches a client; the original is kept as
 * `cause` for operators.
 */
export function toSandboxError(err: unknown): SandboxError {
  if (err instanceof SandboxError) return err;
  return new SandboxError('INTERNAL', ERROR_TABLE.INTERNAL.message, {}, err);
}

export function exitCodeFor(code: ErrorCode): number {
  return ERROR_TABLE[code].exitCode;
}
