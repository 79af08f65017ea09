/**
 * The cost model of the work wall (DESIGN §3): what one unit of fuel buys.
 *
 * Static costs, charged per basic block when the block is entered:
 * - every instruction in a function body costs `instruction` (1), control instructions included
 *   (block, loop, if, else, end, br, br_if, br_table, return, unreachable, …);
 * - each call-like instruction (call, call_indirect, return_call, return_call_indirect,
 *   call_ref, return_call_ref) costs `call` (1) on top.
 *
 * Size costs, charged at run time by a helper function before the operation runs, so a huge
 * request with too little fuel is refused without doing the work (on top of the instruction's own
 * static cost):
 * - memory.fill / memory.copy / memory.init: ceil(n / `memoryBytesPerUnit`) for n bytes (8);
 * - table.fill / table.copy / table.init: n × `tableElement` for n elements (1);
 * - memory.grow: delta × `memoryPage` for delta 64 KiB pages (64);
 * - table.grow: n × `tableElement` (1).
 *
 * Invariant: a resolved model has integer fields in [0, MAX_UNIT_COST], `instruction` ≥ 1 (so
 * every loop iteration consumes fuel and reaches a refill, which is where the time wall is
 * checked) and `memoryBytesPerUnit` ≥ 1. The bound keeps every static block cost and every size
 * charge far below 2^53, so i64 arithmetic in the guest and number arithmetic here never round.
 *
 * Does not protect against: the real cost of an instruction. A unit is an instruction count, not
 * time: a `memory.atomic.wait32`, a division and a `nop` cost the same, and time spent in host
 * calls is not counted at all. The wall clock is the time wall's job.
 */

import { SandboxError } from '../../errors.ts';

export interface CostModel {
  /** Every instruction of a function body, control instructions included. */
  readonly instruction: number;
  /** Extra for each call-like instruction. */
  readonly call: number;
  /** memory.fill / copy / init charge ceil(bytes / memoryBytesPerUnit). */
  readonly memoryBytesPerUnit: number;
  /** table.fill / copy / init / grow charge this per element. */
  readonly tableElement: number;
  /** memory.grow charges this per 64 KiB page requested. */
  readonly memoryPage: number;
}

export const DEFAULT_COSTS: CostModel = Object.freeze({
  instruction: 1,
  call: 1,
  memoryBytesPerUnit: 8,
  tableElement: 1,
  memoryPage: 64,
});

/** Upper bound on every field (2^16): block costs stay below 2^53 for any body V8 accepts. */
export const MAX_UNIT_COST = 65536;

const MINIMUM: Readonly<Record<keyof CostModel, number>> = {
  instruction: 1,
  call: 0,
  memoryBytesPerUnit: 1,
  tableElement: 0,
  memoryPage: 0,
};

/** Defaults overlaid with `costs`; POLICY_INVALID for a field that is not an allowed integer. */
export function resolveCosts(costs: Partial<CostModel> | undefined): CostModel {
  if (costs === undefined) return DEFAULT_COSTS;
  if (costs === null || typeof costs !== 'object') {
    throw new SandboxError('POLICY_INVALID', 'costs must be an object', { option: 'costs' });
  }
  const pick = (field: keyof CostModel): number => {
    const v: unknown = costs[field];
    if (v === undefined) return DEFAULT_COSTS[field];
    const min = MINIMUM[field];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > MAX_UNIT_COST) {
      throw new SandboxError('POLICY_INVALID', `costs.${field} must be an integer in [${min}, ${MAX_UNIT_COST}]`, {
        option: `costs.${field}`,
      });
    }
    return v;
  };
  return Object.freeze({
    instruction: pick('instruction'),
    call: pick('call'),
    memoryBytesPerUnit: pick('memoryBytesPerUnit'),
    tableElement: pick('tableElement'),
    memoryPage: pick('memoryPage'),
  });
}
