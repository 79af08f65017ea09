/**
 * The fabric (DESIGN §7, lanes and tiers) — not built yet; this room is where it will live.
 * The kernel lane (a `bytes → bytes` export called many times over a reused arena), fan-out
 * across workers and machines (today `parallel`'s fan-out is brokers/parallel.ts with the
 * engine's host services), the isolation tiers (`instance`, `os_process`, `remote`) and the
 * `remote` tier's job queue to `membrane worker`s on other machines.
 * Layer: beside the lanes — the engine calls down into it, it never calls the engine.
 */
export {};
