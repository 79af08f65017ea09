/**
 * The CPython lane (CPython on WASI, run as a plain guest in the engine's workers): lane.ts runs
 * one call, driver.ts is the Python inside, interpreter.ts finds the module.
 */
export { CPythonLane, type CPythonRunner } from './lane.ts';
export type { InterpreterRun, InterpreterRunOptions, Parked } from './pool.ts';
export { interpreterBytes, INTERPRETER_PACKAGE } from './interpreter.ts';
