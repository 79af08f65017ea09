/**
 * `engine.build()`: C and C++ compiled and linked entirely inside the sandbox — clang and wasm-ld
 * are the toolchain module (toolchain.ts) run as guests, under the build's profile walls, on a
 * private VFS holding the sources, with the shared read-only sysroot image mounted at /sysroot.
 *
 * Owns: checking the request (source names, counts and sizes, flags), the build's one budget (a
 * single deadline and a single fuel budget across every compile and the link: each step gets what
 * is left), the steps (one in-process cc1 per source, then the driver's link plan), reading the
 * linked module back (at most MAX_WASM_BYTES), diagnostics (diagnostics.ts), the audit record, and
 * removing the private VFS afterwards.
 *
 * Invariant: untrusted source never reaches a native compiler: every byte of it is read only by
 * the sandboxed toolchain. The tools get the `vfs` cap and nothing else, whatever the caller's
 * profile grants. Sources live at the VFS root, so every path a diagnostic names is a guest path;
 * the sysroot is never copied per build. Identical inputs give identical output (the flags are
 * fixed here, no timestamps or host paths reach the tools).
 *
 * Does not protect against: the host-side cost of writing the sources into the VFS (bounded by
 * MAX_SOURCE_BYTES) and of the first build on a machine (the image build and the module rewrite).
 */

import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { BuildHost, StepRun } from './host.ts';
import { SandboxError, toSandboxError, type SerializedError } from '../errors.ts';
import type { CallControls } from '../lanes/controls.ts';
import { resolvePolicy, type PolicyConfig } from '../policy/resolve.ts';
import { O_CREAT, Vfs, removeDatabase, storageDir } from '../storage/index.ts';
import { parseDiagnostics, type Diagnostic } from './diagnostics.ts';
import { compileFlags, drive, PlanCache, toolArgs, type ToolRun } from './driver.ts';
import { requireToolchain, type Toolchain, type ToolName } from './toolchain.ts';

export type BuildLanguage = 'c' | 'c++';

export interface BuildOptions extends CallControls {
  /** `c` or `c++` (`cpp` accepted); default: `c++` when any source has a C++ extension, else `c`. */
  language?: BuildLanguage | 'cpp';
  /** Guest path (relative, e.g. `hello.c`, `src/util.h`) → text or bytes. */
  sources: Readonly<Record<string, string | Uint8Array>>;
  /** Extra flags for every compile and the link (`-DNAME=1`, `-Wall`, `-Wl,-z,stack-size=1048576`). */
  args?: readonly string[];
  /** Optimization level; default 2. */
  optimize?: 0 | 1 | 2 | 3 | 's' | 'z';
  /**
   * Whose limits the build runs under (memory, time, fuel); default `posix` — a C++ file using
   * `<iostream>` takes ~7e9 fuel and several seconds to compile. The tools get only `vfs` whatever
   * the profile grants.
   */
  profile?: string;
  tenant?: string;
  /** One budget for the whole build (every compile and the link); lower only. */
  timeoutMs?: number;
  fuel?: number;
  memoryBytes?: number;
}

export interface BuildStep {
  readonly tool: ToolName;
  readonly argv: readonly string[];
  readonly exitCode: number | null;
  readonly fuelUsed: number;
  readonly durationMs: number;
}

export interface BuildResult {
  readonly ok: boolean;
  /** The linked WASI command (with `_start`), when ok. */
  readonly wasm?: Uint8Array;
  readonly stdout: string;
  readonly stderr: string;
  readonly diagnostics: readonly Diagnostic[];
  readonly fuelUsed: number;
  readonly durationMs: number;
  readonly profile: string;
  readonly warnings: readonly string[];
  readonly steps: readonly BuildStep[];
  readonly error?: SerializedError;
}

export const DEFAULT_BUILD_PROFILE = 'posix';
export const MAX_SOURCES = 256;
export const MAX_SOURCE_BYTES = 8 * 1024 * 1024;
export const MAX_BUILD_ARGS = 256;
export const MAX_ARG_CHARS = 4096;
export const MAX_WASM_BYTES = 64 * 1024 * 1024;
/** Diagnostics repeated in a BUILD_FAILED error's details (all of them are in `diagnostics`). */
const DETAIL_DIAGNOSTICS = 20;

const C_SOURCE = /\.c$/;
const CXX_SOURCE = /\.(?:cc|cpp|cxx|c\+\+|C)$/;
const HEADER = /\.(?:h|hh|hpp|hxx|inc|def)$/;
const SOURCE_PATH = /^[A-Za-z0-9_][A-Za-z0-9._+-]{0,127}(?:\/[A-Za-z0-9_][A-Za-z0-9._+-]{0,127}){0,15}$/;
/** Top-level names the build's own layout (or the guest's preopens) use. */
const RESERVED = new Set(['sysroot', 'tmp', 'memory']);
const OBJECT_DIR = '/tmp/membrane-build';
const OUTPUT = '/tmp/membrane-build/out.wasm';

const invalid = (message: string, details: Record<string, string | number> = {}): SandboxError => new SandboxError('POLICY_INVALID', message, details);

interface Checked {
  readonly language: BuildLanguage;
  readonly files: readonly { path: string; bytes: Uint8Array }[];
  readonly units: readonly string[];
  readonly args: readonly string[];
  readonly optimize: string;
}

function check(opts: BuildOptions): Checked {
  if (opts === null || typeof opts !== 'object' || opts.sources === null || typeof opts.sources !== 'object') throw invalid('build needs { sources: { "name.c": "..." } }');
  const entries = Object.entries(opts.sources);
  if (entries.length === 0) throw invalid('build needs at least one source');
  if (entries.length > MAX_SOURCES) throw invalid(`at most ${MAX_SOURCES} sources`, { sources: entries.length });
  const encoder = new TextEncoder();
  let total = 0;
  const files = entries.map(([path, text]) => {
    if (!SOURCE_PATH.test(path) || path.split('/').some((p) => p === '.' || p === '..') || RESERVED.has(path.split('/')[0]!)) {
      throw invalid('a source name is a relative path of [A-Za-z0-9._+-] parts (not under sysroot/, tmp/ or memory/)', { source: path.slice(0, 128) });
    }
    const bytes = typeof text === 'string' ? encoder.encode(text) : text instanceof Uint8Array ? text : null;
    if (!bytes) throw invalid('a source is a string or a Uint8Array', { source: path });
    total += bytes.length;
    if (total > MAX_SOURCE_BYTES) throw invalid(`the sources exceed ${MAX_SOURCE_BYTES} bytes`, { limitBytes: MAX_SOURCE_BYTES });
    return { path, bytes };
  });
  const units = files.map((f) => f.path).filter((p) => C_SOURCE.test(p) || CXX_SOURCE.test(p)).sort();
  if (units.length === 0) throw invalid('no source to compile (.c, .cc, .cpp, .cxx)');
  for (const f of files) {
    if (!C_SOURCE.test(f.path) && !CXX_SOURCE.test(f.path) && !HEADER.test(f.path)) throw invalid('a source is .c, .cc, .cpp, .cxx or a header (.h, .hpp, …)', { source: f.path });
  }
  const lang = opts.language === 'cpp' ? 'c++' : opts.language;
  if (lang !== undefined && lang !== 'c' && lang !== 'c++') throw invalid('language is "c" or "c++"', { language: String(lang).slice(0, 16) });
  const language: BuildLanguage = lang ?? (units.some((u) => CXX_SOURCE.test(u)) ? 'c++' : 'c');
  const args = [...(opts.args ?? [])];
  if (args.length > MAX_BUILD_ARGS) throw invalid(`at most ${MAX_BUILD_ARGS} build flags`);
  for (const a of args) {
    if (typeof a !== 'string' || a.length === 0 || a.length > MAX_ARG_CHARS || a.includes('\0')) throw invalid('a build flag is a non-empty string without NUL');
    // The build owns where objects and the module go and which jobs run.
    if (a === '-o' || a.startsWith('-o') || a === '-###' || a === '-c' || a === '-cc1') throw invalid(`the build sets ${a.slice(0, 8)} itself`, { flag: a.slice(0, 64) });
  }
  const o = opts.optimize ?? 2;
  if (![0, 1, 2, 3, 's', 'z'].includes(o)) throw invalid('optimize is 0, 1, 2, 3, "s" or "z"');
  return { language, files, units, args, optimize: `-O${o}` };
}

/** Compile and link `opts.sources` inside the sandbox. */
export async function build(
  engine: BuildHost,
  opts: BuildOptions,
  budget?: { readonly fuel: number; readonly policy: PolicyConfig; readonly warmup?: boolean },
): Promise<BuildResult> {
  const t0 = performance.now();
  const steps: BuildStep[] = [];
  const diagnostics: Diagnostic[] = [];
  let stdout = '';
  let stderr = '';
  let fuelUsed = 0;
  let profile = opts?.profile ?? DEFAULT_BUILD_PROFILE;
  let warnings: readonly string[] = [];
  let file: string | null = null;
  const tenant = opts?.tenant ?? 'default';
  let release: (() => void) | null = null;
  const done = (r: { wasm?: Uint8Array; error?: SandboxError }): BuildResult => {
    const result: BuildResult = {
      ok: r.error === undefined,
      ...(r.wasm ? { wasm: r.wasm } : {}),
      stdout, stderr, diagnostics, fuelUsed,
      durationMs: performance.now() - t0,
      profile, warnings, steps,
      ...(r.error ? { error: r.error.toPublic() } : {}),
    };
    if (budget?.warmup !== true) engine.audit({
      tenant,
      kind: 'build',
      detail: { ok: result.ok, steps: steps.length, sources: Object.keys(opts?.sources ?? {}).length, fuelUsed, ...(r.error ? { code: r.error.code } : { wasmBytes: r.wasm?.length ?? 0 }) },
    });
    return result;
  };
  try {
    const req = check(opts);
    // An exec lane passes its own resolved policy and a fuel budget in wasm units (exec.ts).
    const policy = budget?.policy ?? resolvePolicy({ ...opts, profile, caps: undefined }, engine.config);
    profile = policy.profile;
    warnings = policy.warnings;
    if (!policy.caps.includes('vfs')) throw new SandboxError('NOT_CAPABLE', `the ${policy.profile} profile has no vfs: the build lane needs one for its sources`, { cap: 'vfs' });
    const toolchain = budget?.warmup === true ? requireToolchain(engine.config.cacheDir) : await readyToolchain(engine, policy);
    // A build of its own takes a fair turn (an exec's build runs inside the exec's; the warm-up is the engine's).
    if (!budget) release = await engine.turn(tenant, policy.timeoutMs, opts?.signal);
    const images = [toolchain.sysroot()];
    file = join(storageDir('vfs'), `build-${randomUUID()}.sqlite`);
    writeSources(file, req.files, engine.config.vfsMaxBytes, engine.config.vfsMaxInodes);
    const deadline = performance.now() + policy.timeoutMs;
    const fuelBudget = budget?.fuel ?? policy.fuel;
    // An exec's budget is its call's (compile and run), not the build's alone.
    const what = budget ? 'call' : 'build';
    const toolPolicy: PolicyConfig = { ...policy, memoryBytes: toolMemory(policy.memoryBytes), caps: ['vfs'], hostCaps: [] };
    const driver = req.language === 'c++' ? 'clang++' : 'clang';

    const run = async (tool: ToolName, argv: readonly string[]): Promise<ToolRun & { result: StepRun }> => {
      const left = Math.floor(deadline - performance.now());
      if (left < 1) throw new SandboxError('TIMEOUT', `the ${what} ran past its ${policy.timeoutMs} ms budget`, { timeoutMs: policy.timeoutMs });
      if (engine.config.fuel && fuelBudget - fuelUsed < 1) throw new SandboxError('FUEL_EXHAUSTED', `the build used its whole fuel budget of ${fuelBudget}`, { fuel: fuelBudget });
      const stepPolicy: PolicyConfig = { ...toolPolicy, timeoutMs: left, fuel: Math.max(1, fuelBudget - fuelUsed) };
      const r = await engine.runResolved(toolchain.module(), {
        argv, id: runId(tool), argv0: tool, tenant, vfsFile: file!, images,
        ...(opts.signal ? { signal: opts.signal } : {}),
        // The link plan's output (`-###`) is the driver's, not the caller's: never streamed.
        ...(opts.onStdout && !argv.includes('-###') ? { onStdout: opts.onStdout } : {}),
        ...(opts.onStderr && !argv.includes('-###') ? { onStderr: opts.onStderr } : {}),
      }, stepPolicy);
      fuelUsed += r.fuelUsed;
      steps.push({ tool, argv, exitCode: r.exitCode ?? null, fuelUsed: r.fuelUsed, durationMs: r.durationMs });
      if (r.exitCode === undefined && !r.ok) throw budgetError(r.error, policy.timeoutMs, what);
      return { exitCode: r.exitCode ?? 0, stdout: r.stdout, stderr: r.stderr, fuelUsed: r.fuelUsed, result: r };
    };

    const objects: string[] = [];
    for (const [i, unit] of req.units.entries()) {
      const object = `${OBJECT_DIR}/${i}.o`;
      const r = await run(driver, toolArgs(driver, ['-c', req.optimize, ...compileFlags(req.args), unit, '-o', object]));
      stdout = capped(stdout, r.stdout, engine.config.outputLimitBytes);
      stderr = capped(stderr, r.stderr, engine.config.outputLimitBytes);
      parseDiagnostics(r.stderr, diagnostics);
      if (r.exitCode !== 0) return done({ error: failed(diagnostics, `${unit} did not compile`) });
      objects.push(object);
    }
    // `-###` can print a job with any text: the plan is parsed and checked (driver.ts).
    const link = await drive(driver, [req.optimize, ...req.args, ...objects, '-o', OUTPUT], run, undefined, linkPlans);
    stdout = capped(stdout, link.stdout, engine.config.outputLimitBytes);
    stderr = capped(stderr, link.stderr, engine.config.outputLimitBytes);
    parseDiagnostics(link.stderr, diagnostics);
    if (link.exitCode !== 0) return done({ error: failed(diagnostics, 'the objects did not link') });
    return done({ wasm: readOutput(file) });
  } catch (e) {
    return done({ error: toSandboxError(e) });
  } finally {
    release?.();
    if (file) removeDatabase(file);
  }
}

/**
 * The toolchain, its sysroot image built and its module rewritten and compiled for `policy`'s
 * memory limit: one-time costs (seconds on a new machine), kept out of any call's deadline.
 */
export async function readyToolchain(engine: BuildHost, policy: PolicyConfig): Promise<Toolchain> {
  const toolchain = requireToolchain(engine.config.cacheDir);
  toolchain.sysroot();
  const memoryBytes = toolMemory(policy.memoryBytes);
  await engine.warm(toolchain.module(), { profile: policy.profile, memoryBytes });
  // V8 compiles a wasm function on its first call: the first compile in a process spends seconds
  // compiling clang itself. Under a tight budget one build of a fixed file pays that here, outside
  // the caller's; a generous budget absorbs it (and a one-shot CLI process is not made slower).
  if (policy.timeoutMs >= GENEROUS_BUDGET_MS) return toolchain;
  let warmed = warmedCaps.get(engine);
  if (!warmed) warmedCaps.set(engine, (warmed = new Map()));
  let warming = warmed.get(memoryBytes);
  if (!warming) {
    warming = build(engine, { sources: { 'warm.c': WARM_SOURCE } }, { policy: { ...policy, timeoutMs: WARM_TIMEOUT_MS }, fuel: WARM_FUEL, warmup: true }).then(() => undefined);
    warmed.set(memoryBytes, warming);
  }
  await warming;
  return toolchain;
}

/** Link plans by driver and flags: the same objects and flags always plan the same jobs. */
const linkPlans = new PlanCache();
const warmedCaps = new WeakMap<BuildHost, Map<number, Promise<void>>>();
const WARM_SOURCE = '#include <stdio.h>\nint main(void) { printf("%d\\n", 1); return 0; }\n';
const WARM_TIMEOUT_MS = 120_000;
const GENEROUS_BUDGET_MS = 30_000;
const WARM_FUEL = 1e11;

/**
 * The memory cap the tools run with: the caller's, rounded down to a power of two MiB. The module
 * is rewritten (and cached, ~100 MB) once per memory cap, so the caps it runs at are kept few.
 */
export function toolMemory(memoryBytes: number): number {
  const MiB = 1024 * 1024;
  if (memoryBytes < MiB) return memoryBytes;
  return 2 ** Math.floor(Math.log2(memoryBytes / MiB)) * MiB;
}

/** `text + more`, at most `limit` characters in all (each step's output is capped by the engine; so is their sum). */
function capped(text: string, more: string, limit: number): string {
  if (text === '') return more; // one step's output: the engine capped (and marked) it already
  if (text.length >= limit) return text;
  const joined = text + more;
  return joined.length <= limit ? joined : `${joined.slice(0, limit)}\n[membrane: build output truncated at ${limit} characters]\n`;
}

/** A run id for a tool (ids admit no `+`). */
export function runId(tool: string): string {
  return tool.replace(/\+/g, 'x');
}

function writeSources(file: string, files: Checked['files'], maxBytes: number, maxInodes: number): void {
  const vfs = Vfs.open({ file, maxBytes, maxInodes });
  try {
    vfs.mkdir('tmp', 'membrane-build');
    for (const f of files) {
      const parts = f.path.split('/');
      for (let i = 1; i < parts.length; i++) {
        const dir = parts.slice(0, i).join('/');
        try {
          vfs.mkdir('workspace', dir);
        } catch {
          // already there (two sources in one directory)
        }
      }
      const st = vfs.open('workspace', f.path, O_CREAT);
      vfs.write(st.ino, 0, f.bytes);
    }
  } finally {
    vfs.close();
  }
}

function readOutput(file: string): Uint8Array {
  const vfs = Vfs.open({ file });
  try {
    const st = vfs.stat('tmp', 'membrane-build/out.wasm');
    if (st.size > MAX_WASM_BYTES) throw new SandboxError('OUTPUT_LIMIT', `the linked module is larger than ${MAX_WASM_BYTES} bytes`, { limitBytes: MAX_WASM_BYTES });
    return vfs.read(st.ino, 0, st.size);
  } finally {
    vfs.close();
  }
}

/** A step that a wall stopped: that wall's error, as the whole build's. */
function budgetError(error: SerializedError | undefined, timeoutMs: number, what: string): SandboxError {
  if (!error) return new SandboxError('INTERNAL', 'a build step failed without an error');
  if (error.code === 'TIMEOUT') return new SandboxError('TIMEOUT', `the ${what} ran past its ${timeoutMs} ms budget`, { timeoutMs });
  return new SandboxError(error.code, error.message, error.details ?? {});
}

function failed(diagnostics: readonly Diagnostic[], what: string): SandboxError {
  const first = diagnostics.find((d) => d.severity === 'error');
  const where = first ? `${first.file !== undefined ? `${first.file}:${first.line}:${first.column}: ` : ''}${first.message}` : what;
  return new SandboxError('BUILD_FAILED', `${what}: ${where}`.slice(0, 500), {
    errors: diagnostics.filter((d) => d.severity === 'error').length,
    diagnostics: diagnostics.slice(0, DETAIL_DIAGNOSTICS).map((d) => ({ ...d })),
  });
}
