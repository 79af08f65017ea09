/**
 * The `os_process` tier for Python (DESIGN §7, §8 layer 4): the command line that starts one
 * interpreter child, confined by the OS.
 *
 * Owns: the child's argv. Always: an empty environment (Node adds only its IPC channel's fd
 * number), Node's permission model with reads limited to the Pyodide package, the child script
 * (and, unbundled, the modules it imports) and the instrumented wasm — no `--allow-fs-write`,
 * `--allow-child-process`, `--allow-worker` or `--allow-addons` —
 * `--disallow-code-generation-from-strings`, a capped V8 heap, no
 * inspector. When `/usr/bin/bwrap` (or `bwrap` on PATH) works: every namespace unshared (no
 * network, own PIDs, IPC, UTS, user), all capabilities dropped, death with the parent (the
 * new session — no controlling terminal — and process group come from the spawn, so the host can
 * kill the whole tree), and a filesystem that holds only the system's library directories, Node's binary and
 * those read-only paths, plus an empty private /tmp, /dev and /proc — no /etc, no /home,
 * no project tree. Tier `os_process+bwrap`; without bwrap, tier `os_process` and a warning.
 *
 * Invariant: the argv is built only from paths the host chose; nothing from a request reaches it.
 *
 * Does not protect against: kernel bugs reachable from an unprivileged namespace; CPU use short
 * of the deadline (there are no rlimits: the parent's deadline kill is the CPU bound); memory
 * outside the wasm heap (the V8 heap is capped by `--max-old-space-size`, not by the kernel).
 */

import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { dirname } from 'node:path';

export type PythonTier = 'os_process+bwrap' | 'os_process';

/**
 * V8 heap cap for the child's JavaScript (Pyodide's wasm heap is capped separately): booted
 * Pyodide uses ~16 MiB of it (34 MiB committed), so 96 leaves room for conversions while bounding
 * what one JavaScript-side allocation from Python can take before V8 aborts the child
 * (MEMORY_LIMIT, child-process.ts).
 */
export const CHILD_HEAP_MB = 96;
const BWRAP_CANDIDATES = ['/usr/bin/bwrap', '/bin/bwrap', '/usr/local/bin/bwrap'];
const SYSTEM_DIRS = ['/usr', '/lib', '/lib64', '/lib32', '/bin', '/sbin'];

let probed: string | null | undefined;

/** The path of a working bubblewrap, or null (probed once per process). */
export function findBwrap(): string | null {
  if (probed !== undefined) return probed;
  probed = null;
  for (const p of BWRAP_CANDIDATES) {
    if (!existsSync(p)) continue;
    const r = spawnSync(p, ['--unshare-all', '--die-with-parent', '--ro-bind', '/', '/', '--', '/bin/true'], { env: {}, stdio: 'ignore', timeout: 5000 });
    if (r.status === 0) {
      probed = p;
      break;
    }
  }
  return probed;
}

export interface ChildCommand {
  readonly command: string;
  readonly args: readonly string[];
  readonly tier: PythonTier;
}

/**
 * Node's permission model: `--permission` since Node 22.13 (stable in 23.5; Node 24 has no other
 * spelling), `--experimental-permission` on Node 20.
 */
export const PERMISSION_FLAG = process.allowedNodeEnvironmentFlags.has('--permission') ? '--permission' : '--experimental-permission';

/**
 * Build the command for one child: `node [flags] child.mjs <pyodideDir> <wasm|->`. `modules` are
 * the files the script imports when it is not bundled (readable and bound like the script).
 */
export function childCommand(opts: { script: string; modules?: readonly string[]; pyodideDir: string; wasmFile: string | null; useBwrap: boolean }): ChildCommand {
  const script = realpathSync(opts.script);
  const modules = (opts.modules ?? []).map((m) => realpathSync(m));
  const pyDir = realpathSync(opts.pyodideDir);
  const wasm = opts.wasmFile === null ? null : realpathSync(opts.wasmFile);
  const node = realpathSync(process.execPath);
  const nodeArgs = [
    PERMISSION_FLAG,
    `--allow-fs-read=${pyDir}/`,
    `--allow-fs-read=${script}`,
    ...modules.map((m) => `--allow-fs-read=${m}`),
    ...(wasm === null ? [] : [`--allow-fs-read=${wasm}`]),
    '--disallow-code-generation-from-strings',
    `--max-old-space-size=${CHILD_HEAP_MB}`,
    '--no-warnings',
    script,
    pyDir,
    wasm ?? '-',
  ];
  const bwrap = opts.useBwrap ? findBwrap() : null;
  if (bwrap === null) return { command: node, args: nodeArgs, tier: 'os_process' };
  const fsArgs: string[] = [];
  for (const d of SYSTEM_DIRS) {
    if (!existsSync(d)) continue;
    const st = lstatSync(d);
    if (st.isSymbolicLink()) fsArgs.push('--symlink', readlinkSync(d), d);
    else if (st.isDirectory()) fsArgs.push('--ro-bind', d, d);
  }
  const nodeDir = dirname(node);
  if (!SYSTEM_DIRS.some((d) => nodeDir === d || nodeDir.startsWith(`${d}/`))) fsArgs.push('--ro-bind', nodeDir, nodeDir);
  fsArgs.push('--ro-bind', pyDir, pyDir, '--ro-bind', script, script);
  for (const m of modules) fsArgs.push('--ro-bind', m, m);
  if (wasm !== null) fsArgs.push('--ro-bind', wasm, wasm);
  const args = [
    '--unshare-all',
    '--die-with-parent',
    '--cap-drop',
    'ALL',
    // Private /tmp, /dev and /proc first: a later bind (e.g. a cache under /tmp) lands on top.
    '--tmpfs',
    '/tmp',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    ...fsArgs,
    '--chdir',
    '/tmp',
    '--',
    node,
    ...nodeArgs,
  ];
  return { command: bwrap, args, tier: 'os_process+bwrap' };
}
