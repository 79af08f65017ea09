/**
 * Public surface of the fuel rewriter (the work wall's binary half, DESIGN §3): `instrumentFuel`,
 * the names of the host contract, and the cost model.
 *
 * Invariant: everything exported here either succeeds or throws a `SandboxError`
 * (INVALID_MODULE for malformed, reserved-name or 64-bit-memory modules; POLICY_INVALID for a
 * bad cost model).
 *
 * The input is validated with V8 first (validate.ts) unless the caller passes `validated: true`.
 */

export { FUEL_GLOBAL_EXPORT, FUEL_IMPORT_MODULE, FUEL_IMPORT_NAME, FUEL_REWRITER_VERSION, instrumentFuel } from './instrument.ts';
export type { FuelOptions, FuelResult, FuelStats } from './instrument.ts';
export { DEFAULT_COSTS, MAX_UNIT_COST, resolveCosts } from './cost.ts';
export type { CostModel } from './cost.ts';
