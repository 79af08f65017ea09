/**
 * The `os_process` tier's engine side: `engine.run(bytes, { tier: 'os_process' })`,
 * `engine.exec({ ..., tier: 'os_process' })` and each `engine.fanout` input with that tier run
 * in a child process of their own (spawn.ts), one call per child: a pre-started one from the
 * engine's pool (pool.ts) when one of the call's configuration is there, else a fresh one.
 *
 * Owns: resolving the call's policy here, against this engine's operator limits, before anything
 * is sent (the child gets the resolved numbers and the same operator limits: never more than the
 * call); refusing what this tier cannot do yet (mounts, persistent VFS, receipts) with
 * NOT_CAPABLE saying why; sending this engine's command registry with a call granted a spawning
 * cap (`commands`, `exec`, `parallel`: they run inside the child, on its own worker threads —
 * commands.ts), and running their cadence and holding the tenant's exec and live-process slots
 * here for the child (shared with every call of the tenant, released when the call ends); the
 * caller's streaming callbacks served here from the child's `out` lines (stream.ts); serving the
 * call's brokered powers (kv, queue, secrets, net, browse, tcp/udp/tls, llm) and its granted host
 * functions here, through this engine's brokers, as the call (broker-proxy.ts, host-proxy.ts: the
 * child is told the granted caps' names only); the tenant turn; the bwrap decision (strict →
 * TIER_UNAVAILABLE without it; otherwise a warning on the result); merging the child's audit
 * records into this engine's log, each marked `tier: 'os_process'`; the engine's pool (made on its
 * first os_process call, closed with the engine).
 * Invariant: a call asked for `os_process` runs in a child or does not run — never in process,
 * and nothing it spawns runs anywhere else (the child cannot start a process); the child it gets
 * was started with exactly its call's flags (pool.ts keys); its commands are this engine's or
 * fewer, and `requireSigned` holds in it (the call's module is checked here; the child refuses
 * every module a guest names by VFS path).
 * Does not protect against: see spawn.ts (the boundary) — and a child's reply is taken as its
 * call's result (its size is capped, its shape is not trusted beyond that). A pooled child that
 * dies in the instant after it was handed out is its call's INSTANCE_DEAD, as a fresh one would be.
 */

import { admitSigned } from '../signed.ts';
import { checkName } from '../../policy/names.ts';
import { SandboxError } from '../../errors.ts';
import { checkTier } from '../../fabric/tiers.ts';
import type { TenantScheduler } from '../../fabric/tenant-scheduler.ts';
import { resolvePolicy, type PolicyConfig, type PolicyOptions } from '../../policy/resolve.ts';
import type { ExecOptions, ExecOutcome } from '../../lanes/exec.ts';
import { builtFiles } from '../../storage/package-root.ts';
import type { EngineConfig } from '../options.ts';
import type { RunOptions } from '../guest-spec.ts';
import type { RunResult } from '../results.ts';
import { decode, encode, fromB64, replyText, toB64, type ChildBoot, type ChildEngineSettings, type ChildReply, type WarmKind } from './protocol.ts';
import { ChildPool } from './pool.ts';
import { brokerProxy, type BrokerDesk } from './broker-proxy.ts';
import { hostFunctionTable } from './host-proxy.ts';
import { bwrapStatus, startChild } from './spawn.ts';
import { streamDesk } from './stream.ts';
import { prlimitPath, rlimitsFor, type Rlimits } from './rlimits.ts';
import { CommandShelf, commandManifest, SPAWNING_CAPS } from './commands.ts';
import type { CommandRegistry } from '../registry.ts';
import type { CallerOf } from '../../brokers/cadence.ts';

export interface OsProcessDeps {
  readonly config: EngineConfig;
  readonly fair: TenantScheduler;
  readonly record: (event: { tenant: string; instance: string; kind: string; detail: Record<string, unknown> }) => void;
  readonly closed: () => boolean;
  /** This engine's brokers: the child's brokered powers are served here. */
  readonly brokers: BrokerDesk;
  /** This engine's command registry: a call granted a spawning cap gets it (commands.ts). */
  readonly commands: CommandRegistry;
  /** A tenant's exec or live-process slot (HostServices.takeSlot): a child's spawns count with all the tenant's calls. */
  readonly slots: (tenant: string, kind: 'exec' | 'process') => (() => void) | null;
  /** The cadence's steps 1-4 for a child's call of a spawning cap, as the call (this engine's `Cadence.admit`). */
  readonly admit: (caller: CallerOf, cap: 'commands' | 'exec' | 'parallel', op: string, bytes: number, max: number) => number | null;
}

/** Per-call options of the tier (on RunOptions/ExecOptions as extra fields). */
export interface OsProcessCall {
  /** Require bubblewrap namespaces: without them the call is TIER_UNAVAILABLE. */
  readonly strictIsolation?: boolean;
  /** PATH to look for bubblewrap in (default the process's): tests simulate its absence. */
  readonly bwrapPath?: string;
  /** Told the child's pid (tests look for leftover processes). */
  readonly onChildSpawn?: (pid: number) => void;
  /** Time allowed for the child to boot its engine, on top of the call's budget. Default 5 s (Python: 30 s). */
  readonly bootMs?: number;
}

const BOOT_MS = 5_000;
/** CPython's boot in a fresh child (the interpreter, its standard library; no pre-booted pool). */
const PYTHON_BOOT_MS = 30_000;
const GRACE_MS = 500;
const WARN_NO_BWRAP = (why: string): string => `os_process: ${why}; the child ran under the Node permission model alone (no namespaces)`;

const WARN_NO_RLIMITS = 'os_process: prlimit not found (util-linux); the child ran without rlimits';

/** The engine's child rlimits with prlimit's path, or null without prlimit (the result then says so). */
function limitsOf(c: EngineConfig): { prlimit: string; limits: Rlimits } | null {
  const bin = prlimitPath();
  return bin === null ? null : { prlimit: bin, limits: rlimitsFor(c) };
}

function refuse(what: string): never {
  throw new SandboxError('NOT_CAPABLE', `the os_process tier does not support ${what} yet (run it on the instance tier)`, { tier: 'os_process' });
}

/**
 * The caps the child gets (all the call's: the spawning caps run inside it, commands.ts), and a
 * warning for any it does not get (none today); or NOT_CAPABLE.
 */
function checkCall(policy: PolicyConfig, o: Record<string, unknown>): { caps: PolicyConfig['caps'][number][]; warning: string | null } {
  for (const k of ['mounts', 'vfs', 'vfsFile', 'receipt', 'artifact']) if (o[k] !== undefined && o[k] !== false) refuse(`"${k}"`);
  return { caps: [...policy.caps], warning: null };
}

function settings(c: EngineConfig): ChildEngineSettings {
  return {
    operatorLimits: c.operatorLimits as ChildEngineSettings['operatorLimits'],
    strictProfiles: c.strictProfiles,
    fuel: c.fuel,
    fuelChunk: c.fuelChunk,
    outputLimitBytes: c.outputLimitBytes,
    cacheDir: c.cacheDir,
    workerHeapMb: c.workerHeapMb,
    workerStackMb: c.workerStackMb,
    requireSigned: c.requireSigned !== null,
  };
}

const bootLine = (c: EngineConfig, warm: WarmKind | null): string => `${encode({ kind: 'boot', engine: settings(c), warm } satisfies ChildBoot)}\n`;

/** One pool of pre-started children per engine (its config), made on the first os_process call. */
const pools = new WeakMap<EngineConfig, ChildPool>();
/** One shelf of big registered modules per engine (commands.ts), made on the first os_process call. */
const shelves = new WeakMap<EngineConfig, CommandShelf>();

function shelfFor(c: EngineConfig): CommandShelf {
  let shelf = shelves.get(c);
  if (!shelf) shelves.set(c, (shelf = new CommandShelf()));
  return shelf;
}

function poolFor(c: EngineConfig): ChildPool | null {
  if (c.osProcessPool <= 0) return null;
  let pool = pools.get(c);
  if (!pool) pools.set(c, (pool = new ChildPool({ size: c.osProcessPool, boot: (w) => bootLine(c, w) }, async () => (await builtFiles()).osChild)));
  return pool;
}

/** Engine close: kill the engine's waiting children (and wait for them). */
export async function closeOsProcess(c: EngineConfig): Promise<void> {
  const pool = pools.get(c);
  pools.delete(c);
  await pool?.close();
  shelves.get(c)?.close();
  shelves.delete(c);
}

/** An engine's shelf of big registered modules, if it has one (tests). */
export function commandShelfDir(c: EngineConfig): string | null {
  return shelves.get(c)?.dir ?? null;
}

/** An engine's waiting children (tests look for leftovers and kill one; the benchmark waits for a full pool). */
export function pooledChildren(c: EngineConfig): { pid: number; ready: boolean }[] {
  return pools.get(c)?.children() ?? [];
}

function parseReply(out: string): ChildReply {
  const text = replyText(out);
  let reply: ChildReply | null = null;
  try {
    reply = text === null ? null : (decode(text) as ChildReply);
  } catch {
    reply = null;
  }
  if (typeof reply !== 'object' || reply === null || typeof reply.result !== 'object' || !Array.isArray(reply.audit)) throw new SandboxError('INSTANCE_DEAD', 'the os_process child sent a malformed reply');
  return reply;
}

/** The call's limits as resolved here: the child resolves the same numbers, never larger ones (and the host caps granted here). */
function limits(policy: PolicyConfig, caps: readonly string[]): Record<string, unknown> {
  return { profile: policy.profile, timeoutMs: policy.timeoutMs, fuel: policy.fuel, memoryBytes: policy.memoryBytes, caps: [...caps, ...policy.hostCaps] };
}

/** Data-only fields of the call (functions, signals and tier fields stay here). */
function dataOf(o: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) {
    if (typeof v === 'function' || k === 'signal' || k === 'tier' || k === 'images' || k === 'strictIsolation' || k === 'bwrapPath' || k === 'bootMs') continue;
    out[k] = v;
  }
  return out;
}

async function call(deps: OsProcessDeps, kind: 'run' | 'exec', o: Record<string, unknown> & OsProcessCall & { signal?: AbortSignal | undefined }, payload: Record<string, unknown>): Promise<{ result: Record<string, unknown>; warnings: string[] }> {
  if (deps.closed()) throw new SandboxError('INSTANCE_DEAD', 'the engine is closed');
  checkTier(o['tier'], { strictIsolation: o.strictIsolation === true, ...(o.bwrapPath !== undefined ? { path: o.bwrapPath } : {}) });
  const policy = resolvePolicy(o as PolicyOptions, deps.config);
  const granted = checkCall(policy, o);
  const status = bwrapStatus(o.bwrapPath);
  if (status.bwrap === null && o.strictIsolation === true) {
    throw new SandboxError('TIER_UNAVAILABLE', `the os_process tier is not available: ${status.reason}`, { tier: 'os_process', reason: status.reason });
  }
  // Checked here as a worker run checks them: the parent's brokers serve the child's requests as this tenant and instance.
  const tenant = o['tenant'] === undefined || o['tenant'] === null ? 'default' : checkName('tenant', o['tenant'] as string);
  const instance = o['id'] === undefined || o['id'] === null ? `os-${kind}` : checkName('id', o['id'] as string);
  // The child gets the resolved profile: a fallback is audited and warned here, where it happened.
  if (policy.requestedProfile !== policy.profile) deps.record({ tenant, instance, kind: 'profile-fallback', detail: { requested: policy.requestedProfile.slice(0, 64), ran: policy.profile, tier: 'os_process' } });
  const release = await deps.fair.admit(tenant, policy.timeoutMs, o.signal);
  try {
    const hostFunctions = hostFunctionTable(policy.hostCaps, deps.brokers);
    // The caller's callbacks stay here: the child is told which streams to send back (stream.ts).
    const stream = streamDesk(o as Parameters<typeof streamDesk>[0], deps.config.outputLimitBytes);
    // A call that may run commands gets the parent's registry with it (a pooled child booted before the call has none).
    const shelf = shelfFor(deps.config);
    const commands = granted.caps.some((c) => SPAWNING_CAPS.includes(c)) ? { commands: commandManifest(deps.commands, shelf) } : {};
    const request = encode({ kind, ...payload, ...commands, opts: { ...dataOf(o), ...limits(policy, granted.caps) }, ...(hostFunctions ? { hostFunctions } : {}), ...(stream ? { stream: stream.fds } : {}) });
    const plan = {
      readDirs: [...(deps.config.cacheDir ? [deps.config.cacheDir] : []), shelf.dir], // the shelf: the same for every call of this engine
      bwrap: status.bwrap,
      shareNet: false,
      // The guest VFS is SQLite through better-sqlite3, a native addon: only a call granted vfs may
      // load addons — and a Python exec, whose interpreter keeps its own files in an in-memory
      // SQLite VFS whatever it is granted (without them it could not start at all).
      addons: granted.caps.includes('vfs') || (kind === 'exec' && o['language'] === 'python'),
      // The engine's, not the call's: a pooled child is started before its call (rlimits.ts).
      rlimits: limitsOf(deps.config),
    };
    // A pooled child of exactly this configuration, or a fresh one (no pool, none of this kind, or the pool is failing).
    const pool = deps.closed() ? null : poolFor(deps.config);
    // A JS/TS exec takes a child with its interpreters booted; a run (and Python: CPython boots on the engine's workers) one with a guest worker warm.
    const warm: WarmKind = kind === 'exec' && o['language'] !== 'python' ? 'js' : 'run';
    const child = (await pool?.take({ ...plan, warm }, o.signal)) ?? startChild({ ...plan, entry: (await builtFiles()).osChild }, bootLine(deps.config, null));
    try {
      if (child.pid > 0) o.onChildSpawn?.(child.pid);
    } catch (e) {
      child.kill(); // a throwing callback does not leave the child waiting for a request
      throw e;
    }
    let out: string;
    // Counted from the request: a pooled child's boot is not the call's (a fresh one's is, inside the boot allowance).
    const killAfterMs = policy.timeoutMs + (o.bootMs ?? (o['language'] === 'python' ? PYTHON_BOOT_MS : BOOT_MS)) + GRACE_MS;
    // The child's broker requests are served here as this call: its tenant, instance and grant; its records marked.
    const proxy = brokerProxy(child, deps.brokers, { tenant, instance, policy: { caps: granted.caps }, hostCaps: policy.hostCaps, marks: { tier: 'os_process' } }, performance.now() + killAfterMs, {
      stream,
      spawning: {
        slot: (k) => deps.slots(tenant, k),
        admit: (cap, op, bytes, max) => deps.admit({ tenant, instance, caps: granted.caps, marks: { tier: 'os_process' } }, cap, op, bytes, max),
      },
    });
    try {
      out = await child.call(request, {
        killAfterMs,
        maxReplyBytes: 4 * deps.config.outputLimitBytes + 1024 * 1024,
        signal: o.signal,
        lines: 2, // the ready line, then the reply's
        side: proxy.side,
      });
    } finally {
      proxy.end(); // whatever the child still had in flight is aborted, however the call ended
      stream?.end(); // nothing reaches a callback after the call
      if (!deps.closed()) pool?.refill({ ...plan, warm }); // the replacement boots once this call is done
    }
    const reply = parseReply(out);
    for (const a of reply.audit) {
      const detail = typeof a.detail === 'object' && a.detail !== null ? (a.detail as Record<string, unknown>) : {};
      deps.record({ tenant, instance, kind: String(a.kind).slice(0, 64), detail: { ...detail, tier: 'os_process' } });
    }
    const warnings = [...policy.warnings, ...(granted.warning ? [granted.warning] : []), ...(status.bwrap === null ? [WARN_NO_BWRAP(status.reason ?? 'bwrap not installed')] : []), ...(plan.rlimits ? [] : [WARN_NO_RLIMITS])];
    return { result: reply.result, warnings };
  } finally {
    release();
  }
}

function failed(e: unknown, profile: string): { ok: false; error: ReturnType<SandboxError['toPublic']>; profile: string } {
  const err = e instanceof SandboxError ? e : new SandboxError('INTERNAL', 'the os_process tier failed');
  return { ok: false, error: err.toPublic(), profile };
}

/** `engine.run` on the os_process tier. */
export async function osRun(deps: OsProcessDeps, bytes: Uint8Array, opts: RunOptions & OsProcessCall): Promise<RunResult> {
  const t0 = performance.now();
  const o = { ...opts } as Record<string, unknown> & OsProcessCall;
  if (opts.stdin instanceof Uint8Array) o['stdin'] = { b64: toB64(opts.stdin) };
  try {
    // `requireSigned` is the parent's gate: checked here, on the bytes the child will get (it has no trusted DIDs of its own).
    const who = { tenant: typeof opts.tenant === 'string' ? opts.tenant : 'default', instance: typeof opts.id === 'string' ? opts.id : 'os-run' };
    bytes = await admitSigned(deps.config, bytes, opts.artifact, (d) => deps.record({ ...who, kind: 'artifact.refused', detail: { ...d, tier: 'os_process' } }));
    delete o['artifact'];
    const { result, warnings } = await call(deps, 'run', o, { module: toB64(bytes) });
    const r = result as unknown as RunResult & { stdoutBytes?: string };
    return { ...r, ...(typeof r.stdoutBytes === 'string' ? { stdoutBytes: fromB64(r.stdoutBytes) } : {}), warnings: [...(r.warnings ?? []), ...warnings] };
  } catch (e) {
    return { ...failed(e, opts.profile ?? 'default'), stdout: '', stderr: '', fuelUsed: 0, durationMs: performance.now() - t0, memoryBytes: 0, warnings: [] };
  }
}

/** `engine.exec` on the os_process tier (JS, TS, Python). */
export async function osExec(deps: OsProcessDeps, opts: ExecOptions & OsProcessCall): Promise<ExecOutcome> {
  const t0 = performance.now();
  try {
    // A snippet is no module a fleet worker could take by hash: say so, not "redis not configured".
    if (opts.tier === 'remote') throw new SandboxError('TIER_UNAVAILABLE', 'the remote tier is not available: it runs modules and commands (engine.run, engine.fanout); exec runs on the instance and os_process tiers', { tier: 'remote', reason: 'exec does not run on the remote tier' });
    const { result, warnings } = await call(deps, 'exec', { ...opts } as Record<string, unknown> & OsProcessCall, {});
    const r = result as unknown as ExecOutcome;
    return { ...r, warnings: [...(r.warnings ?? []), ...warnings] };
  } catch (e) {
    return { ...failed(e, opts.profile ?? 'default'), stdout: '', stderr: '', fuelUsed: 0, durationMs: performance.now() - t0, warnings: [], poolHit: false };
  }
}
