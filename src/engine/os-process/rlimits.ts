/**
 * The `os_process` tier's resource limits (DESIGN §7: "rlimits"): the kernel's own walls around a
 * child, under whatever runs inside it. Node has no setrlimit, so the child is started through
 * util-linux's `prlimit` (Debian's essential set), which sets them and execs the rest of the
 * command line (bubblewrap, then node) in the same process: the limits hold for everything the
 * child runs, its worker threads included.
 *
 * Owns: the numbers — per engine, not per call, because a pooled child is started before its call
 * is known: writable memory (RLIMIT_DATA: the largest memory a call of this engine may be granted,
 * four times over for its guest's copies and a worker's heaps, plus 8 GiB for Node and V8 — V8's
 * wasm memories and ArrayBuffers count against it, and so do its writable reservations, which is
 * why the base is large: this bounds a runaway child well below a machine's memory, it is not a
 * tight wall; the guest's own wall is the engine's `memoryBytes`), one file's size (RLIMIT_FSIZE: twice the guest VFS cap plus 64 MiB), open files
 * (RLIMIT_NOFILE 1024), CPU seconds (RLIMIT_CPU: twice the longest budget plus the boot
 * allowances: a backstop behind the wall-clock SIGKILL, for a parent that cannot deliver it), no
 * core files (RLIMIT_CORE 0: a guest's memory never lands on disk); whether prlimit is here.
 * Invariant: a child started with limits has every one of them, hard and soft, before node starts.
 * Does not protect against: a host without prlimit (the child then runs without rlimits and the
 * result says so, as for bubblewrap); memory a child maps shared or read-only (not RLIMIT_DATA's);
 * the sum over children — each has its own limits, and `maxWorkers` bounds how many run at once.
 */

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { PROFILE_NAMES, PROFILES } from '../../policy/profiles.ts';
import { DEFAULT_MAX_BYTES } from '../../storage/vfs-config.ts';
import type { EngineConfig } from '../options.ts';

export interface Rlimits {
  readonly dataBytes: number;
  readonly fileBytes: number;
  readonly openFiles: number;
  readonly cpuSeconds: number;
}

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
/**
 * Node and V8 themselves: heaps, compiled code and what V8 reserves writable per isolate (each
 * worker thread is one), which RLIMIT_DATA counts though it is not touched — a Node 24 child
 * running a hello-world component showed 2.8 GiB of VmData against 0.2 GiB resident, a C exec's
 * 2.3 GiB (Node 20: 1.3 and 0.65 GiB). A reservation refused is a V8 fatal error in the child.
 */
const BASE_DATA_BYTES = 8 * GiB;
/** The longest boot a child is given (CPython's) and the kill grace, in seconds. */
const BOOT_SECONDS = 35;

/** The limits for every child of an engine with this configuration. */
export function rlimitsFor(c: Pick<EngineConfig, 'operatorLimits' | 'vfsMaxBytes'>): Rlimits {
  let memory = 0;
  let timeoutMs = 0;
  for (const p of PROFILE_NAMES) {
    const op = c.operatorLimits?.[p] ?? {};
    memory = Math.max(memory, op.memoryBytes ?? PROFILES[p].memoryBytes);
    timeoutMs = Math.max(timeoutMs, op.timeoutMs ?? PROFILES[p].timeoutMs);
  }
  return {
    dataBytes: BASE_DATA_BYTES + 4 * memory,
    fileBytes: 2 * Math.max(c.vfsMaxBytes, DEFAULT_MAX_BYTES) + 64 * MiB,
    openFiles: 1024,
    cpuSeconds: 2 * (Math.ceil(timeoutMs / 1000) + BOOT_SECONDS),
  };
}

let found: string | null | undefined;

/** util-linux's prlimit on the PATH (looked up once), or null. */
export function prlimitPath(): string | null {
  if (found !== undefined) return found;
  found = null;
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    const p = dir ? join(dir, 'prlimit') : '';
    if (p && existsSync(p) && spawnSync(p, ['--core=0', '--', 'true'], { stdio: 'ignore', timeout: 5_000 }).status === 0) return (found = p);
  }
  return found;
}

/** The command line's prefix that starts the rest under `r` (soft = hard for each). */
export function prlimitArgs(bin: string, r: Rlimits): string[] {
  const both = (n: number): string => `${n}:${n}`;
  return [bin, `--data=${both(r.dataBytes)}`, `--fsize=${both(r.fileBytes)}`, `--nofile=${both(r.openFiles)}`, `--cpu=${both(r.cpuSeconds)}`, '--core=0:0', '--'];
}
