/**
 * DIDs for an Ed25519 public key: `did:key` (the key itself, no registry) and `did:web` (a
 * document the operator publishes at `https://HOST/.well-known/did.json`).
 *
 * Owns: the did:key encoding — `did:key:z` + base58btc(0xed 0x01 ‖ 32-byte key), the multicodec
 * `ed25519-pub` prefix under multibase 'z' — and its strict decoding; the did:web document (one
 * `Ed25519VerificationKey2020` method whose `publicKeyMultibase` is the same multibase text, so
 * one key verifies under either DID) and reading a key back out of such a document.
 * Invariant: decoding refuses anything but exactly that prefix and a 32-byte key; a document is
 * parsed as untrusted input (bounded, exact types) and yields a key only from a method listed
 * under `assertionMethod` whose controller is the document's own id.
 *
 * Does not protect against: fetching a did:web document — callers pass the document they
 * trust (we never make a network request for it); a host whose published document was replaced.
 */

import { base58 } from '@scure/base';
import { SandboxError } from '../errors.ts';
import { PUBLIC_KEY_BYTES, verifyRaw } from './keys.ts';

/** multicodec `ed25519-pub` (0xed) as an unsigned varint: 0xed 0x01. */
const ED25519_PUB = Uint8Array.of(0xed, 0x01);
const DID_KEY = 'did:key:';
/** `did:key:z6Mk` + 44 base58 characters; longer text is not an Ed25519 did:key. */
const MAX_DID_CHARS = 256;
const HOST = /^(?=.{1,253}(?::\d{1,5})?$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*(?::\d{1,5})?$/;

/** The multibase text of a key: 'z' + base58btc(0xed01 ‖ key) (`z6Mk…`). */
export function multibaseKey(publicKey: Uint8Array): string {
  if (publicKey.length !== PUBLIC_KEY_BYTES) throw new SandboxError('POLICY_INVALID', `an Ed25519 public key is ${PUBLIC_KEY_BYTES} bytes`);
  const bytes = new Uint8Array(ED25519_PUB.length + publicKey.length);
  bytes.set(ED25519_PUB);
  bytes.set(publicKey, ED25519_PUB.length);
  return `z${base58.encode(bytes)}`;
}

/** The key in multibase text, or null if it is not an Ed25519 multikey. */
export function keyFromMultibase(text: unknown): Uint8Array | null {
  if (typeof text !== 'string' || text.length > MAX_DID_CHARS || !text.startsWith('z')) return null;
  let bytes: Uint8Array;
  try {
    bytes = base58.decode(text.slice(1));
  } catch {
    return null;
  }
  if (bytes.length !== ED25519_PUB.length + PUBLIC_KEY_BYTES || bytes[0] !== ED25519_PUB[0] || bytes[1] !== ED25519_PUB[1]) return null;
  return bytes.slice(ED25519_PUB.length);
}

export function didKey(publicKey: Uint8Array): string {
  return DID_KEY + multibaseKey(publicKey);
}

/** The public key a `did:key` names; POLICY_INVALID, saying why, if it is not an Ed25519 did:key. */
export function publicKeyOfDidKey(did: string): Uint8Array {
  if (typeof did !== 'string' || !did.startsWith(DID_KEY)) throw new SandboxError('POLICY_INVALID', 'not a did:key');
  const key = keyFromMultibase(did.slice(DID_KEY.length));
  if (!key) throw new SandboxError('POLICY_INVALID', 'not an Ed25519 did:key (multibase z, multicodec 0xed01, 32-byte key)');
  return key;
}

/** `did:web:HOST` for a host name (a port becomes `%3A`, as did:web requires). */
export function didWebId(host: string): string {
  const h = typeof host === 'string' ? host.toLowerCase() : '';
  if (!HOST.test(h)) throw new SandboxError('POLICY_INVALID', 'a did:web host is a DNS name, optionally with :PORT');
  return `did:web:${h.replace(':', '%3A')}`;
}

export interface DidDocument {
  readonly '@context': readonly string[];
  readonly id: string;
  readonly alsoKnownAs: readonly string[];
  readonly verificationMethod: readonly { id: string; type: string; controller: string; publicKeyMultibase: string }[];
  readonly authentication: readonly string[];
  readonly assertionMethod: readonly string[];
}

/** The `/.well-known/did.json` document for `host` publishing this key. */
export function didWebDocument(host: string, publicKey: Uint8Array): DidDocument {
  const id = didWebId(host);
  const mb = multibaseKey(publicKey);
  const vm = `${id}#${mb}`;
  return {
    '@context': ['https://www.w3.org/ns/did/v1', 'https://w3id.org/security/suites/ed25519-2020/v1'],
    id,
    alsoKnownAs: [didKey(publicKey)],
    verificationMethod: [{ id: vm, type: 'Ed25519VerificationKey2020', controller: id, publicKeyMultibase: mb }],
    authentication: [vm],
    assertionMethod: [vm],
  };
}

/** The assertion keys a did:web document publishes (untrusted input: anything malformed is skipped). */
export function keysOfDidDocument(doc: unknown): { id: string; keys: Uint8Array[] } {
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new SandboxError('POLICY_INVALID', 'a DID document is a JSON object');
  const d = doc as Record<string, unknown>;
  if (typeof d['id'] !== 'string' || !d['id'].startsWith('did:web:')) throw new SandboxError('POLICY_INVALID', 'the DID document\'s id is not a did:web');
  const id = d['id'];
  const assertion = Array.isArray(d['assertionMethod']) ? d['assertionMethod'].filter((x): x is string => typeof x === 'string') : [];
  const methods = Array.isArray(d['verificationMethod']) ? d['verificationMethod'].slice(0, 64) : [];
  const keys: Uint8Array[] = [];
  for (const m of methods) {
    if (m === null || typeof m !== 'object') continue;
    const vm = m as Record<string, unknown>;
    if (vm['type'] !== 'Ed25519VerificationKey2020' || vm['controller'] !== id || typeof vm['id'] !== 'string' || !assertion.includes(vm['id'])) continue;
    const key = keyFromMultibase(vm['publicKeyMultibase']);
    if (key) keys.push(key);
  }
  return { id, keys };
}

/**
 * Does `signature` verify over `data` for `did`? A did:key carries its key; a did:web needs its
 * document (`documents`, keyed by DID), which must be that DID's. Never throws: anything malformed is false.
 */
export function verifyForDid(did: string, data: Uint8Array, signature: string, documents: ReadonlyMap<string, unknown> = new Map()): boolean {
  if (typeof did !== 'string') return false;
  if (did.startsWith(DID_KEY)) {
    const key = keyFromMultibase(did.slice(DID_KEY.length));
    return key !== null && verifyRaw(key, data, signature);
  }
  if (did.startsWith('did:web:')) {
    const doc = documents.get(did);
    if (doc === undefined) return false;
    try {
      const { id, keys } = keysOfDidDocument(doc);
      return id === did && keys.some((k) => verifyRaw(k, data, signature));
    } catch {
      return false; // a malformed document vouches for nothing
    }
  }
  return false;
}
