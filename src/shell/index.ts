export { parse, ShellSyntaxError, MAX_SCRIPT_BYTES, type Script } from './parse.ts';
export { runShell, MAX_STEPS, MAX_PIPELINE_STAGES, STATUS_STOPPED, type ShellOptions, type ShellResult } from './run.ts';
export { MAX_ARGC, MAX_ARGV_BYTES, MAX_REDIRECT_INPUT_BYTES, MAX_SHELL_VARIABLE_BYTES } from './limits.ts';
export { CommandRegistry } from '../engine/registry.ts';
