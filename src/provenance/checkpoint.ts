/**
 * Audit checkpoints signed with the engine's Ed25519 key, so anyone — not only the holder of the
 * audit key — can check that the engine attested "the log's head was record `seq` with MAC `mac`
 * at `time`".
 *
 * Owns: the envelope `{ checkpoint, signer, signature }`: `checkpoint` is the HMAC checkpoint
 * (storage/audit-checkpoint.ts) exactly as the log signed it, `signer` the engine's did:key and
 * `signature` Ed25519 (base64url) over the checkpoint's canonical JSON. The HMAC stays: checking
 * the checkpoint against a log (`AuditLog.verifyCheckpoint`) still needs the audit key; the
 * Ed25519 signature adds a check that needs only the envelope (`checkSignedCheckpoint`).
 *
 * Invariant: an envelope is untrusted input (bounded, exact fields); an edited field, another
 * signer, or a signature of another checkpoint fails the check with a reason.
 *
 * Does not protect against: anyone holding the engine key; a checkpoint kept beside the log.
 */

import { canonicalBytes } from './canonical.ts';
import { verifyForDid } from './did.ts';
import type { Identity } from './identity.ts';

export interface SignedCheckpoint {
  readonly checkpoint: Readonly<Record<string, unknown>>;
  readonly signer: string;
  readonly signature: string;
}

/** Sign an HMAC checkpoint (as `AuditLog.checkpoint()` returned it) with the engine's key. */
export function signCheckpointEd25519(checkpoint: object, engine: Identity): SignedCheckpoint {
  return { checkpoint: { ...checkpoint }, signer: engine.did, signature: engine.keys.sign(canonicalBytes(checkpoint)) };
}

/** Is `value` an envelope (as opposed to a bare HMAC checkpoint)? */
export function isSignedCheckpoint(value: unknown): boolean {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && 'checkpoint' in value && 'signature' in value;
}

/**
 * The inner HMAC checkpoint if the envelope's Ed25519 signature holds (and its signer is one of
 * `trust`, when given); else the reason it is refused.
 */
export function checkSignedCheckpoint(value: unknown, trust?: readonly string[]): { checkpoint: Readonly<Record<string, unknown>>; signer: string } | string {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'the signed checkpoint is not a JSON object';
  const v = value as Record<string, unknown>;
  if (Object.keys(v).sort().join(',') !== 'checkpoint,signature,signer') return 'a signed checkpoint has exactly the fields checkpoint, signature, signer';
  const { checkpoint, signer, signature } = v;
  if (checkpoint === null || typeof checkpoint !== 'object' || Array.isArray(checkpoint)) return 'the signed checkpoint holds no checkpoint object';
  if (typeof signer !== 'string' || typeof signature !== 'string') return 'the signed checkpoint\'s signer and signature are strings';
  let bytes: Buffer;
  try {
    bytes = canonicalBytes(checkpoint);
  } catch {
    return 'the checkpoint is not plain JSON';
  }
  if (!verifyForDid(signer, bytes, signature)) return 'the checkpoint\'s Ed25519 signature does not verify (edited, or another key)';
  if (trust && !trust.includes(signer)) return `the checkpoint was signed by ${signer}, not one of the trusted DIDs`;
  return { checkpoint: checkpoint as Record<string, unknown>, signer };
}
