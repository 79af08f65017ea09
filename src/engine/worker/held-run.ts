/**
 * The worker's side of a held run (bridge/held-modules.ts): reading a `run-held` message — a fresh
 * run of a module this worker was given earlier, named by its id, under a spec whose fixed part
 * it holds by a spec id (bridge/held-specs.ts) — into the run it asks for.
 *
 * Owns: the message's defensive decoding (its spec parts arrive as JSON text) and the fixed parts
 * this worker holds (`HeldSpecTable`: added and forgotten only as main's messages say).
 * Invariant: a malformed message, a part whose walls are not finite numbers (JSON has no
 * Infinity: a wall must never arrive as a null), or a spec id this worker was not given is no run
 * at all; a fixed part is checked once, when it arrives, and kept frozen, so no run can change
 * what the next one gets. A run's own part (session, argv, env, depth, stdin) is read from its own
 * message every time and kept nowhere. The module is looked up only among those this worker was
 * given (worker/main.ts).
 *
 * Does not protect against: nothing beyond decoding — the main thread chose the spec.
 */

import { PROTOCOL_VERSION, isWireValue, type Budget, type Entry, type GuestSpec } from '../bridge/protocol.ts';

/** A fresh run besides its module: the fields of a `run` control message. */
export interface RunJob {
  readonly job: number;
  readonly spec: GuestSpec;
  readonly entry: Entry;
  readonly budget: Budget;
  readonly stream?: boolean | undefined;
}

/** What every run of a module under one policy and engine shares (held by id on the worker). */
export interface FixedSpec {
  readonly profile: string;
  readonly link: GuestSpec['link'];
  readonly maxMemoryPages: number;
  readonly importedMemory: GuestSpec['importedMemory'];
  readonly growFailedExport: string | null;
  readonly poolMemory: GuestSpec['poolMemory'];
  readonly output: GuestSpec['output'];
  readonly port: boolean;
  readonly logSink: GuestSpec['logSink'];
  readonly hostWaitMs: number;
  readonly fuel: GuestSpec['fuel'];
  readonly vfs: GuestSpec['vfs'];
}

/** A run's own part, in this order: session id, tenant, argv, env, depth. */
export type OwnPart = readonly [string, string, readonly string[], readonly (readonly [string, string])[], number];

/** The fixed spec parts this worker was given, by the id main chose; nothing else is found by id. */
export class HeldSpecTable {
  private readonly held = new Map<number, FixedSpec>();

  /**
   * Forget `forget`, keep `text` (checked, frozen) as `id` when given, then the part `id` names:
   * null when the text is not a well-formed part or the id is not held.
   */
  take(id: number, text: string | null, forget: number | null): FixedSpec | null {
    if (forget !== null) this.held.delete(forget);
    if (text !== null) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        return null;
      }
      const fixed = checkFixed(parsed);
      if (fixed === null) return null;
      this.held.set(id, deepFreeze(fixed));
    }
    return this.held.get(id) ?? null;
  }

  get size(): number {
    return this.held.size;
  }
}

/**
 * The run a held-run message asks for (its module still to be looked up by id), or null when the
 * message is not a well-formed one or names a spec part this worker does not hold.
 */
export function readHeldRun(x: unknown, specs: HeldSpecTable): (RunJob & { readonly moduleId: number }) | null {
  if (!isObj(x) || x['v'] !== PROTOCOL_VERSION || x['kind'] !== 'run-held') return null;
  const { moduleId: id, job, specId, fixed: text, forgetSpec, own: ownText, stdin, budget, entry } = x;
  if (!Number.isSafeInteger(specId) || !(text === null || typeof text === 'string') || !(forgetSpec === null || Number.isSafeInteger(forgetSpec))) return null;
  // The table changes first: main counts them as made once the message is sent, whatever else it holds.
  const f = specs.take(specId as number, text, forgetSpec as number | null);
  if (f === null) return null;
  if (!Number.isSafeInteger(id) || typeof job !== 'number' || typeof ownText !== 'string' || !(stdin === null || stdin instanceof Uint8Array)) return null;
  if (!isObj(budget) || typeof budget['ms'] !== 'number' || typeof budget['fuel'] !== 'number' || !isEntry(entry)) return null;
  let own: unknown;
  try {
    own = JSON.parse(ownText);
  } catch {
    return null;
  }
  if (!isOwn(own)) return null;
  const [sid, tenant, argv, env, depth] = own;
  const input = stdin ?? new Uint8Array(0);
  const spec: GuestSpec = {
    session: { id: sid, tenant, profile: f.profile as GuestSpec['session']['profile'] },
    link: f.link,
    maxMemoryPages: f.maxMemoryPages,
    importedMemory: f.importedMemory,
    growFailedExport: f.growFailedExport,
    poolMemory: f.poolMemory,
    output: f.output,
    wasi: f.port ? { argv, env, stdin: input, port: true } : { argv, env, stdin: input },
    logSink: f.logSink,
    hostWaitMs: f.hostWaitMs,
    fuel: f.fuel,
    vfs: f.vfs,
    depth,
  };
  return { moduleId: id as number, job, spec, entry, budget: { ms: budget['ms'], fuel: budget['fuel'] }, stream: x['stream'] === true };
}

function isOwn(x: unknown): x is OwnPart {
  if (!Array.isArray(x) || x.length !== 5) return false;
  const [id, tenant, argv, env, depth] = x as unknown[];
  return (
    typeof id === 'string' &&
    typeof tenant === 'string' &&
    Array.isArray(argv) &&
    argv.every((a) => typeof a === 'string') &&
    Array.isArray(env) &&
    env.every((p) => Array.isArray(p) && p.length === 2 && typeof p[0] === 'string' && typeof p[1] === 'string') &&
    Number.isSafeInteger(depth) &&
    (depth as number) >= 0
  );
}

/** A fixed part whose every wall is a finite number (JSON has no Infinity) and every field of its type, or null. */
function checkFixed(x: unknown): FixedSpec | null {
  if (!isObj(x)) return null;
  const { profile, link, importedMemory: im, growFailedExport: grow, poolMemory: pool, output, port, logSink, fuel, vfs } = x;
  if (typeof profile !== 'string' || !Array.isArray(link) || !link.every((k) => typeof k === 'string')) return null;
  if (!finite(x['maxMemoryPages']) || !finite(x['hostWaitMs']) || typeof port !== 'boolean' || (logSink !== 'stderr' && logSink !== 'host')) return null;
  if (!(im === null || (isObj(im) && finite(im['initial']) && (im['maximum'] === null || finite(im['maximum'])) && typeof im['shared'] === 'boolean'))) return null;
  if (!(grow === null || typeof grow === 'string')) return null;
  if (!(pool === null || (isObj(pool) && finite(pool['initialPages']) && finite(pool['maxPages'])))) return null;
  if (!isObj(output) || !finite(output['limitBytes']) || typeof output['failOnLimit'] !== 'boolean') return null;
  if (!isObj(fuel) || typeof fuel['metered'] !== 'boolean' || !finite(fuel['chunk'])) return null;
  if (!(vfs === null || (isObj(vfs) && typeof vfs['file'] === 'string' && Array.isArray(vfs['preopens']) && finite(vfs['maxBytes']) && finite(vfs['maxInodes'])))) return null;
  return x as unknown as FixedSpec;
}

const finite = (x: unknown): boolean => Number.isFinite(x);

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

type Obj = Record<string, unknown>;
const isObj = (x: unknown): x is Obj => typeof x === 'object' && x !== null && !Array.isArray(x);

function isEntry(x: unknown): x is Entry {
  if (!isObj(x)) return false;
  if (x['kind'] === 'start') return true;
  return x['kind'] === 'invoke' && typeof x['export'] === 'string' && Array.isArray(x['args']) && x['args'].every(isWireValue);
}
