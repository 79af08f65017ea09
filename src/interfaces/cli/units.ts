/**
 * The one parser for the CLI's numeric flags: durations (`800`, `800ms`, `5s`, `2m`, `1h`), sizes
 * (`65536`, `64KiB`, `64MiB`, `1GiB`, SI `64MB`) and counts (`1000000`, `1e9`, `1_000_000`).
 *
 * Number syntax, shared by all three: digits, optionally grouped with `_` (`1_000_000`), an
 * optional fraction (`1.5s`) and an optional exponent (`1e9`, `2.5e3ms`); then the unit, matched
 * without regard to case. A bare duration is milliseconds and a bare size is bytes (what the
 * flags always meant). The value is computed exactly (BigInt, no float rounding), must come out a
 * whole number of the base unit (no `0.5B`, no `1.0001ms`) and lie within the flag's bounds.
 *
 * Invariant: every input either yields a safe integer within [min, max] or throws a UsageError
 * naming the flag, the accepted forms and the bounds — never NaN, Infinity, a negative number or
 * an INTERNAL error. The echo of a bad value is cut short and has its control characters escaped.
 *
 * Does not protect against: a value the bounds admit but the engine clamps (a profile ceiling is
 * applied later, with a warning).
 */

import { UsageError } from './usage.ts';

export type Quantity = 'duration' | 'size' | 'count';

/** setTimeout's largest delay (2^31 - 1 ms, ~24.8 days): a longer deadline would fire at once. */
export const MAX_DURATION_MS = 2 ** 31 - 1;

const UNITS: Record<Quantity, Record<string, bigint>> = {
  duration: { '': 1n, ms: 1n, s: 1000n, m: 60_000n, h: 3_600_000n },
  size: { '': 1n, b: 1n, kib: 1024n, mib: 1024n ** 2n, gib: 1024n ** 3n, tib: 1024n ** 4n, kb: 1000n, mb: 1000n ** 2n, gb: 1000n ** 3n, tb: 1000n ** 4n },
  count: { '': 1n },
};

const FORMS: Record<Quantity, string> = {
  duration: 'a duration: 800 (ms), 800ms, 5s, 2m or 1h',
  size: 'a size: 65536 (bytes), 64KiB, 64MiB, 1GiB (or SI 64MB)',
  count: 'a whole number: 1000000, 1_000_000 or 1e6',
};

const BASE: Record<Quantity, string> = { duration: 'ms', size: 'bytes', count: '' };

const NUMBER = /^(\d+(?:_\d+)*)(?:\.(\d+(?:_\d+)*))?(?:e([+-]?\d{1,6}))?([a-z]*)$/i;

/** Exponents past this make a number far beyond any bound (or far below one unit): no BigInt needed. */
const MAX_EXPONENT = 40;

export interface Bounds {
  readonly min?: number;
  readonly max?: number;
}

function shown(raw: string): string {
  const cut = raw.length > 40 ? `${raw.slice(0, 40)}…` : raw;
  return JSON.stringify(cut).replace(/[\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function withUnit(n: number, q: Quantity): string {
  return BASE[q] === '' ? String(n) : `${n} ${BASE[q]}`;
}

/** Parse `raw` as a `q` for `--flag`; throws UsageError naming the flag and the accepted forms. */
export function parseQuantity(flag: string, raw: unknown, q: Quantity, bounds: Bounds = {}): number {
  const min = bounds.min ?? (q === 'count' ? 0 : 1);
  const max = bounds.max ?? (q === 'duration' ? MAX_DURATION_MS : Number.MAX_SAFE_INTEGER);
  const range = `${withUnit(min, q)} to ${withUnit(max, q)}`;
  const bad = (why: string): UsageError => new UsageError(`--${flag} expects ${FORMS[q]}; ${range}; got ${typeof raw === 'string' ? shown(raw) : 'nothing'}${why}`);
  if (typeof raw !== 'string') throw bad('');
  const m = NUMBER.exec(raw);
  const factor = m ? UNITS[q][m[4]!.toLowerCase()] : undefined;
  if (!m || factor === undefined) throw bad('');
  const whole = m[1]!.replaceAll('_', '');
  const frac = (m[2] ?? '').replaceAll('_', '');
  const exp = Number(m[3] ?? '0') - frac.length;
  const digits = BigInt(whole + frac);
  // value = digits × 10^exp × factor, exactly.
  let value: bigint;
  if (digits === 0n) value = 0n;
  else if (exp > MAX_EXPONENT) throw bad(' (too large)');
  else if (exp >= 0) value = digits * 10n ** BigInt(exp) * factor;
  else {
    if (-exp > MAX_EXPONENT + 40) throw bad(` (not a whole number of ${BASE[q] || 'units'})`);
    const scale = 10n ** BigInt(-exp);
    const scaled = digits * factor;
    if (scaled % scale !== 0n) throw bad(` (not a whole number of ${BASE[q] || 'units'})`);
    value = scaled / scale;
  }
  if (value < BigInt(min)) throw bad(' (too small)');
  if (value > BigInt(max)) throw bad(' (too large)');
  return Number(value);
}

export const duration = (flag: string, raw: unknown, bounds?: Bounds): number => parseQuantity(flag, raw, 'duration', bounds);
export const size = (flag: string, raw: unknown, bounds?: Bounds): number => parseQuantity(flag, raw, 'size', bounds);
export const count = (flag: string, raw: unknown, bounds?: Bounds): number => parseQuantity(flag, raw, 'count', bounds);

/** The flag's value parsed as `q`, or undefined when the flag was not given. */
export function optional(flag: string, raw: unknown, q: Quantity, bounds?: Bounds): number | undefined {
  return raw === undefined ? undefined : parseQuantity(flag, raw, q, bounds);
}

/** The smallest memory a guest can have: one wasm page. */
export const MIN_MEMORY_BYTES = 65536;

/** `--timeout`, `--fuel` and `--memory`, parsed (only those given). */
export function limitFlags(values: Record<string, unknown>): { timeoutMs?: number; fuel?: number; memoryBytes?: number } {
  const timeoutMs = optional('timeout', values['timeout'], 'duration');
  const fuel = optional('fuel', values['fuel'], 'count', { min: 1 });
  const memoryBytes = optional('memory', values['memory'], 'size', { min: MIN_MEMORY_BYTES });
  return { ...(timeoutMs !== undefined ? { timeoutMs } : {}), ...(fuel !== undefined ? { fuel } : {}), ...(memoryBytes !== undefined ? { memoryBytes } : {}) };
}
