/**
 * One `engine.exec` call's power server, assembled from the engine's parts: the brokers bound to
 * the call's principal (its tenant and a fresh `exec-N` instance), and — when `vfs`, `commands`
 * or `exec` is granted — the call's VFS (vfs.ts, opened on first use) and command runner (host.ts).
 *
 * Owns: the principal's construction and the wiring only.
 * Invariant: every power is served as that principal with the call's caps; the VFS is the named
 * one the caller chose (`ExecOptions.vfs`) or a private one that ends with the call.
 *
 * Does not protect against: see power-server.ts and host.ts.
 */

import type { PolicyConfig } from '../policy/resolve.ts';
import type { QueryOutcome, QuerySource } from '../storage/query.ts';
import type { Brokers } from '../brokers/index.ts';
import { GUEST_ERR } from '../abi/command.ts';
import { laneHost, type LaneHostDeps } from './host.ts';
import { lanePowerServer } from './power-server.ts';
import { LaneVfs } from './vfs.ts';

/** The engine's parts a call's powers are built from (the engine hands in its own). */
export interface EngineParts {
  /** Fuel metering on or off, and the VFS limits (the engine's `EngineConfig`). */
  readonly config: { readonly fuel: boolean; readonly vfsMaxBytes: number; readonly vfsMaxInodes: number; readonly requireSigned: readonly string[] | null };
  readonly brokers: Brokers;
  /** The registry's commands and the tenant's concurrent exec slots (the engine's `HostServices`). */
  readonly services: { command: LaneHostDeps['command']; takeExec(tenant: string): Promise<(() => void) | null> };
  readonly run: LaneHostDeps['run'];
  readonly query: (source: QuerySource, sql: string) => Promise<QueryOutcome>;
  /** The engine's host caps and their function names (EngineConfig.hostFunctions). */
  readonly hostFunctions: Readonly<Record<string, readonly string[]>>;
}

export function execPowerServer(parts: EngineParts, tenant: string, instance: string, policy: PolicyConfig, vfsName: string | undefined): ReturnType<typeof lanePowerServer> & { readonly vfsFile?: () => string } {
  const { brokers, services, config } = parts;
  const caps = policy.caps;
  const who = { tenant, instance, policy: { caps } };
  const admit = (cap: Parameters<Brokers['cadence']['admit']>[1], op: string, bytes: number, max: number): number | null =>
    brokers.cadence.admit({ tenant, instance, caps }, cap, op, { bytes, max });
  const needsHost = caps.includes('vfs') || caps.includes('commands') || caps.includes('exec');
  const vfs = caps.includes('vfs') ? new LaneVfs({ name: vfsName, maxBytes: config.vfsMaxBytes, maxInodes: config.vfsMaxInodes }) : null;
  const host = needsHost
    ? laneHost({
        policy,
        metered: config.fuel,
        vfs,
        command: (name, args) => services.command(name, args),
        run: parts.run,
        query: async (file, sql) => {
          const r = await parts.query({ file }, sql);
          return r.ok ? { ok: true, json: r.json } : { ok: false, errno: GUEST_ERR[r.code] };
        },
        takeExec: () => services.takeExec(tenant),
        admit: (cap, op, bytes, max) => brokers.spawnAdmit({ tenant, instance, caps }, cap, op, bytes, max),
        record: (kind, detail) => brokers.record({ tenant, instance, kind, detail }),
        signedOnly: config.requireSigned !== null,
      })
    : undefined;
  const granted = Object.fromEntries(policy.hostCaps.filter((c) => Object.hasOwn(parts.hostFunctions, c)).map((c) => [c, parts.hostFunctions[c]!]));
  const server = lanePowerServer({
    call: (name, args, cap) => brokers.call(who, name, args, cap),
    net: (name, args, stop, deadline) => brokers.net(who, name, args, stop, deadline),
    admit,
    ...(host ? { host } : {}),
    ...(policy.hostCaps.length > 0
      ? {
          hostFunctions: granted,
          hostCall: (cap: string, fn: string, args: Uint8Array | number, stop: AbortSignal, deadline: number) =>
            brokers.hostCall({ tenant, instance, hostCaps: policy.hostCaps }, cap, fn, args, [stop], deadline),
        }
      : {}),
  });
  // The Python lane's interpreter opens (creates) the file itself, on its first file access.
  return vfs ? { ...server, vfsFile: () => vfs.path() } : server;
}
