/**
 * The worker side of the JS lane's power bridge: a snippet's power call (`kv.get(...)`, `fetch`)
 * is synchronous inside QuickJS, so the lane worker posts the request to the main thread and
 * blocks on `Atomics.wait` until the host has posted the answer on the power port (protocol.ts).
 *
 * Owns: the request's size bound (a request past `MAX_POWER_FRAME_BYTES` is not carried — the
 * interpreter does not even copy it out of QuickJS — an `oversized` marker goes instead, so the cadence still refuses and audits it), the sequence
 * numbers (a late answer to an earlier call is discarded, never mistaken for this one), the
 * snippet's fuel used so far (sent beside the request, never inside the guest's JSON) and the
 * bounded wait: slices of at most `POWER_WAIT_SLICE_MS`, ending at the call's deadline or when
 * the main thread raises the interrupt flag (at the deadline, or at once on a cancel: the host
 * also notifies the power signal, so the wait wakes without finishing its slice) — then the call
 * answers TIMEOUT, and the meter stops the snippet with the flag's reason.
 * Invariant: `call` always returns an answer (JSON text of `PowerAnswer`), and never waits past
 * the deadline.
 *
 * Does not protect against: a main thread too busy to answer before the deadline (the call then
 * times out; the interpreter stops at its next refill).
 */

import { receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import { MAX_POWER_FRAME_BYTES } from '../powers.ts';
import type { WorkerToHost } from './protocol.ts';

/** Longest single `Atomics.wait`: the interrupt flag is looked at between slices. */
export const POWER_WAIT_SLICE_MS = 50;
const TIMEOUT_ANSWER = '{"ok":false,"code":"TIMEOUT"}';

export class PowerBridge {
  private seq = 0;
  private readonly signal: Int32Array;

  constructor(
    private readonly port: MessagePort,
    signal: SharedArrayBuffer,
    private readonly interrupt: Int32Array,
    private readonly send: (m: WorkerToHost) => void,
  ) {
    this.signal = new Int32Array(signal);
  }

  /** One power call for job `id`; `deadline` is this thread's `performance.now()` time; `fuelUsed` the snippet's raw fuel so far. */
  call(id: number, power: string, args: string | { readonly oversized: number }, deadline: number, fuelUsed: number): string {
    const seq = (this.seq = (this.seq % 0x7fffffff) + 1);
    const bytes = typeof args === 'string' ? Buffer.byteLength(args) + Buffer.byteLength(power) : args.oversized;
    const request = typeof args !== 'string' || bytes > MAX_POWER_FRAME_BYTES ? JSON.stringify({ power, oversized: bytes }) : `{"power":${JSON.stringify(power)},"args":${args}}`;
    this.send({ v: 1, kind: 'power', id, seq, request, fuelUsed });
    for (;;) {
      for (let m = receiveMessageOnPort(this.port); m !== undefined; m = receiveMessageOnPort(this.port)) {
        const reply = m.message as { seq?: unknown; answer?: unknown } | null;
        if (reply?.seq === seq && typeof reply.answer === 'string') return reply.answer;
      }
      const left = deadline - performance.now();
      if (left <= 0 || Atomics.load(this.interrupt, 0) !== 0) return TIMEOUT_ANSWER;
      const seen = Atomics.load(this.signal, 0);
      // Flagged but not yet readable (or a stale answer's flag): a short wait, then look again.
      Atomics.wait(this.signal, 0, seen, seen === seq ? 1 : Math.min(left, POWER_WAIT_SLICE_MS));
    }
  }
}
