/**
 * The in-sandbox shell's host-memory bounds: what one script may make the host hold.
 *
 * Owns: the variable store (every variable's UTF-8 size counted, the total bounded by
 * MAX_SHELL_VARIABLE_BYTES), word expansion that measures before it builds (so `$A$A…` over a
 * large `A` is refused before the string exists), the argv bound of one command (MAX_ARGC
 * words, MAX_ARGV_BYTES of argv plus prefix assignments), and the script's captured output
 * (`ScriptOutput`: one growing buffer per stream, capped like the engine's output wall, the rest
 * counted and dropped). Invariant: no string or buffer the shell builds from guest-influenced
 * data exceeds these bounds, so a script holds O(bounds) host memory whatever it expands or
 * prints; a bound that would be crossed is a `SandboxError` (`MEMORY_LIMIT`, or `OUTPUT_LIMIT`
 * when the engine fails on output limits) raised before the allocation.
 *
 * Does not protect against: memory held by the engine for one command (its worker, its output
 * cap per stream, its VFS) — the engine's walls bound those — nor VFS disk use (the VFS quota).
 */

import { SandboxError } from '../errors.ts';
import { MAX_ARGC } from '../abi/command.ts';
import type { Word } from './parse.ts';

export { MAX_ARGC };
/** All variables of one script together, in UTF-8 bytes (names and values). */
export const MAX_SHELL_VARIABLE_BYTES = 1024 * 1024;
/** One command's expanded argv and prefix assignments (`K=V cmd`), in UTF-8 bytes. */
export const MAX_ARGV_BYTES = 1024 * 1024;
/** A file redirected into a command (`< FILE`) is read whole; larger files are refused. */
export const MAX_REDIRECT_INPUT_BYTES = 16 * 1024 * 1024;

const encoder = new TextEncoder();

function utf8Bytes(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

export class Variables {
  private readonly values = new Map<string, { readonly value: string; readonly bytes: number }>();
  private total = 0;
  status = 0;

  constructor(initial: Readonly<Record<string, string>> = {}) {
    for (const [k, v] of Object.entries(initial)) this.set(k, v);
  }

  get(name: string): string {
    return name === '?' ? String(this.status) : (this.values.get(name)?.value ?? '');
  }

  bytesOf(name: string): number {
    return name === '?' ? String(this.status).length : (this.values.get(name)?.bytes ?? 0);
  }

  /** Store `value`; refused, leaving the old value, if the script's variables would pass the bound. */
  set(name: string, value: string, bytes = utf8Bytes(value)): void {
    this.total = this.check(name, bytes);
    this.values.set(name, { value, bytes });
  }

  /** `NAME=word`: measured against the bound before the value is built. */
  assign(name: string, w: Word): void {
    const bytes = this.measure(w);
    this.check(name, bytes);
    this.set(name, w.map((p) => (p.kind === 'text' ? p.text : this.get(p.name))).join(''), bytes);
  }

  /** The script's variable total with `name` holding `bytes`; throws past the bound. */
  private check(name: string, bytes: number): number {
    const old = this.values.get(name);
    const nameBytes = utf8Bytes(name);
    const next = this.total - (old ? nameBytes + old.bytes : 0) + nameBytes + bytes;
    if (next > MAX_SHELL_VARIABLE_BYTES) {
      throw new SandboxError('MEMORY_LIMIT', `sh: ${printable(name)}: variables would hold ${next} bytes, over the script's ${MAX_SHELL_VARIABLE_BYTES}-byte limit`, {
        limit: 'variableBytes',
        limitBytes: MAX_SHELL_VARIABLE_BYTES,
        wantedBytes: next,
        variable: printable(name),
      });
    }
    return next;
  }

  /** The UTF-8 size `w` expands to, computed without building it. */
  measure(w: Word): number {
    let n = 0;
    for (const p of w) n += p.kind === 'text' ? utf8Bytes(p.text) : this.bytesOf(p.name);
    return n;
  }

  /** Expand `w`, refusing first if it would be longer than `limit` bytes (`what` names it in the error). */
  expand(w: Word, limit: number, what: string): string {
    const size = this.measure(w);
    if (size > limit) throw tooLong(what, size, limit);
    return w.map((p) => (p.kind === 'text' ? p.text : this.get(p.name))).join('');
  }
}

function tooLong(what: string, size: number, limit: number): SandboxError {
  return new SandboxError('MEMORY_LIMIT', `sh: ${what}: expands to ${size} bytes, over the ${limit}-byte limit`, {
    limit: 'argvBytes',
    limitBytes: limit,
    wantedBytes: size,
  });
}

/**
 * One command's words (at least one) and prefix assignments, expanded after checking the argv
 * bounds on their measured sizes (each string counted with its terminating NUL, as a C
 * argv/environ holds it).
 */
export function expandCommand(
  vars: Variables,
  words: readonly Word[],
  assigns: readonly { readonly name: string; readonly value: Word }[],
): { words: string[]; assigns: [string, string][] } {
  const name = vars.expand(words[0]!, MAX_ARGV_BYTES, 'a command name');
  if (words.length > MAX_ARGC) {
    throw new SandboxError('MEMORY_LIMIT', `sh: ${printable(name)}: argument list too long: ${words.length} words, over the limit of ${MAX_ARGC}`, {
      limit: 'argc',
      limitCount: MAX_ARGC,
      wantedCount: words.length,
    });
  }
  let size = 0;
  for (const w of words) size += vars.measure(w) + 1;
  for (const a of assigns) size += a.name.length + 1 + vars.measure(a.value) + 1;
  if (size > MAX_ARGV_BYTES) {
    throw new SandboxError('MEMORY_LIMIT', `sh: ${printable(name)}: argument list too long: ${size} bytes, over the ${MAX_ARGV_BYTES}-byte limit`, {
      limit: 'argvBytes',
      limitBytes: MAX_ARGV_BYTES,
      wantedBytes: size,
    });
  }
  return {
    words: words.map((w) => vars.expand(w, MAX_ARGV_BYTES, printable(name))),
    assigns: assigns.map((a) => [a.name, vars.expand(a.value, MAX_ARGV_BYTES, a.name)]),
  };
}

/** A name fit for a message: at most 64 characters, control characters shown as `?`. */
export function printable(s: string): string {
  const cut = s.length > 64 ? `${s.slice(0, 64)}…` : s;
  return cut.replace(/[\u0000-\u001f\u007f]/g, '?');
}

/**
 * One of the script's captured streams: a single buffer grown by doubling up to `limit` bytes;
 * past it, bytes are counted and dropped (or, with `failOnLimit`, the script ends OUTPUT_LIMIT).
 */
export class ScriptOutput {
  private buf = new Uint8Array(0);
  private size = 0;
  dropped = 0;

  constructor(
    readonly name: 'stdout' | 'stderr',
    readonly limit: number,
    private readonly failOnLimit: boolean,
  ) {}

  get truncated(): boolean {
    return this.dropped > 0;
  }

  write(data: Uint8Array | string): void {
    const bytes = typeof data === 'string' ? encoder.encode(data) : data;
    const room = this.limit - this.size;
    if (bytes.length > room) {
      if (this.failOnLimit) {
        throw new SandboxError('OUTPUT_LIMIT', `sh: the script's ${this.name} exceeded its ${this.limit}-byte limit`, { stream: this.name, limitBytes: this.limit });
      }
      this.dropped += bytes.length - room;
    }
    const take = Math.min(room, bytes.length);
    if (take === 0) return;
    if (this.size + take > this.buf.length) {
      let cap = Math.max(4096, this.buf.length);
      while (cap < this.size + take) cap *= 2;
      const next = new Uint8Array(Math.min(cap, Math.max(this.limit, this.size + take)));
      next.set(this.buf.subarray(0, this.size));
      this.buf = next;
    }
    this.buf.set(take === bytes.length ? bytes : bytes.subarray(0, take), this.size);
    this.size += take;
  }

  /** The captured text, with the engine's truncation marker when bytes were dropped. */
  text(): string {
    const text = new TextDecoder('utf-8', { fatal: false }).decode(this.buf.subarray(0, this.size));
    return this.truncated ? `${text}\n[membrane: sh ${this.name} truncated at ${this.limit} bytes]\n` : text;
  }
}
