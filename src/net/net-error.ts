/**
 * `NetError`, the one error the network guard raises, and the deadline every guarded operation
 * runs under.
 *
 * Owns: the five outcomes a network broker reports (`DENIED`, `TOO_LARGE`, `TIMEOUT`,
 * `UNAVAILABLE`, `INVALID`) and their guest error codes (DESIGN §4: -1, -4, -7, -8, -6); the
 * mapping of socket, TLS and undici failures onto them (`toNetError`); and `startDeadline`, one
 * abort signal that fires at the deadline or when the caller's own signal aborts.
 *
 * Invariant: a `NetError`'s message is written here or by the guard, never copied from the OS
 * or undici, so it carries no resolved address, host path or stack; the original failure is kept
 * as `cause`, host-side only.
 *
 * Does not protect against: a caller who shows `cause` to a guest.
 */

export const NET_ERROR_CODES = ['DENIED', 'TOO_LARGE', 'TIMEOUT', 'UNAVAILABLE', 'INVALID'] as const;
export type NetErrorCode = (typeof NET_ERROR_CODES)[number];

/** The negative return value a guest sees for each code (DESIGN §4). */
export const GUEST_ERROR_CODES: Readonly<Record<NetErrorCode, number>> = Object.freeze({
  DENIED: -1,
  TOO_LARGE: -4,
  INVALID: -6,
  TIMEOUT: -7,
  UNAVAILABLE: -8,
});

export class NetError extends Error {
  override readonly name = 'NetError';
  readonly code: NetErrorCode;

  constructor(code: NetErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }

  /** The guest-visible error number for this code. */
  get guestCode(): number {
    return GUEST_ERROR_CODES[this.code];
  }

  /** The only shape shown outside the host: no stack, no cause. */
  toJSON(): { code: NetErrorCode; message: string } {
    return { code: this.code, message: this.message };
  }
}

/** TLS verification failures: the peer could not prove it is the host that was asked for. */
const CERT_ERRORS = new Set([
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'INVALID_CA',
  'HOSTNAME_MISMATCH',
]);

const TIMEOUT_ERRORS = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
]);

function errorCode(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string') return err.code;
  return undefined;
}

/**
 * Any failure → a `NetError`. An abort of `signal` wins (its reason is the deadline's or the
 * caller's `NetError`), then a `NetError` passes through, then known codes are mapped; the rest
 * is `UNAVAILABLE` naming only the system error code.
 */
export function toNetError(err: unknown, signal?: AbortSignal): NetError {
  if (signal?.aborted && signal.reason instanceof NetError) return signal.reason;
  if (err instanceof NetError) return err;
  const code = errorCode(err);
  if (code !== undefined && CERT_ERRORS.has(code)) {
    return new NetError('UNAVAILABLE', `the peer's certificate did not verify (${code})`, { cause: err });
  }
  if (code !== undefined && TIMEOUT_ERRORS.has(code)) return new NetError('TIMEOUT', 'the peer did not answer in time', { cause: err });
  if (code === 'ECONNREFUSED') return new NetError('UNAVAILABLE', 'the connection was refused', { cause: err });
  const tag = code !== undefined && /^[A-Z0-9_]{1,40}$/.test(code) ? ` (${code})` : '';
  return new NetError('UNAVAILABLE', `the upstream failed${tag}`, { cause: err });
}

export interface Deadline {
  /** Aborts with a `NetError` reason: `TIMEOUT` at the deadline, `UNAVAILABLE` on cancel. */
  readonly signal: AbortSignal;
  dispose(): void;
}

/** One signal for a whole operation: fires after `timeoutMs` or when `outer` aborts. */
export function startDeadline(timeoutMs: number, outer?: AbortSignal): Deadline {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new NetError('TIMEOUT', `no complete answer within ${timeoutMs} ms`)), timeoutMs);
  const onAbort = (): void => controller.abort(new NetError('UNAVAILABLE', 'the request was cancelled'));
  if (outer?.aborted) onAbort();
  else outer?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    dispose() {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
    },
  };
}

/** `promise`, or the signal's reason as soon as it aborts (the promise itself is not cancelled). */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return raceSignal(promise, signal, () => toNetError(signal.reason, signal));
}

/**
 * `promise`, unless `signal` aborts first: then a rejection with `error()` at once (the work
 * behind `promise` goes on; its outcome is dropped, a rejection included).
 */
export function raceSignal<T>(promise: Promise<T>, signal: AbortSignal, error: () => unknown): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.reject(error());
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      promise.catch(() => undefined);
      reject(error());
    };
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/** A positive finite number option, or `INVALID`. */
export function positive(value: number | undefined, fallback: number, name: string): number {
  const v = value ?? fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new NetError('INVALID', `${name} must be a positive number`);
  return v;
}
