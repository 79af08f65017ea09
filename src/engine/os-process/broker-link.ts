/**
 * The child's side of an `os_process` call's brokered powers: its engine's brokers forward
 * (`BrokerOptions.forward`) every broker call — a core guest's imports through HostServices, a
 * JS/TS/Python snippet's powers through its power server — to the parent engine, as request lines
 * on stdout (protocol.ts), and wait for the answer line on stdin.
 *
 * Also asks the parent for the command lanes' accounting (`admit`: the cadence for a spawning
 * cap; `slot`: the tenant's exec and live-process counters — the parent engine's, shared by all
 * its calls, as on the instance tier).
 *
 * Owns: request ids (increasing, never reused), a request too large to carry sent as its size
 * (`oversized`: the parent's cadence refuses it TOO_LARGE and records it, as in a worker), the
 * time left to the call (`leftMs`), withdrawing a request whose call stopped waiting (`cancel`;
 * its late answer is dropped), and ending every wait when stdin ends (UNAVAILABLE).
 * Invariant: nothing about who calls crosses — no tenant, no grant: the parent serves the call it
 * gave this child. The child holds no broker state (no store, no secret, no socket).
 * Does not protect against: nothing on its own — the parent treats every line as hostile
 * (broker-proxy.ts).
 */

import { GUEST_ERR } from '../../abi/command.ts';
import type { BrokerAnswer, BrokerForward } from '../../brokers/index.ts';
import { BROKER_MARK, MAX_BROKER_ARGS_BYTES, fromB64, toB64, type BrokerAnswerLine, type BrokerRequestLine } from './protocol.ts';

/** What a call with no deadline of its own says is left (the parent caps it to its child's kill time). */
const NO_DEADLINE_MS = 2 ** 31 - 1;

export class ParentLink implements BrokerForward {
  private nextId = 1;
  private readonly pending = new Map<number, (a: BrokerAnswerLine | null) => void>();
  private closed = false;

  /** `write`: one line (newline included) on the child's stdout. */
  constructor(private readonly write: (line: string) => void) {}

  async call(name: string, args: readonly Uint8Array[], cap: number): Promise<BrokerAnswer> {
    const a = await this.ask(name, args, cap, null, Infinity);
    if (a === null) return { ok: false, errno: GUEST_ERR.UNAVAILABLE };
    return a.ok ? { ok: true, value: a.value, ...(typeof a.payload === 'string' ? { payload: fromB64(a.payload) } : {}) } : { ok: false, errno: a.errno };
  }

  async net(name: string, args: readonly Uint8Array[], stop: AbortSignal, deadline: number): Promise<Uint8Array | number> {
    if (stop.aborted) return GUEST_ERR.UNAVAILABLE;
    const a = await this.ask(name, args, 0, stop, deadline);
    if (a === null) return GUEST_ERR.UNAVAILABLE;
    return a.ok ? fromB64(a.payload ?? '') : a.errno;
  }

  /** One of the tenant's exec or live-process slots, held in the parent (its release), or null at the limit (or the parent gone). */
  async slot(kind: 'exec' | 'process'): Promise<(() => void) | null> {
    const id = this.nextId++;
    const a = await this.send(id, { kind: 'slot', id, slot: kind }, null);
    if (a === null || !a.ok) return null;
    let held = true;
    return () => {
      if (held && !this.closed) this.write(`${BROKER_MARK}${JSON.stringify({ kind: 'release', id } satisfies BrokerRequestLine)}\n`);
      held = false;
    };
  }

  /** The cadence's steps 1-4 for a call of a spawning cap, run in the parent as the call: null = go, else the guest errno. */
  async admit(cap: 'commands' | 'exec' | 'parallel', op: string, bytes: number, max: number): Promise<number | null> {
    const id = this.nextId++;
    const a = await this.send(id, { kind: 'admit', id, cap, op, bytes, max }, null);
    return a === null ? GUEST_ERR.UNAVAILABLE : a.ok ? null : a.errno;
  }

  /** One answer line from stdin (for a request still awaited; others are dropped). */
  answer(line: string): void {
    let a: BrokerAnswerLine;
    try {
      a = JSON.parse(line) as BrokerAnswerLine;
    } catch {
      return;
    }
    if (typeof a === 'object' && a !== null && typeof a.id === 'number') this.pending.get(a.id)?.(a);
  }

  /** stdin ended: nothing more will be answered. */
  close(): void {
    this.closed = true;
    for (const done of [...this.pending.values()]) done(null);
  }

  private ask(name: string, args: readonly Uint8Array[], cap: number, stop: AbortSignal | null, deadline: number): Promise<BrokerAnswerLine | null> {
    if (this.closed) return Promise.resolve(null);
    const id = this.nextId++;
    const bytes = args.reduce((n, a) => n + a.byteLength, 0);
    const leftMs = Number.isFinite(deadline) ? Math.max(0, Math.floor(deadline - performance.now())) : NO_DEADLINE_MS;
    const req: BrokerRequestLine =
      bytes > MAX_BROKER_ARGS_BYTES ? { kind: 'broker', id, name, oversized: bytes, cap, leftMs } : { kind: 'broker', id, name, args: args.map(toB64), cap, leftMs };
    return this.send(id, req, stop);
  }

  /** Write request `id` and wait for its answer (null: withdrawn, or stdin ended). */
  private send(id: number, req: BrokerRequestLine, stop: AbortSignal | null): Promise<BrokerAnswerLine | null> {
    if (this.closed) return Promise.resolve(null);
    return new Promise((resolve) => {
      const onStop = (): void => {
        if (!this.pending.has(id)) return;
        this.write(`${BROKER_MARK}${JSON.stringify({ kind: 'cancel', id } satisfies BrokerRequestLine)}\n`);
        done(null);
      };
      const done = (a: BrokerAnswerLine | null): void => {
        this.pending.delete(id);
        stop?.removeEventListener('abort', onStop);
        resolve(a);
      };
      this.pending.set(id, done);
      stop?.addEventListener('abort', onStop, { once: true });
      this.write(`${BROKER_MARK}${JSON.stringify(req)}\n`);
    });
  }
}
