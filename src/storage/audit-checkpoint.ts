/**
 * Audit checkpoints: a signed statement "the log's head was record `seq` with MAC `mac` at
 * `time`", for an operator to keep where the engine database is not (another machine, a ticket,
 * a printout). A log that no longer reaches a kept checkpoint — its tail cut and its head rolled
 * back to an older genuine one, or the whole log restored from an older copy, dropped and
 * restarted — fails `verifyCheckpoint`.
 *
 * Owns: the checkpoint format and its signature. The format is
 * `{ v: 1, alg, keyId, seq, mac, time, sig }` (`mac` and `sig` lowercase hex); `sig` is over
 * `canonicalJson` of every other field, so a field added later is covered by the signature of
 * the version that adds it. `alg` names the signature: `hmac-sha256` — HMAC-SHA256 under a key
 * derived from the audit key (`checkpointKey`), which only the audit key's holder can make or
 * check. The Ed25519 signature under the engine's provenance key wraps this checkpoint
 * unchanged (provenance/checkpoint.ts): anyone can check that one, without the audit key.
 *
 * Invariant: a checkpoint is parsed as untrusted input — exact fields, bounded sizes — before
 * anything in it is used; a checkpoint under another audit key (`keyId`) or an unknown `alg` is
 * refused with a reason, never accepted.
 *
 * Does not protect against: anyone holding the audit key (they can sign any checkpoint); a
 * checkpoint kept in the same place as the log (an attacker who rolls the log back removes it
 * too); events after the newest checkpoint kept.
 */

import { createHmac, timingSafeEqual } from 'node:crypto';
import { SandboxError } from '../errors.ts';
import { canonicalJson } from './audit-encoding.ts';

export const CHECKPOINT_VERSION = 1;
/** Signature algorithms a checkpoint may name (ones this version can check). */
export const CHECKPOINT_ALGS = ['hmac-sha256'] as const;
/** A checkpoint file larger than this is not a checkpoint. */
export const MAX_CHECKPOINT_BYTES = 4096;

export interface AuditCheckpoint {
  readonly v: 1;
  readonly alg: (typeof CHECKPOINT_ALGS)[number];
  readonly keyId: string;
  readonly seq: number;
  readonly mac: string;
  readonly time: string;
  readonly sig: string;
}

type Unsigned = Omit<AuditCheckpoint, 'v' | 'alg' | 'sig'>;

const HEX32 = /^[0-9a-f]{64}$/;
const KEY_ID = /^[0-9a-f]{16}$/;
const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const FIELDS = ['alg', 'keyId', 'mac', 'seq', 'sig', 'time', 'v'];

/** The checkpoint signing key: HMAC(audit key, a fixed label), never stored. */
export function checkpointKey(auditKey: Buffer): Buffer {
  return createHmac('sha256', auditKey).update('membrane audit checkpoint v1').digest();
}

function signature(key: Buffer, c: Omit<AuditCheckpoint, 'sig'>): Buffer {
  return createHmac('sha256', key).update(canonicalJson({ v: c.v, alg: c.alg, keyId: c.keyId, seq: c.seq, mac: c.mac, time: c.time })).digest();
}

export function signCheckpoint(key: Buffer, fields: Unsigned): AuditCheckpoint {
  const body = { v: CHECKPOINT_VERSION, alg: 'hmac-sha256', ...fields } as const;
  return { ...body, sig: signature(key, body).toString('hex') };
}

/**
 * Parse a checkpoint file's text: the checkpoint's fields with their types checked (not its
 * signature: `checkCheckpoint`). POLICY_INVALID when it is not one.
 */
export function parseCheckpoint(text: string): unknown {
  if (Buffer.byteLength(text, 'utf8') > MAX_CHECKPOINT_BYTES) throw new SandboxError('POLICY_INVALID', `a checkpoint is at most ${MAX_CHECKPOINT_BYTES} bytes of JSON`);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new SandboxError('POLICY_INVALID', 'the checkpoint is not JSON');
  }
}

/**
 * The checkpoint, if it is well formed, names this key and its signature holds; else the reason
 * it is refused.
 */
export function checkCheckpoint(key: Buffer, keyId: string, value: unknown): AuditCheckpoint | string {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'the checkpoint is not a JSON object';
  const c = value as Record<string, unknown>;
  const keys = Object.keys(c).sort();
  if (keys.length !== FIELDS.length || keys.some((k, i) => k !== FIELDS[i])) return `a checkpoint has exactly the fields ${FIELDS.join(', ')}`;
  if (c['v'] !== CHECKPOINT_VERSION) return `unsupported checkpoint version ${JSON.stringify(c['v']).slice(0, 16)}`;
  if (!(CHECKPOINT_ALGS as readonly unknown[]).includes(c['alg'])) return `unsupported checkpoint signature algorithm ${JSON.stringify(c['alg']).slice(0, 32)}`;
  if (typeof c['keyId'] !== 'string' || !KEY_ID.test(c['keyId'])) return 'the checkpoint\'s keyId is not 16 hex digits';
  if (typeof c['seq'] !== 'number' || !Number.isSafeInteger(c['seq']) || c['seq'] < 1) return 'the checkpoint\'s seq is not a positive integer';
  if (typeof c['mac'] !== 'string' || !HEX32.test(c['mac'])) return 'the checkpoint\'s mac is not 64 hex digits';
  if (typeof c['time'] !== 'string' || !TIME.test(c['time'])) return 'the checkpoint\'s time is not an ISO-8601 UTC time';
  if (typeof c['sig'] !== 'string' || !HEX32.test(c['sig'])) return 'the checkpoint\'s sig is not 64 hex digits';
  const cp = c as unknown as AuditCheckpoint;
  if (cp.keyId !== keyId) return `the checkpoint was signed under another audit key (keyId ${cp.keyId}, this log's is ${keyId})`;
  if (!timingSafeEqual(Buffer.from(cp.sig, 'hex'), signature(key, cp))) return 'the checkpoint\'s signature does not verify (edited or forged)';
  return cp;
}
