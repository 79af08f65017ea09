/**
 * Compiled modules a pool worker holds by id, so a fresh run of a module the worker already ran
 * is posted without its `WebAssembly.Module`: the message names the module by a **module id** and
 * the worker instantiates afresh from the module it was given with that id (no module to
 * serialize on the main thread and to rebuild as a new module object on the worker, per run).
 *
 * Owns: module ids (one per `WebAssembly.Module` object, from a process-wide counter, never
 * reused: two different modules never share an id, whatever tenant or engine runs them), the
 * main thread's record of which ids one worker holds (`HeldModules`, at most HELD_MODULES, the
 * least recently used forgotten first — the worker is told which id to forget in the same message
 * that gives it the module replacing it), and the held-run message (read on the worker's side by
 * worker/held-run.ts).
 * Invariant: a held run is posted to a worker only for an id given to that same worker, with its
 * module, in an earlier `run` message (messages on one port arrive in order); the worker looks the
 * id up only among the modules it was given; an id it does not hold is INTERNAL, never another
 * module. An instance is never reused: every run instantiates afresh (worker/main.ts).
 *
 * Does not protect against: nothing beyond that mapping — what a module is, and which walls it
 * was prepared under, is the module cache's business (module-cache.ts keys it by content hash and
 * walls, so one prepared module object is one content under one set of walls).
 */

import { PROTOCOL_VERSION, type Budget, type ControlMessage, type Entry } from './protocol.ts';
import type { RunJob } from '../worker/held-run.ts';
import { HeldSpecs, fixedOf, ownText } from './held-specs.ts';

export type { RunJob };

/** How many compiled modules one worker keeps by id (their compiled code is shared with the main thread's). */
export const HELD_MODULES = 8;

/**
 * main → worker: a fresh run of the module the worker holds as `moduleId`, under the spec whose
 * fixed part it holds as `specId` (held-specs.ts; `fixed` carries that part as JSON text the
 * first time, `forgetSpec` names one to drop). The run's own part travels as JSON text (`own`,
 * held-specs.ts OwnPart; a spec is plain data, and structured clone of its object graph costs
 * several times more), its stdin beside it (null when empty).
 */
export interface HeldRunMessage {
  readonly v: typeof PROTOCOL_VERSION;
  readonly kind: 'run-held';
  readonly moduleId: number;
  readonly job: number;
  readonly specId: number;
  readonly fixed: string | null;
  readonly forgetSpec: number | null;
  readonly own: string;
  readonly stdin: Uint8Array | null;
  readonly entry: Entry;
  readonly budget: Budget;
  readonly stream: boolean;
}

const ids = new WeakMap<WebAssembly.Module, number>();
let nextId = 1;

/** The module's id: the same object always gets the same one, a different object never. */
export function moduleId(module: WebAssembly.Module): number {
  let id = ids.get(module);
  if (id === undefined) {
    id = nextId++;
    ids.set(module, id);
  }
  return id;
}

/** The main thread's view of the ids one worker holds, least recently used first. */
export class HeldModules {
  private readonly order: number[] = [];
  /** The fixed parts of specs this worker holds (held-specs.ts). */
  readonly specs = new HeldSpecs();

  has(id: number): boolean {
    return this.order.includes(id);
  }

  /** A held run of `id`: it becomes the most recently used. */
  touch(id: number): void {
    const i = this.order.indexOf(id);
    if (i >= 0) this.order.splice(i, 1);
    this.order.push(id);
  }

  /** `id` is sent with its module: the id the worker must forget to make room, if any. */
  add(id: number): number | null {
    this.touch(id);
    return this.order.length > HELD_MODULES ? this.order.shift()! : null;
  }
}

/** The message of a fresh run on the worker `held` describes: by id when it holds the module, else with it (and it holds it from then on). */
export function runMessage(held: HeldModules, module: WebAssembly.Module, run: RunJob): ControlMessage | HeldRunMessage {
  const id = moduleId(module);
  if (held.has(id)) {
    const own = ownText(run.spec);
    const ref = own === null ? null : held.specs.refer(fixedOf(run.spec));
    if (ref !== null) {
      held.touch(id);
      const stdin = run.spec.wasi.stdin;
      return { v: PROTOCOL_VERSION, kind: 'run-held', moduleId: id, job: run.job, ...ref, own: own!, stdin: stdin.length > 0 ? stdin : null, entry: run.entry, budget: run.budget, stream: run.stream === true };
    }
    // A spec JSON cannot carry as it is (an operator's Infinity cap, bytes): the full message, structured-cloned.
  }
  return { v: PROTOCOL_VERSION, kind: 'run', module, moduleId: id, forget: held.add(id), ...run };
}
