/**
 * Provenance (DESIGN §12) — not built yet; this room is where it will live. Each tenant's
 * Ed25519 key pair (node:crypto) as `did:key` and `did:web`; signed artifact manifests and their
 * check (`{signature, assetIntegrity, valid}`); run receipts signed by the engine (module and input
 * hashes, grant, limits, fuel used, output hash, outcome, the audit log's seq and MAC at its end);
 * Ed25519-signed audit checkpoints (today's are HMAC, storage/audit-checkpoint.ts); `.mbundle`s.
 * Layer: beside the brokers — it may use storage (the audit log) and policy; the engine calls it.
 */
export {};
