/**
 * The worker's side of a held run (bridge/held-modules.ts): reading a `run-held` message — a fresh
 * run of a module this worker was given earlier, named by its id — into the run it asks for.
 *
 * Owns: the message's defensive decoding (its spec arrives as JSON text). Invariant: a malformed
 * message, or a spec whose walls are not finite numbers (JSON has no Infinity: a wall must never
 * arrive as a null), is no run at all; the module is looked up only among those this worker was
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

/**
 * The run a held-run message asks for (its module still to be looked up by id), or
 * null when the message is not a well-formed one. The spec's numbers are checked to be finite
 * (JSON has no Infinity: a wall never arrives as a null).
 */
export function readHeldRun(x: unknown): (RunJob & { readonly moduleId: number }) | null {
  if (!isObj(x) || x['v'] !== PROTOCOL_VERSION || x['kind'] !== 'run-held') return null;
  const { moduleId: id, job, spec: text, stdin, budget, entry } = x;
  if (!Number.isSafeInteger(id) || typeof job !== 'number' || typeof text !== 'string' || !(stdin === null || stdin instanceof Uint8Array)) return null;
  if (!isObj(budget) || typeof budget['ms'] !== 'number' || typeof budget['fuel'] !== 'number' || !isEntry(entry)) return null;
  let spec: unknown;
  try {
    spec = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isObj(spec) || !isObj(spec['wasi']) || !finiteWalls(spec)) return null;
  const full = { ...spec, wasi: { ...spec['wasi'], stdin: stdin ?? new Uint8Array(0) } } as unknown as GuestSpec;
  return { moduleId: id as number, job, spec: full, entry, budget: { ms: budget['ms'], fuel: budget['fuel'] }, stream: x['stream'] === true };
}

function finiteWalls(spec: Obj): boolean {
  const output = spec['output'];
  const fuel = spec['fuel'];
  return (
    Number.isFinite(spec['maxMemoryPages']) &&
    Number.isFinite(spec['hostWaitMs']) &&
    isObj(output) &&
    Number.isFinite(output['limitBytes']) &&
    isObj(fuel) &&
    Number.isFinite(fuel['chunk'])
  );
}

type Obj = Record<string, unknown>;
const isObj = (x: unknown): x is Obj => typeof x === 'object' && x !== null && !Array.isArray(x);

function isEntry(x: unknown): x is Entry {
  if (!isObj(x)) return false;
  if (x['kind'] === 'start') return true;
  return x['kind'] === 'invoke' && typeof x['export'] === 'string' && Array.isArray(x['args']) && x['args'].every(isWireValue);
}
