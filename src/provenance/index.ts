/**
 * Provenance (DESIGN §12): who signed what, and what ran. Each tenant's Ed25519 key pair as
 * `did:key` and `did:web`; signed artifact manifests and their check; run receipts signed by the
 * engine; Ed25519-signed audit checkpoints; `.mbundle`s; toolkit verification.
 *
 * Owns nothing itself: the public surface of the modules beside it (each states its invariant).
 * Layer: beside the brokers — it may use storage (the audit log) and policy; the engine and the
 * interfaces call it.
 */
export { canonical, canonicalBytes, type Json, type JsonObject } from './canonical.ts';
export { KeyPair, verifyRaw, SEED_BYTES, PUBLIC_KEY_BYTES, SIGNATURE_BYTES } from './keys.ts';
export { didKey, publicKeyOfDidKey, didWebId, didWebDocument, keysOfDidDocument, multibaseKey, keyFromMultibase, verifyForDid, type DidDocument } from './did.ts';
export { tenantIdentity, createTenantIdentity, engineIdentity, parseSeed, SIGNING_KEY_ENV, ENGINE_KEY_ENV, type Identity } from './identity.ts';
export { signArtifact, verifyArtifact, readSignedArtifact, parseSignedArtifact, signedModuleRefusal, capsOfModule, sha256Hex, type ArtifactManifest, type SignedArtifact, type ArtifactCheck } from './artifact.ts';
export { checkReceipt, parseReceipt, signReceipt, inputHash, outputHash, normalizeInput, type RunReceipt, type SignedReceipt, type RunInput, type ReceiptCheck } from './receipt.ts';
export { signCheckpointEd25519, checkSignedCheckpoint, isSignedCheckpoint, type SignedCheckpoint } from './checkpoint.ts';
export { createBundle, checkBundle, restoreBundle, BUNDLE_TYPE, type BundleManifest, type BundleEntry, type RestoreReport } from './bundle.ts';
export { MAX_BUNDLE_ENTRIES, MAX_BUNDLE_INFLATED_BYTES, MAX_BUNDLE_FILE_BYTES, MAX_INFLATE_RATIO } from './zip-check.ts';
