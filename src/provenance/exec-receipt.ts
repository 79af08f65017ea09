/**
 * Exec receipts: a statement, signed with the engine's Ed25519 key, of a snippet run by
 * `engine.exec` (JavaScript, TypeScript, Python) — what source ran, on what context, with what
 * powers, and what came out.
 *
 * Owns: the format and its shape check. `{ v: 1, type: "membrane/exec-receipt", engine:
 * { version, did }, tenant, source: { sha256, bytes, language }, input: { sha256 }, profile, caps,
 * hostCaps, limits: { memoryBytes, timeoutMs, fuel }, fuelMetered, fuelUsed, output: { sha256,
 * stdout, stderr, result },
 * outcome: { ok, error }, powerCalls: { "kv.get": 2, … }, persistentState, audit, time }`, signed
 * like a run's receipt (receipt.ts). The source hash covers the code's UTF-8 bytes; the input hash
 * the canonical `{ context }` (absent: `{}`); the output hash (`sha256`, what a replay compares) the
 * canonical `{ stdout, stderr, result }` (`result` null when absent), and each part its own hash
 * (stdout and stderr: their UTF-8 text; result: its canonical JSON), so one part can be shown alone; `powerCalls` counts every power request the snippet made,
 * refused ones too, by name (names outside the lane's table count under `(other)`).
 * Invariant: a receipt is parsed as untrusted input — exact fields, bounded counts and names —
 * before its signature is checked (`checkReceipt`, receipt.ts).
 *
 * Does not protect against: anyone holding the engine key; a snippet reading the clock or random
 * numbers (its replay's output hash differs, and says so).
 */

import { createHash } from 'node:crypto';
import { canonical } from './canonical.ts';
import { anchorProblem, type AuditAnchor } from './anchor.ts';

export const EXEC_RECEIPT_TYPE = 'membrane/exec-receipt';
/** Distinct power names one receipt counts (the lane table has fewer; the rest are `(other)`). */
export const MAX_POWER_NAMES = 64;
export const OTHER_POWER = '(other)';

export interface ExecReceipt {
  readonly v: 1;
  readonly type: typeof EXEC_RECEIPT_TYPE;
  readonly engine: { readonly version: string; readonly did: string };
  readonly tenant: string;
  readonly source: { readonly sha256: string; readonly bytes: number; readonly language: 'js' | 'ts' | 'python' };
  readonly input: { readonly sha256: string };
  readonly profile: string;
  readonly caps: readonly string[];
  readonly hostCaps: readonly string[];
  readonly limits: { readonly memoryBytes: number; readonly timeoutMs: number; readonly fuel: number };
  readonly fuelMetered: boolean;
  readonly fuelUsed: number;
  readonly output: { readonly sha256: string; readonly stdout: string; readonly stderr: string; readonly result: string };
  readonly outcome: { readonly ok: boolean; readonly error: string | null };
  /** Power requests the snippet made, by name; {} means none. */
  readonly powerCalls: Readonly<Record<string, number>>;
  /** The snippet's powers used a named persistent VFS. */
  readonly persistentState: boolean;
  readonly audit: AuditAnchor | null;
  readonly time: string;
}

export interface SignedExecReceipt {
  readonly receipt: ExecReceipt;
  readonly signature: string;
}

const hex = (text: string): string => createHash('sha256').update(text).digest('hex');

export const sourceHash = (code: string): string => hex(code);

/** The hash of a snippet's input: the canonical `{ context }` (`{}` without one). */
export function execInputHash(context: unknown): string {
  return hex(canonical(context === undefined ? {} : { context }));
}

/** The hash of a snippet's output: the canonical `{ stdout, stderr, result }`. */
export function execOutputHash(out: { readonly stdout: string; readonly stderr: string; readonly result?: unknown }): string {
  return hex(canonical({ stdout: out.stdout, stderr: out.stderr, result: out.result ?? null }));
}

/** The output's hashes: the whole (`sha256`) and each part. */
export function execOutputHashes(out: { readonly stdout: string; readonly stderr: string; readonly result?: unknown }): ExecReceipt['output'] {
  return { sha256: execOutputHash(out), stdout: hex(out.stdout), stderr: hex(out.stderr), result: hex(canonical(out.result ?? null)) };
}

/** Total power calls a receipt counts. */
export const powerCallTotal = (r: ExecReceipt): number => Object.values(r.powerCalls).reduce((a, b) => a + b, 0);

const HEX64 = /^[0-9a-f]{64}$/;
/** `cap.op` — a lane power (`kv.get`) or a host cap's function (`acme:orders.getOrder`) — or `(other)`. */
const POWER_NAME = /^(?:[a-z][a-z0-9_]{0,63}(?::[a-z][a-z0-9_]{0,63})?\.[A-Za-z_][A-Za-z0-9_]{0,63}|\(other\))$/;
const FIELDS = ['audit', 'caps', 'engine', 'fuelMetered', 'fuelUsed', 'hostCaps', 'input', 'limits', 'outcome', 'output', 'persistentState', 'powerCalls', 'profile', 'source', 'tenant', 'time', 'type', 'v'];
const count = (x: unknown): boolean => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
const strings = (x: unknown): boolean => Array.isArray(x) && x.length <= 256 && x.every((c) => typeof c === 'string' && c.length <= 128);

/** Why `r` is not an exec receipt (null when its shape is one). */
export function execShapeProblem(r: Record<string, unknown>): string | null {
  const keys = Object.keys(r).sort();
  if (keys.length !== FIELDS.length || keys.some((k, i) => k !== FIELDS[i])) return `an exec receipt has exactly the fields ${FIELDS.join(', ')}`;
  if (r['v'] !== 1 || r['type'] !== EXEC_RECEIPT_TYPE) return `not a version-1 ${EXEC_RECEIPT_TYPE}`;
  const obj = (k: string): Record<string, unknown> => (r[k] !== null && typeof r[k] === 'object' && !Array.isArray(r[k]) ? (r[k] as Record<string, unknown>) : {});
  if (typeof obj('engine')['did'] !== 'string' || typeof obj('engine')['version'] !== 'string') return 'the receipt names no engine key';
  for (const k of ['source', 'input', 'output'] as const) if (typeof obj(k)['sha256'] !== 'string' || !HEX64.test(obj(k)['sha256'] as string)) return `the receipt's ${k} hash is not 64 hex digits`;
  const lang = obj('source')['language'];
  if (lang !== 'js' && lang !== 'ts' && lang !== 'python') return 'the receipt\'s source language is js, ts or python';
  for (const k of ['stdout', 'stderr', 'result']) if (typeof obj('output')[k] !== 'string' || !HEX64.test(obj('output')[k] as string)) return `the receipt's output ${k} hash is not 64 hex digits`;
  if (Object.keys(obj('output')).length !== 4) return 'the receipt\'s output is { sha256, stdout, stderr, result }';
  if (!count(obj('source')['bytes']) || !count(r['fuelUsed'])) return 'the receipt\'s source bytes and fuelUsed are counts';
  for (const k of ['memoryBytes', 'timeoutMs', 'fuel']) if (typeof obj('limits')[k] !== 'number') return 'the receipt\'s limits are numbers';
  if (typeof r['tenant'] !== 'string' || typeof r['profile'] !== 'string' || typeof r['time'] !== 'string') return 'the receipt\'s tenant, profile and time are strings';
  if (!strings(r['caps']) || !strings(r['hostCaps'])) return 'the receipt\'s caps and hostCaps are strings';
  if (typeof r['fuelMetered'] !== 'boolean' || typeof r['persistentState'] !== 'boolean') return 'the receipt\'s fuelMetered and persistentState are booleans';
  if (typeof obj('outcome')['ok'] !== 'boolean' || (obj('outcome')['error'] !== null && typeof obj('outcome')['error'] !== 'string')) return 'the receipt has no outcome';
  const calls = Object.entries(obj('powerCalls'));
  if (r['powerCalls'] === null || typeof r['powerCalls'] !== 'object' || Array.isArray(r['powerCalls']) || calls.length > MAX_POWER_NAMES || !calls.every(([k, n]) => POWER_NAME.test(k) && count(n) && (n as number) > 0)) {
    return 'the receipt\'s powerCalls map power names to positive counts';
  }
  return anchorProblem(r['audit']);
}

/** Whether `name` may be a key of `powerCalls` (a lane power or a host cap's function). */
export const isPowerName = (name: string): boolean => name.length <= 192 && POWER_NAME.test(name);
