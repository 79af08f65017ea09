/**
 * WASI preview 1, the ambient calls: args, env, clocks, random, stdio over captured streams,
 * `proc_exit`, `sched_yield`, `poll_oneoff` (clock sleeps bounded by the call's deadline, stdio
 * readiness) and the socket calls, which find no socket (Membrane never creates one) and answer
 * ENOTSOCK for an open descriptor, EBADF otherwise. The filesystem calls (the `vfs` cap) live in
 * fs.ts, which also answers the socket calls for its own descriptors.
 *
 * Why hand-written: `node:wasi` maps real host directories and inherits host descriptors; its
 * own documentation says it is not a sandbox. Here stdin is a byte buffer, stdout/stderr are
 * capped captures, the environment is exactly what the operator passed, and without the `vfs`
 * cap no descriptor other than 0, 1 and 2 exists (and a lane's port, port.ts, when the engine
 * gave the run one).
 *
 * Invariant: every pointer the guest passes is bounds-checked (EFAULT, via call.ts's guard), every call answers an
 * errno and never throws to the guest except `proc_exit` (which ends the call) and the walls
 * (output limit, and TIMEOUT for a sleep the call's budget cannot hold or one the call's
 * interrupt cut). Every sleep is an `Atomics.wait` with a bound of at most `SLEEP_SLICE_MS`
 * (in a worker, on the channel's interrupt word, so an interrupt wakes it at once), re-checking
 * the deadline and the interrupt flag between slices; a sleep never outlasts the call's
 * remaining budget.
 *
 * Does not protect against: timing side channels through the clocks (they are real clocks).
 */

import { randomFillSync } from 'node:crypto';
import type { GuestMemory } from '../abi/memory.ts';
import type { CappedStream } from './output.ts';
import { SandboxError } from '../errors.ts';
import { ExitSignal, GuestFault, type CallState } from '../abi/signals.ts';
import { guard, type WasiFn } from './call.ts';
import { PORT_FD, portCalls, type LanePort } from './port.ts';

export const Errno = {
  SUCCESS: 0,
  BADF: 8,
  FAULT: 21,
  INVAL: 28,
  IO: 29,
  NOSYS: 52,
  NOTSOCK: 57,
  NOTSUP: 58,
  SPIPE: 70,
  NOTCAPABLE: 76,
} as const;

const FILETYPE_CHARACTER_DEVICE = 2;
const RIGHT_FD_READ = 1n << 1n;
const RIGHT_FD_WRITE = 1n << 6n;
const RIGHT_POLL_FD_READWRITE = 1n << 27n;
const EVENTTYPE_CLOCK = 0;
const EVENTTYPE_FD_READ = 1;
const EVENTTYPE_FD_WRITE = 2;
const EVENTRWFLAGS_HANGUP = 1;
/** Longest single `Atomics.wait` of a guest's sleep (the deadline and interrupts are re-checked). */
export const SLEEP_SLICE_MS = 50;
const SUBSCRIPTION_BYTES = 48;
const EVENT_BYTES = 32;
const MAX_SUBSCRIPTIONS = 4096;

export interface WasiContext {
  readonly memory: GuestMemory;
  readonly stdout: CappedStream;
  readonly stderr: CappedStream;
  readonly argv: readonly string[];
  readonly env: readonly (readonly [string, string])[];
  readonly state: CallState;
  stdin: Uint8Array;
  stdinOffset: number;
  /** A lane's port (port.ts), reached at `PORT_FD`; absent for every other guest. */
  readonly port?: LanePort;
  /** Milliseconds left in the current call (sleeps never run past it). */
  remainingMs(): number;
  /** The call was interrupted (cancelled or past its deadline): a sleep ends at once. */
  interrupted(): boolean;
  /** Sleep up to `ms`, waking at once when the call is interrupted (the worker's channel); default a plain bounded wait. */
  nap?(ms: number): void;
  /** The guest is about to block (a sleep): hand on output written so far, if a caller streams it. */
  idle?(): void;
}


const encoder = new TextEncoder();

function stringsSizes(ctx: WasiContext, list: readonly Uint8Array[], countPtr: number, sizePtr: number): number {
  ctx.memory.setU32(countPtr, list.length);
  ctx.memory.setU32(sizePtr, list.reduce((n, s) => n + s.length + 1, 0));
  return Errno.SUCCESS;
}

function stringsGet(ctx: WasiContext, list: readonly Uint8Array[], ptrs: number, buf: number): number {
  let at = buf >>> 0;
  list.forEach((s, i) => {
    ctx.memory.setU32((ptrs >>> 0) + i * 4, at);
    ctx.memory.write(at, s);
    ctx.memory.setU8(at + s.length, 0);
    at += s.length + 1;
  });
  return Errno.SUCCESS;
}

function nowNs(id: number): bigint | null {
  switch (id) {
    case 0: // realtime
      return BigInt(Date.now()) * 1_000_000n + BigInt(Math.floor((performance.now() % 1) * 1e6));
    case 1: // monotonic
    case 2: // process cputime (approximated by monotonic time)
    case 3: // thread cputime
      return process.hrtime.bigint();
    default:
      return null;
  }
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));

export function ambientWasi(ctx: WasiContext): Record<string, WasiFn> {
  const args = ctx.argv.map((a) => encoder.encode(a));
  const envs = ctx.env.map(([k, v]) => encoder.encode(`${k}=${v}`));
  /** Stdio descriptors the guest has not closed (with `vfs`, fs.ts keeps its own table). */
  const open = new Set([0, 1, 2]);
  const isStdio = (fd: number) => open.has(fd);
  const stream = (fd: number): CappedStream | null => (!isStdio(fd) ? null : fd === 1 ? ctx.stdout : fd === 2 ? ctx.stderr : null);
  const g = (fn: (...a: number[]) => number) => guard(ctx.state, fn);
  const port = ctx.port ? portCalls(ctx.memory, ctx.port) : null;

  return {
    args_sizes_get: g((c, s) => stringsSizes(ctx, args, c!, s!)),
    args_get: g((p, b) => stringsGet(ctx, args, p!, b!)),
    environ_sizes_get: g((c, s) => stringsSizes(ctx, envs, c!, s!)),
    environ_get: g((p, b) => stringsGet(ctx, envs, p!, b!)),
    clock_res_get: g((id, out) => {
      if (nowNs(id!) === null) return Errno.INVAL;
      ctx.memory.setU64(out!, 1000n);
      return Errno.SUCCESS;
    }),
    clock_time_get: ((id: number, _precision: bigint, out: number) => {
      ctx.state.rethrow();
      const t = nowNs(id);
      if (t === null) return Errno.INVAL;
      try {
        ctx.memory.setU64(out, t);
      } catch {
        return Errno.FAULT;
      }
      return Errno.SUCCESS;
    }) as WasiFn,
    random_get: g((buf, len) => {
      const target = ctx.memory.bytes(buf!, len!);
      const tmp = new Uint8Array(target.length);
      randomFillSync(tmp);
      target.set(tmp);
      return Errno.SUCCESS;
    }),
    fd_write: g((fd, iovs, count, nwritten) => {
      if (fd === PORT_FD && port) return port.write(iovs!, count!, nwritten!);
      const s = stream(fd!);
      if (!s) return Errno.BADF;
      let total = 0;
      for (const [p, l] of ctx.memory.iovecs(iovs!, count!)) total += s.write(ctx.memory.bytes(p, l));
      ctx.memory.setU32(nwritten!, total);
      return Errno.SUCCESS;
    }),
    fd_read: g((fd, iovs, count, nread) => {
      if (fd === PORT_FD && port) return port.read(iovs!, count!, nread!);
      if (fd !== 0 || !isStdio(fd)) return Errno.BADF;
      let total = 0;
      for (const [p, l] of ctx.memory.iovecs(iovs!, count!)) {
        const chunk = ctx.stdin.subarray(ctx.stdinOffset, ctx.stdinOffset + l);
        ctx.memory.write(p, chunk);
        ctx.stdinOffset += chunk.length;
        total += chunk.length;
        if (chunk.length < l) break;
      }
      ctx.memory.setU32(nread!, total);
      return Errno.SUCCESS;
    }),
    fd_close: g((fd) => (open.delete(fd!) ? Errno.SUCCESS : Errno.BADF)),
    fd_seek: g((fd) => (isStdio(fd!) ? Errno.SPIPE : Errno.BADF)),
    fd_tell: g((fd) => (isStdio(fd!) ? Errno.SPIPE : Errno.BADF)),
    fd_fdstat_get: g((fd, out) => {
      if (!isStdio(fd!)) return Errno.BADF;
      ctx.memory.check(out!, 24);
      ctx.memory.setU8(out!, FILETYPE_CHARACTER_DEVICE);
      ctx.memory.setU16(out! + 2, 0);
      const base = fd === 0 ? RIGHT_FD_READ : RIGHT_FD_WRITE;
      ctx.memory.setU64(out! + 8, base | RIGHT_POLL_FD_READWRITE);
      ctx.memory.setU64(out! + 16, 0n);
      return Errno.SUCCESS;
    }),
    fd_fdstat_set_flags: g((fd) => (isStdio(fd!) ? Errno.NOTSUP : Errno.BADF)),
    fd_sync: g((fd) => (isStdio(fd!) ? Errno.SUCCESS : Errno.BADF)),
    fd_datasync: g((fd) => (isStdio(fd!) ? Errno.SUCCESS : Errno.BADF)),
    proc_exit: ((code: number) => {
      ctx.state.rethrow();
      ctx.state.exit = new ExitSignal(code >>> 0);
      throw ctx.state.exit;
    }) as WasiFn,
    proc_raise: g(() => Errno.NOSYS),
    sched_yield: g(() => Errno.SUCCESS),
    sock_accept: g((fd) => (isStdio(fd!) ? Errno.NOTSOCK : Errno.BADF)),
    sock_recv: g((fd) => (isStdio(fd!) ? Errno.NOTSOCK : Errno.BADF)),
    sock_send: g((fd) => (isStdio(fd!) ? Errno.NOTSOCK : Errno.BADF)),
    sock_shutdown: g((fd) => (isStdio(fd!) ? Errno.NOTSOCK : Errno.BADF)),
    poll_oneoff: pollOneoff(ctx, (fd) => (isStdio(fd) ? fd : undefined)),
  };
}

/**
 * Sleep `ms`, in bounded slices; an interrupt (the deadline, a cancel, a host call cut) wakes it
 * and ends the call there with TIMEOUT, a fault the guest cannot swallow, instead of running on
 * to its next fuel refill.
 */
function sleep(ctx: WasiContext, ms: number): void {
  const end = performance.now() + ms;
  for (let left = ms; left > 0 && !ctx.interrupted(); left = end - performance.now()) {
    ctx.idle?.();
    const slice = Math.min(left, SLEEP_SLICE_MS);
    if (ctx.nap) ctx.nap(slice);
    else Atomics.wait(sleeper, 0, 0, slice);
  }
  if (ctx.interrupted()) throw new GuestFault(new SandboxError('TIMEOUT', 'the call was stopped while the guest slept', {}));
}

/**
 * poll_oneoff: clock subscriptions sleep (never past the call's deadline: a sleep the budget
 * cannot hold sleeps out the budget and ends the call TIMEOUT); descriptor subscriptions are
 * ready at once for stdio (stdin with the bytes left, HANGUP at its end) and EBADF for any other
 * descriptor, each in its own event. `stdioOf` says which stream a descriptor names, if any: the
 * ambient table here, or fs.ts's when the guest has `vfs` (stdio can be renumbered there).
 */
export function pollOneoff(ctx: WasiContext, stdioOf: (fd: number) => number | undefined): WasiFn {
  return guard(ctx.state, (inPtr: number, outPtr: number, nsubs: number, neventsPtr: number) => {
    const n = nsubs! >>> 0;
    if (n === 0 || n > MAX_SUBSCRIPTIONS) return Errno.INVAL;
    ctx.memory.check(inPtr!, n * SUBSCRIPTION_BYTES);
    ctx.memory.check(outPtr!, n * EVENT_BYTES);
    const v = ctx.memory.view();
    let sleepNs: bigint | null = null;
    const ready: number[] = [];
    for (let i = 0; i < n; i++) {
      const s = (inPtr! >>> 0) + i * SUBSCRIPTION_BYTES;
      const tag = v.getUint8(s + 8);
      if (tag === EVENTTYPE_CLOCK) {
        const id = v.getUint32(s + 16, true);
        let timeout = v.getBigUint64(s + 24, true);
        const abs = (v.getUint16(s + 40, true) & 1) === 1;
        const now = nowNs(id);
        if (now === null) return Errno.INVAL;
        if (abs) timeout = timeout > now ? timeout - now : 0n;
        if (sleepNs === null || timeout < sleepNs) sleepNs = timeout;
      } else if (tag === EVENTTYPE_FD_READ || tag === EVENTTYPE_FD_WRITE) {
        ready.push(i);
      } else {
        return Errno.INVAL;
      }
    }
    let events: number[] = ready;
    if (ready.length === 0 && sleepNs !== null) {
      const want = Number(sleepNs) / 1e6;
      const left = Math.max(0, ctx.remainingMs());
      // A sleep that cannot finish within the call's budget sleeps out the budget and ends
      // the call: the guest never runs past its deadline by sleeping.
      if (want > left) {
        sleep(ctx, left);
        throw new GuestFault(new SandboxError('TIMEOUT', 'the guest slept past its budget', {}));
      }
      sleep(ctx, want);
      events = [];
      for (let i = 0; i < n; i++) {
        if (v.getUint8((inPtr! >>> 0) + i * SUBSCRIPTION_BYTES + 8) === EVENTTYPE_CLOCK) events.push(i);
      }
    }
    const out = ctx.memory.view();
    events.forEach((i, k) => {
      const s = (inPtr! >>> 0) + i * SUBSCRIPTION_BYTES;
      const e = (outPtr! >>> 0) + k * EVENT_BYTES;
      out.setBigUint64(e, out.getBigUint64(s, true), true);
      const tag = out.getUint8(s + 8);
      const fd = out.getUint32(s + 16, true);
      const stream = tag === EVENTTYPE_CLOCK ? undefined : stdioOf(fd);
      const stdinRead = stream === 0 && tag === EVENTTYPE_FD_READ;
      const stdinLeft = ctx.stdin.length - ctx.stdinOffset;
      out.setUint16(e + 8, tag === EVENTTYPE_CLOCK || stream !== undefined ? Errno.SUCCESS : Errno.BADF, true);
      out.setUint8(e + 10, tag);
      out.setBigUint64(e + 16, stdinRead ? BigInt(Math.max(0, stdinLeft)) : 0n, true);
      out.setUint16(e + 24, stdinRead && stdinLeft <= 0 ? EVENTRWFLAGS_HANGUP : 0, true);
    });
    ctx.memory.setU32(neventsPtr!, events.length);
    return Errno.SUCCESS;
  });
}
