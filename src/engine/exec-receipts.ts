/**
 * An exec with a receipt (`engine.exec({ ..., receipt: true })`): the snippet runs, then a receipt
 * of it (provenance/exec-receipt.ts) is anchored in the audit trail and signed with the engine's
 * key; and the replay of one.
 *
 * Owns: gathering an exec receipt's facts — the source's and context's hashes, the resolved grant
 * and limits, fuel used, the output's hashes, the outcome, the snippet's power requests counted by
 * name (the lane's `onPower`, so refused requests count too) — and `replayExecReceipt`.
 * Invariant: a receipt is returned only beside the outcome it describes; a receipt that could not
 * be anchored says so (`audit: null` and a warning). Only a snippet that made no power request and
 * kept no state replays, and only with the very source and context the receipt hashes.
 *
 * Does not protect against: the C/C++ exec languages (they compile and run a module: no receipt,
 * a warning says so — `engine.run` receipts the module); a snippet whose output depends on the
 * clock or randomness (its replay differs, and says so).
 */

import { toSandboxError } from '../errors.ts';
import { resolvePolicy } from '../policy/resolve.ts';
import { engineIdentity } from '../provenance/identity.ts';
import { signExecReceipt } from '../provenance/receipt.ts';
import { EXEC_RECEIPT_TYPE, MAX_POWER_NAMES, OTHER_POWER, execInputHash, execOutputHash, execOutputHashes, isPowerName, powerCallTotal, sourceHash, type ExecReceipt, type SignedExecReceipt } from '../provenance/exec-receipt.ts';
import type { AnchoredEvent, AuditAnchor } from '../provenance/anchor.ts';
import type { ExecOptions, ExecOutcome } from '../lanes/index.ts';
import type { EngineConfig } from './options.ts';
import { engineVersion } from './engine-version.ts';

export interface ExecReceiptDeps {
  readonly config: EngineConfig;
  /** Record the receipt's event in the audit trail and say where (Brokers.anchor). */
  readonly anchor: (event: AnchoredEvent) => AuditAnchor;
  /** The engine's own exec (called without `receipt`). */
  readonly exec: (opts: ExecOptions) => Promise<ExecOutcome>;
}

const LANGUAGES = ['js', 'ts', 'python'] as const;
type Language = (typeof LANGUAGES)[number];

/** Power names, counted: at most MAX_POWER_NAMES keys (guest-chosen names that are not power names count as `(other)`). */
class PowerTally {
  readonly counts = new Map<string, number>();
  see(power: string): void {
    let key = isPowerName(power) ? power : OTHER_POWER;
    if (!this.counts.has(key) && this.counts.size >= MAX_POWER_NAMES - 1) key = OTHER_POWER;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }
  sorted(): Record<string, number> {
    return Object.fromEntries([...this.counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }
}

/** Run a snippet, then sign a receipt of it. */
export async function execWithReceipt(deps: ExecReceiptDeps, opts: ExecOptions): Promise<ExecOutcome> {
  const { receipt: _, ...plain } = opts;
  const language = opts.language;
  if (!(LANGUAGES as readonly string[]).includes(language)) {
    const r = await deps.exec(plain);
    return { ...r, warnings: [...r.warnings, 'no receipt: exec receipts cover js, ts and python snippets (run a compiled module with engine.run to receipt it)'] };
  }
  let policy;
  try {
    policy = resolvePolicy(opts, deps.config);
  } catch {
    return deps.exec(plain); // it fails the same way; there is nothing to receipt
  }
  const tally = new PowerTally();
  const outer = opts.onPower;
  const r = await deps.exec({ ...plain, onPower: (p) => (tally.see(p), outer?.(p)) });
  if (typeof opts.code !== 'string') return r;
  const warnings = [...r.warnings];
  const tenant = opts.tenant ?? 'default';
  let hashes;
  try {
    // The context as the lane saw it (JSON round-tripped); the result is JSON already.
    hashes = { input: { sha256: execInputHash(opts.context === undefined ? undefined : JSON.parse(JSON.stringify(opts.context))) }, output: execOutputHashes(r) };
  } catch {
    return { ...r, warnings: [...warnings, 'no receipt: the context or result is not plain JSON, so it has no hash'] };
  }
  const facts = {
    source: { sha256: sourceHash(opts.code), bytes: Buffer.byteLength(opts.code), language: language as Language },
    ...hashes,
    fuelUsed: r.fuelUsed,
    powerCalls: tally.sorted(),
  };
  let audit: AuditAnchor | null = null;
  try {
    audit = deps.anchor({ tenant, instance: '', kind: 'exec.receipt', detail: { source: facts.source.sha256, input: facts.input.sha256, output: facts.output.sha256, fuelUsed: facts.fuelUsed, powerCalls: [...tally.counts.values()].reduce((a, b) => a + b, 0) } });
  } catch (e) {
    warnings.push(`the receipt is not anchored in the audit log: ${toSandboxError(e).message}`);
  }
  const engine = engineIdentity();
  const receipt: ExecReceipt = {
    v: 1,
    type: EXEC_RECEIPT_TYPE,
    engine: { version: engineVersion(), did: engine.did },
    tenant,
    ...facts,
    profile: r.profile,
    caps: [...policy.caps],
    hostCaps: [...policy.hostCaps],
    limits: { memoryBytes: policy.memoryBytes, timeoutMs: policy.timeoutMs, fuel: policy.fuel },
    fuelMetered: deps.config.fuel,
    outcome: { ok: r.ok, error: r.error?.code ?? null },
    persistentState: opts.vfs !== undefined,
    audit,
    time: new Date().toISOString(),
  };
  return { ...r, warnings, receipt: signExecReceipt(receipt, engine) };
}

export interface ExecReplayReport {
  readonly replayed: boolean;
  readonly reason: string | null;
  readonly outputMatches: boolean;
  readonly fuelMatches: boolean;
  readonly outcomeMatches: boolean;
}

const refused = (reason: string): ExecReplayReport => ({ replayed: false, reason, outputMatches: false, fuelMatches: false, outcomeMatches: false });

/**
 * Re-run a receipted snippet and compare. `signed` must already be checked (`checkReceipt`).
 * Refused, saying why, when the snippet made any power request, used a named VFS, or the source or
 * context given is not the one the receipt hashes.
 */
export async function replayExecReceipt(exec: (opts: ExecOptions) => Promise<ExecOutcome>, signed: SignedExecReceipt, code: string, context: unknown): Promise<ExecReplayReport> {
  const r = signed.receipt;
  const calls = powerCallTotal(r);
  if (calls > 0) {
    const named = Object.entries(r.powerCalls).map(([k, n]) => `${k} ×${n}`).join(', ');
    return refused(`the snippet made ${calls} power call(s) (${named}): its output depended on the world outside the sandbox, so it cannot be replayed`);
  }
  if (r.persistentState) return refused('the snippet used a named persistent VFS: its output depended on state the receipt does not hold');
  if (sourceHash(code) !== r.source.sha256) return refused('the source is not the one the receipt names (its sha256 differs)');
  if (execInputHash(context) !== r.input.sha256) return refused('the context is not the one the receipt names (its hash differs)');
  const again = await exec({
    language: r.source.language,
    code,
    ...(context !== undefined ? { context } : {}),
    tenant: r.tenant,
    profile: r.profile,
    caps: [...r.caps, ...r.hostCaps],
    memoryBytes: r.limits.memoryBytes,
    timeoutMs: r.limits.timeoutMs,
    fuel: r.limits.fuel,
  });
  const outputMatches = execOutputHash(again) === r.output.sha256;
  const fuelMatches = again.fuelUsed === r.fuelUsed;
  const outcomeMatches = again.ok === r.outcome.ok && (again.error?.code ?? null) === r.outcome.error;
  const reason = !outputMatches
    ? 'the output differs from the receipted output (its hash): the snippet is not deterministic (a clock? randomness?) or the receipt is not of this run'
    : !outcomeMatches
      ? `the output matches but the outcome differs (${again.error?.code ?? 'ok'} now, ${r.outcome.error ?? 'ok'} receipted)`
      : fuelMatches || !r.fuelMetered
        ? null
        : `the output matches but fuel differs (${again.fuelUsed} now, ${r.fuelUsed} receipted)`;
  return { replayed: true, reason, outputMatches, fuelMatches, outcomeMatches };
}
