/**
 * The engine's `requireSigned` gate: before a module is prepared for a top-level run or a start,
 * an engine configured with trusted did:keys checks the module's signed manifest
 * (provenance/artifact.ts `signedModuleRefusal`).
 *
 * Invariant: a refused module is never rewritten, compiled or instantiated; the refusal is a
 * NOT_CAPABLE error naming the reason, and one `artifact.refused` audit record (the module's
 * sha256 and the reason — never the manifest's content beyond its signer).
 *
 * Does not protect against: the engine's own interpreters and toolchain (QuickJS, CPython,
 * clang), which are not modules a caller passes and are not gated; spawned commands, which the
 * operator registered.
 */

import { SandboxError } from '../errors.ts';
import { sha256Hex, signedModuleRefusal } from '../provenance/artifact.ts';

export type RecordRefusal = (detail: { reason: string; sha256: string }) => void;

/** Throw NOT_CAPABLE (after recording it) unless `bytes` may run under `trusted`. */
export function admitSigned(trusted: readonly string[] | null, bytes: Uint8Array, artifact: unknown, record: RecordRefusal): void {
  if (trusted === null) return;
  const reason = signedModuleRefusal(bytes, artifact, trusted);
  if (reason === null) return;
  const sha256 = sha256Hex(bytes);
  record({ reason, sha256 });
  throw new SandboxError('NOT_CAPABLE', `refusing to run the module: ${reason}`, { reason, sha256 });
}
