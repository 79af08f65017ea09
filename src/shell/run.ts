/**
 * The in-sandbox shell's runner: executes a parsed script, every command resolved through the
 * registry and run as a sandboxed WASI guest against one VFS shared by the whole script.
 *
 * Owns: `&&`/`||`/`;`, the builtins `true` and `false`, pipelines (each stage's stdout is the next
 * stage's stdin; stages run one after another, so a pipeline buffers — `seq 1 1000000 | head -1`
 * computes all of seq first), redirections into and out of the VFS (vfs-io.ts), exit statuses
 * (127 command not found, 126 a stage the sandbox stopped, 2 a script the shell stopped), and the
 * script's walls: ONE deadline for the whole script (the caller's `timeoutMs`, else the profile's
 * per-call time — each command gets what is left of it, and a script whose budget is spent ends
 * TIMEOUT), at most MAX_STEPS commands and MAX_PIPELINE_STAGES stages, and the host-memory bounds
 * of limits.ts (variables, argv, captured output).
 * Invariant: the host never interprets a command itself; the only code that runs is registered
 * wasm, under the caller's profile, limits and VFS. A script that crosses a wall ends with
 * `error: { code, message, details }` and exit status 2.
 *
 * Does not protect against: the time spent compiling a command's module before its deadline is
 * armed (the module cache makes that once per command), and a pipeline's intermediate data, which
 * the engine's per-stream output cap (outputLimitBytes) bounds per stage.
 */

import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Engine } from '../engine/engine.ts';
import type { RunResult } from '../engine/results.ts';
import { SandboxError, toSandboxError, type SerializedError } from '../errors.ts';
import { resolvePolicy } from '../policy/resolve.ts';
import { Vfs, removeDatabase, resolveVfs, storageDir } from '../storage/index.ts';
import { parse, type Command, type Pipeline } from './parse.ts';
import type { CommandRegistry } from '../engine/registry.ts';
import { MAX_ARGV_BYTES, ScriptOutput, Variables, expandCommand, printable } from './limits.ts';
import { readVfs, removeVfs, writeVfs } from './vfs-io.ts';
import { driveTool } from './tool-driver.ts';
import { runId } from '../build/build.ts';
import { MAX_VFS_MODULE_BYTES } from '../abi/command.ts';
import { commandModulePath, isCommandPath } from '../abi/vfs-paths.ts';

export const MAX_STEPS = 10_000;
export const MAX_PIPELINE_STAGES = 64;
/** The exit status of a script the shell itself stopped (a wall, a step or stage limit). */
export const STATUS_STOPPED = 2;

export interface ShellOptions {
  /** A named persistent VFS; without one the script gets a private VFS removed afterwards. */
  vfs?: string;
  profile?: string;
  /** The whole script's wall-clock budget (default: the profile's time per call); lower only. */
  timeoutMs?: number;
  tenant?: string;
  env?: Readonly<Record<string, string>>;
  stdin?: Uint8Array | string;
  /** Commands one script may run (default MAX_STEPS); lower only. */
  maxSteps?: number;
  /** Narrow the profile's cap words for every command (a subset, as everywhere; the agent's grant). */
  caps?: readonly string[];
}

export interface ShellResult {
  readonly exitCode: number;
  /** At most the engine's outputLimitBytes, then `[membrane: sh stdout truncated at N bytes]`. */
  readonly stdout: string;
  readonly stderr: string;
  readonly fuelUsed: number;
  readonly durationMs: number;
  readonly warnings: readonly string[];
  /** Why the shell stopped the script, when a wall did (TIMEOUT, MEMORY_LIMIT, OUTPUT_LIMIT, …). */
  readonly error?: SerializedError;
}

const EMPTY = new Uint8Array(0);
const encoder = new TextEncoder();

export async function runShell(engine: Engine, registry: CommandRegistry, script: string, opts: ShellOptions = {}): Promise<ShellResult> {
  const t0 = performance.now();
  const ast = parse(script);
  const { outputLimitBytes, failOnOutputLimit } = engine.config;
  const stdout = new ScriptOutput('stdout', outputLimitBytes, failOnOutputLimit);
  const stderr = new ScriptOutput('stderr', outputLimitBytes, failOnOutputLimit);
  const warnings = new Set<string>();
  let fuel = 0;
  let steps = 0;
  let error: SandboxError | null = null;
  const maxSteps = Math.min(MAX_STEPS, opts.maxSteps ?? MAX_STEPS);
  const finish = (status: number): ShellResult => {
    for (const s of [stdout, stderr]) if (s.truncated) warnings.add(`sh ${s.name} truncated at ${s.limit} bytes`);
    return {
      exitCode: status,
      stdout: stdout.text(),
      stderr: stderr.text(),
      fuelUsed: fuel,
      durationMs: Math.round((performance.now() - t0) * 1000) / 1000,
      warnings: [...warnings],
      ...(error ? { error: error.toPublic() } : {}),
    };
  };

  let budgetMs: number;
  let vars: Variables;
  try {
    const policy = resolvePolicy({ ...(opts.profile !== undefined ? { profile: opts.profile } : {}), ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}), ...(opts.caps ? { caps: opts.caps } : {}) }, engine.config);
    for (const w of policy.warnings) warnings.add(w);
    budgetMs = policy.timeoutMs;
    vars = new Variables(opts.env);
  } catch (e) {
    error = toSandboxError(e);
    stderr.write(error.message.startsWith('sh: ') ? `${error.message}\n` : `sh: ${error.message}\n`);
    return finish(STATUS_STOPPED);
  }
  const deadline = t0 + budgetMs;
  const outOfTime = (): SandboxError =>
    new SandboxError('TIMEOUT', `sh: the script ran past its ${budgetMs} ms budget`, { timeoutMs: budgetMs, elapsedMs: Math.round(performance.now() - t0) });

  const temporary = opts.vfs === undefined;
  const file = temporary ? join(storageDir('vfs'), `sh-${randomUUID()}.sqlite`) : resolveVfs({ name: opts.vfs }).file;
  const vfs = Vfs.open({ file });

  const runCommand = async (cmd: Command, input: Uint8Array, piped: boolean): Promise<{ status: number; out: Uint8Array }> => {
    if (++steps > maxSteps) throw new Error(`sh: more than ${maxSteps} commands`);
    const remaining = deadline - performance.now();
    if (remaining < 1) throw outOfTime();
    if (cmd.words.length === 0) {
      for (const a of cmd.assigns) vars.assign(a.name, a.value);
      return { status: 0, out: EMPTY };
    }
    const { words, assigns } = expandCommand(vars, cmd.words, cmd.assigns);
    let stdin = input;
    for (const r of cmd.redirects.filter((x) => x.op === '<')) {
      const target = vars.expand(r.target, MAX_ARGV_BYTES, 'a redirection');
      const read = readVfs(vfs, target);
      if (typeof read === 'string') {
        stderr.write(`sh: ${printable(target)}: ${read}\n`);
        return { status: 1, out: EMPTY };
      }
      stdin = read;
    }
    const [name, ...args] = words as [string, ...string[]];
    // The two builtins a shell cannot do without; everything else is a sandboxed command.
    if ((name === 'true' || name === 'false') && !registry.get(name)) return { status: name === 'true' ? 0 : 1, out: EMPTY };
    // A path (`./a.wasm`, `/bin/tool.wasm`) names a module in the script's own VFS — one it built,
    // say — run like any command: sandboxed, under the script's profile, on the same VFS.
    const fromVfs = isCommandPath(name) ? readVfs(vfs, commandModulePath(name), MAX_VFS_MODULE_BYTES) : null;
    if (typeof fromVfs === 'string') {
      stderr.write(`sh: ${printable(name)}: ${fromVfs === 'ENOENT' ? 'No such file or directory' : fromVfs}\n`);
      return { status: fromVfs === 'ENOENT' ? 127 : 126, out: EMPTY };
    }
    const bytes = fromVfs ?? registry.get(name);
    if (!bytes) {
      stderr.write(`sh: ${printable(name)}: command not found\n`);
      return { status: 127, out: EMPTY };
    }
    const runTool = (tool: string, argv: readonly string[]): Promise<RunResult> =>
      engine.run(fromVfs ?? registry.get(tool) ?? bytes, {
        argv,
        env: Object.fromEntries(assigns),
        stdin,
        vfsFile: file,
        images: registry.imagesFor(tool),
        captureBytes: true,
        id: fromVfs ? 'vfs-module' : runId(tool),
        argv0: tool,
        timeoutMs: Math.max(1, Math.ceil(deadline - performance.now())),
        ...(opts.profile !== undefined ? { profile: opts.profile } : {}),
        ...(opts.caps ? { caps: opts.caps } : {}),
        ...(opts.tenant !== undefined ? { tenant: opts.tenant } : {}),
      });
    const r: RunResult = !fromVfs && registry.isToolchainTool(name) ? await driveTool(name, args, runTool, (paths) => {
          for (const p of paths) removeVfs(vfs, p);
        }) : await runTool(name, args);
    fuel += r.fuelUsed;
    for (const w of r.warnings) warnings.add(w);
    stderr.write(r.stderr);
    let out = r.stdoutBytes ?? encoder.encode(r.stdout);
    const code = r.exitCode ?? (r.ok ? 0 : 126);
    if (r.exitCode === undefined && !r.ok && r.error) stderr.write(`sh: ${printable(name)}: ${r.error.code}: ${r.error.message}\n`);
    const outward = piped || cmd.redirects.some((x) => x.op !== '<');
    if (r.stdoutTruncated && outward) stderr.write(`sh: ${printable(name)}: stdout truncated at ${engine.config.outputLimitBytes} bytes\n`);
    for (const redirect of cmd.redirects.filter((x) => x.op !== '<')) {
      const target = vars.expand(redirect.target, MAX_ARGV_BYTES, 'a redirection');
      const failed = writeVfs(vfs, target, out, redirect.op === '>>');
      if (failed) {
        stderr.write(`sh: ${printable(target)}: ${failed}\n`);
        return { status: 1, out: EMPTY };
      }
      out = EMPTY;
    }
    if (r.error?.code === 'TIMEOUT' && performance.now() >= deadline - 1) throw outOfTime();
    return { status: code, out };
  };

  const runPipeline = async (pipeline: Pipeline, input: Uint8Array): Promise<number> => {
    if (pipeline.length > MAX_PIPELINE_STAGES) throw new Error(`sh: a pipeline of more than ${MAX_PIPELINE_STAGES} commands`);
    let data = input;
    let last = 0;
    for (let i = 0; i < pipeline.length; i++) {
      const r = await runCommand(pipeline[i]!, data, i < pipeline.length - 1);
      data = r.out;
      last = r.status;
    }
    stdout.write(data);
    return last;
  };

  let status = 0;
  try {
    const stdin = typeof opts.stdin === 'string' ? encoder.encode(opts.stdin) : (opts.stdin ?? EMPTY);
    let first = true;
    for (const item of ast) {
      status = vars.status = await runPipeline(item.first, first ? stdin : EMPTY);
      first = false;
      for (const { op, pipeline } of item.rest) {
        if ((op === '&&' && status === 0) || (op === '||' && status !== 0)) status = vars.status = await runPipeline(pipeline, EMPTY);
      }
    }
  } catch (e) {
    if (e instanceof SandboxError) error = e;
    else if (!(e instanceof Error) || !e.message.startsWith('sh: ')) error = toSandboxError(e);
    const message = error ? error.message : (e as Error).message;
    try {
      stderr.write(`${message}\n`);
    } catch {
      // the stderr cap, with failOnOutputLimit: the error already says why the script stopped
    }
    status = STATUS_STOPPED;
  } finally {
    vfs.close();
    if (temporary) removeDatabase(file);
  }
  return finish(status);
}
