/**
 * Run receipts: a statement, signed with the engine's Ed25519 key, of what ran, with what powers,
 * on what input, and what came out.
 *
 * Owns: the receipt format and its check. A receipt is `{ receipt, signature }` where `receipt`
 * is `{ v: 1, type, engine: { version, did }, tenant, id, module: { sha256, bytes }, input:
 * { sha256 }, profile, caps, limits: { memoryBytes, timeoutMs, fuel }, fuelMetered, fuelUsed,
 * output: { sha256 }, outcome: { ok, exitCode, error }, hostCalls, persistentState, audit:
 * { seq, mac, keyId } | null, time }` and `signature` is Ed25519 (base64url) over its canonical
 * JSON (canonical.ts) under `engine.did`. The input hash covers the run's canonical `RunInput`
 * (export, arguments, argv, environment, stdin); the output hash covers `{ stdout, stderr,
 * result, exitCode }` as the run returned them — so a replay compares hashes, never content.
 *
 * Invariant: editing any field of a receipt — or adding one — makes `checkReceipt` fail; a
 * receipt is parsed as untrusted input (bounded, exact types) before its signature is checked.
 *
 * Does not protect against: anyone holding the engine key (they can sign any receipt); a guest
 * whose output depends on the clock or on randomness (its replay's hash differs, and says so);
 * the receipt's `audit` anchor being checked — that needs the audit key (`membrane audit verify`).
 */

import { createHash } from 'node:crypto';
import { SandboxError } from '../errors.ts';
import { canonical, canonicalBytes } from './canonical.ts';
import { verifyForDid } from './did.ts';
import type { Identity } from './identity.ts';
import { anchorProblem, type AuditAnchor } from './anchor.ts';
import { EXEC_RECEIPT_TYPE, execShapeProblem, type SignedExecReceipt } from './exec-receipt.ts';

export const RECEIPT_TYPE = 'membrane/receipt';
/** A receipt file larger than this is not one. */
export const MAX_RECEIPT_BYTES = 64 * 1024;

/** What a run was given, in the form its hash covers (and `membrane replay --input` reads). */
export interface RunInput {
  readonly invoke?: string;
  /** Export arguments as text (an i64 `10n` is "10"). */
  readonly args?: readonly string[];
  readonly argv?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  /** stdin, base64. */
  readonly stdin?: string;
}

export interface RunReceipt {
  readonly v: 1;
  readonly type: typeof RECEIPT_TYPE;
  readonly engine: { readonly version: string; readonly did: string };
  readonly tenant: string;
  readonly id: string;
  readonly module: { readonly sha256: string; readonly bytes: number };
  readonly input: { readonly sha256: string };
  readonly profile: string;
  readonly caps: readonly string[];
  readonly limits: { readonly memoryBytes: number; readonly timeoutMs: number; readonly fuel: number };
  readonly fuelMetered: boolean;
  readonly fuelUsed: number;
  readonly output: { readonly sha256: string };
  readonly outcome: { readonly ok: boolean; readonly exitCode: number | null; readonly error: string | null };
  /** Host calls the run made (commands, brokers, host functions, queries); 0 means none. */
  readonly hostCalls: number;
  /** The run read or wrote state that outlives it (a named VFS, mounts). */
  readonly persistentState: boolean;
  /** Where the audit trail recorded this receipt (anchor.ts); null when it could not be recorded. */
  readonly audit: AuditAnchor | null;
  readonly time: string;
}

export interface SignedReceipt {
  readonly receipt: RunReceipt;
  readonly signature: string;
}

/** A run's or an exec's receipt, signed (what `parseReceipt` reads). */
export type AnySignedReceipt = SignedReceipt | SignedExecReceipt;

export interface RunOutput {
  readonly stdout: string;
  readonly stderr: string;
  readonly result?: unknown;
  readonly exitCode?: number;
}

export const sha256 = (data: Uint8Array | string): string => createHash('sha256').update(data).digest('hex');

/** The canonical input object (absent parts left out) and its hash. */
export function inputHash(input: RunInput): string {
  return sha256(canonical(normalizeInput(input)));
}

export function normalizeInput(input: RunInput): RunInput {
  return {
    ...(input.invoke !== undefined ? { invoke: input.invoke } : {}),
    ...(input.args && input.args.length > 0 ? { args: input.args.map(String) } : {}),
    ...(input.argv && input.argv.length > 0 ? { argv: input.argv.map(String) } : {}),
    ...(input.env && Object.keys(input.env).length > 0 ? { env: { ...input.env } } : {}),
    ...(input.stdin !== undefined && input.stdin !== '' ? { stdin: input.stdin } : {}),
  };
}

export function outputHash(out: RunOutput): string {
  return sha256(canonical({ stdout: out.stdout, stderr: out.stderr, result: out.result ?? null, exitCode: out.exitCode ?? null }));
}

export function signReceipt(receipt: RunReceipt, engine: Identity): SignedReceipt {
  if (receipt.engine.did !== engine.did) throw new SandboxError('INTERNAL', 'a receipt names the key that signs it');
  return { receipt, signature: engine.keys.sign(canonicalBytes(receipt)) };
}

export function signExecReceipt(receipt: SignedExecReceipt['receipt'], engine: Identity): SignedExecReceipt {
  if (receipt.engine.did !== engine.did) throw new SandboxError('INTERNAL', 'a receipt names the key that signs it');
  return { receipt, signature: engine.keys.sign(canonicalBytes(receipt)) };
}

const HEX64 = /^[0-9a-f]{64}$/;
const FIELDS = ['audit', 'caps', 'engine', 'fuelMetered', 'fuelUsed', 'hostCalls', 'id', 'input', 'limits', 'module', 'outcome', 'output', 'persistentState', 'profile', 'tenant', 'time', 'type', 'v'];

function shapeProblem(r: Record<string, unknown>): string | null {
  const keys = Object.keys(r).sort();
  if (keys.length !== FIELDS.length || keys.some((k, i) => k !== FIELDS[i])) return `a receipt has exactly the fields ${FIELDS.join(', ')}`;
  if (r['v'] !== 1 || r['type'] !== RECEIPT_TYPE) return `not a version-1 ${RECEIPT_TYPE}`;
  const obj = (k: string): Record<string, unknown> => (r[k] !== null && typeof r[k] === 'object' && !Array.isArray(r[k]) ? (r[k] as Record<string, unknown>) : {});
  if (typeof obj('engine')['did'] !== 'string' || typeof obj('engine')['version'] !== 'string') return 'the receipt names no engine key';
  for (const k of ['module', 'input', 'output'] as const) if (typeof obj(k)['sha256'] !== 'string' || !HEX64.test(obj(k)['sha256'] as string)) return `the receipt's ${k} hash is not 64 hex digits`;
  for (const k of ['fuelUsed', 'hostCalls'] as const) if (typeof r[k] !== 'number' || !Number.isSafeInteger(r[k]) || (r[k] as number) < 0) return `the receipt's ${k} is not a count`;
  if (typeof r['tenant'] !== 'string' || typeof r['id'] !== 'string' || typeof r['profile'] !== 'string' || typeof r['time'] !== 'string') return 'the receipt\'s tenant, id, profile and time are strings';
  if (!Array.isArray(r['caps']) || !r['caps'].every((c) => typeof c === 'string')) return 'the receipt\'s caps are strings';
  if (typeof obj('outcome')['ok'] !== 'boolean') return 'the receipt has no outcome';
  return anchorProblem(r['audit']);
}

/** Parse a receipt file's text (a run's or an exec's): the signed receipt, or why it is not one. */
export function parseReceipt(text: string): AnySignedReceipt | string {
  if (Buffer.byteLength(text, 'utf8') > MAX_RECEIPT_BYTES) return `a receipt is at most ${MAX_RECEIPT_BYTES} bytes`;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'the receipt is not JSON';
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'the receipt is not a JSON object';
  const env = value as Record<string, unknown>;
  if (Object.keys(env).sort().join(',') !== 'receipt,signature' || typeof env['signature'] !== 'string') return 'a signed receipt is { receipt, signature }';
  const r = env['receipt'];
  if (r === null || typeof r !== 'object' || Array.isArray(r)) return 'the receipt is not an object';
  const rec = r as Record<string, unknown>;
  return (rec['type'] === EXEC_RECEIPT_TYPE ? execShapeProblem(rec) : shapeProblem(rec)) ?? (value as AnySignedReceipt);
}

export interface ReceiptCheck {
  readonly valid: boolean;
  readonly signer: string | null;
  readonly reason: string | null;
}

/** Check a signed receipt offline: its shape, its signature under its engine DID, and (if given) that DID is trusted. */
export function checkReceipt(signed: AnySignedReceipt | string, trust?: readonly string[]): ReceiptCheck {
  if (typeof signed === 'string') return { valid: false, signer: null, reason: signed };
  const did = signed.receipt.engine.did;
  let bytes: Buffer;
  try {
    bytes = canonicalBytes(signed.receipt);
  } catch {
    return { valid: false, signer: did, reason: 'the receipt is not plain JSON' };
  }
  if (!verifyForDid(did, bytes, signed.signature)) return { valid: false, signer: did, reason: 'the signature does not verify (a field was edited, or another key signed it)' };
  if (trust && !trust.includes(did)) return { valid: false, signer: did, reason: `the engine key ${did} is not one of the trusted DIDs` };
  return { valid: true, signer: did, reason: null };
}
