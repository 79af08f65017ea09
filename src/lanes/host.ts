/**
 * The host powers of a JS/TS or Python snippet that act on its VFS and run commands (DESIGN §4:
 * `vfs`, `commands`, `exec`): `vfs.read/write/list/delete/query`, `commands.run` and `exec.run`,
 * served for one `engine.exec` call with the semantics a core guest's `vfs_*`, `run_command` and
 * `exec` imports have.
 *
 * Owns: decoding these powers' arguments (guest-controlled JSON: wrong types are INVALID, sizes
 * past the command ABI's caps TOO_LARGE), running a registered command as the call's principal
 * against the call's VFS (vfs.ts) at depth 1, within what is left of the call's deadline and
 * of its one fuel budget, the exec cap's accounting (one of the tenant's MAX_CONCURRENT_EXECS slots
 * per call, QUOTA audited past it; one `_steps.jsonl` line per call), and ending the call: running
 * commands are aborted, awaited, then the VFS is closed (a private one removed).
 * Invariant: a snippet names a registered command and its argv — never a path or a module; a
 * command cannot outlive the call (its deadline is the call's, and `end()` aborts it); one budget
 * covers the snippet and its commands: a command is granted at most the budget minus what the
 * snippet has used so far (the larger of what its lane reports and what its commands spent here),
 * nothing runs once none is left (FUEL_EXHAUSTED), and what a command spent is answered as a
 * charge (`fuel`, raw wasm units) that the lane adds to the snippet's meter — so the snippet stops
 * FUEL_EXHAUSTED at its next refill once the total passes the budget.
 *
 * Does not protect against: a run's own overshoot — a command is stopped at its own next refill,
 * the snippet at its next one, so the total may pass the budget by those chunks.
 */

import type { PolicyConfig } from '../policy/resolve.ts';
import type { ImageMount } from '../storage/vfs-config.ts';
import { narrowToDeclaration, type Declaration } from '../policy/toolkit.ts';
import { UNSIGNED_VFS_MODULE, sha256Hex } from '../provenance/artifact.ts';
import { GUEST_ERR, MAX_ARG_BYTES, MAX_ARGC, MAX_REQUEST_BYTES, MAX_VFS_MODULE_BYTES, STATUS_ABNORMAL } from '../abi/command.ts';
import { commandModulePath, isCommandPath } from '../abi/vfs-paths.ts';
import { LANE_FUEL_UNIT } from './exec.ts';
import { PowerRefusal, type LaneVfs } from './vfs.ts';

/** What a finished command run reports to the snippet's host (the engine's `CommandOutcome` is one). */
export interface CommandOutcome {
  readonly ok: boolean;
  readonly exitCode?: number | undefined;
  readonly stdout: string;
  readonly stderr: string;
  readonly fuelUsed: number;
  readonly error?: { readonly code: string } | undefined;
}

/** What a snippet's command run inherits instead of resolving options (the engine's nested run). */
export interface CommandRun {
  readonly policy: PolicyConfig;
  readonly argv0: string;
  readonly depth: number;
  readonly signal: AbortSignal;
}

export interface LaneHostDeps {
  /** The call's policy; its `fuel` is the one budget (profile units: 1 core wasm unit, LANE_FUEL_UNIT lane units). */
  readonly policy: PolicyConfig;
  /** Whether fuel is metered at all (EngineConfig.fuel); off, no command is refused for fuel. */
  readonly metered: boolean;
  /** The call's VFS; null when `vfs` is not granted (commands then run without one). */
  readonly vfs: LaneVfs | null;
  /** A registered command's module, the arguments it runs with and the images it mounts (a toolchain's sysroot). */
  readonly command: (name: string, args: readonly string[]) => { readonly bytes: Uint8Array; readonly argv: readonly string[]; readonly images: readonly ImageMount[]; readonly declared?: Declaration } | undefined;
  /** Run a command module as the call's principal (engine.execute with `inherited`). */
  readonly run: (bytes: Uint8Array, opts: { argv: readonly string[]; stdin: string; vfsFile?: string; images?: readonly ImageMount[]; captureBytes: boolean }, inherited: CommandRun) => Promise<CommandOutcome>;
  /** `vfs_query` against a database file (storage/query.ts): the JSON answer or a guest code name. */
  readonly query: (file: string, sql: string) => Promise<{ ok: true; json: Uint8Array } | { ok: false; errno: number }>;
  /** One of the tenant's concurrent exec slots: its release, or null at the limit. */
  readonly takeExec: () => (() => void) | null | Promise<(() => void) | null>; // a promise when counted elsewhere (an os_process child)
  /** The cadence's steps 1-4 (granted, revoked, rate, size): null = go. */
  readonly admit: (cap: 'commands' | 'exec', op: string, bytes: number, max: number) => number | null | Promise<number | null>; // a promise when run elsewhere (an os_process child's parent)
  readonly record: (kind: string, detail: Record<string, unknown>) => void;
  /** The engine runs only signed modules (`requireSigned`): a module named by VFS path, which has no signed manifest, is refused. */
  readonly signedOnly?: boolean;
}

export interface LaneHost {
  /**
   * One power of `vfs`, `commands` or `exec`; throws PowerRefusal with a guest code.
   * `laneFuelUsed`: the raw wasm fuel the snippet has used so far, as its lane reports it. The
   * answer's `fuel` is a command's charge to the snippet's meter, in the same raw units.
   */
  call(power: string, args: readonly unknown[], deadline: number, laneFuelUsed?: number): Promise<{ value: unknown; fuel?: number }>;
  /** Fuel the call's commands used (core wasm units). */
  fuelUsed(): number;
  /** Abort running commands, wait for them, close the VFS. */
  end(): Promise<void>;
}

const MAX_SQL_BYTES = 64 * 1024;
const encoder = new TextEncoder();
const lenient = new TextDecoder('utf-8');
const refuse = (errno: number): never => {
  throw new PowerRefusal(errno);
};
/** A snippet's commands run one level below it (the snippet is depth 0); their own execs go deeper, up to MAX_EXEC_DEPTH. */
const COMMAND_DEPTH = 1;

/** `commands.run(name, argv?, { stdin? })`'s arguments, checked like the command ABI's request. */
function commandArgs(a: readonly unknown[]): { name: string; argv: string[]; stdin: string; bytes: number } {
  const [name, argv, opts] = a;
  if (typeof name !== 'string') return refuse(GUEST_ERR.INVALID);
  const list = argv === undefined || argv === null ? [] : argv;
  if (!Array.isArray(list) || !list.every((x) => typeof x === 'string')) return refuse(GUEST_ERR.INVALID);
  if (list.length + 1 > MAX_ARGC) return refuse(GUEST_ERR.TOO_LARGE);
  let stdin = '';
  if (opts !== undefined && opts !== null) {
    if (typeof opts !== 'object' || Array.isArray(opts)) return refuse(GUEST_ERR.INVALID);
    const s = (opts as Record<string, unknown>)['stdin'];
    if (s !== undefined && s !== null && typeof s !== 'string') return refuse(GUEST_ERR.INVALID);
    stdin = s ?? '';
  }
  let bytes = Buffer.byteLength(stdin);
  for (const arg of [name, ...(list as string[])]) {
    const n = Buffer.byteLength(arg);
    if (n > MAX_ARG_BYTES) return refuse(GUEST_ERR.TOO_LARGE);
    if (arg.includes('\0')) return refuse(GUEST_ERR.INVALID);
    bytes += n + 4;
  }
  if (bytes > MAX_REQUEST_BYTES) return refuse(GUEST_ERR.TOO_LARGE);
  return { name, argv: list as string[], stdin, bytes };
}

/** A finished command as a snippet sees it: `{ status, stdout, stderr, error? }`. */
function commandAnswer(r: CommandOutcome): Record<string, unknown> {
  const base = { stdout: r.stdout, stderr: r.stderr };
  if (r.ok) return { status: r.exitCode ?? 0, ...base };
  if (r.error?.code === 'GUEST_EXIT' && typeof r.exitCode === 'number') return { status: r.exitCode, ...base };
  return { status: STATUS_ABNORMAL, ...base, error: r.error?.code ?? 'INTERNAL' };
}

export function laneHost(deps: LaneHostDeps): LaneHost {
  const stop = new AbortController();
  const running = new Set<Promise<unknown>>();
  let fuelUsed = 0;
  /** What the snippet may still spend (profile units): a lane's report is believed only when it is higher than our own tally. */
  const fuelLeft = (laneFuelUsed: number | undefined): number => {
    const reported = typeof laneFuelUsed === 'number' && laneFuelUsed > 0 ? Math.ceil(laneFuelUsed / LANE_FUEL_UNIT) : 0;
    return deps.policy.fuel - Math.max(reported, fuelUsed);
  };
  const vfs = (): LaneVfs => deps.vfs ?? refuse(GUEST_ERR.DENIED);

  const fromVfs = (path: string, argv: readonly string[]): { bytes: Uint8Array; argv: readonly string[]; images: readonly ImageMount[] } => {
    // A module may be larger than a file a snippet reads: the cap is core guests' (abi/command.ts).
    const bytes = vfs().read(commandModulePath(path), MAX_VFS_MODULE_BYTES) ?? refuse(GUEST_ERR.NOT_FOUND);
    if (deps.signedOnly === true) {
      deps.record('artifact.refused', { reason: UNSIGNED_VFS_MODULE, sha256: sha256Hex(bytes) });
      return refuse(GUEST_ERR.DENIED);
    }
    return { bytes, argv, images: [] };
  };

  const runCommand = async (mode: 'commands' | 'exec', a: readonly unknown[], deadline: number, laneFuelUsed: number | undefined): Promise<{ value: unknown; fuel?: number }> => {
    const op = mode === 'exec' ? 'exec' : 'run_command';
    const req = commandArgs(a);
    const refused = await deps.admit(mode, op, req.bytes, MAX_REQUEST_BYTES);
    if (refused !== null) return refuse(refused);
    const argv = [req.name, ...req.argv];
    // A path (`./a.wasm`, `/out/tool.wasm`) names a module in the call's own VFS — one the snippet
    // built, say — run like a registered command, one level deeper, under the same grant.
    const found = isCommandPath(req.name) ? fromVfs(req.name, req.argv) : (deps.command(req.name, req.argv) ?? refuse(GUEST_ERR.NOT_FOUND));
    let release: (() => void) | null = null;
    if (mode === 'exec') {
      release = await deps.takeExec();
      if (release === null) {
        deps.record('denied', { broker: 'exec', op, code: 'QUOTA', why: 'the tenant already runs its maximum of concurrent execs' });
        deps.vfs?.step({ op: 'exec', depth: COMMAND_DEPTH, argv, refused: 'QUOTA' });
        return refuse(GUEST_ERR.QUOTA);
      }
    }
    const t0 = performance.now();
    try {
      const left = deadline - Date.now();
      if (left <= 0 || stop.signal.aborted) return refuse(GUEST_ERR.TIMEOUT);
      const fuel = fuelLeft(laneFuelUsed);
      if (deps.metered && fuel <= 0) {
        // The snippet's budget is spent: nothing runs; the snippet stops at its next refill.
        const answer = { status: STATUS_ABNORMAL, stdout: '', stderr: '', error: 'FUEL_EXHAUSTED' };
        if (mode === 'exec') deps.vfs?.step({ op: 'exec', depth: COMMAND_DEPTH, argv, status: answer.status, error: answer.error, fuelUsed: 0, durationMs: 0, stdoutBytes: 0, stderrBytes: 0 });
        return { value: answer, fuel: 0 };
      }
      // A toolkit's command runs under the call's grant cut to its declaration (policy/toolkit.ts).
      const policy: PolicyConfig = narrowToDeclaration({ ...deps.policy, timeoutMs: Math.max(1, Math.floor(left)), fuel: deps.metered ? fuel : deps.policy.fuel }, "declared" in found ? found.declared : undefined);
      const opts = { argv: found.argv, stdin: req.stdin, captureBytes: false, ...(deps.vfs ? { vfsFile: deps.vfs.file(), images: found.images } : {}) };
      const run = deps.run(found.bytes, opts, { policy, argv0: req.name, depth: COMMAND_DEPTH, signal: stop.signal });
      running.add(run);
      let r: CommandOutcome;
      try {
        r = await run;
      } finally {
        running.delete(run);
      }
      fuelUsed += r.fuelUsed;
      const answer = commandAnswer(r);
      if (mode === 'exec') {
        deps.vfs?.step({
          op: 'exec', depth: COMMAND_DEPTH, argv, status: answer['status'], ...(answer['error'] ? { error: answer['error'] } : {}), fuelUsed: r.fuelUsed,
          durationMs: Math.round((performance.now() - t0) * 1000) / 1000, stdoutBytes: Buffer.byteLength(r.stdout), stderrBytes: Buffer.byteLength(r.stderr),
        });
      }
      return { value: answer, fuel: r.fuelUsed * LANE_FUEL_UNIT };
    } finally {
      release?.();
    }
  };

  const call = async (power: string, a: readonly unknown[], deadline: number, laneFuelUsed?: number): Promise<{ value: unknown; fuel?: number }> => {
    if (power === 'commands.run' || power === 'exec.run') return runCommand(power === 'exec.run' ? 'exec' : 'commands', a, deadline, laneFuelUsed);
    return { value: await vfsPower(power, a) };
  };

  const vfsPower = async (power: string, a: readonly unknown[]): Promise<unknown> => {
    switch (power) {
      case 'vfs.read': {
        const data = vfs().read(a[0]);
        return data === null ? null : lenient.decode(data);
      }
      case 'vfs.write':
        if (typeof a[1] !== 'string') return refuse(GUEST_ERR.INVALID);
        vfs().write(a[0], encoder.encode(a[1]));
        return null;
      case 'vfs.list':
        return vfs().list(a[0] === undefined || a[0] === null ? '/' : a[0]);
      case 'vfs.delete':
        return vfs().delete(a[0]);
      case 'vfs.query': {
        if (typeof a[0] !== 'string') return refuse(GUEST_ERR.INVALID);
        if (Buffer.byteLength(a[0]) > MAX_SQL_BYTES) return refuse(GUEST_ERR.TOO_LARGE);
        const answer = await deps.query(vfs().file(), a[0]);
        if (!answer.ok) return refuse(answer.errno);
        return JSON.parse(lenient.decode(answer.json)) as unknown;
      }
      default:
        return refuse(GUEST_ERR.INVALID);
    }
  };

  return {
    call,
    fuelUsed: () => fuelUsed,
    end: async () => {
      stop.abort();
      await Promise.allSettled([...running]);
      deps.vfs?.close();
    },
  };
}
