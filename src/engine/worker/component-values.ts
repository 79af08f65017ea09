/**
 * Calls into a persistent component instance (engine.start): finding an export in what jco's
 * glue returned, and the values that cross — the wire's numbers (i32, i64, f32/f64) in as JS
 * numbers and BigInts (jco lowers them to the function's integer or float types), and a JS
 * number, BigInt, boolean or nothing back out.
 *
 * Owns: the export name forms (`name` for a top-level function, `interface#name` — e.g.
 * `wasi:cli/run@0.2.0#run` — for one of an exported interface; WIT kebab-case or jco's
 * camelCase) and the conversions.
 * Invariant: only a function reached as an own property of the glue's export object is called;
 * a value that is not a number, BigInt or boolean does not cross back (POLICY_INVALID).
 *
 * Does not protect against: nothing beyond that — the call runs under the guest's walls.
 */

import { SandboxError } from '../../errors.ts';
import type { WireValue } from '../bridge/protocol.ts';

type Exports = Record<string, Record<string, unknown> | undefined>;
type Fn = (...args: unknown[]) => unknown;

const camel = (name: string): string => name.replace(/-([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
const own = (o: unknown, key: string): unknown => (typeof o === 'object' && o !== null && Object.prototype.hasOwnProperty.call(o, key) ? (o as Record<string, unknown>)[key] : undefined);

/** The exported function `name` names, or null. */
export function exportedFunction(exports: Exports, name: string): Fn | null {
  const hash = name.lastIndexOf('#');
  const found = hash < 0 ? own(exports, camel(name)) ?? own(exports, name) : own(own(exports, name.slice(0, hash)), camel(name.slice(hash + 1)));
  return typeof found === 'function' ? (found as Fn) : null;
}

export function wireToJs(v: WireValue): number | bigint {
  if (v.t === 'i64') return BigInt(v.v);
  return typeof v.v === 'number' ? v.v : Number(v.v);
}

export function resultToWire(value: unknown): WireValue[] {
  if (value === undefined) return [];
  if (typeof value === 'boolean') return [{ t: 'i32', v: value ? 1 : 0 }];
  if (typeof value === 'bigint') return [{ t: 'i64', v: BigInt.asIntN(64, value).toString() }];
  if (typeof value === 'number') {
    if (Number.isInteger(value) && value >= -(2 ** 31) && value < 2 ** 31) return [{ t: 'i32', v: value }];
    return [{ t: 'f64', v: Number.isFinite(value) ? value : (String(value) as 'NaN' | 'Infinity' | '-Infinity') }];
  }
  throw new SandboxError('POLICY_INVALID', 'the export returned a value that cannot cross the boundary (numbers, BigInts and booleans do)', { type: typeof value });
}
