export { parse, ShellSyntaxError, MAX_SCRIPT_BYTES, type Script } from './parse.ts';
export { runShell, MAX_STEPS, MAX_PIPELINE_STAGES, type ShellOptions, type ShellResult } from './run.ts';
export { CommandRegistry } from '../engine/registry.ts';
