/**
 * Canonical JSON for everything provenance signs: manifests, receipts, bundle manifests.
 *
 * Why a serializer of our own and not `JSON.stringify`: a signature covers bytes, and
 * `JSON.stringify` writes an object's keys in the order they were inserted, so the same manifest
 * built by two programs (or parsed and re-written) could yield two texts and a signature that
 * fails for no reason. Here every object's keys are sorted, there is no whitespace, and strings
 * and numbers are written as ECMAScript writes them: the encoding the audit log already MACs
 * (storage/audit-encoding.ts; RFC 8785 for these values), so a record and a receipt agree byte
 * for byte on what a value is.
 *
 * Owns: `toSigned` — the check that a value is plain JSON (no `undefined`, functions, class
 * instances, non-finite numbers, or nesting past `MAX_DEPTH`) before it is encoded.
 * Invariant: `canonical(JSON.parse(canonical(v))) === canonical(v)` for every value it accepts.
 *
 * Does not protect against: two different values a reader would call "the same" (1 and 1.0 are
 * one number; "é" precomposed and decomposed are two strings): it encodes what it is given.
 */

import { SandboxError } from '../errors.ts';
import { canonicalJson, type AuditJson } from '../storage/audit-encoding.ts';

export type Json = AuditJson;
export type JsonObject = { readonly [key: string]: Json };

/** Objects and arrays nest at most this deep (a hostile manifest cannot exhaust the stack). */
export const MAX_DEPTH = 32;

function check(value: unknown, depth: number): Json {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new SandboxError('POLICY_INVALID', 'signed JSON holds finite numbers only');
    return value;
  }
  if (typeof value !== 'object') throw new SandboxError('POLICY_INVALID', `signed JSON cannot hold a ${typeof value}`);
  if (depth >= MAX_DEPTH) throw new SandboxError('POLICY_INVALID', `signed JSON nests at most ${MAX_DEPTH} deep`);
  if (Array.isArray(value)) return value.map((v) => check(v, depth + 1));
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) throw new SandboxError('POLICY_INVALID', 'signed JSON holds plain objects only');
  const out: Record<string, Json> = {};
  for (const [k, v] of Object.entries(value)) {
    if (v === undefined) throw new SandboxError('POLICY_INVALID', `signed JSON cannot hold undefined (key ${JSON.stringify(k).slice(0, 40)})`);
    out[k] = check(v, depth + 1);
  }
  return out;
}

/** The canonical text of `value` (checked first: POLICY_INVALID if it is not plain JSON). */
export function canonical(value: unknown): string {
  return canonicalJson(check(value, 0));
}

/** The canonical UTF-8 bytes of `value`: what a signature covers. */
export function canonicalBytes(value: unknown): Buffer {
  return Buffer.from(canonical(value), 'utf8');
}
