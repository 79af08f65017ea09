/**
 * The guest-facing byte layouts of `run_command`, `exec`, `process_spawn` and `process_wait`
 * (docs/abi.md is the contract; sdk/c/membrane.h builds and parses them in C), and the guest
 * error codes every `membrane` import returns (DESIGN §4).
 *
 * Owns: decoding a request a guest wrote into its memory and encoding the response it reads
 * back. All integers are little-endian; every section is length-prefixed:
 *
 *   request:  u8 version=1 · u8 flags=0 · u16 argc · argc × (u32 len · bytes) · u32 len · stdin
 *             argv[0] is the registered command's name; argv is a structure, never a shell line.
 *   response: u8 version=1 · u8 flags (1 stdout truncated, 2 stderr truncated) · u16 0 ·
 *             i32 status · u32 len · error code (ASCII, empty on a normal exit) ·
 *             u32 len · stdout · u32 len · stderr
 *
 * Invariant: a decode checks every length against the buffer before reading; anything malformed
 * is `INVALID` (-6), anything over a cap is `TOO_LARGE` (-4) — never an exception a guest can
 * turn into a host crash.
 *
 * Does not protect against: what the command does with its argv — that is the sandbox's job.
 */

/** What a `membrane` import returns instead of a length (DESIGN §4). */
export const GUEST_ERR = Object.freeze({
  DENIED: -1,
  RATE_LIMITED: -2,
  REVOKED: -3,
  TOO_LARGE: -4,
  NOT_FOUND: -5,
  INVALID: -6,
  TIMEOUT: -7,
  UNAVAILABLE: -8,
  QUOTA: -9,
});
export type GuestErrName = keyof typeof GUEST_ERR;

export const ABI_VERSION = 1;
/** The deepest a chain of nested commands may go (DESIGN §4: depth ≤ 8). */
export const MAX_EXEC_DEPTH = 8;
/** A request may carry at most this many arguments, each at most MAX_ARG_BYTES. */
export const MAX_ARGC = 1024;
export const MAX_ARG_BYTES = 64 * 1024;
/** The whole request (argv and stdin) a guest may hand over in one call. */
export const MAX_REQUEST_BYTES = 16 * 1024 * 1024;
/**
 * The largest module a command may be run from a VFS path (`./a.wasm`, a build's output): far
 * above any program the build lane makes, and within one frame of the worker channel.
 */
export const MAX_VFS_MODULE_BYTES = 32 * 1024 * 1024;
/** The status reported for a command that ended abnormally (trap, timeout, fuel, memory). */
export const STATUS_ABNORMAL = -1;

export interface CommandRequest {
  readonly name: string;
  /** argv[1..]; argv[0] is `name`. */
  readonly args: readonly string[];
  readonly stdin: Uint8Array;
}

export interface CommandResponse {
  /** The exit status (0 for a normal return), or STATUS_ABNORMAL with `error` set. */
  readonly status: number;
  /** The SandboxError code that ended the command abnormally; '' on a normal exit. */
  readonly error: string;
  readonly stdout: Uint8Array;
  readonly stderr: Uint8Array;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
}

const decoder = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

/**
 * The shared head of the command layouts: `u8 version · u8 flags=0 · u16 argc · argc × (u32 len ·
 * bytes)` (at least one entry, each ≤ MAX_ARG_BYTES of UTF-8 without NUL). The argv and the
 * offset after it, or a guest error code.
 */
export function readArgv(bytes: Uint8Array, view: DataView): { argv: string[]; at: number } | number {
  if (bytes.length > MAX_REQUEST_BYTES) return GUEST_ERR.TOO_LARGE;
  if (bytes.length < 4) return GUEST_ERR.INVALID;
  if (view.getUint8(0) !== ABI_VERSION || view.getUint8(1) !== 0) return GUEST_ERR.INVALID;
  const argc = view.getUint16(2, true);
  if (argc === 0) return GUEST_ERR.INVALID;
  if (argc > MAX_ARGC) return GUEST_ERR.TOO_LARGE;
  let at = 4;
  const argv: string[] = [];
  for (let i = 0; i < argc; i++) {
    if (at + 4 > bytes.length) return GUEST_ERR.INVALID;
    const len = view.getUint32(at, true);
    at += 4;
    if (len > MAX_ARG_BYTES) return GUEST_ERR.TOO_LARGE;
    if (at + len > bytes.length) return GUEST_ERR.INVALID;
    const raw = bytes.subarray(at, at + len);
    if (raw.includes(0)) return GUEST_ERR.INVALID;
    try {
      argv.push(decoder.decode(raw));
    } catch {
      return GUEST_ERR.INVALID;
    }
    at += len;
  }
  return { argv, at };
}

/** Write `parts` as `u32 len · bytes` each from `at`; returns the offset after them. */
export function writeParts(out: Uint8Array, view: DataView, at: number, parts: readonly Uint8Array[]): number {
  for (const p of parts) {
    view.setUint32(at, p.length, true);
    out.set(p, at + 4);
    at += 4 + p.length;
  }
  return at;
}

/** The size of `parts` written by writeParts. */
export function partsSize(parts: readonly Uint8Array[]): number {
  return parts.reduce((n, p) => n + 4 + p.length, 0);
}

/** A request, or the guest error code explaining why it cannot be one. */
export function decodeRequest(bytes: Uint8Array): CommandRequest | number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const head = readArgv(bytes, view);
  if (typeof head === 'number') return head;
  let at = head.at;
  if (at + 4 > bytes.length) return GUEST_ERR.INVALID;
  const stdinLen = view.getUint32(at, true);
  at += 4;
  if (at + stdinLen !== bytes.length) return GUEST_ERR.INVALID;
  return { name: head.argv[0]!, args: head.argv.slice(1), stdin: bytes.slice(at, at + stdinLen) };
}

/** The request bytes for `argv` (argv[0] = command name) and `stdin`: the SDK's layout, for tests and hosts. */
export function encodeRequest(argv: readonly string[], stdin: Uint8Array | string = new Uint8Array(0)): Uint8Array {
  const parts = argv.map((a) => encoder.encode(a));
  const input = typeof stdin === 'string' ? encoder.encode(stdin) : stdin;
  const out = new Uint8Array(4 + partsSize(parts) + 4 + input.length);
  const view = new DataView(out.buffer);
  view.setUint8(0, ABI_VERSION);
  view.setUint16(2, parts.length, true);
  writeParts(out, view, 4 + partsSize(parts), [input]);
  writeParts(out, view, 4, parts);
  return out;
}

export function encodeResponse(r: CommandResponse): Uint8Array {
  const parts = [encoder.encode(r.error), r.stdout, r.stderr];
  const out = new Uint8Array(8 + partsSize(parts));
  const view = new DataView(out.buffer);
  view.setUint8(0, ABI_VERSION);
  view.setUint8(1, (r.stdoutTruncated ? 1 : 0) | (r.stderrTruncated ? 2 : 0));
  view.setInt32(4, r.status, true);
  writeParts(out, view, 8, parts);
  return out;
}

/** The inverse of encodeResponse (hosts and tests read responses with it); null if malformed. */
export function decodeResponse(bytes: Uint8Array): CommandResponse | null {
  if (bytes.length < 20) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint8(0) !== ABI_VERSION) return null;
  const flags = view.getUint8(1);
  const status = view.getInt32(4, true);
  const parts: Uint8Array[] = [];
  let at = 8;
  for (let i = 0; i < 3; i++) {
    if (at + 4 > bytes.length) return null;
    const len = view.getUint32(at, true);
    if (at + 4 + len > bytes.length) return null;
    parts.push(bytes.slice(at + 4, at + 4 + len));
    at += 4 + len;
  }
  if (at !== bytes.length) return null;
  return {
    status,
    error: new TextDecoder().decode(parts[0]),
    stdout: parts[1]!,
    stderr: parts[2]!,
    stdoutTruncated: (flags & 1) !== 0,
    stderrTruncated: (flags & 2) !== 0,
  };
}
