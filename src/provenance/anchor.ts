/**
 * A receipt's audit anchor: where the audit trail recorded the receipt, so a receipt kept
 * elsewhere can be tied back to one record of the operator's trail.
 *
 * Owns: the two anchor shapes and their check as untrusted input, and the record hash.
 * - `{ seq, mac, keyId }` — the engine's own keyed log (storage/audit.ts): the receipt's record
 *   is at `seq` and its chain MAC is `mac`; `membrane audit verify` (with the audit key) proves
 *   that record is in an untampered chain.
 * - `{ sink: "embedder", record, seq, digest }` — an embedder's own sink (`brokers.audit`):
 *   `record` is the sha256 of the canonical event `{ tenant, instance, kind, detail }` the engine
 *   handed the sink; `seq` and `digest` are what the sink's `seal` answered for it (its position
 *   and its own chain digest), or null when the sink has no `seal`. The receipt's signature covers
 *   all of it, so the sink's answer cannot be swapped after the fact.
 * Invariant: an anchor is parsed with exact fields and bounded text; `recordHash` is the one
 * encoding the engine hashed when it sealed.
 *
 * Does not protect against: an embedder sink that drops, rewrites or reorders what it was given —
 * with a sink anchor the receipt proves only what the engine handed the sink and what the sink
 * said back; whether the sink's store still holds it is the sink's own tamper-evidence.
 */

import { createHash } from 'node:crypto';
import { canonical } from './canonical.ts';

/** The engine's keyed audit log's record of a receipt. */
export interface LogAnchor {
  readonly seq: number;
  readonly mac: string;
  readonly keyId: string;
}

/** An embedder sink's record of a receipt. */
export interface SinkAnchor {
  readonly sink: 'embedder';
  /** sha256 (hex) of the canonical event handed to the sink. */
  readonly record: string;
  /** The sink's position for it (`seal`'s answer), or null. */
  readonly seq: number | null;
  /** The sink's own digest for it (`seal`'s answer), or null. */
  readonly digest: string | null;
}

export type AuditAnchor = LogAnchor | SinkAnchor;

/** What an embedder sink's `seal` answers: its position for the record and its digest (≤ 256 printable ASCII). */
export interface SinkSeal {
  readonly seq: number;
  readonly digest: string;
}

export const MAX_DIGEST_CHARS = 256;
const DIGEST = /^[\x21-\x7e]{1,256}$/;
const HEX64 = /^[0-9a-f]{64}$/;

/** The event a receipt anchors (what the engine hands the audit trail). */
export interface AnchoredEvent {
  readonly tenant: string;
  readonly instance: string;
  readonly kind: string;
  readonly detail: Record<string, unknown>;
}

/** sha256 (hex) of the canonical event: what a sink anchor's `record` holds. */
export function recordHash(event: AnchoredEvent): string {
  return createHash('sha256').update(canonical({ tenant: event.tenant, instance: event.instance, kind: event.kind, detail: event.detail })).digest('hex');
}

/** Whether a sink's answer to `seal` is one a receipt can carry. */
export function isSinkSeal(x: unknown): x is SinkSeal {
  if (x === null || typeof x !== 'object') return false;
  const o = x as Record<string, unknown>;
  return typeof o['seq'] === 'number' && Number.isSafeInteger(o['seq']) && o['seq'] >= 0 && typeof o['digest'] === 'string' && DIGEST.test(o['digest']);
}

/** Does `stored` (an event the embedder's sink holds) match the receipt's anchor? */
export function sinkRecordMatches(anchor: AuditAnchor | null, stored: AnchoredEvent): boolean {
  return anchor !== null && 'sink' in anchor && anchor.record === recordHash(stored);
}

const count = (x: unknown): boolean => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;

/** Why `x` is not an anchor a receipt may carry (null when it is one, or null itself). */
export function anchorProblem(x: unknown): string | null {
  if (x === null) return null;
  if (typeof x !== 'object' || Array.isArray(x)) return 'the receipt\'s audit anchor is not an object';
  const o = x as Record<string, unknown>;
  const keys = Object.keys(o).sort().join(',');
  if (keys === 'keyId,mac,seq') {
    return count(o['seq']) && typeof o['mac'] === 'string' && HEX64.test(o['mac']) && typeof o['keyId'] === 'string' && o['keyId'].length <= MAX_DIGEST_CHARS ? null : 'the receipt\'s audit anchor is { seq, mac (64 hex), keyId }';
  }
  if (keys === 'digest,record,seq,sink') {
    if (o['sink'] !== 'embedder' || typeof o['record'] !== 'string' || !HEX64.test(o['record'])) return 'a sink anchor is { sink: "embedder", record (64 hex), seq, digest }';
    const sealed = o['seq'] === null && o['digest'] === null ? true : count(o['seq']) && typeof o['digest'] === 'string' && DIGEST.test(o['digest']);
    return sealed ? null : 'a sink anchor\'s seq and digest are both null or a count and printable text';
  }
  return 'the receipt\'s audit anchor is { seq, mac, keyId } or { sink, record, seq, digest }';
}
