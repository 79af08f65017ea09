/**
 * WASI preview 2, `wasi:io` (error, streams, poll) and the ambient interfaces built on it:
 * `wasi:cli` (environment, exit, stdio, terminals), `wasi:clocks`, `wasi:random` — as plain JS
 * objects in the shape jco's generated glue calls (camelCase functions, resources as classes,
 * `result` errors thrown as their payload).
 *
 * Owns: stdio over the run's captured, capped streams (stdin a byte buffer, stdout/stderr the
 * CappedStreams of the output wall); the environment exactly as the operator passed it; sleeps
 * (a pollable's `block`) bounded by the call's remaining time and cut by its interrupt.
 * Invariant: nothing here reaches the host — no descriptor, no path, no socket, no process; a
 * stream reads or writes only its own buffer; every wait has a bound. An output stream over a
 * VFS file is made by filesystem.ts through `OutputStream`'s sink.
 *
 * Does not protect against: timing side channels through the clocks (they are real clocks).
 */

import { randomFillSync } from 'node:crypto';
import { ExitSignal, GuestFault, type CallState } from '../../abi/signals.ts';
import { SandboxError } from '../../errors.ts';
import type { CappedStream } from '../output.ts';

/** Writes larger than this are split by the guest (`check-write` tells it so). */
export const MAX_WRITE_BYTES = 1 << 20;
/** One sleep slice: the interrupt and the deadline are re-checked between slices. */
const SLEEP_SLICE_MS = 50;
const encoder = new TextEncoder();

/** What the p2 interfaces need from the run (the worker builds it). */
export interface P2Context {
  readonly stdout: CappedStream;
  readonly stderr: CappedStream;
  readonly stdin: Uint8Array;
  readonly argv: readonly string[];
  readonly env: readonly (readonly [string, string])[];
  readonly state: CallState;
  remainingMs(): number;
  interrupted(): boolean;
  nap(ms: number): void;
}

/** Copy a byte list from the glue (another realm's Uint8Array, or an array of numbers) into ours. */
export function ownBytes(data: unknown): Uint8Array {
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength).slice();
  if (Array.isArray(data)) return Uint8Array.from(data as number[]);
  throw new TypeError('expected a byte list');
}

export class IoError {
  constructor(readonly message: string, readonly code: string | null = null) {}
  toDebugString(): string {
    return this.message;
  }
}

/** `stream-error` payloads, thrown for the glue to lower. */
export const closed = (): { tag: 'closed' } => ({ tag: 'closed' });
export const failed = (message: string, code: string | null = null): { tag: 'last-operation-failed'; val: IoError } => ({
  tag: 'last-operation-failed',
  val: new IoError(message, code),
});

export class Pollable {
  /** `deadline`: performance.now() time it becomes ready; null: ready now (stdio, files). */
  constructor(private readonly ctx: P2Context | null, private readonly deadline: number | null) {}
  /** When it becomes ready (performance.now() time; -Infinity: now). */
  get due(): number {
    return this.deadline ?? -Infinity;
  }
  ready(): boolean {
    return this.deadline === null || performance.now() >= this.deadline;
  }
  block(): void {
    if (this.deadline === null || !this.ctx) return;
    const { state } = this.ctx;
    for (;;) {
      state.rethrow();
      const left = this.deadline - performance.now();
      if (left <= 0) return;
      // Never past the call's own budget, nor past its interrupt: the call ends there, TIMEOUT.
      const room = this.ctx.remainingMs();
      if (room <= 0 || this.ctx.interrupted()) {
        throw (state.fault = new GuestFault(new SandboxError('TIMEOUT', 'the call reached its deadline while the guest slept', {})));
      }
      this.ctx.nap(Math.max(1, Math.min(left, room, SLEEP_SLICE_MS)));
    }
  }
}

export function poll(list: readonly Pollable[]): Uint32Array {
  if (list.length === 0) throw new TypeError('poll needs at least one pollable');
  for (;;) {
    const ready = list.flatMap((p, i) => (p.ready() ? [i] : []));
    if (ready.length > 0) return Uint32Array.from(ready);
    // The earliest deadline first (every pollable here is a clock or ready at once).
    list.reduce((a, b) => (b.due < a.due ? b : a)).block();
  }
}

export class InputStream {
  private at = 0;
  constructor(private readonly source: { read(at: number, len: number): Uint8Array; size(): number }) {}
  read(len: bigint): Uint8Array {
    const n = Number(len > BigInt(MAX_WRITE_BYTES) ? BigInt(MAX_WRITE_BYTES) : len);
    if (this.at >= this.source.size() && n > 0) throw closed();
    const out = this.source.read(this.at, n);
    this.at += out.length;
    return out;
  }
  blockingRead(len: bigint): Uint8Array {
    return this.read(len);
  }
  skip(len: bigint): bigint {
    return BigInt(this.read(len).length);
  }
  blockingSkip(len: bigint): bigint {
    return this.skip(len);
  }
  subscribe(): Pollable {
    return new Pollable(null, null);
  }
}

export class OutputStream {
  constructor(private readonly sink: (data: Uint8Array) => void) {}
  checkWrite(): bigint {
    return BigInt(MAX_WRITE_BYTES);
  }
  write(contents: unknown): void {
    const data = ownBytes(contents);
    if (data.length > MAX_WRITE_BYTES) throw failed('write larger than check-write allowed');
    this.sink(data);
  }
  blockingWriteAndFlush(contents: unknown): void {
    const data = ownBytes(contents);
    for (let i = 0; i < data.length; i += MAX_WRITE_BYTES) this.sink(data.subarray(i, i + MAX_WRITE_BYTES));
  }
  flush(): void {}
  blockingFlush(): void {}
  writeZeroes(len: bigint): void {
    this.write(new Uint8Array(Number(len > BigInt(MAX_WRITE_BYTES) ? BigInt(MAX_WRITE_BYTES) : len)));
  }
  blockingWriteZeroesAndFlush(len: bigint): void {
    this.writeZeroes(len);
  }
  splice(src: InputStream, len: bigint): bigint {
    const data = src.read(len);
    this.write(data);
    return BigInt(data.length);
  }
  blockingSplice(src: InputStream, len: bigint): bigint {
    return this.splice(src, len);
  }
  subscribe(): Pollable {
    return new Pollable(null, null);
  }
}

class TerminalInput {}
class TerminalOutput {}

const datetime = (ms: number): { seconds: bigint; nanoseconds: number } => ({ seconds: BigInt(Math.floor(ms / 1000)), nanoseconds: Math.floor(ms % 1000) * 1e6 });

/** The ambient interfaces, keyed as jco's glue asks for them (the interface name without a version). */
export function ambientP2(ctx: P2Context): Record<string, Record<string, unknown>> {
  const stdin = new InputStream({ read: (at, len) => ctx.stdin.slice(at, at + len), size: () => ctx.stdin.length });
  const stdout = new OutputStream((d) => void ctx.stdout.write(d));
  const stderr = new OutputStream((d) => void ctx.stderr.write(d));
  const start = performance.now();
  const monotonicNs = (): bigint => BigInt(Math.floor((performance.now() - start) * 1e6));
  const random = (n: bigint): Uint8Array => {
    const len = Number(n > BigInt(MAX_WRITE_BYTES) ? BigInt(MAX_WRITE_BYTES) : n);
    return randomFillSync(new Uint8Array(len));
  };
  const u64 = (): bigint => new DataView(random(8n).buffer).getBigUint64(0, true);
  return {
    'wasi:io/error': { Error: IoError },
    'wasi:io/streams': { InputStream, OutputStream },
    'wasi:io/poll': { Pollable, poll },
    'wasi:cli/environment': {
      getEnvironment: () => ctx.env.map(([k, v]) => [k, v]),
      getArguments: () => [...ctx.argv],
      initialCwd: () => '/',
    },
    'wasi:cli/exit': {
      exit: (status: { tag: string }) => {
        throw (ctx.state.exit ??= new ExitSignal(status.tag === 'ok' ? 0 : 1));
      },
      exitWithCode: (code: number) => {
        throw (ctx.state.exit ??= new ExitSignal(code & 0xff));
      },
    },
    'wasi:cli/stdin': { getStdin: () => stdin },
    'wasi:cli/stdout': { getStdout: () => stdout },
    'wasi:cli/stderr': { getStderr: () => stderr },
    'wasi:cli/terminal-input': { TerminalInput },
    'wasi:cli/terminal-output': { TerminalOutput },
    'wasi:cli/terminal-stdin': { getTerminalStdin: () => undefined },
    'wasi:cli/terminal-stdout': { getTerminalStdout: () => undefined },
    'wasi:cli/terminal-stderr': { getTerminalStderr: () => undefined },
    'wasi:clocks/wall-clock': { now: () => datetime(Date.now()), resolution: () => ({ seconds: 0n, nanoseconds: 1_000_000 }) },
    'wasi:clocks/monotonic-clock': {
      now: monotonicNs,
      resolution: () => 1000n,
      subscribeInstant: (when: bigint) => new Pollable(ctx, start + Number(when) / 1e6),
      subscribeDuration: (ns: bigint) => new Pollable(ctx, performance.now() + Number(ns) / 1e6),
    },
    'wasi:random/random': { getRandomBytes: random, getRandomU64: u64 },
    'wasi:random/insecure': { getInsecureRandomBytes: random, getInsecureRandomU64: u64 },
    'wasi:random/insecure-seed': { insecureSeed: () => [u64(), u64()] },
  };
}

export { encoder as p2Encoder };
