/**
 * The parent's side of an `os_process` call's brokered powers (kv, queue, secrets, net, browse,
 * tcp/udp/tls, llm) and host functions (a `host` line, served by host-proxy.ts through the same
 * ids, in-flight bound and cancels): the child's engine holds none of them — no network namespace under bwrap, no
 * environment, no secrets, no engine database — and sends each broker call of its guest as a
 * request line (protocol.ts); this module serves it through the parent engine's own brokers, as
 * the call the parent gave the child, and writes the answer on the child's stdin.
 *
 * Also the command lanes' accounting (`admit`, `slot`, `release` lines): the cadence for a
 * spawning cap (granted → revoked → rate → size, its denials recorded here) and the tenant's exec
 * and live-process counters are this engine's, shared by all the tenant's calls on every tier; a
 * slot the child did not release is released when the call ends.
 *
 * Owns: reading a request line as hostile input (strict shape; a malformed line, a reused or
 * unknown id, a second cancel, a release of no slot held, more than MAX_BROKER_IN_FLIGHT requests in flight → the child is
 * killed and its call fails INTERNAL; spawn.ts bounds each line's size); routing by the import's
 * name alone (a network call to `net`, anything else to `call`, whose hub refuses what is not a
 * broker import: INVALID); the deadline of each request (what the child says is left, never past
 * the child's own kill time); cancelling what is in flight when the child withdraws a request or
 * the call ends, however it ends; a cancel that crossed its request's answer in the pipes (both
 * sent at the deadline) taken once — a cancel of an id never answered, or a second one, still kills.
 * Invariant: every request is served as `caller` — the call's tenant, its instance, its resolved
 * grant, and `tier: 'os_process'` on every audit record — never as anything the child names. So
 * the cadence (granted → revoked → rate → size), the stores' quotas, the network guard (SSRF
 * floor, pinned address, body caps) and the audit records are the parent's, once, exactly as for
 * the same call in a worker: a power the call was not granted is DENIED and recorded, as a
 * worker's broker would. A request counts as in flight until its answer has left this process
 * (a child that does not read its stdin cannot grow the parent's buffers past the bound).
 * Does not protect against: a child that uses its grant to the full — rate limits and quotas are
 * the brokers' (per tenant), as for a worker; the parent's CPU spent reading a child's lines
 * before the cadence refuses them (each line is bounded, ~16 ms to decode at its largest here, and read
 * chunk by chunk between other I/O, as a worker's large requests are copied before theirs); a
 * child's claims about its own call's result.
 */

import { SandboxError } from '../../errors.ts';
import { GUEST_ERR } from '../../abi/command.ts';
import { REMOTE_CALLS, type BrokerAnswer, type BrokerCaller } from '../../brokers/index.ts';
import { fromB64, toB64, MAX_BROKER_IN_FLIGHT, MAX_BROKER_LINE_BYTES, type BrokerAnswerLine, type BrokerRequestLine } from './protocol.ts';
import { parseHostRequest, serveHost, type HostDesk } from './host-proxy.ts';
import type { OutputLine, StreamDesk } from './stream.ts';
import type { Child, SideLines } from './spawn.ts';

/** The parent engine's brokers (`Brokers`, src/brokers/index.ts). */
export interface BrokerDesk {
  call(caller: BrokerCaller, name: string, args: readonly Uint8Array[], cap: number): BrokerAnswer | Promise<BrokerAnswer>;
  net(caller: BrokerCaller, name: string, args: readonly Uint8Array[], stop: AbortSignal, deadline: number): Promise<Uint8Array | number>;
  refuseOversized(caller: BrokerCaller, name: string, bytes: number): number;
  /** The embedder's host functions (a `host` line: host-proxy.ts). */
  hostCall: HostDesk;
  /** A defined host cap's function names and size caps (what a child granted it is told), or null. */
  hostCapShape(cap: string): { readonly fns: readonly string[]; readonly maxArgBytes: number } | null;
}

/** The call a child's requests are served as: its broker caller and the host caps it was granted. */
export interface ProxyCaller extends BrokerCaller {
  readonly hostCaps?: readonly string[];
}

/**
 * The parent's accounting of this call's command lanes: `slot` its tenant's spawn counters
 * (HostServices.takeSlot: a slot's release, or null at the limit); `admit` the cadence's steps
 * 1-4 as the call (null = go, else the guest errno).
 */
export interface SlotDesk {
  slot(kind: 'exec' | 'process'): (() => void) | null;
  admit(cap: 'commands' | 'exec' | 'parallel', op: string, bytes: number, max: number): number | null;
}

const NO_SPAWNING: SlotDesk = { slot: () => null, admit: () => GUEST_ERR.DENIED };

/** The longest import name a request may carry (the catalog's are far shorter). */
const MAX_NAME_CHARS = 64;
/** String arguments of one broker import at most (the catalog's take one or two). */
const MAX_ARGS = 4;
const MAX_U32 = 0xffff_ffff;

const isCount = (v: unknown, max: number): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= max;

/** A request line, or null when it is not one (any field of the wrong shape). */
export function parseRequest(line: string): BrokerRequestLine | OutputLine | null {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  if (o['kind'] === 'out') return (o['fd'] === 1 || o['fd'] === 2 || o['fd'] === 3) && typeof o['text'] === 'string' ? { kind: 'out', fd: o['fd'], text: o['text'] } : null;
  if (!isCount(o['id'], Number.MAX_SAFE_INTEGER) || o['id'] === 0) return null;
  const id = o['id'];
  if (o['kind'] === 'cancel' || o['kind'] === 'release') return { kind: o['kind'], id };
  if (o['kind'] === 'slot') return o['slot'] === 'exec' || o['slot'] === 'process' ? { kind: 'slot', id, slot: o['slot'] } : null;
  if (o['kind'] === 'host') return parseHostRequest(o, id);
  if (o['kind'] === 'admit') {
    const { cap, op, bytes, max } = o;
    if (cap !== 'commands' && cap !== 'exec' && cap !== 'parallel') return null;
    if (typeof op !== 'string' || op.length === 0 || op.length > MAX_NAME_CHARS || !isCount(bytes, Number.MAX_SAFE_INTEGER) || !isCount(max, Number.MAX_SAFE_INTEGER)) return null;
    return { kind: 'admit', id, cap, op, bytes, max };
  }
  if (o['kind'] !== 'broker') return null;
  const { name, args, oversized, cap, leftMs } = o;
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME_CHARS) return null;
  if (!isCount(cap, MAX_U32) || typeof leftMs !== 'number' || !Number.isFinite(leftMs)) return null;
  if (oversized !== undefined) return args === undefined && isCount(oversized, Number.MAX_SAFE_INTEGER) ? { kind: 'broker', id, name, oversized, cap, leftMs } : null;
  if (!Array.isArray(args) || args.length > MAX_ARGS || !args.every((a) => typeof a === 'string')) return null;
  return { kind: 'broker', id, name, args: args as string[], cap, leftMs };
}

interface InFlight {
  readonly abort: AbortController;
  cancelled: boolean;
}

/**
 * Serve one call's broker requests from `child` as `caller`, until `end()` (the call is over:
 * what is in flight is aborted, late answers are dropped). `deadline` (`performance.now()`) is
 * when the child is killed: no broker work of the call outlives it.
 */
export interface ProxyExtras {
  /** The call's spawn slots and spawning cadence, served here (lane.ts); default: none granted. */
  readonly spawning?: SlotDesk;
  /** The caller's streaming callbacks (stream.ts), or none. */
  readonly stream?: StreamDesk | null;
}

export function brokerProxy(child: Pick<Child, 'send' | 'fail'>, desk: BrokerDesk, caller: ProxyCaller, deadline: number, extras: ProxyExtras = {}): { readonly side: SideLines; end(): void } {
  const spawning = extras.spawning ?? NO_SPAWNING;
  const stream = extras.stream ?? null;
  const inFlight = new Map<number, InFlight>();
  /** The call's spawn slots held here, by the id of the request that took each. */
  const held = new Map<number, () => void>();
  // Answered lately, not cancelled: a child's cancel may cross its answer in the pipes (both at the deadline) — taken once each.
  const answered = new Set<number>();
  const settle = (id: number): void => {
    const cancelled = inFlight.get(id)?.cancelled === true;
    inFlight.delete(id);
    if (cancelled) return;
    answered.add(id);
    if (answered.size > MAX_BROKER_IN_FLIGHT) answered.delete(answered.values().next().value!);
  };
  const stop = new AbortController();
  let streamed = 0;
  let lastId = 0;
  let ended = false;
  const violation = (why: string): void => {
    if (ended) return;
    ended = true;
    stop.abort();
    child.fail(new SandboxError('INTERNAL', `the os_process child broke the broker protocol (${why}); it was killed`));
  };

  const hostCaller = { tenant: caller.tenant, instance: caller.instance, hostCaps: caller.hostCaps ?? [], ...(caller.marks ? { marks: caller.marks } : {}) };
  const serve = async (req: Extract<BrokerRequestLine, { kind: 'broker' | 'host' }>, signal: AbortSignal): Promise<BrokerAnswerLine> => {
    if (req.kind === 'host') return serveHost((...a) => desk.hostCall(...a), hostCaller, req, signal, deadline);
    const { id, name } = req;
    if (req.oversized !== undefined) return { id, ok: false, errno: desk.refuseOversized(caller, name, req.oversized) };
    const args = (req.args ?? []).map(fromB64);
    if (Object.hasOwn(REMOTE_CALLS, name)) {
      const until = Math.min(deadline, performance.now() + Math.max(0, req.leftMs));
      const got = await desk.net(caller, name, args, signal, until);
      return typeof got === 'number' ? { id, ok: false, errno: got } : { id, ok: true, value: got.byteLength, payload: toB64(got) };
    }
    const a = await desk.call(caller, name, args, req.cap);
    return a.ok ? { id, ok: true, value: a.value, ...(a.payload ? { payload: toB64(a.payload) } : {}) } : { id, ok: false, errno: a.errno };
  };

  const onLine = (line: string): void => {
    if (ended) return;
    const req = parseRequest(line);
    if (req === null) return violation('a malformed request');
    if (req.kind === 'out') {
      // Output the call asked to stream (stream.ts): bounded in all, whatever the taps pass on.
      if (stream === null || !stream.fds.includes(req.fd)) return violation('output it was not asked to stream');
      streamed += req.text.length;
      if (streamed > stream.budget) return violation('more output than its cap');
      return stream.deliver(req.fd, req.text);
    }
    if (req.kind === 'cancel') {
      const r = inFlight.get(req.id);
      if (!r && answered.delete(req.id)) return;
      if (!r || r.cancelled) return violation('a cancel of no request in flight');
      r.cancelled = true;
      r.abort.abort();
      return;
    }
    if (req.kind === 'release') {
      const release = held.get(req.id);
      if (!release) return violation('a release of no slot held');
      held.delete(req.id);
      return release();
    }
    if (req.id <= lastId) return violation('a request id used before');
    lastId = req.id;
    if (inFlight.size >= MAX_BROKER_IN_FLIGHT) return violation(`more than ${MAX_BROKER_IN_FLIGHT} requests in flight`);
    const entry: InFlight = { abort: new AbortController(), cancelled: false };
    inFlight.set(req.id, entry);
    if (req.kind === 'slot' || req.kind === 'admit') {
      // Decided here at once, as the call (its tenant's counters and cadence, shared with all its calls); a slot is held until released or the call ends.
      let errno: number | null;
      if (req.kind === 'admit') errno = spawning.admit(req.cap, req.op, req.bytes, req.max);
      else {
        const release = spawning.slot(req.slot);
        if (release) held.set(req.id, release);
        errno = release ? null : GUEST_ERR.QUOTA;
      }
      const answer: BrokerAnswerLine = errno === null ? { id: req.id, ok: true, value: 0 } : { id: req.id, ok: false, errno };
      if (!child.send(JSON.stringify(answer), () => inFlight.delete(req.id))) inFlight.delete(req.id);
      return;
    }
    serve(req, AbortSignal.any([stop.signal, entry.abort.signal])).then(
      (answer) => {
        // Still in flight until the answer has left this process: a child that does not read cannot pile answers up here.
        if (ended || !child.send(JSON.stringify(answer), () => settle(req.id))) inFlight.delete(req.id);
      },
      () => {
        // A broker that threw (e.g. its database failed): the call fails, the parent goes on. No host detail reaches the child.
        if (ended) return;
        ended = true;
        stop.abort();
        child.fail(new SandboxError('INTERNAL', 'a broker failed while serving the os_process child'));
      },
    );
  };

  return {
    side: { maxLineBytes: MAX_BROKER_LINE_BYTES, onLine },
    end: () => {
      ended = true;
      stop.abort();
      inFlight.clear();
      for (const release of held.values()) release();
      held.clear();
    },
  };
}
