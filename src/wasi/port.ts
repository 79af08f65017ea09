/**
 * The lane port: the descriptor `PORT_FD` (stdin) through which a lane's driver inside a WASI
 * guest (the CPython lane's Python prelude) talks to the engine — its snippet arrives there, its
 * powers are asked for there, its result leaves there. Only a run the engine gave a port has
 * one: there stdin is the port (readable and writable), elsewhere it is the run's stdin bytes.
 * It is not a file, not a preopen, and no path reaches it.
 *
 * Why hand-written: a WASI guest reaches its host only through its imports, and an interpreter
 * (CPython) cannot call an import we add; but it can `write` and `read` a descriptor number. So a
 * request is everything written to the port since the last answer, and the first read after it
 * makes the exchange (a synchronous host call from the worker) and then serves the answer:
 * a little-endian u32 length, then the bytes. A read with nothing asked and nothing left is 0
 * (end of file).
 *
 * Invariant: a request is at most `MAX_PORT_REQUEST_BYTES` (a write past it is EFBIG and drops
 * the request); the port never interprets what it carries — the host side parses and checks
 * every request as coming from the guest, because it does.
 *
 * Does not protect against: a guest that forges requests (it may write anything: the host only
 * ever serves what the call was granted).
 */

import type { GuestMemory } from '../abi/memory.ts';

/**
 * The port is the run's stdin (a lane's interpreter has no other use for it): a number every
 * layer inside the guest passes through to the host — CPython's embedded filesystem (wasi-vfs)
 * keeps a table of its own and answers EBADF for any descriptor it was not told about.
 */
export const PORT_FD = 0;

/** The largest request a guest may write before reading its answer (a power's frame and a margin). */
export const MAX_PORT_REQUEST_BYTES = 9 * 1024 * 1024;

const E = { SUCCESS: 0, FBIG: 22, IO: 29 } as const;

/**
 * The engine side of a run's port (host-services.ts serves it): `request` is the guest's bytes
 * (parse them as hostile), `fuelUsed` its meter's count so far, `call` the host call's bound.
 * The answer's bytes — with `start` when the snippet begins now (its budget: the worker counts
 * the job's time and fuel from there, over `vfsFile` if given) and `charge`, fuel spent on the
 * guest's behalf (a command it ran) — a guest error code, or PARK.
 */
export type PortHandler = (
  request: Uint8Array,
  fuelUsed: number,
  call: { readonly deadline: number; readonly signal: AbortSignal },
) => Promise<{ answer: Uint8Array; start?: { ms: number; fuel: number; vfsFile?: string }; charge?: number } | number | typeof PARK>;

/**
 * What a port handler answers to hold the run where it is: the request stays unanswered and the
 * run's wait returns `parked` (a pooled interpreter, booted, waiting for its snippet).
 */
export const PARK: unique symbol = Symbol('park');

/** The worker side of the port: the answer's bytes, or a guest error code when there is none. */
export interface LanePort {
  exchange(request: Uint8Array): Uint8Array | number;
}

/** `fd_write` and `fd_read` for `PORT_FD`; the caller routes only that descriptor here. */
export function portCalls(memory: GuestMemory, port: LanePort): { write(iovs: number, count: number, nwritten: number): number; read(iovs: number, count: number, nread: number): number } {
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  let answer: Uint8Array = new Uint8Array(0);
  let answerAt = 0;
  return {
    write(iovs, count, nwritten) {
      let total = 0;
      for (const [p, l] of memory.iovecs(iovs, count)) {
        if (pendingBytes + l > MAX_PORT_REQUEST_BYTES) {
          pending = [];
          pendingBytes = 0;
          return E.FBIG;
        }
        pending.push(memory.copy(p, l));
        pendingBytes += l;
        total += l;
      }
      memory.setU32(nwritten, total);
      return E.SUCCESS;
    },
    read(iovs, count, nread) {
      if (answerAt >= answer.length && pendingBytes > 0) {
        const request = new Uint8Array(pendingBytes);
        let at = 0;
        for (const part of pending) {
          request.set(part, at);
          at += part.length;
        }
        pending = [];
        pendingBytes = 0;
        const got = port.exchange(request);
        if (typeof got === 'number') return E.IO;
        answer = new Uint8Array(4 + got.length);
        new DataView(answer.buffer).setUint32(0, got.length, true);
        answer.set(got, 4);
        answerAt = 0;
      }
      let total = 0;
      for (const [p, l] of memory.iovecs(iovs, count)) {
        const chunk = answer.subarray(answerAt, answerAt + l);
        memory.write(p, chunk);
        answerAt += chunk.length;
        total += chunk.length;
        if (chunk.length < l) break;
      }
      memory.setU32(nread, total);
      return E.SUCCESS;
    },
  };
}
