/**
 * Conversions between caller-facing values and wasm values for an export's signature.
 *
 * Owns: parsing call arguments (numbers, bigints, or CLI strings) against the export's parameter
 * types, and rendering results as JSON-safe values (i64 as a number when it is a safe integer,
 * else a decimal string). Invariant: an argument that does not fit its parameter type is
 * POLICY_INVALID, never silently wrapped.
 *
 * Does not protect against: nothing beyond type and range.
 */

import { SandboxError } from '../errors.ts';
import { toWire, type WireValue } from './bridge/protocol.ts';

export type ArgValue = number | bigint | string;
export type ResultValue = number | string | null;

const INT = /^[-+]?(0x[0-9a-f]+|\d+)$/i;

export function parseArgs(exportName: string, params: readonly string[], args: readonly ArgValue[]): WireValue[] {
  if (args.length !== params.length) {
    throw new SandboxError('POLICY_INVALID', `export "${exportName}" takes ${params.length} argument(s), got ${args.length}`, {
      export: exportName,
      params: [...params],
    });
  }
  return params.map((type, i) => toWire(type, parseOne(exportName, i, type, args[i]!)));
}

function parseOne(exportName: string, index: number, type: string, raw: ArgValue): number | bigint {
  const fail = () =>
    new SandboxError('POLICY_INVALID', `argument ${index} of "${exportName}" is not a valid ${type}: ${String(raw).slice(0, 40)}`, {
      export: exportName,
      index,
      type,
    });
  switch (type) {
    case 'i32': {
      const n = toBigInt(raw);
      if (n === null || n < -0x80000000n || n > 0xffffffffn) throw fail();
      return Number(BigInt.asIntN(32, n));
    }
    case 'i64': {
      const n = toBigInt(raw);
      if (n === null || n < -(1n << 63n) || n >= 1n << 64n) throw fail();
      return BigInt.asIntN(64, n);
    }
    case 'f32':
    case 'f64': {
      const n = typeof raw === 'bigint' ? Number(raw) : Number(raw);
      if (typeof raw === 'string' && raw.trim() === '') throw fail();
      if (Number.isNaN(n) && String(raw).toLowerCase() !== 'nan') throw fail();
      return n;
    }
    default:
      throw new SandboxError('POLICY_INVALID', `parameters of type ${type} cannot be passed from the host`, { export: exportName, type });
  }
}

function toBigInt(raw: ArgValue): bigint | null {
  if (typeof raw === 'bigint') return raw;
  if (typeof raw === 'number') return Number.isInteger(raw) ? BigInt(raw) : null;
  const s = raw.trim();
  if (!INT.test(s)) return null;
  const neg = s.startsWith('-');
  const body = s.replace(/^[-+]/, '');
  const n = BigInt(body);
  return neg ? -n : n;
}

/** Render result values as JSON-safe values: i64 as a number when safe, else a decimal string. */
export function renderResults(values: readonly WireValue[]): ResultValue | ResultValue[] {
  const out = values.map((w): ResultValue => {
    if (w.t !== 'i64') return w.v;
    const n = BigInt(w.v);
    return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : w.v;
  });
  if (out.length === 0) return null;
  return out.length === 1 ? out[0]! : out;
}
