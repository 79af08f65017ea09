/**
 * Anchoring a receipt in the audit trail: the engine's own keyed log when no embedder sink is
 * configured, else the embedder's sink (provenance/anchor.ts says what each anchor proves).
 *
 * Owns: choosing the anchor and checking an embedder sink's `seal` answer before a receipt
 * carries it.
 * Invariant: an anchor names the record written for this very event, written once; a sink whose
 * `seal` answers something else (not a count and printable digest) fails the anchor — INTERNAL,
 * never a receipt carrying it. A built-in anchor (`{ seq, mac, keyId }`) is only ever made by the
 * engine's own log, never by an embedder's sink.
 *
 * Does not protect against: an embedder sink that lies in its `seal` answer or forgets the record
 * later (the receipt then proves only what the sink said at the time).
 */

import { SandboxError } from '../errors.ts';
import { isSinkSeal, recordHash, type AnchoredEvent, type AuditAnchor, type LogAnchor } from '../provenance/anchor.ts';
import type { AuditSink } from './cadence.ts';

/** The built-in sink's own anchoring (engine/audit-sink.ts): append and say where, with the chain's MAC. */
export type BuiltinAnchor = (event: AnchoredEvent) => LogAnchor;

/** Record `event` once and say where: `builtin` when the trail is the engine's own log, else the embedder's sink. */
export function anchorEvent(sink: AuditSink, builtin: BuiltinAnchor | null, event: AnchoredEvent): AuditAnchor {
  if (builtin) return builtin(event);
  const record = recordHash(event);
  if (typeof sink.seal !== 'function') {
    sink.append(event);
    return { sink: 'embedder', record, seq: null, digest: null };
  }
  const sealed: unknown = sink.seal(event);
  if (!isSinkSeal(sealed)) throw new SandboxError('INTERNAL', 'the audit sink\'s seal answered something a receipt cannot carry (want { seq: a count, digest: 1-256 printable characters })');
  return { sink: 'embedder', record, seq: sealed.seq, digest: sealed.digest };
}
