/**
 * The host side of the source lanes' powers: one power server per `engine.exec` call, serving
 * `{ power, args }` requests from the JS/TS or Python snippet by calling the same brokers a
 * core-wasm guest's imports reach (`kv_get`, `http_fetch`, …) — so the cadence (granted →
 * revoked → rate → size → do it), the per-tenant stores, the network guard and every audit
 * record apply exactly as they do for core guests.
 *
 * Owns: decoding and checking each power's arguments (guest-controlled JSON: wrong types are
 * INVALID), the mapping of a power to its broker call and of the broker's answer to a JSON value,
 * the call's deadline as the abort signal for remote powers, and turning every failure into a
 * guest error code (DESIGN §4) — never a host message, stack or path.
 * Invariant: the principal (tenant, `exec-N` instance) and caps are captured when the call starts;
 * a request can name a power and its arguments, nothing else. Every request is answered.
 *
 * The `vfs`, `commands` and `exec` powers are the call's LaneHost's (host.ts), reached
 * from here after the same checks, with the fuel the lane says the snippet has used (a command
 * gets at most what is left) and the command's charge passed back on its answer (`fuel`).
 *
 * The embedder's host functions (`acme:orders.get`, DESIGN §9) are powers too: one JSON argument,
 * one JSON answer, through the same `hostCall` a core guest's import reaches.
 *
 * Does not protect against: what the brokers allow once admitted (their own caps and guard).
 */

import type { CapWord } from '../policy/profiles.ts';
import { KV_MAX_VALUE_BYTES } from '../storage/kv.ts';
import { LANE_POWERS, MAX_POWER_FRAME_BYTES, POWER_CODES, type PowerAnswer, type PowerCode, type PowerRequest, type PowerServer } from './powers.ts';
import { GUEST_ERR } from '../abi/command.ts';
import type { BrokerAnswer } from '../brokers/hub.ts';
import { PowerRefusal } from './vfs.ts';
import { isHostCapName } from '../policy/host-caps.ts';
import type { LaneHost } from './host.ts';

/** The brokers, bound to one exec call's principal and caps (the engine builds these). */
export interface LanePowerDeps {
  /** A main-thread broker call (kv, queue, secrets): after the cadence (a promise when the brokers are forwarded). */
  readonly call: (name: string, args: readonly Uint8Array[], cap: number) => BrokerAnswer | Promise<BrokerAnswer>;
  /**
   * A remote broker call (network, llm): the cadence runs inside; aborted by `stop`, and at
   * `deadline` (a `performance.now()` value) down to its sockets (TIMEOUT).
   */
  readonly net: (name: string, args: readonly Uint8Array[], stop: AbortSignal, deadline: number) => Promise<Uint8Array | number>;
  /** The cadence's steps 1-4 alone (a request refused before reaching a broker): null = go. */
  readonly admit: (cap: CapWord, op: string, bytes: number, max: number) => number | null;
  /** The call's VFS and command powers (`vfs.*`, `commands.run`, `exec.run`; host.ts). */
  readonly host?: LaneHost;
  /** The granted host caps and their functions (absent: none granted). */
  readonly hostFunctions?: Readonly<Record<string, readonly string[]>>;
  /**
   * An embedder host function (the cadence runs inside): its JSON answer, or a guest error code.
   * `args` a number: a request too large to carry, by its size (the cadence refuses it, TOO_LARGE
   * or the earlier step's code, and records it — where the host functions are served).
   */
  readonly hostCall?: (cap: string, fn: string, args: Uint8Array | number, stop: AbortSignal, deadline: number) => Promise<Uint8Array | number>;
}

/** Caps whose powers the call's LaneHost serves. */
const HOST_CAPS = new Set(['vfs', 'commands', 'exec']);

/** The largest answer a broker may hand back to a power (the cap argument of `call`). */
const ANSWER_CAP_BYTES = Math.max(KV_MAX_VALUE_BYTES, 4 * 1024 * 1024);
/** Broker import behind each power. */
const IMPORT_OF: Readonly<Record<string, string>> = {
  'kv.get': 'kv_get',
  'kv.put': 'kv_put',
  'kv.delete': 'kv_delete',
  'kv.list': 'kv_list',
  'queue.push': 'queue_push',
  'queue.pop': 'queue_pop',
  'queue.len': 'queue_len',
  'secrets.sign': 'secret_sign',
  'net.fetch': 'http_fetch',
  'llm.complete': 'llm_complete',
  'browse.fetch': 'browse_fetch',
  'tcp.request': 'tcp_request',
  'udp.request': 'udp_request',
  'tls.request': 'tls_request',
  'vfs.read': 'vfs_read',
  'vfs.write': 'vfs_write',
  'vfs.list': 'vfs_list',
  'vfs.delete': 'vfs_delete',
  'vfs.query': 'vfs_query',
  'commands.run': 'run_command',
  'exec.run': 'exec',
};

const NAME_OF = new Map<number, PowerCode>(POWER_CODES.map((c) => [GUEST_ERR[c], c]));
const encoder = new TextEncoder();
const strict = new TextDecoder('utf-8', { fatal: true });
const lenient = new TextDecoder('utf-8');

class Refusal extends Error {
  constructor(readonly code: PowerCode) {
    super(code);
  }
}
const refuse = (code: PowerCode): never => {
  throw new Refusal(code);
};
const codeOf = (errno: number): PowerCode => NAME_OF.get(errno) ?? 'UNAVAILABLE';

function str(x: unknown, optional = false): string {
  if (x === undefined && optional) return '';
  return typeof x === 'string' ? x : refuse('INVALID');
}

function utf8(bytes: Uint8Array): string {
  try {
    return strict.decode(bytes);
  } catch {
    return refuse('INVALID');
  }
}

function json(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(strict.decode(bytes)) as unknown;
  } catch {
    return refuse('UNAVAILABLE');
  }
}

/** `net.fetch`'s argument: `{ url, method?, headers?, body? }` (strings; headers an object of strings). */
function fetchRequest(x: unknown): Uint8Array {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) return refuse('INVALID');
  const o = x as Record<string, unknown>;
  const out: Record<string, unknown> = { url: str(o['url']) };
  if (o['method'] !== undefined && o['method'] !== null) out['method'] = str(o['method']);
  if (o['body'] !== undefined && o['body'] !== null) out['body'] = str(o['body']);
  const h = o['headers'];
  if (h !== undefined && h !== null) {
    if (typeof h !== 'object' || Array.isArray(h) || !Object.values(h).every((v) => typeof v === 'string')) return refuse('INVALID');
    out['headers'] = h;
  }
  return encoder.encode(JSON.stringify(out));
}

/** A fetch answer for a snippet: `{ status, headers, body }` (body as text; `bodyBase64` too when it is not UTF-8). */
function fetchAnswer(bytes: Uint8Array): unknown {
  const r = json(bytes) as { status?: unknown; headers?: unknown; body?: unknown; bodyBase64?: unknown };
  if (typeof r.bodyBase64 === 'string') return { status: r.status, headers: r.headers, body: lenient.decode(Buffer.from(r.bodyBase64, 'base64')), bodyBase64: r.bodyBase64 };
  return { status: r.status, headers: r.headers, body: r.body };
}

/**
 * A power server for one exec call. Past the deadline a lane gives with each request
 * (`Date.now()`-based), remote powers are aborted and answer TIMEOUT. `end()` aborts whatever is
 * still in flight.
 */
export function lanePowerServer(deps: LanePowerDeps): { serve: PowerServer; end: () => Promise<void>; fuelUsed: () => number } {
  const ended = new AbortController();
  const local = (name: string, args: readonly Uint8Array[]): BrokerAnswer | Promise<BrokerAnswer> => deps.call(name, args, ANSWER_CAP_BYTES);
  let deadline = 0;
  const remote = async (name: string, args: readonly Uint8Array[]): Promise<Uint8Array> => {
    const left = deadline - Date.now();
    if (left <= 0) return refuse('TIMEOUT');
    // The broker is cut just after the snippet's deadline (its backstop): the lane's own deadline
    // answers the waiting interpreter first and ends the snippet TIMEOUT; this frees the socket.
    const answer = await deps.net(name, args, ended.signal, performance.now() + left);
    if (typeof answer === 'number') return refuse(codeOf(answer));
    return answer;
  };
  const bytes = (a: BrokerAnswer): Uint8Array => (a.ok ? (a.payload ?? refuse('TOO_LARGE')) : refuse(codeOf(a.errno)));

  const run = async (power: string, a: readonly unknown[]): Promise<unknown> => {
    const name = IMPORT_OF[power] ?? refuse('INVALID');
    const s = (i: number, optional = false): Uint8Array => encoder.encode(str(a[i], optional));
    switch (power) {
      case 'kv.get':
      case 'queue.pop': {
        const r = await local(name, [s(0)]);
        return !r.ok && r.errno === GUEST_ERR.NOT_FOUND ? null : utf8(bytes(r));
      }
      case 'kv.put':
      case 'queue.push': {
        const r = await local(name, [s(0), s(1)]);
        return r.ok ? null : refuse(codeOf(r.errno));
      }
      case 'kv.delete': {
        const r = await local(name, [s(0)]);
        if (!r.ok && r.errno === GUEST_ERR.NOT_FOUND) return false;
        return r.ok ? true : refuse(codeOf(r.errno));
      }
      case 'kv.list':
        return json(bytes(await local(name, [s(0, true)])));
      case 'queue.len': {
        const r = await local(name, [s(0)]);
        return r.ok ? r.value : refuse(codeOf(r.errno));
      }
      case 'secrets.sign':
        return Buffer.from(bytes(await local(name, [s(0), s(1)]))).toString('hex');
      case 'net.fetch':
        return fetchAnswer(await remote(name, [fetchRequest(a[0])]));
      case 'llm.complete':
        if (typeof a[0] !== 'object' || a[0] === null || Array.isArray(a[0])) return refuse('INVALID');
        return json(await remote(name, [encoder.encode(JSON.stringify(a[0]))]));
      case 'browse.fetch':
        return lenient.decode(await remote(name, [s(0)]));
      default:
        // tcp/udp/tls.request(target, data): the response as text (invalid UTF-8 replaced).
        return lenient.decode(await remote(name, [s(0), s(1, true)]));
    }
  };

  /** `cap.fn(args)`: the argument as JSON (undefined → null), the function's JSON answer as a value. */
  const hostPower = async (cap: string, fn: string, req: PowerRequest): Promise<PowerAnswer> => {
    if (req.oversized !== undefined) {
      // Its size alone (larger than any cap's maxArgBytes): the cadence refuses it where the functions are served.
      const refused = await deps.hostCall!(cap, fn, Math.max(req.oversized, MAX_POWER_FRAME_BYTES + 1), ended.signal, performance.now() + Math.max(0, deadline - Date.now()));
      return { ok: false, code: typeof refused === 'number' ? codeOf(refused) : 'TOO_LARGE' };
    }
    if (req.args.length > 1) return { ok: false, code: 'INVALID' };
    const args = encoder.encode(JSON.stringify(req.args[0] === undefined ? null : req.args[0]));
    const left = deadline - Date.now();
    if (left <= 0) return { ok: false, code: 'TIMEOUT' };
    const answer = await deps.hostCall!(cap, fn, args, ended.signal, performance.now() + left);
    if (typeof answer === 'number') return { ok: false, code: codeOf(answer) };
    return { ok: true, value: json(answer) };
  };

  const serve = async (req: PowerRequest, until: number): Promise<PowerAnswer> => {
    deadline = until;
    try {
      const [cap, op] = req.power.split('.') as [string, string | undefined];
      if (isHostCapName(cap)) {
        // Offered only when granted; a name outside the grant is refused as if it did not exist.
        if (op === undefined || deps.hostCall === undefined || !Object.hasOwn(deps.hostFunctions ?? {}, cap) || !deps.hostFunctions![cap]!.includes(op)) return { ok: false, code: 'INVALID' };
        return await hostPower(cap, op, req);
      }
      if (op === undefined || !Object.hasOwn(LANE_POWERS, cap) || !LANE_POWERS[cap]!.includes(op)) return { ok: false, code: 'INVALID' };
      if (req.oversized !== undefined) {
        // The guest side refused to carry it; the cadence still decides, and audits the refusal.
        const refused = deps.admit(cap as CapWord, IMPORT_OF[req.power]!, req.oversized, MAX_POWER_FRAME_BYTES);
        return { ok: false, code: refused === null ? 'TOO_LARGE' : codeOf(refused) };
      }
      if (HOST_CAPS.has(cap)) {
        // A command's charge (raw wasm units) rides on its answer: the lane adds it to the snippet's meter.
        const r = await (deps.host ?? refuse('DENIED')).call(req.power, req.args, until, req.fuelUsed);
        return r.fuel === undefined ? { ok: true, value: r.value } : { ok: true, value: r.value, fuel: r.fuel };
      }
      return { ok: true, value: await run(req.power, req.args) };
    } catch (e) {
      return { ok: false, code: e instanceof Refusal ? e.code : e instanceof PowerRefusal ? codeOf(e.errno) : 'UNAVAILABLE' };
    }
  };
  return {
    serve,
    end: async () => {
      ended.abort();
      await deps.host?.end();
    },
    fuelUsed: () => deps.host?.fuelUsed() ?? 0,
  };
}
