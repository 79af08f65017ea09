/**
 * A run with a receipt (`engine.run(bytes, { receipt: true })`): the run, then a receipt of it
 * (provenance/receipt.ts) recorded in the audit log and signed with the engine's key.
 *
 * Owns: gathering a receipt's facts — the module's and input's hashes, the resolved grant and
 * limits, fuel used, the output's hash, the outcome, how many host calls the run made (counted by
 * HostServices for the run's instance id, which a receipt run always fixes so a replay can give
 * the guest the same `session_info`) — and anchoring it: one `run.receipt` audit record whose seq
 * and MAC the receipt carries (or, with an embedder's audit sink, the anchor it answers:
 * provenance/anchor.ts).
 *
 * Invariant: a receipt is returned only beside the result it describes; a receipt that could not
 * be anchored in the audit log says so (`audit: null` and a warning), it is never anchored to a
 * record that is not its own.
 *
 * Does not protect against: an embedder's audit sink forgetting what it was handed (the anchor
 * then proves only what the engine gave it: provenance/anchor.ts); timing (durationMs is not
 * receipted: it is not reproducible).
 */

import { randomUUID } from 'node:crypto';
import { toSandboxError } from '../errors.ts';
import { resolvePolicy } from '../policy/resolve.ts';
import { engineIdentity } from '../provenance/identity.ts';
import { inputHash, outputHash, sha256, signReceipt, RECEIPT_TYPE, type RunInput, type RunReceipt, type SignedReceipt } from '../provenance/receipt.ts';
import type { AnchoredEvent, AuditAnchor } from '../provenance/anchor.ts';
import { engineVersion } from './engine-version.ts';
export { execWithReceipt, replayExecReceipt, type ExecReplayReport } from './exec-receipts.ts';
import type { RunOptions } from './guest-spec.ts';
import type { EngineConfig } from './options.ts';
import type { RunResult } from './results.ts';
import type { ArgValue } from './values.ts';
import type { PolicyConfig } from '../policy/resolve.ts';

export interface ReceiptDeps {
  readonly config: EngineConfig;
  /** Record the receipt's event in the audit trail and say where (Brokers.anchor). */
  readonly anchor: Anchor;
  readonly watch: (id: string) => { readonly calls: number; unwatch(): void };
  readonly execute: (bytes: Uint8Array, opts: RunOptions) => Promise<RunResult>;
}

export type Anchor = (event: AnchoredEvent) => AuditAnchor;

/** The input a run was given, in the form its hash covers. */
export function runInputOf(opts: RunOptions): RunInput {
  const stdin = opts.stdin === undefined ? undefined : Buffer.from(typeof opts.stdin === 'string' ? new TextEncoder().encode(opts.stdin) : opts.stdin).toString('base64');
  return {
    ...(opts.invoke !== undefined ? { invoke: opts.invoke } : {}),
    ...(opts.args ? { args: opts.args.map(String) } : {}),
    ...(opts.argv ? { argv: [...opts.argv] } : {}),
    ...(opts.env ? { env: { ...opts.env } } : {}),
    ...(stdin !== undefined ? { stdin } : {}),
  };
}

interface Sealable {
  readonly config: EngineConfig;
  readonly anchor: Anchor;
  readonly tenant: string;
  readonly id: string;
  readonly module: RunReceipt['module'];
  readonly input: RunInput;
  readonly policy: { readonly profile: string; readonly caps: readonly string[]; readonly memoryBytes: number; readonly timeoutMs: number; readonly fuel: number };
  readonly hostCalls: number;
  readonly persistentState: boolean;
}

/** Anchor a receipt of `result` in the audit log and sign it with the engine's key. */
function seal(s: Sealable, result: RunResult): RunResult & { receipt: SignedReceipt } {
  const warnings = [...result.warnings];
  const facts = { module: s.module, input: { sha256: inputHash(s.input) }, output: { sha256: outputHash(result) }, fuelUsed: result.fuelUsed, hostCalls: s.hostCalls };
  let audit: RunReceipt['audit'] = null;
  try {
    audit = s.anchor({ tenant: s.tenant, instance: s.id, kind: 'run.receipt', detail: { module: facts.module.sha256, input: facts.input.sha256, output: facts.output.sha256, fuelUsed: facts.fuelUsed, hostCalls: facts.hostCalls } });
  } catch (e) {
    warnings.push(`the receipt is not anchored in the audit log: ${toSandboxError(e).message}`);
  }
  const engine = engineIdentity();
  const receipt: RunReceipt = {
    v: 1,
    type: RECEIPT_TYPE,
    engine: { version: engineVersion(), did: engine.did },
    tenant: s.tenant,
    id: s.id,
    ...facts,
    profile: s.policy.profile,
    caps: [...s.policy.caps],
    limits: { memoryBytes: s.policy.memoryBytes, timeoutMs: s.policy.timeoutMs, fuel: s.policy.fuel },
    fuelMetered: s.config.fuel,
    outcome: { ok: result.ok, exitCode: result.exitCode ?? null, error: result.error?.code ?? null },
    persistentState: s.persistentState,
    audit,
    time: new Date().toISOString(),
  };
  return { ...result, warnings, receipt: signReceipt(receipt, engine) };
}

/** Run, then sign a receipt of the run. */
export async function runWithReceipt(deps: ReceiptDeps, bytes: Uint8Array, opts: RunOptions): Promise<RunResult & { receipt?: SignedReceipt }> {
  const id = opts.id ?? `receipt-${randomUUID()}`;
  const tenant = opts.tenant ?? 'default';
  let policy;
  try {
    policy = resolvePolicy(opts, deps.config);
  } catch {
    return deps.execute(bytes, { ...opts, id }); // the run fails the same way; there is nothing to receipt
  }
  const watch = deps.watch(id);
  let result: RunResult;
  try {
    result = await deps.execute(bytes, { ...opts, id });
  } finally {
    watch.unwatch();
  }
  const persistentState = opts.vfs !== undefined || opts.vfsFile !== undefined || (opts.mounts?.length ?? 0) > 0;
  return seal({ config: deps.config, anchor: deps.anchor, tenant, id, module: { sha256: sha256(bytes), bytes: bytes.length }, input: runInputOf(opts), policy, hostCalls: watch.calls, persistentState }, result);
}

export interface CallReceiptDeps {
  readonly config: EngineConfig;
  readonly anchor: Anchor;
  readonly watch: ReceiptDeps['watch'];
  readonly tenant: string;
  readonly id: string;
  readonly policy: PolicyConfig;
  /** The module's content hash (sha256 of the bytes the instance started from) and size. */
  readonly module: RunReceipt['module'];
}

/** `Instance`'s `receipted` dependency (its facts fixed now, so it holds no module bytes). */
export function callReceipts(deps: CallReceiptDeps): (name: string, args: readonly ArgValue[], opts: { timeoutMs?: number; fuel?: number }, call: () => Promise<RunResult>) => Promise<RunResult> {
  return (name, args, opts, call) => callWithReceipt(deps, name, args, opts, call);
}

/**
 * A call on a persistent instance, with a receipt: `persistentState` is always true (the
 * instance's memory carries over from earlier calls), so it verifies but never replays.
 */
export async function callWithReceipt(deps: CallReceiptDeps, name: string, args: readonly ArgValue[], opts: { timeoutMs?: number; fuel?: number }, call: () => Promise<RunResult>): Promise<RunResult> {
  const watch = deps.watch(deps.id);
  let result: RunResult;
  try {
    result = await call();
  } finally {
    watch.unwatch();
  }
  const p = deps.policy;
  const policy = { ...p, timeoutMs: Math.min(p.timeoutMs, opts.timeoutMs ?? Infinity), fuel: Math.min(p.fuel, opts.fuel ?? Infinity) };
  return seal({ config: deps.config, anchor: deps.anchor, tenant: deps.tenant, id: deps.id, module: deps.module, input: { invoke: name, args: args.map(String) }, policy, hostCalls: watch.calls, persistentState: true }, result);
}

export interface ReplayReport {
  /** The guest was run again. */
  readonly replayed: boolean;
  /** Why not (a refusal), or why the replay disagrees. */
  readonly reason: string | null;
  readonly outputMatches: boolean;
  readonly fuelMatches: boolean;
  readonly outcomeMatches: boolean;
}

const refused = (reason: string): ReplayReport => ({ replayed: false, reason, outputMatches: false, fuelMatches: false, outcomeMatches: false });

/**
 * Re-run a receipted run and compare: only a pure run replays — one that made no host calls and
 * kept no state — given the very module and input the receipt hashes, under its grant and limits.
 * `signed` must already be checked (`checkReceipt`).
 */
export async function replayReceipt(run: (bytes: Uint8Array, opts: RunOptions) => Promise<RunResult>, signed: SignedReceipt, bytes: Uint8Array, input: RunInput): Promise<ReplayReport> {
  const r = signed.receipt;
  if (r.hostCalls > 0) return refused(`the run made ${r.hostCalls} host call(s) (brokers, commands or host functions): its output depended on the world outside the guest, so it cannot be replayed`);
  if (r.persistentState) return refused('the run used a persistent VFS or mounts: its output depended on state the receipt does not hold');
  if (sha256(bytes) !== r.module.sha256) return refused('the module is not the one the receipt names (its sha256 differs)');
  if (inputHash(input) !== r.input.sha256) return refused('the input is not the one the receipt names (its hash differs)');
  const again = await run(bytes, {
    tenant: r.tenant,
    id: r.id,
    profile: r.profile,
    caps: [...r.caps],
    memoryBytes: r.limits.memoryBytes,
    timeoutMs: r.limits.timeoutMs,
    fuel: r.limits.fuel,
    ...(input.invoke !== undefined ? { invoke: input.invoke } : {}),
    ...(input.args ? { args: [...input.args] } : {}),
    ...(input.argv ? { argv: [...input.argv] } : {}),
    ...(input.env ? { env: { ...input.env } } : {}),
    ...(input.stdin !== undefined ? { stdin: new Uint8Array(Buffer.from(input.stdin, 'base64')) } : {}),
  });
  const outputMatches = outputHash(again) === r.output.sha256;
  const fuelMatches = again.fuelUsed === r.fuelUsed;
  const outcomeMatches = again.ok === r.outcome.ok && (again.exitCode ?? null) === r.outcome.exitCode && (again.error?.code ?? null) === r.outcome.error;
  const reason = outputMatches ? (fuelMatches || !r.fuelMetered ? null : `the output matches but fuel differs (${again.fuelUsed} now, ${r.fuelUsed} receipted)`) : 'the output differs from the receipted output (its hash): the guest is not deterministic (a clock? randomness?) or the receipt is not of this run';
  return { replayed: true, reason, outputMatches, fuelMatches, outcomeMatches };
}
