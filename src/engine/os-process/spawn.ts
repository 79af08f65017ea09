/**
 * The `os_process` tier's process boundary: how one child is started and ended. The child is
 * `process.execPath` running `dist/os-child.mjs` with an empty environment (only
 * `MEMBRANE_HOME`, its private storage dir), under Node's permission model, inside bubblewrap
 * when bubblewrap is installed and can create namespaces here, and under rlimits (rlimits.ts)
 * when prlimit is there.
 *
 * Owns: the child's command line (permission flags, bwrap binds), its deadline (SIGKILL at
 * deadline + grace after its request → TIMEOUT), the reply cap (a larger reply → the child is
 * killed, OUTPUT_LIMIT; before its call it may write only its ready line), splitting its broker
 * request lines off its output during the call (each bounded, handed to the call's `side`; stdin
 * stays open for their answers, written by `send`), a silent or crashed
 * child → INSTANCE_DEAD, and the private storage dir (created at spawn, removed when it exits).
 * A started child is idle (unref'd: it never keeps the host alive) until its one call; a host
 * that exits with children still there kills their groups and removes their storage dirs on its
 * way out (a host killed by a signal cannot: its idle children then read end-of-input and exit,
 * and their storage dirs stay behind in the temp dir).
 * Invariant: the child can read only the package (its dist/, src/), the node_modules its imports
 * resolve through (its own and any above it, where an installed package's dependencies sit), Node itself
 * and the module cache; it can write only its storage dir; it cannot spawn processes (no
 * --allow-child-process); it loads native addons only when its call is granted the guest VFS
 * (SQLite through better-sqlite3; native code is outside the permission model, so such a call
 * leans on bubblewrap, when present, for its file walls); worker threads are allowed (the engine
 * runs guests on them). Under bwrap it also has no network (no `--share-net`), read-only binds, a
 * private /tmp and its own PID namespace. Every child is killed (its whole process group) when the
 * call ends, however it ends.
 * Does not protect against: the permission model's own gaps (Node documents it as a seatbelt,
 * not a sandbox against malicious code running as JS: the guest here is wasm inside V8, one
 * layer further in); without bwrap the child shares the host's network and PID namespace; kernel
 * bugs reachable from an unprivileged process.
 */

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { SandboxError } from '../../errors.ts';
import { findBwrap } from '../../fabric/tiers.ts';
import { packageRoot } from '../../storage/package-root.ts';
import { BROKER_MARK } from './protocol.ts';
import { prlimitArgs, type Rlimits } from './rlimits.ts';

/** Whether bubblewrap can sandbox a child here, and if not, why. Cached per PATH. */
export interface BwrapStatus {
  readonly bwrap: string | null;
  readonly reason: string | null;
}

const probes = new Map<string, BwrapStatus>();

/** bubblewrap on `path` and able to create the namespaces we ask for (probed once per PATH). */
export function bwrapStatus(path = process.env['PATH'] ?? ''): BwrapStatus {
  const known = probes.get(path);
  if (known) return known;
  const bin = findBwrap(path);
  let status: BwrapStatus;
  if (bin === null) status = { bwrap: null, reason: 'bwrap not installed' };
  else {
    const r = spawnSync(bin, ['--unshare-all', '--die-with-parent', '--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', '--', process.execPath, '-e', '0'], { timeout: 10_000, stdio: 'ignore' });
    status = r.status === 0 ? { bwrap: bin, reason: null } : { bwrap: null, reason: 'bwrap cannot create namespaces here' };
  }
  probes.set(path, status);
  return status;
}

/** How a child is started: the same for every call of one configuration (a pool key). */
export interface BootPlan {
  /** The child entry (dist/os-child.mjs). */
  readonly entry: string;
  /** Directories the child may read besides the package and Node (the module cache). */
  readonly readDirs: readonly string[];
  /** bubblewrap's path, or null for the permission model alone. */
  readonly bwrap: string | null;
  /** Allow native addons (`--allow-addons`): only for a call granted the guest VFS (better-sqlite3). */
  readonly addons: boolean;
  /** Share the host's network namespace under bwrap (only when a net cap is granted). */
  readonly shareNet: boolean;
  /** Start it through prlimit with these limits (rlimits.ts); absent or null: none. */
  readonly rlimits?: { readonly prlimit: string; readonly limits: Rlimits } | null;
}

/** What one call sets on the child it is given. */
export interface CallLimits {
  /** SIGKILL this long after the request is written (the call's budget + boot + grace). */
  readonly killAfterMs: number;
  /** Largest reply accepted on stdout, in bytes. */
  readonly maxReplyBytes: number;
  readonly signal?: AbortSignal | undefined;
  /**
   * The reply is complete once stdout holds this many lines (the ready line and the reply line):
   * the child's group is killed then, rather than waiting for it to exit by itself. Either way the
   * call ends once the child is gone.
   */
  readonly lines?: number;
  /**
   * Lines the child writes during its call that start with `BROKER_MARK` (protocol.ts): each is
   * handed to `onLine` (without the mark) and is not part of the reply; one longer than
   * `maxLineBytes` kills the child (INTERNAL). With `side`, stdin stays open after the request
   * for `send`; without it, stdin ends after the request.
   */
  readonly side?: SideLines;
}

export interface SideLines {
  readonly maxLineBytes: number;
  readonly onLine: (line: string) => void;
}

export interface SpawnPlan extends BootPlan, CallLimits {
  /** Told the child's pid once it runs (tests look for leftovers). */
  readonly onSpawn?: ((pid: number) => void) | undefined;
}

const real = (p: string): string => {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
};

/** The node flags for the permission model: read `reads`, write `writes`, workers on, nothing else. */
export function permissionFlags(reads: readonly string[], writes: readonly string[], version = process.versions.node): string[] {
  const major = Number(version.split('.')[0]);
  // A directory grants what is under it only with a trailing wildcard on Node 20; later Nodes accept it too.
  const tree = (d: string): string => (d.endsWith('/*') ? d : `${d.replace(/\/$/, '')}/*`);
  reads = reads.map(tree);
  writes = writes.map(tree);
  // One flag per path (Node 20.20 and 22+; an older Node 20 reading only the last flag fails closed).
  return [major < 22 ? '--experimental-permission' : '--permission', ...reads.map((r) => `--allow-fs-read=${r}`), ...writes.map((w) => `--allow-fs-write=${w}`), '--allow-worker', '--no-warnings'];
}

function bwrapArgs(bin: string, reads: readonly string[], home: string, shareNet: boolean): string[] {
  const a = [bin, '--unshare-all', ...(shareNet ? ['--share-net'] : []), '--die-with-parent', '--clearenv'];
  // No --new-session: the child is already started in a session of its own with no terminal
  // (detached), and staying in that process group lets the parent's group SIGKILL reach inside.
  for (const d of ['/usr', '/lib', '/lib64', '/lib32', '/bin', '/sbin', '/etc']) if (existsSync(d)) a.push('--ro-bind', d, d);
  a.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp');
  for (const d of reads) a.push('--ro-bind-try', d, d);
  a.push('--bind', home, home, '--setenv', 'MEMBRANE_HOME', home, '--');
  return a;
}

/**
 * Every `node_modules` Node's resolution can reach from the package (its own, and the ones above
 * it where an installed package's dependencies are hoisted): the child reads its dependencies there.
 */
function moduleDirs(root: string): string[] {
  const out: string[] = [];
  for (let dir = root; ; dir = dirname(dir)) {
    const nm = join(dir, 'node_modules');
    if (existsSync(nm)) out.push(real(nm));
    if (dirname(dir) === dir) return out;
  }
}

const MARK = BROKER_MARK.charCodeAt(0);

/** Most a child may write before its call (the ready line is 6 bytes): more is misbehaviour, and it is killed. */
const IDLE_OUTPUT_BYTES = 64;

/** A started child: idle until `call`, then one call, then gone. */
export interface Child {
  readonly pid: number;
  /** False once it has exited (or been killed). */
  readonly alive: boolean;
  /** Resolves when the first line (the ready line) is on its stdout; rejects if it dies first. */
  readonly ready: Promise<void>;
  /** Called once when it exits, however. */
  onExit(fn: () => void): void;
  /** Write the request, end stdin, and wait for everything on stdout (the call's deadline starts now). Once. */
  call(request: string, limits: CallLimits): Promise<string>;
  /** SIGKILL its process group (its call: CANCELLED). */
  kill(): void;
  /** SIGKILL its process group; its call fails with `why`. */
  fail(why: SandboxError): void;
  /** Write one line on its stdin during a call with `side` (`flushed` once it left this process); false if gone. */
  send(line: string, flushed?: () => void): boolean;
  /** Keep the host process alive for it (a call waiting on its boot); an idle child does not. */
  hold(): void;
}

/** Live children (their group and storage dir): killed and removed if the host exits with them still there. */
const live = new Map<number, string>();
let exitHook = false;

function onHostExit(): void {
  for (const [pid, home] of live) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
    rmSync(home, { recursive: true, force: true });
  }
  live.clear();
}

/**
 * Start a child: its private storage dir, its command line, its process group. `boot` is written
 * on its stdin at once (stdin stays open for the request). The storage dir is removed when it exits.
 */
export function startChild(plan: BootPlan, boot = ''): Child {
  const home = mkdtempSync(join(tmpdir(), 'membrane-osproc-'));
  const root = packageRoot();
  const reads = [...new Set([root, ...moduleDirs(root), real(dirname(process.execPath)), ...plan.readDirs.map(real)])];
  const node = [real(process.execPath), ...permissionFlags([...reads, home], [home]), ...(plan.addons ? ['--allow-addons'] : []), plan.entry];
  const inner = plan.bwrap ? [...bwrapArgs(plan.bwrap, reads, home, plan.shareNet), ...node] : node;
  // prlimit sets the limits and execs the rest in its own process: the pid is the child's throughout.
  const argv = plan.rlimits ? [...prlimitArgs(plan.rlimits.prlimit, plan.rlimits.limits), ...inner] : inner;
  const child = spawn(argv[0]!, argv.slice(1), { env: { MEMBRANE_HOME: home }, cwd: home, stdio: ['pipe', 'pipe', process.env['MEMBRANE_OS_PROCESS_STDERR'] === '1' ? 'inherit' : 'ignore'], detached: true });
  if (child.pid !== undefined) live.set(child.pid, home);
  if (!exitHook) {
    exitHook = true;
    process.once('exit', onHostExit); // a host that ends without engine.close() (its idle children are unref'd)
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let cap = IDLE_OUTPUT_BYTES;
  let alive = true;
  let failure: SandboxError | null = null;
  let exitCode: number | null = null;
  let lines = 0;
  let onLine: (() => void) | null = null;
  const exits: (() => void)[] = [];
  let readyDone: { resolve: () => void; reject: (e: Error) => void } | null = null;
  const ready = new Promise<void>((resolve, reject) => (readyDone = { resolve, reject }));
  ready.catch(() => {}); // a child nobody waits on may die before its ready line
  // Set when the child has exited (and was reaped): from then on its pid may be any other
  // process's, and its number a new process group's, so it is never signalled again. Nothing of
  // its group outlives it: it cannot spawn (no --allow-child-process), and under bwrap its PID
  // namespace ends with it (--die-with-parent).
  let exited = false;
  const killGroup = (): void => {
    if (exited || child.pid === undefined) return;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
  };
  const kill = (why: SandboxError): void => {
    failure ??= why;
    killGroup();
  };
  /** Output that is not a broker line: the ready line and the reply, under the cap. */
  const plain = (c: Buffer): void => {
    size += c.length;
    if (size > cap) return kill(new SandboxError('OUTPUT_LIMIT', "the os_process child's reply is larger than its output cap"));
    chunks.push(c);
    for (let at = c.indexOf(10); at >= 0; at = c.indexOf(10, at + 1)) lines += 1;
    if (readyDone !== null && lines > 0) {
      readyDone.resolve();
      readyDone = null;
    }
    onLine?.();
  };
  // The current line: just begun, a broker line (its parts so far, bounded) or plain output.
  let side: SideLines | null = null;
  let mode: 'start' | 'side' | 'plain' = 'start';
  let sideParts: Buffer[] = [];
  let sideSize = 0;
  child.stdout!.on('data', (c: Buffer) => {
    for (let at = 0; at < c.length && failure === null; ) {
      if (mode === 'start') {
        mode = side !== null && c[at] === MARK ? 'side' : 'plain';
        if (mode === 'side') at += 1; // the mark is not the line's
      }
      const nl = c.indexOf(10, at);
      const end = nl < 0 ? c.length : nl + 1;
      if (mode === 'plain') plain(c.subarray(at, end));
      else {
        const piece = c.subarray(at, nl < 0 ? c.length : nl);
        sideSize += piece.length;
        if (sideSize > side!.maxLineBytes) return kill(new SandboxError('INTERNAL', 'the os_process child sent an oversized broker request'));
        sideParts.push(piece);
        if (nl >= 0) {
          const line = Buffer.concat(sideParts).toString('utf8');
          sideParts = [];
          sideSize = 0;
          side!.onLine(line);
        }
      }
      if (nl >= 0) mode = 'start';
      at = end;
    }
  });
  child.stdin!.on('error', () => {}); // a child that dies before reading: reported on exit
  if (boot !== '') child.stdin!.write(boot);
  child.on('error', () => kill(new SandboxError('INSTANCE_DEAD', 'the os_process child could not be started')));
  child.on('exit', () => {
    exited = true;
    if (child.pid !== undefined) live.delete(child.pid); // the host's exit hook must not signal a pid that is no longer this child's
  });
  child.on('close', (code) => {
    alive = false;
    exitCode = code;
    rmSync(home, { recursive: true, force: true });
    readyDone?.reject(new SandboxError('INSTANCE_DEAD', 'the os_process child exited before it was ready'));
    readyDone = null;
    for (const fn of exits.splice(0)) fn();
  });
  // An idle child never keeps the host process alive; a call refs it again.
  const hold = (on: boolean): void => {
    for (const h of [child, child.stdin, child.stdout] as unknown as ({ ref(): void; unref(): void } | null)[]) {
      if (h && on) h.ref();
      else if (h) h.unref();
    }
  };
  hold(false);
  let called = false;
  const handle: Child = {
    pid: child.pid ?? -1,
    get alive() {
      return alive;
    },
    ready,
    onExit: (fn) => (alive ? exits.push(fn) : fn()),
    kill: () => kill(new SandboxError('CANCELLED', 'the os_process child was killed')),
    fail: (why) => kill(why),
    send(line, flushed) {
      if (!alive || side === null || failure !== null) return false;
      child.stdin!.write(`${line}\n`, () => flushed?.());
      return true;
    },
    hold: () => hold(true),
    call(request, limits) {
      if (called) throw new SandboxError('INTERNAL', 'an os_process child serves one call');
      called = true;
      return new Promise<string>((resolve, reject) => {
        let settled = false;
        const settle = (): void => {
          if (settled) return;
          settled = true;
          onLine = null;
          side = null;
          clearTimeout(timer);
          limits.signal?.removeEventListener('abort', onAbort);
          hold(false);
          if (failure) reject(failure);
          else if (limits.lines !== undefined && lines >= limits.lines) {
            const all = Buffer.concat(chunks);
            let end = -1;
            for (let i = 0; i < limits.lines; i++) end = all.indexOf(10, end + 1);
            resolve(all.subarray(0, end + 1).toString('utf8'));
          }
          else if (exitCode !== 0) reject(new SandboxError('INSTANCE_DEAD', `the os_process child exited without a reply (status ${exitCode ?? 'signal'})`));
          else resolve(Buffer.concat(chunks).toString('utf8'));
        };
        hold(true);
        cap = limits.maxReplyBytes;
        const timer = setTimeout(() => kill(new SandboxError('TIMEOUT', 'the os_process child ran past its deadline and was killed')), limits.killAfterMs);
        const onAbort = (): void => kill(new SandboxError('CANCELLED', 'the call was cancelled; its child process was killed'));
        if (limits.signal?.aborted) onAbort();
        else limits.signal?.addEventListener('abort', onAbort, { once: true });
        if (size > cap) kill(new SandboxError('OUTPUT_LIMIT', "the os_process child's reply is larger than its output cap"));
        if (!alive) return settle();
        // Its one call is answered: the group is killed (nothing it does after counts), and the call ends at its exit.
        if (limits.lines !== undefined) onLine = () => void (lines >= limits.lines! && killGroup());
        exits.push(settle);
        side = limits.side ?? null;
        if (side) child.stdin!.write(`${request}\n`);
        else child.stdin!.end(request);
      });
    },
  };
  return handle;
}

/** Run one fresh child on `request` (nothing written before it); resolves with everything it wrote, or throws the call's SandboxError. */
export async function runChild(plan: SpawnPlan, request: string): Promise<string> {
  const child = startChild(plan);
  if (child.pid > 0) plan.onSpawn?.(child.pid);
  return child.call(request, plan);
}
