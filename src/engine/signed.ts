/**
 * The engine's `requireSigned` gate: before a module is prepared for a top-level run or a start,
 * an engine configured with trusted DIDs checks the module's signed manifest
 * (provenance/artifact.ts `signedModuleRefusal`). A `did:web` signer's document comes from the
 * operator (`didDocuments`) or, when `didWebFetch` is on, from its host through the network guard
 * (provenance/did-resolve.ts).
 *
 * Invariant: a refused module is never rewritten, compiled or instantiated; the refusal is a
 * NOT_CAPABLE error naming the reason, and one `artifact.refused` audit record (the module's
 * sha256 and the reason — never the manifest's content beyond its signer). A did:web document is
 * looked up only for a signer the operator trusts, and only used when its `id` is that signer.
 *
 * Modules a guest names by VFS path are refused by the command paths themselves
 * (bridge/host-services.ts `commandBytes`, lanes/host.ts `fromVfs`): they carry no manifest — in
 * an os_process child too, whose engine gets an empty trusted list under its parent's gate
 * (os-process/child.ts; the call's own module was admitted by the parent).
 *
 * Does not protect against: the engine's own interpreters and toolchain (QuickJS, CPython,
 * clang), which are not modules a caller passes and are not gated; spawned commands, which the
 * operator registered; a did:web host publishing another key (did:web trusts its host).
 */

import { SandboxError } from '../errors.ts';
import { parseSignedArtifact, sha256Hex, signedModuleRefusal } from '../provenance/artifact.ts';
import type { DidResolver } from '../provenance/did-resolve.ts';

export type RecordRefusal = (detail: { reason: string; sha256: string }) => void;

/** What the gate reads from the engine's configuration. */
export interface SignedGate {
  readonly requireSigned: readonly string[] | null;
  readonly didResolver: DidResolver | null;
  /** The operator's own modules (registered commands, the toolchain): not gated. */
  readonly operatorModule?: (bytes: Uint8Array) => boolean;
}

/** The documents a trusted did:web signer needs (empty for a did:key, or an untrusted signer), or why it has none. */
async function documentsFor(gate: SignedGate, artifact: unknown): Promise<ReadonlyMap<string, unknown> | string> {
  const parsed = artifact === undefined || artifact === null ? null : parseSignedArtifact(artifact);
  if (parsed === null || typeof parsed === 'string') return new Map();
  const signer = parsed.manifest.signer;
  if (!signer.startsWith('did:web:') || !gate.requireSigned!.includes(signer) || gate.didResolver === null) return new Map();
  const r = await gate.didResolver.resolve(signer);
  return 'doc' in r ? new Map([[signer, r.doc]]) : r.reason;
}

/**
 * Throw NOT_CAPABLE (after recording it) unless `bytes` may run under the gate's trusted DIDs;
 * otherwise the bytes to run from now on. Under the gate that is a private copy, taken before the
 * first await: a caller who changes its buffer while the signature is checked (an in-process
 * embedder, a view of memory something else writes) changes nothing that runs — the bytes
 * verified are the bytes prepared. Without the gate (or for the operator's own module) it is
 * `bytes` itself.
 */
export async function admitSigned(gate: SignedGate, bytes: Uint8Array, artifact: unknown, record: RecordRefusal): Promise<Uint8Array> {
  if (gate.requireSigned === null || gate.operatorModule?.(bytes) === true) return bytes;
  const own = bytes.slice();
  const documents = await documentsFor(gate, artifact);
  const reason = typeof documents === 'string' ? documents : signedModuleRefusal(own, artifact, gate.requireSigned, documents);
  if (reason === null) return own;
  const sha256 = sha256Hex(own);
  record({ reason, sha256 });
  throw new SandboxError('NOT_CAPABLE', `refusing to run the module: ${reason}`, { reason, sha256 });
}
