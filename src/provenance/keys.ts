/**
 * Ed25519 signing and verification on raw keys, through node:crypto.
 *
 * Owns: turning a 32-byte seed into a signing key and its 32-byte public key, signing bytes, and
 * verifying a 64-byte signature under a raw public key. Signatures travel as base64url text.
 * Invariant: a seed never leaves `KeyPair` except through `seedBase64()` (the identity store
 * writing its file); `verify` never throws on hostile input — a malformed key or signature is
 * simply `false`.
 *
 * Does not protect against: the seed staying in this process's memory; an operator who hands
 * the seed to someone else.
 */

import { createPrivateKey, createPublicKey, sign as edSign, verify as edVerify, type KeyObject } from 'node:crypto';
import { SandboxError } from '../errors.ts';

export const SEED_BYTES = 32;
export const PUBLIC_KEY_BYTES = 32;
export const SIGNATURE_BYTES = 64;

// DER prefixes for an Ed25519 PKCS#8 private key and SPKI public key (RFC 8410): fixed bytes.
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export class KeyPair {
  readonly #seed: Buffer;
  readonly #private: KeyObject;
  /** The raw 32-byte public key. */
  readonly publicKey: Uint8Array;

  constructor(seed: Uint8Array) {
    if (seed.length !== SEED_BYTES) throw new SandboxError('POLICY_INVALID', `an Ed25519 seed is ${SEED_BYTES} bytes`);
    this.#seed = Buffer.from(seed);
    this.#private = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, this.#seed]), format: 'der', type: 'pkcs8' });
    const spki = createPublicKey(this.#private).export({ format: 'der', type: 'spki' });
    this.publicKey = new Uint8Array(spki.subarray(SPKI_PREFIX.length));
  }

  /** A base64url Ed25519 signature over `data`. */
  sign(data: Uint8Array): string {
    return edSign(null, data, this.#private).toString('base64url');
  }

  /** The seed as base64 (for the identity store's file only). */
  seedBase64(): string {
    return this.#seed.toString('base64');
  }
}

/** Does `signature` (base64url) verify over `data` under the raw public key? Never throws. */
export function verifyRaw(publicKey: Uint8Array, data: Uint8Array, signature: string): boolean {
  if (publicKey.length !== PUBLIC_KEY_BYTES || typeof signature !== 'string' || !/^[A-Za-z0-9_-]{86}$/.test(signature)) return false;
  const sig = Buffer.from(signature, 'base64url');
  if (sig.length !== SIGNATURE_BYTES) return false;
  try {
    const key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, publicKey]), format: 'der', type: 'spki' });
    return edVerify(null, data, key, sig);
  } catch {
    return false;
  }
}
