/**
 * Isolation tiers (DESIGN §7): where a workload runs — `instance` (a V8 instance on a pooled
 * worker thread), `os_process` (a child process per call), `remote` (a `membrane worker` on
 * another machine through BullMQ on Redis) — and which one a workload gets by default.
 *
 * Owns: `tierFor(shape, trust)` (first-party work gets its shape's tier; third-party work
 * escalates one rung toward stronger isolation) and `checkTier` — the one place that decides
 * whether a requested tier can run here, and says why not.
 * Invariant: a requested tier that cannot run is TIER_UNAVAILABLE with the reason in its message
 * and `details.reason`; nothing ever runs on a lower tier than the one asked for (no silent
 * downgrade). `instance` and `os_process` run today, and `remote` when the engine has a Redis URL.
 *
 * Does not protect against: anything by itself — a tier is only as strong as its boundary;
 * `instance` shares the host process's address space with every other guest (V8's sandbox and
 * our walls are the boundary).
 */

import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { SandboxError } from '../errors.ts';

export const TIERS = ['instance', 'os_process', 'remote'] as const;
export type Tier = (typeof TIERS)[number];

/** What runs: a lane's shape. `fanout-wide` is fan-out meant to go past one machine. */
export type WorkloadShape = 'core' | 'wasi' | 'command' | 'kernel' | 'js' | 'python' | 'fanout' | 'fanout-wide';
export type Trust = 'first-party' | 'third-party';

const LADDER: readonly Tier[] = TIERS;

/** The tier a workload gets unless its caller names one, and why. */
export function tierFor(shape: WorkloadShape, trust: Trust): { tier: Tier; reason: string } {
  const base: Tier = shape === 'fanout-wide' ? 'remote' : 'instance';
  if (trust === 'first-party') return { tier: base, reason: `first-party ${shape}: ${base}` };
  const up = LADDER[Math.min(LADDER.length - 1, LADDER.indexOf(base) + 1)]!;
  return { tier: up, reason: `third-party ${shape}: escalated one rung from ${base} to ${up}` };
}

export interface TierContext {
  /** The engine's Redis URL for the remote tier (`EngineOptions.remote.redis`), or absent. */
  readonly redisUrl?: string | null;
  /** The caller asked for namespaces (bubblewrap) under `os_process`. */
  readonly strictIsolation?: boolean;
  /** PATH to look for bubblewrap in (default the process's). */
  readonly path?: string;
}

/** The bubblewrap binary on `path`, or null. */
export function findBwrap(path = process.env['PATH'] ?? ''): string | null {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, 'bwrap');
    if (existsSync(p)) return p;
  }
  return null;
}

function unavailable(tier: Tier, reason: string): SandboxError {
  return new SandboxError('TIER_UNAVAILABLE', `the ${tier} tier is not available: ${reason}`, { tier, reason });
}

/** `tier` parsed and available here, or TIER_UNAVAILABLE / POLICY_INVALID saying why. */
export function checkTier(tier: unknown, ctx: TierContext = {}): Tier {
  if (tier === undefined || tier === 'instance') return 'instance';
  if (tier === 'remote') {
    // The remote tier (BullMQ on Redis, `membrane worker`, src/fabric/remote/): without a URL there is no queue.
    if (!ctx.redisUrl) throw unavailable('remote', 'redis not configured');
    return 'remote';
  }
  if (tier === 'os_process') {
    // Runs (src/engine/os-process/): strict isolation needs bubblewrap; without strict the child runs under Node's permission model, with a warning.
    if (ctx.strictIsolation === true && findBwrap(ctx.path) === null) throw unavailable('os_process', 'bwrap not installed');
    return 'os_process';
  }
  throw new SandboxError('POLICY_INVALID', `tier must be one of ${TIERS.join(', ')}`, { tier: String(tier).slice(0, 32) });
}

/**
 * For a lane that keeps one instance across calls (a kernel, a persistent instance): only
 * `instance` runs it. `os_process` runs one call per child and `remote` one job per worker run, so
 * either is TIER_UNAVAILABLE saying so — never the instance tier in their place.
 */
export function instanceOnly(tier: unknown, what: string): 'instance' {
  if (tier === undefined || tier === 'instance') return 'instance';
  if (tier === 'os_process' || tier === 'remote') {
    const reason = `${what} keeps one instance across calls; the ${tier} tier runs one call per ${tier === 'os_process' ? 'child process' : 'job'}`;
    throw unavailable(tier, reason);
  }
  return checkTier(tier) as never; // POLICY_INVALID: not a tier
}
