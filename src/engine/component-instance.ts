/**
 * `engine.start` with a component: a persistent component instance on a dedicated worker, its
 * exported functions called again and again with their state kept (engine/instance.ts runs it;
 * this module makes what it needs).
 *
 * Owns: the order before anything runs — the world check (LINK_UNSATISFIED: nothing transpiled),
 * the transpile, each core module prepared under the policy (memory shares, fuel) — and the
 * instance's lane: its boot message (the component instantiated, core start functions included,
 * under the boot budget; `wasi:cli/run` is NOT called) and its calls' arguments (numbers and
 * BigInts; strings, lists and records do not cross yet: POLICY_INVALID).
 * Invariant: every call gets the instance's walls (time, fuel, memory cap) like a core
 * instance's — instance.ts narrows, times out, retires or restarts it the same way; `requireSigned`
 * is checked by engine.start before this runs; `mounts` and signed receipts are refused by name.
 *
 * Does not protect against: nothing beyond the component lane's walls.
 */

import { SandboxError } from '../errors.ts';
import type { PolicyConfig } from '../policy/resolve.ts';
import { checkComponent, transpileCached } from '../lanes/component/index.ts';
import { PROTOCOL_VERSION, type ComponentCore, type GuestSpec, type WireValue } from './bridge/protocol.ts';
import { MAX_CORE_MODULES, prepareCores, type ComponentLaneParts } from './component-lane.ts';

export { isComponent, runComponent, type ComponentLaneParts } from './component-lane.ts';
import { buildSpec, type StartOptions } from './guest-spec.ts';
import type { InstanceLane } from './instance.ts';
import type { PreparedModule } from './module-cache.ts';
import { failure, type RunResult } from './results.ts';
import type { ArgValue } from './values.ts';

export interface ComponentStart {
  /** The first core module (its walls stand for all: one policy). */
  readonly prepared: PreparedModule;
  readonly spec: GuestSpec;
  readonly lane: InstanceLane;
  /** A call asking for a signed receipt: refused, never ignored. */
  readonly receipted: () => Promise<RunResult>;
}

type StartParts = Pick<ComponentLaneParts, 'config' | 'prepare'>;

export async function prepareComponentStart(parts: StartParts, bytes: Uint8Array, policy: PolicyConfig, who: { id: string; tenant: string }, opts: StartOptions): Promise<ComponentStart> {
  if ((opts as { mounts?: readonly unknown[] }).mounts?.length) throw new SandboxError('POLICY_INVALID', 'mounts are not supported for components yet');
  // Granted means linked: the world check comes first; a refused component is never transpiled.
  const linked = checkComponent(bytes, policy.caps);
  const t = await transpileCached(bytes, parts.config);
  if (t.cores.length > MAX_CORE_MODULES) throw new SandboxError('INVALID_MODULE', `the component has ${t.cores.length} core modules; at most ${MAX_CORE_MODULES} run`, { coreModules: t.cores.length });
  const prepared = await prepareCores(parts, t.cores, policy);
  const cores: ComponentCore[] = t.cores.map((c, i) => {
    const p = prepared[i]!;
    return { name: c.name, module: p.module, growFailedExport: p.limits.growFailedExport, definesMemory: p.desc.memories.some((m) => !m.imported), poolMemory: p.limits.poolMemory ?? null };
  });
  const spec = { ...buildSpec(parts.config, prepared[0]!, { link: [], importedMemory: null }, policy, who, opts), link: linked };
  return {
    prepared: prepared[0]!,
    spec,
    lane: {
      load: (job, finalSpec, budget) => ({ v: PROTOCOL_VERSION, kind: 'component', load: true, job, key: t.hash, glue: t.glue, cores, run: t.run ?? '', spec: finalSpec, budget }),
      args: (name, args) => args.map((a, i) => argToWire(name, i, a)),
    },
    receipted: async () => failure(new SandboxError('POLICY_INVALID', 'signed receipts are not supported for component instances yet'), { profile: policy.profile, warnings: policy.warnings }, 0),
  };
}

function argToWire(name: string, index: number, a: ArgValue): WireValue {
  if (typeof a === 'bigint') return { t: 'i64', v: BigInt.asIntN(64, a).toString() };
  if (typeof a === 'number') {
    if (Number.isInteger(a) && a >= -(2 ** 31) && a < 2 ** 31) return { t: 'i32', v: a };
    return { t: 'f64', v: Number.isFinite(a) ? a : (String(a) as 'NaN' | 'Infinity' | '-Infinity') };
  }
  throw new SandboxError('POLICY_INVALID', `argument ${index} of "${String(name).slice(0, 64)}": a component call takes numbers and BigInts (other values do not cross yet)`, { export: String(name).slice(0, 64), index });
}
