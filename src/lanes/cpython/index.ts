/**
 * The CPython lane (CPython on WASI, run as a plain guest in the engine's workers): lane.ts runs
 * one call, driver.ts is the Python inside, interpreter.ts finds the module.
 */
export { CPythonLane, type CPythonRunner, type InterpreterRun, type InterpreterRunOptions } from './lane.ts';
export { interpreterBytes, INTERPRETER_PACKAGE } from './interpreter.ts';
