/**
 * The audit log's byte format: the canonical encoding a record's MAC is computed over, and the
 * guard every `detail` passes before it is recorded.
 *
 * Owns: `canonicalJson` — JSON with every object's keys sorted by UTF-16 code units (recursively),
 * no whitespace, numbers and strings as ECMAScript `JSON.stringify` writes them (so lone
 * surrogates are `\uXXXX` escapes and the text is well-formed UTF-16), encoded as UTF-8. For the
 * values allowed here (finite numbers, strings, booleans, null, arrays, plain objects) this is
 * RFC 8785 (JCS). The same value always yields the same bytes, whatever order its keys were
 * built in. `auditDetail` — details are plain JSON objects, at most `MAX_DETAIL_DEPTH` deep; a
 * string (or key) over `MAX_DETAIL_STRING_BYTES` is cut and marked, and a detail whose encoding
 * is still over `MAX_DETAIL_BYTES` is replaced by a marker object.
 *
 * Invariant: whatever `auditDetail` returns round-trips through `JSON.parse(canonicalJson(x))`
 * to a value with the same canonical encoding.
 *
 * Does not protect against: a caller passing a secret as a detail. Callers pass only
 * non-secret facts (cap words, import names, limits, host names, counts) — never a secret's
 * bytes, a key, a token, a request body or a guest's memory. The size guard bounds a leak, it
 * does not prevent one.
 */

import { SandboxError } from '../errors.ts';

/** A JSON value as the audit log stores it. */
export type AuditJson = string | number | boolean | null | readonly AuditJson[] | { readonly [key: string]: AuditJson };
export type AuditDetail = { readonly [key: string]: AuditJson };

/** A string value or key longer than this (UTF-8 bytes) is cut and marked. */
export const MAX_DETAIL_STRING_BYTES = 4096;
/** A detail whose canonical encoding is longer than this is replaced by a marker. */
export const MAX_DETAIL_BYTES = 16 * 1024;
/** Objects and arrays nest at most this deep. */
export const MAX_DETAIL_DEPTH = 8;
/** Tenant and instance names longer than this (UTF-8 bytes) are cut and marked. */
export const MAX_PRINCIPAL_BYTES = 256;

/** Deterministic JSON text: sorted keys, no whitespace (see the module header). */
export function canonicalJson(value: AuditJson): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${(value as readonly AuditJson[]).map(canonicalJson).join(',')}]`;
  const obj = value as { readonly [key: string]: AuditJson };
  const keys = Object.keys(obj).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k]!)}`).join(',')}}`;
}

/** `s` cut to at most `max` UTF-8 bytes (on a character boundary) with a marker, if longer. */
export function truncateUtf8(s: string, max: number): string {
  const bytes = Buffer.byteLength(s, 'utf8');
  if (bytes <= max) return s;
  const marker = `…[truncated ${bytes} bytes]`;
  const room = Math.max(0, max - Buffer.byteLength(marker, 'utf8'));
  let cut = Buffer.from(s, 'utf8').subarray(0, room).toString('utf8');
  // A multi-byte character split at the cut decodes to U+FFFD: drop it.
  if (cut.endsWith('\uFFFD') && !s.startsWith(cut)) cut = cut.slice(0, -1);
  return cut + marker;
}

function invalid(why: string): SandboxError {
  return new SandboxError('POLICY_INVALID', `an audit detail must be plain JSON: ${why}`);
}

function guard(value: unknown, depth: number): AuditJson {
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'string') return truncateUtf8(value, MAX_DETAIL_STRING_BYTES);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw invalid('numbers must be finite');
    return value;
  }
  if (typeof value !== 'object') throw invalid(`a ${typeof value} is not allowed`);
  if (depth >= MAX_DETAIL_DEPTH) throw invalid(`nested deeper than ${MAX_DETAIL_DEPTH}`);
  if (Array.isArray(value)) return value.map((v) => guard(v, depth + 1));
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) throw invalid('only plain objects are allowed');
  const out: Record<string, AuditJson> = {};
  for (const [k, v] of Object.entries(value)) {
    if (v === undefined) continue;
    out[truncateUtf8(k, MAX_DETAIL_STRING_BYTES)] = guard(v, depth + 1);
  }
  return out;
}

/**
 * A caller's detail made safe to record: plain JSON only (anything else is a bug in the caller:
 * POLICY_INVALID), long strings cut, an oversized detail replaced by
 * `{ "…truncated": true, bytes: N }`.
 */
export function auditDetail(detail: unknown): AuditDetail {
  if (detail === null || typeof detail !== 'object' || Array.isArray(detail)) throw invalid('the detail must be an object');
  const safe = guard(detail, 0) as AuditDetail;
  const bytes = Buffer.byteLength(canonicalJson(safe), 'utf8');
  return bytes <= MAX_DETAIL_BYTES ? safe : { '…truncated': true, bytes };
}
