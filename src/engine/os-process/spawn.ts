/**
 * The `os_process` tier's process boundary: how one child is started and ended. The child is
 * `process.execPath` running `dist/os-child.mjs` with an empty environment (only
 * `MEMBRANE_HOME`, its private storage dir), under Node's permission model, inside bubblewrap
 * when bubblewrap is installed and can create namespaces here.
 *
 * Owns: the child's command line (permission flags, bwrap binds), its deadline (SIGKILL at
 * deadline + grace → TIMEOUT), the reply cap (a larger reply → the child is killed,
 * OUTPUT_LIMIT), a silent or crashed child → INSTANCE_DEAD, and the private storage dir (created
 * per call, removed after it).
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

export interface SpawnPlan {
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
  /** SIGKILL this long after the spawn (the call's budget + boot + grace). */
  readonly killAfterMs: number;
  /** Largest reply accepted on stdout, in bytes. */
  readonly maxReplyBytes: number;
  readonly signal?: AbortSignal | undefined;
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

/** Run one child on `request`; resolves with its reply text, or throws the call's SandboxError. */
export async function runChild(plan: SpawnPlan, request: string): Promise<string> {
  const home = mkdtempSync(join(tmpdir(), 'membrane-osproc-'));
  const root = packageRoot();
  const reads = [...new Set([root, ...moduleDirs(root), real(dirname(process.execPath)), ...plan.readDirs.map(real)])];
  const node = [real(process.execPath), ...permissionFlags([...reads, home], [home]), ...(plan.addons ? ['--allow-addons'] : []), plan.entry];
  const argv = plan.bwrap ? [...bwrapArgs(plan.bwrap, reads, home, plan.shareNet), ...node] : node;
  try {
    return await new Promise<string>((resolve, reject) => {
      const child = spawn(argv[0]!, argv.slice(1), { env: { MEMBRANE_HOME: home }, cwd: home, stdio: ['pipe', 'pipe', process.env['MEMBRANE_OS_PROCESS_STDERR'] === '1' ? 'inherit' : 'ignore'], detached: true });
      const chunks: Buffer[] = [];
      let size = 0;
      let failure: SandboxError | null = null;
      const kill = (why: SandboxError): void => {
        failure ??= why;
        try {
          if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
        } catch {
          child.kill('SIGKILL');
        }
      };
      const timer = setTimeout(() => kill(new SandboxError('TIMEOUT', 'the os_process child ran past its deadline and was killed')), plan.killAfterMs);
      const onAbort = (): void => kill(new SandboxError('CANCELLED', 'the call was cancelled; its child process was killed'));
      plan.signal?.addEventListener('abort', onAbort, { once: true });
      if (child.pid !== undefined) plan.onSpawn?.(child.pid);
      child.stdout!.on('data', (c: Buffer) => {
        size += c.length;
        if (size > plan.maxReplyBytes) kill(new SandboxError('OUTPUT_LIMIT', 'the os_process child\'s reply is larger than its output cap'));
        else chunks.push(c);
      });
      child.stdin!.on('error', () => {}); // a child that dies before reading: reported by 'close'
      child.stdin!.end(request);
      child.on('error', () => kill(new SandboxError('INSTANCE_DEAD', 'the os_process child could not be started')));
      child.on('close', (code) => {
        clearTimeout(timer);
        plan.signal?.removeEventListener('abort', onAbort);
        // The whole group goes, whatever the child left behind (its engine's threads die with it).
        try {
          if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
        if (failure) reject(failure);
        else if (code !== 0) reject(new SandboxError('INSTANCE_DEAD', `the os_process child exited without a reply (status ${code ?? 'signal'})`));
        else resolve(Buffer.concat(chunks).toString('utf8'));
      });
    });
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}
