/**
 * The child's side of an `os_process` call's brokered powers and host functions: its engine's
 * brokers forward (`BrokerOptions.forward`) every broker call and every host function call — a
 * core guest's imports through HostServices, a JS/TS/Python snippet's powers through its power
 * server — to the parent engine, as request lines on stdout (protocol.ts), and wait for the
 * answer line on stdin. Its `hostFunctions` is the child engine's table of host caps: empty until
 * the call's request grants some (`grant`), then exactly those — names, function names and
 * argument caps, never a function.
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
import { BROKER_MARK, MAX_BROKER_ARGS_BYTES, fromB64, toB64, type BrokerAnswerLine, type BrokerRequestLine, type HostFunctionTable } from './protocol.ts';

/** What a call with no deadline of its own says is left (the parent caps it to its child's kill time). */
const NO_DEADLINE_MS = 2 ** 31 - 1;

export class ParentLink implements BrokerForward {
  private nextId = 1;
  private readonly pending = new Map<number, (a: BrokerAnswerLine | null) => void>();
  private closed = false;
  /** The call's granted host caps and their functions (empty until `grant`): the child engine's `EngineConfig.hostFunctions`. */
  readonly hostFunctions: Record<string, readonly string[]> = {};
  private readonly maxArgBytes = new Map<string, number>();

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

  /**
   * The call's host caps, before it runs (its request carries them): linked for a core guest,
   * offered to a snippet, each call served by the parent. Once: a child serves one call.
   */
  grant(table: HostFunctionTable): void {
    for (const [cap, { fns, maxArgBytes }] of Object.entries(table)) {
      this.hostFunctions[cap] = Object.freeze([...fns]);
      this.maxArgBytes.set(cap, maxArgBytes);
    }
    Object.freeze(this.hostFunctions);
  }

  /** A host function call, answered by the parent (a JSON argument past the cap's size travels as its size). */
  async host(cap: string, fn: string, args: Uint8Array | number, stops: readonly AbortSignal[], deadline: number): Promise<Uint8Array | number> {
    const stop = stops.length === 1 ? stops[0]! : AbortSignal.any([...stops]);
    if (stop.aborted || this.closed) return GUEST_ERR.UNAVAILABLE;
    const size = typeof args === 'number' ? args : args.byteLength;
    const big = typeof args === 'number' || size > (this.maxArgBytes.get(cap) ?? 0);
    const a = await this.send(stop, (id, leftMs) => ({ kind: 'host', id, cap, fn, ...(big ? { oversized: size } : { args: toB64(args as Uint8Array) }), leftMs }), deadline);
    // Withdrawn (the call stopped waiting) or the parent gone: as the host function's own broker answers a stopped call.
    if (a === null) return performance.now() >= deadline - 1 ? GUEST_ERR.TIMEOUT : GUEST_ERR.UNAVAILABLE;
    return a.ok ? fromB64(a.payload ?? '') : a.errno;
  }

  /** One of the tenant's exec or live-process slots, held in the parent (its release), or null at the limit (or the parent gone). */
  async slot(kind: 'exec' | 'process'): Promise<(() => void) | null> {
    let id = 0;
    const a = await this.send(null, (n) => ((id = n), { kind: 'slot', id: n, slot: kind }), Infinity);
    if (a === null || !a.ok) return null;
    let held = true;
    return () => {
      if (held && !this.closed) this.write(`${BROKER_MARK}${JSON.stringify({ kind: 'release', id } satisfies BrokerRequestLine)}\n`);
      held = false;
    };
  }

  /** The cadence's steps 1-4 for a call of a spawning cap, run in the parent as the call: null = go, else the guest errno. */
  async admit(cap: 'commands' | 'exec' | 'parallel', op: string, bytes: number, max: number): Promise<number | null> {
    const a = await this.send(null, (id) => ({ kind: 'admit', id, cap, op, bytes, max }), Infinity);
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
    const bytes = args.reduce((n, a) => n + a.byteLength, 0);
    return this.send(stop, (id, leftMs) => (bytes > MAX_BROKER_ARGS_BYTES ? { kind: 'broker', id, name, oversized: bytes, cap, leftMs } : { kind: 'broker', id, name, args: args.map(toB64), cap, leftMs }), deadline);
  }

  /** One request line (`line` given its id and the time left), its answer awaited; withdrawn when `stop` fires. */
  private send(stop: AbortSignal | null, line: (id: number, leftMs: number) => BrokerRequestLine, deadline: number): Promise<BrokerAnswerLine | null> {
    if (this.closed) return Promise.resolve(null);
    const id = this.nextId++;
    const leftMs = Number.isFinite(deadline) ? Math.max(0, Math.floor(deadline - performance.now())) : NO_DEADLINE_MS;
    const req = line(id, leftMs);
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
