/**
 * Host powers in the source lanes (DESIGN §1, §4, §7, §8 layer 6): the one request/answer shape
 * both lanes speak to the engine's power server, which powers each cap word gives a snippet, and
 * the bridge's bounds.
 *
 * Owns: `PowerRequest` (`{ power: "kv.get", args: [...] }`, plain JSON), `PowerAnswer` (a JSON
 * value, or a guest error code of DESIGN §4's table — never a host message), the table of lane
 * powers per cap (`LANE_POWERS`), the frame cap, and `parsePowerRequest` for requests that come
 * from a guest-controlled side (the JS lane's worker, the Python interpreter's port).
 * Invariant: a power is offered to a snippet only when its cap is granted (absent otherwise, not
 * a stub); the host side never believes that — the server re-checks every call through the broker
 * cadence (granted → revoked → rate → size → do it). Error messages a guest sees come from
 * `POWER_ERROR_MESSAGES` only.
 *
 * Does not protect against: what the brokers themselves allow once admitted (see
 * src/brokers); the bridge only carries requests.
 */

/** A guest error name (DESIGN §4). */
export type PowerCode = 'DENIED' | 'RATE_LIMITED' | 'REVOKED' | 'TOO_LARGE' | 'NOT_FOUND' | 'INVALID' | 'TIMEOUT' | 'UNAVAILABLE' | 'QUOTA';

export const POWER_CODES: readonly PowerCode[] = ['DENIED', 'RATE_LIMITED', 'REVOKED', 'TOO_LARGE', 'NOT_FOUND', 'INVALID', 'TIMEOUT', 'UNAVAILABLE', 'QUOTA'];

/** The only text a guest ever sees about a failed power (no host detail, path or stack). */
export const POWER_ERROR_MESSAGES: Readonly<Record<PowerCode, string>> = Object.freeze({
  DENIED: 'denied by policy',
  RATE_LIMITED: 'rate limit reached',
  REVOKED: 'access revoked',
  TOO_LARGE: 'request or answer too large',
  NOT_FOUND: 'not found',
  INVALID: 'invalid request',
  TIMEOUT: 'timed out',
  UNAVAILABLE: 'unavailable',
  QUOTA: 'quota reached',
});

export interface PowerRequest {
  /** `"<cap>.<op>"`, e.g. `"kv.get"`, `"net.fetch"`. */
  readonly power: string;
  readonly args: readonly unknown[];
  /** Set instead of `args` when the guest side's request passed `MAX_POWER_FRAME_BYTES`. */
  readonly oversized?: number;
  /**
   * The raw wasm fuel the snippet has used so far (its charged commands included), added by the
   * lane's own side — the JS worker's meter, the Python interpreter's — outside the guest's JSON, never
   * parsed from it. The host grants a `commands`/`exec` run at most the budget left after it.
   */
  readonly fuelUsed?: number;
}

/**
 * An answer. `fuel` (raw wasm units, only on a `commands.run`/`exec.run` answer, whatever its
 * outcome) is what the command spent on the snippet's behalf; the lane adds it to the snippet's
 * own meter, so one budget covers the interpreter and its commands.
 */
export type PowerAnswer =
  | { readonly ok: true; readonly value: unknown; readonly fuel?: number }
  | { readonly ok: false; readonly code: PowerCode; readonly fuel?: number };

/**
 * Served by the engine for one exec call (its principal and caps are captured). `deadline`
 * (`Date.now()`-based ms) is the interpreter's own deadline, given by the lane's host side — a
 * remote power is aborted there and answers TIMEOUT.
 */
export type PowerServer = (req: PowerRequest, deadline: number) => Promise<PowerAnswer>;

/**
 * The largest request or answer frame the bridges carry (JSON, UTF-8). Above every broker's own
 * request cap (http_fetch: 2 MiB, kv_put: 1 MiB + key), so the cadence's size step — audited —
 * is what refuses an oversized power call; a frame past this is refused as TOO_LARGE (and
 * audited through the same step, via `oversized`).
 */
export const MAX_POWER_FRAME_BYTES = 8 * 1024 * 1024;

/**
 * The powers a granted cap word gives a snippet (`<cap>.<op>`). The JS lane exposes `net.fetch`
 * as the global `fetch`; every other cap is a global object named after the cap (`vfs`,
 * `commands`, `exec`, `kv`, …). `commands.run` and `exec.run` take the same arguments; `exec.run`
 * goes through the exec cap's accounting. Caps not listed (`posix`, `parallel`) have no lane
 * power yet and are named in the result's warnings.
 */
export const LANE_POWERS: Readonly<Record<string, readonly string[]>> = Object.freeze({
  vfs: ['read', 'write', 'list', 'delete', 'query'],
  commands: ['run'],
  exec: ['run'],
  kv: ['get', 'put', 'delete', 'list'],
  queue: ['push', 'pop', 'len'],
  secrets: ['sign'],
  net: ['fetch'],
  llm: ['complete'],
  browse: ['fetch'],
  tcp: ['request'],
  udp: ['request'],
  tls: ['request'],
});

/**
 * An embedder host cap as a lane shows it (DESIGN §9): the global `global` (`acme_orders` for
 * `acme:orders`) with one function per name in `fns`; each call is the power `<cap>.<fn>` with
 * one JSON argument. Only granted host caps are ever listed.
 */
export interface HostPower {
  readonly cap: string;
  readonly global: string;
  readonly fns: readonly string[];
}

/** The granted caps that become powers, and a warning naming those that do not (or null). */
export function lanePowerCaps(caps: readonly string[], lane: string): { powers: string[]; warning: string | null } {
  const powers = caps.filter((c) => Object.hasOwn(LANE_POWERS, c));
  const rest = caps.filter((c) => !Object.hasOwn(LANE_POWERS, c));
  return { powers, warning: rest.length > 0 ? `${lane}: these granted caps have no power in this lane yet: ${rest.join(', ')}` : null };
}

/** A request from a guest-controlled side, or null when it is not one. */
export function parsePowerRequest(x: unknown): PowerRequest | null {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) return null;
  const r = x as Record<string, unknown>;
  // `<cap>.<op>`; a host power is `vendor:name.fn` (≤ 64 + 1 + 32 characters).
  if (typeof r['power'] !== 'string' || r['power'].length > 100) return null;
  if (typeof r['oversized'] === 'number' && Number.isFinite(r['oversized'])) return { power: r['power'], args: [], oversized: r['oversized'] };
  if (!Array.isArray(r['args'])) return null;
  return { power: r['power'], args: r['args'] as unknown[] };
}

/**
 * Serve one request frame (JSON text) as both bridges do: DENIED when the call has no server,
 * TOO_LARGE past the frame cap, INVALID when it is not a power request, else the server's answer
 * (UNAVAILABLE if it threw). `fuelUsed` is the lane's own count, never read from the frame.
 */
export async function answerPowerFrame(frame: string, server: PowerServer | null, fuelUsed: number, deadline: number): Promise<PowerAnswer> {
  if (server === null) return { ok: false, code: 'DENIED' };
  if (frame.length > MAX_POWER_FRAME_BYTES) return { ok: false, code: 'TOO_LARGE' };
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(frame);
  } catch {
    parsed = null;
  }
  const req = parsePowerRequest(parsed);
  if (req === null) return { ok: false, code: 'INVALID' };
  return server({ ...req, fuelUsed }, deadline).catch((): PowerAnswer => ({ ok: false, code: 'UNAVAILABLE' }));
}

/**
 * An answer as it travels (JSON text); one past the frame cap becomes TOO_LARGE. A charge (`fuel`)
 * survives either way and is written first — `{"fuel":N,"ok":...` — so a lane reads it with
 * `answerFuel` without parsing the whole answer; everything after it is the answer proper.
 */
export function encodeAnswer(a: PowerAnswer): string {
  const fuel = a.fuel === undefined ? '' : `"fuel":${Math.max(0, Math.ceil(a.fuel))},`;
  const plain: PowerAnswer = a.ok ? { ok: true, value: a.value } : { ok: false, code: a.code };
  let s: string | undefined;
  try {
    s = JSON.stringify(plain);
  } catch {
    s = undefined;
  }
  // The charge's bytes count toward the frame cap too.
  const room = MAX_POWER_FRAME_BYTES - fuel.length;
  if (s === undefined || (s.length * 3 > room && Buffer.byteLength(s) > room)) {
    s = JSON.stringify({ ok: false, code: s === undefined ? 'UNAVAILABLE' : 'TOO_LARGE' });
  }
  return `{${fuel}${s.slice(1)}`;
}

const FUEL_PREFIX = /^\{"fuel":(\d{1,16}),/;

/** The fuel an encoded answer charges to the snippet (0 when none): host-written, at its start. */
export function answerFuel(answer: string): number {
  const m = FUEL_PREFIX.exec(answer.slice(0, 40));
  return m ? Number(m[1]) : 0;
}

/** Any failure of the bridge itself, as an answer. */
export const failedAnswer = (code: PowerCode): PowerAnswer => ({ ok: false, code });
