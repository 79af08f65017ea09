/**
 * The clang driver, run the way a WASI guest can: clang cannot spawn its cc1 or the linker under
 * WASI, so an invocation that needs more than one job is planned first (`clang -###` prints the
 * jobs without running them) and each job then runs as its own sandboxed run of the tool it names.
 *
 * Owns: the arguments every toolchain tool gets before the caller's (the WASI target, the sysroot
 * at SYSROOT_PATH, the cc1 in-process), which invocations need planning, and parsing the printed
 * jobs. Invariant: a job runs only a toolchain tool (clang's cc1 or wasm-ld), with exactly the
 * arguments the driver printed; anything else in the plan is an error, never executed — the jobs
 * are text a guest-influenced program printed, and are treated as such.
 *
 * Does not protect against: nothing beyond the runs themselves — each job is a sandboxed run
 * under the caller's walls (src/shell/run.ts, src/build/build.ts call `runTool`).
 */

import { SYSROOT_PATH, type ToolName } from './toolchain.ts';

/** What clang and clang++ get before the caller's arguments (the caller's own flags come later and win). */
const DRIVER_PREFIX = ['--target=wasm32-wasip1', `--sysroot=${SYSROOT_PATH}`, `-resource-dir=${SYSROOT_PATH}`, '-fintegrated-cc1'];
/** Flags after which the driver runs at most one job (in-process cc1) or none. */
const ONE_JOB = new Set(['-c', '-S', '-E', '-fsyntax-only', '-###', '-M', '-MM', '--version', '-v', '-help', '--help', '-dumpversion', '-print-search-dirs']);
/** The most jobs one plan may hold: one compile per source plus the link. */
export const MAX_JOBS = 256;

export function isDriver(name: string): name is 'clang' | 'clang++' {
  return name === 'clang' || name === 'clang++';
}

/** The full argument list (after argv[0]) a tool runs with. */
export function toolArgs(name: string, args: readonly string[]): string[] {
  return args[0] === '-cc1' ? [...args] : [...driverPrefix(name), ...args];
}

/** What a tool gets before its caller's arguments (nothing for a cc1 job: see toolArgs). */
export function driverPrefix(name: string): string[] {
  if (!isDriver(name)) return [];
  // The sysroot's libc++ is built without exceptions: `throw` is a compile error, not a link error.
  return name === 'clang++' ? [...DRIVER_PREFIX, '-fno-exceptions'] : [...DRIVER_PREFIX];
}

/** Flags only the link reads (their value is the next argument for the two-word ones). */
const LINK_ONLY = new Set(['-nostdlib', '-nostartfiles', '-nodefaultlibs', '-shared', '-static', '-rdynamic', '-s']);
const LINK_ONLY_WITH_VALUE = new Set(['-Xlinker', '-z']);
const LINK_ONLY_PREFIX = /^(?:-Wl,|-l.|-L.|-mexec-model=)/;

/**
 * The caller's flags as a compile step (`-c`) gets them: without the link-only ones. A build
 * compiles each source on its own and then links, which one `clang a.c -Wl,...` does in one
 * invocation; given to `-c`, a link flag is unused and warns (an error under `-Werror`).
 */
export function compileFlags(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (LINK_ONLY_WITH_VALUE.has(a)) {
      i++;
      continue;
    }
    if (LINK_ONLY.has(a) || LINK_ONLY_PREFIX.test(a)) continue;
    out.push(a);
  }
  return out;
}

/** Whether `clang args` must be planned with `-###` and run job by job. */
export function needsPlan(name: string, args: readonly string[]): boolean {
  return isDriver(name) && args[0] !== '-cc1' && !args.some((a) => ONE_JOB.has(a));
}

export interface Job {
  readonly tool: ToolName;
  readonly args: readonly string[];
}

/** Split one printed job line (` "a" "b c" "d\"e"`) into its words. */
function words(line: string): string[] | null {
  const out: string[] = [];
  const re = / (?:"((?:[^"\\]|\\.)*)"|([^ "]+))/gy;
  let m: RegExpExecArray | null;
  let at = 0;
  while ((m = re.exec(line)) !== null) {
    out.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2]!);
    at = re.lastIndex;
  }
  return at === line.length ? out : null;
}

/**
 * The jobs in `clang -###` output (stderr), or an error message. Job lines start with a space and
 * a quote; the header lines (version, target, …) and ` (in-process)` are skipped.
 */
export function parseJobs(text: string): Job[] | string {
  const jobs: Job[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(' "')) continue;
    const w = words(line);
    if (!w || w.length === 0) return 'the driver printed a job that could not be read';
    // cc1 jobs print as `"" "clang" "-cc1" ...` (no installed path) or `".../clang" "-cc1" ...`.
    const cc1 = w.indexOf('-cc1');
    if (cc1 >= 0 && cc1 <= 2) jobs.push({ tool: 'clang', args: w.slice(cc1) });
    else if (/(?:^|\/)wasm-ld$/.test(w[0]!)) jobs.push({ tool: 'wasm-ld', args: w.slice(1) });
    else return `the driver planned a job that is not a toolchain tool: ${JSON.stringify(w[0]!.slice(0, 64))}`;
    if (jobs.length > MAX_JOBS) return `the driver planned more than ${MAX_JOBS} jobs`;
  }
  return jobs.length > 0 ? jobs : 'the driver planned no jobs';
}

const PLAN_HEADER = /^(?:clang version |Target: |Thread model: |InstalledDir: |Build config: | "| \(in-process\))/;

function planMessages(stderr: string): string {
  return stderr.split('\n').filter((l) => !PLAN_HEADER.test(l)).join('\n');
}

/** One sandboxed run of a tool: what the driver needs back from it. */
export interface ToolRun {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly fuelUsed: number;
  /** Set when a wall (or anything but the tool's own exit status) ended the run. */
  readonly stopped?: boolean;
}

/**
 * Run `name args` as the clang driver would: directly when one job suffices, else plan with
 * `-###` and run each job in order, stopping at the first that fails. Output is the concatenation
 * of the jobs' output (the plan's is not shown); fuel is the sum.
 */
export async function drive(
  name: string,
  args: readonly string[],
  run: (tool: ToolName, argv: readonly string[]) => Promise<ToolRun>,
  removeTemporaries?: (paths: readonly string[]) => void,
  plans?: PlanCache,
): Promise<ToolRun> {
  if (!needsPlan(name, args)) return run(name as ToolName, toolArgs(name, args));
  const key = `${name}\0${args.join('\0')}`;
  let jobs = plans?.get(key);
  let fuel = 0;
  if (!jobs) {
    const plan = await run(name as ToolName, toolArgs(name, ['-###', ...args]));
    // A plan that failed shows its messages, not the header and jobs `-###` prints around them.
    if (plan.exitCode !== 0 || plan.stopped) return { ...plan, stderr: planMessages(plan.stderr) };
    const parsed = parseJobs(plan.stderr);
    if (typeof parsed === 'string') return { exitCode: 1, stdout: '', stderr: `${name}: ${parsed}\n`, fuelUsed: plan.fuelUsed };
    fuel = plan.fuelUsed;
    jobs = parsed;
    plans?.set(key, jobs);
  }
  let stdout = '';
  let stderr = '';
  try {
    for (const job of jobs) {
      const r = await run(job.tool, job.args);
      fuel += r.fuelUsed;
      stdout += r.stdout;
      stderr += r.stderr;
      if (r.exitCode !== 0 || r.stopped) return { ...r, stdout, stderr, fuelUsed: fuel };
    }
    return { exitCode: 0, stdout, stderr, fuelUsed: fuel };
  } finally {
    // clang would delete the objects it made in /tmp between its jobs: so do we.
    removeTemporaries?.(temporaries(jobs));
  }
}

/**
 * Plans already made, by driver and arguments. The driver is deterministic in its arguments
 * except for the names of its /tmp objects, so only plans without them are kept (a build's link:
 * objects in, module out). A kept plan was checked by parseJobs when it was made.
 */
export class PlanCache {
  private readonly plans = new Map<string, readonly Job[]>();
  constructor(private readonly max = 64) {}

  get(key: string): readonly Job[] | undefined {
    return this.plans.get(key);
  }

  set(key: string, jobs: readonly Job[]): void {
    if (temporaries(jobs).length > 0) return;
    if (this.plans.size >= this.max) this.plans.delete(this.plans.keys().next().value!);
    this.plans.set(key, jobs);
  }
}

/** The /tmp outputs (`-o /tmp/...`) of a plan's compile jobs: the driver's intermediate objects. */
export function temporaries(jobs: readonly Job[]): string[] {
  const out: string[] = [];
  for (const j of jobs) {
    if (j.args[0] !== '-cc1') continue;
    const o = j.args.indexOf('-o');
    const path = o >= 0 ? j.args[o + 1] : undefined;
    if (path !== undefined && /^\/tmp\/[^/]+$/.test(path)) out.push(path);
  }
  return out;
}
