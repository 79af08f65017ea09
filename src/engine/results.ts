/**
 * Call results: the one shape every run and call returns (DESIGN §9), built from what the
 * worker reported.
 *
 * Owns: turning a worker outcome (or a timeout, or a death) into `RunResult`: decoded output with
 * truncation marked, rendered values, error codes, and the metering fields every result carries.
 * Invariant: a result has `error` exactly when `ok` is false, and never holds a stack trace.
 *
 * Does not protect against: nothing; this module only shapes data.
 */

import { SandboxError, type SerializedError } from '../errors.ts';
import type { Awaited } from './bridge/worker-handle.ts';
import { renderResults, type ResultValue } from './values.ts';
import { cancelled } from '../lanes/controls.ts';
import type { SignedReceipt } from '../provenance/receipt.ts';
import { STATUS_ABNORMAL, type encodeResponse } from '../abi/command.ts';

export interface RunResult {
  readonly ok: boolean;
  /** The export's return value(s); absent for a WASI command. */
  readonly result?: ResultValue | ResultValue[];
  /** A WASI command's exit status. */
  readonly exitCode?: number;
  readonly stdout: string;
  readonly stderr: string;
  /** Fuel consumed (0 when the engine runs with fuel metering off). */
  readonly fuelUsed: number;
  readonly durationMs: number;
  readonly memoryBytes: number;
  readonly profile: string;
  readonly warnings: readonly string[];
  readonly error?: SerializedError;
  /** Raw stdout, only when the run asked for it (`captureBytes`); not part of the JSON result. */
  readonly stdoutBytes?: Uint8Array;
  /** With `stdoutBytes`: whether the output cap dropped stdout past `outputLimitBytes`. */
  readonly stdoutTruncated?: boolean;
  /** Only when the run asked for one (`receipt: true`): the signed receipt (provenance/receipt.ts). */
  readonly receipt?: SignedReceipt;
}

export interface ResultContext {
  readonly profile: string;
  readonly warnings: readonly string[];
  readonly isCommand: boolean;
  readonly timeoutMs: number;
  readonly startedAt: number;
  readonly outputLimitBytes: number;
  /**
   * The caller's signal aborted before the deadline: a job stopped by the interrupt (or whose
   * worker was terminated) ends CANCELLED instead of TIMEOUT. A job that finished first keeps
   * its own result.
   */
  readonly cancelled?: boolean;
}

const decoder = new TextDecoder('utf-8', { fatal: false });

export function failure(err: SandboxError, ctx: Pick<ResultContext, 'profile' | 'warnings'>, durationMs = 0): RunResult {
  return {
    ok: false,
    stdout: '',
    stderr: '',
    fuelUsed: 0,
    durationMs,
    memoryBytes: 0,
    profile: ctx.profile,
    warnings: [...ctx.warnings], // a copy: the caller's to change, never the (shared) policy's
    error: err.toPublic(),
  };
}

export function fromAwaited(a: Awaited, ctx: ResultContext): RunResult {
  const durationMs = round(performance.now() - ctx.startedAt);
  if (a.kind === 'timeout') return failure(stopped(ctx, durationMs), ctx, durationMs);
  if (a.kind === 'dead') return failure(a.error, ctx, durationMs);
  // Only a lane's pool parks a job, and it never reads a parked wait as a result.
  if (a.kind === 'parked') return failure(new SandboxError('INTERNAL', 'the run stopped in a host call'), ctx, durationMs);
  const { frame } = a;
  const warnings = [...ctx.warnings];
  const o = frame.outcome.ok || frame.outcome.error.code !== 'TIMEOUT' ? frame.outcome : { ...frame.outcome, error: stopped(ctx, durationMs).toPublic() };
  const stdout = decode(a.stdout, frame.stdoutTruncated, 'stdout', ctx.outputLimitBytes, warnings);
  const stderr = decode(a.stderr, frame.stderrTruncated, 'stderr', ctx.outputLimitBytes, warnings);
  if (o.ok && ctx.isCommand) {
    // The common fresh run, a command that finished: the shape below, built at once.
    return { ok: true, exitCode: o.exitCode !== null ? o.exitCode : 0, stdout, stderr, fuelUsed: frame.fuelUsed, durationMs, memoryBytes: frame.memoryBytes, profile: ctx.profile, warnings };
  }
  const base = {
    stdout,
    stderr,
    fuelUsed: frame.fuelUsed,
    durationMs,
    memoryBytes: frame.memoryBytes,
    profile: ctx.profile,
    warnings,
  };
  const exit = o.exitCode !== null ? { exitCode: o.exitCode } : ctx.isCommand && o.ok ? { exitCode: 0 } : {};
  if (o.ok) {
    return ctx.isCommand ? { ok: true, ...exit, ...base } : { ok: true, result: renderResults(o.values), ...base };
  }
  return { ok: false, ...exit, ...base, error: o.error };
}

/** Why a job stopped by the interrupt (or terminated) ended: its caller cancelled it, or its deadline. */
function stopped(ctx: ResultContext, durationMs: number): SandboxError {
  return ctx.cancelled === true ? cancelled() : timeoutError(ctx.timeoutMs, durationMs);
}

function timeoutError(timeoutMs: number, elapsedMs: number): SandboxError {
  return new SandboxError('TIMEOUT', `the call ran past its ${timeoutMs} ms budget`, { timeoutMs, elapsedMs });
}

function decode(bytes: Uint8Array, truncated: boolean, name: string, limit: number, warnings: string[]): string {
  const text = bytes.length === 0 ? '' : (shortAscii(bytes) ?? decoder.decode(bytes));
  if (!truncated) return text;
  warnings.push(`${name} truncated at ${limit} bytes`);
  return `${text}\n[membrane: ${name} truncated at ${limit} bytes]\n`;
}

/** Output this short is often plain ASCII (a line or two): read as it is, it is what UTF-8 decoding gives; null otherwise. */
const SHORT_ASCII_BYTES = 64;
function shortAscii(bytes: Uint8Array): string | null {
  if (bytes.length > SHORT_ASCII_BYTES) return null;
  let text = '';
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b >= 0x80) return null;
    text += String.fromCharCode(b);
  }
  return text;
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

/** A finished process's run result as the guest-facing response. */
export function responseOf(r: RunResult): Parameters<typeof encodeResponse>[0] {
  const enc = new TextEncoder();
  const stdout = r.stdoutBytes ?? enc.encode(r.stdout);
  const stderr = enc.encode(r.stderr);
  const truncated = { stdoutTruncated: false, stderrTruncated: false };
  if (r.ok) return { status: r.exitCode ?? 0, error: '', stdout, stderr, ...truncated };
  if (r.error?.code === 'GUEST_EXIT' && typeof r.exitCode === 'number') return { status: r.exitCode, error: '', stdout, stderr, ...truncated };
  return { status: STATUS_ABNORMAL, error: r.error?.code ?? 'INTERNAL', stdout, stderr, ...truncated };
}

