/**
 * The in-sandbox shell's runner: executes a parsed script, every command resolved through the
 * registry and run as a sandboxed WASI guest against one VFS shared by the whole script.
 *
 * Owns: expansion (variables, `$?`), `&&`/`||`/`;`, the builtins `true` and `false`, pipelines (each stage's stdout is the next
 * stage's stdin; stages run one after another, so a pipeline buffers — `seq 1 1000000 | head -1`
 * computes all of seq first), redirections into and out of the VFS (`<`, `>`, `>>`; never the
 * host filesystem), exit statuses (127 command not found, 126 a stage the sandbox stopped).
 * Invariant: the host never interprets a command itself; the only code that runs is registered
 * wasm, under the caller's profile, limits and VFS.
 *
 * Does not protect against: a script whose total work is large — each stage has its own budget;
 * bound the script with MAX_STEPS and the caller's timeout.
 */

import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Engine } from '../engine/engine.ts';
import type { RunResult } from '../engine/results.ts';
import { O_CREAT, O_TRUNC, Vfs, VfsError, removeDatabase, resolveVfs, storageDir, type VolumeName } from '../storage/index.ts';
import { parse, type Command, type Pipeline, type Word } from './parse.ts';
import type { CommandRegistry } from '../engine/registry.ts';

export const MAX_STEPS = 10_000;
export const MAX_PIPELINE_STAGES = 64;

export interface ShellOptions {
  /** A named persistent VFS; without one the script gets a private VFS removed afterwards. */
  vfs?: string;
  profile?: string;
  timeoutMs?: number;
  tenant?: string;
  env?: Readonly<Record<string, string>>;
  stdin?: Uint8Array | string;
  /** Commands one script may run (default MAX_STEPS); lower only. */
  maxSteps?: number;
}

export interface ShellResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly fuelUsed: number;
  readonly durationMs: number;
  readonly warnings: readonly string[];
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: false });

export async function runShell(engine: Engine, registry: CommandRegistry, script: string, opts: ShellOptions = {}): Promise<ShellResult> {
  const t0 = performance.now();
  const ast = parse(script);
  const temporary = opts.vfs === undefined;
  const file = temporary ? join(storageDir('vfs'), `sh-${randomUUID()}.sqlite`) : resolveVfs({ name: opts.vfs }).file;
  const vfs = Vfs.open({ file });
  const vars = new Map<string, string>(Object.entries(opts.env ?? {}));
  const stderr: string[] = [];
  const stdout: Uint8Array[] = [];
  const warnings = new Set<string>();
  let status = 0;
  let fuel = 0;
  let steps = 0;
  const maxSteps = Math.min(MAX_STEPS, opts.maxSteps ?? MAX_STEPS);

  const expand = (w: Word): string => w.map((p) => (p.kind === 'text' ? p.text : p.name === '?' ? String(status) : (vars.get(p.name) ?? ''))).join('');

  const runCommand = async (cmd: Command, input: Uint8Array): Promise<{ status: number; out: Uint8Array }> => {
    if (++steps > maxSteps) throw new Error(`sh: more than ${maxSteps} commands`);
    const words = cmd.words.map(expand);
    const assigns = cmd.assigns.map((a) => [a.name, expand(a.value)] as const);
    if (words.length === 0) {
      for (const [k, v] of assigns) vars.set(k, v);
      return { status: 0, out: new Uint8Array(0) };
    }
    let stdin = input;
    for (const r of cmd.redirects.filter((x) => x.op === '<')) {
      try {
        stdin = readVfs(vfs, expand(r.target));
      } catch (e) {
        stderr.push(`sh: ${expand(r.target)}: ${e instanceof VfsError ? e.code : 'cannot read'}\n`);
        return { status: 1, out: new Uint8Array(0) };
      }
    }
    const [name, ...args] = words as [string, ...string[]];
    // The two builtins a shell cannot do without; everything else is a sandboxed command.
    if ((name === 'true' || name === 'false') && !registry.get(name)) return { status: name === 'true' ? 0 : 1, out: new Uint8Array(0) };
    const bytes = registry.get(name);
    if (!bytes) {
      stderr.push(`sh: ${name}: command not found\n`);
      return { status: 127, out: new Uint8Array(0) };
    }
    const r: RunResult = await engine.run(bytes, {
      argv: args,
      env: Object.fromEntries(assigns),
      stdin,
      vfsFile: file,
      captureBytes: true,
      id: name,
      ...(opts.profile !== undefined ? { profile: opts.profile } : {}),
      ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
      ...(opts.tenant !== undefined ? { tenant: opts.tenant } : {}),
    });
    fuel += r.fuelUsed;
    for (const w of r.warnings) warnings.add(w);
    stderr.push(r.stderr);
    let out = r.stdoutBytes ?? encoder.encode(r.stdout);
    const code = r.exitCode ?? (r.ok ? 0 : 126);
    if (r.exitCode === undefined && !r.ok && r.error) stderr.push(`sh: ${name}: ${r.error.code}: ${r.error.message}\n`);
    for (const redirect of cmd.redirects.filter((x) => x.op !== '<')) {
      const target = expand(redirect.target);
      try {
        writeVfs(vfs, target, out, redirect.op === '>>');
      } catch (e) {
        stderr.push(`sh: ${target}: ${e instanceof VfsError ? e.code : 'cannot write'}\n`);
        return { status: 1, out: new Uint8Array(0) };
      }
      out = new Uint8Array(0);
    }
    return { status: code, out };
  };

  const runPipeline = async (pipeline: Pipeline, input: Uint8Array): Promise<number> => {
    if (pipeline.length > MAX_PIPELINE_STAGES) throw new Error(`sh: a pipeline of more than ${MAX_PIPELINE_STAGES} commands`);
    let data = input;
    let last = 0;
    for (const cmd of pipeline) {
      const r = await runCommand(cmd, data);
      data = r.out;
      last = r.status;
    }
    stdout.push(data);
    return last;
  };

  try {
    const stdin = typeof opts.stdin === 'string' ? encoder.encode(opts.stdin) : (opts.stdin ?? new Uint8Array(0));
    let first = true;
    for (const item of ast) {
      status = await runPipeline(item.first, first ? stdin : new Uint8Array(0));
      first = false;
      for (const { op, pipeline } of item.rest) {
        if ((op === '&&' && status === 0) || (op === '||' && status !== 0)) status = await runPipeline(pipeline, new Uint8Array(0));
      }
    }
  } catch (e) {
    stderr.push(`${e instanceof Error ? e.message : 'sh: failed'}\n`);
    status = 2;
  } finally {
    vfs.close();
    if (temporary) removeDatabase(file);
  }
  return {
    exitCode: status,
    stdout: decoder.decode(concat(stdout)),
    stderr: stderr.join(''),
    fuelUsed: fuel,
    durationMs: Math.round((performance.now() - t0) * 1000) / 1000,
    warnings: [...warnings],
  };
}

/** A shell path: `/tmp/...` and `/memory/...` are those volumes; everything else the workspace. */
function locate(path: string): { volume: VolumeName; path: string } {
  for (const volume of ['tmp', 'memory'] as const) {
    if (path === `/${volume}` || path.startsWith(`/${volume}/`)) return { volume, path: path.slice(volume.length + 1) || '/' };
  }
  return { volume: 'workspace', path };
}

function readVfs(vfs: Vfs, path: string): Uint8Array {
  const at = locate(path);
  const st = vfs.open(at.volume, at.path, 0);
  return vfs.read(st.ino, 0, st.size);
}

function writeVfs(vfs: Vfs, path: string, data: Uint8Array, append: boolean): void {
  const at = locate(path);
  const st = vfs.open(at.volume, at.path, append ? O_CREAT : O_CREAT | O_TRUNC);
  vfs.write(st.ino, append ? st.size : 0, data);
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
