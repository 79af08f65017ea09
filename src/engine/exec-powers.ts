/**
 * One `engine.exec` call's power server, assembled from the engine's parts: the brokers bound to
 * the call's principal (its tenant and a fresh `exec-N` instance), and — when `vfs`, `commands`
 * or `exec` is granted — the call's VFS (src/lanes/vfs.ts, opened on first use) and command runner
 * (src/lanes/host.ts).
 *
 * Owns: the principal's construction and the wiring only.
 * Invariant: every power is served as that principal with the call's caps; the VFS is the named
 * one the caller chose (`ExecOptions.vfs`) or a private one that ends with the call.
 *
 * Does not protect against: see src/lanes/power-server.ts and src/lanes/host.ts.
 */

import type { PolicyConfig } from '../policy/resolve.ts';
import type { QueryOutcome, QuerySource } from '../storage/query.ts';
import type { Brokers } from '../brokers/index.ts';
import { GUEST_ERR } from '../abi/command.ts';
import type { HostServices } from './bridge/host-services.ts';
import { laneHost, lanePowerServer, LaneVfs, type LaneHostDeps } from '../lanes/index.ts';
import type { EngineConfig } from './options.ts';

export interface EngineParts {
  readonly config: EngineConfig;
  readonly brokers: Brokers;
  readonly services: HostServices;
  readonly run: LaneHostDeps['run'];
  readonly query: (source: QuerySource, sql: string) => Promise<QueryOutcome>;
}

export function execPowerServer(parts: EngineParts, tenant: string, instance: string, policy: PolicyConfig, vfsName: string | undefined): ReturnType<typeof lanePowerServer> {
  const { brokers, services, config } = parts;
  const caps = policy.caps;
  const who = { tenant, instance, policy: { caps } };
  const admit = (cap: Parameters<Brokers['cadence']['admit']>[1], op: string, bytes: number, max: number): number | null =>
    brokers.cadence.admit({ tenant, instance, caps }, cap, op, { bytes, max });
  const needsHost = caps.includes('vfs') || caps.includes('commands') || caps.includes('exec');
  const host = needsHost
    ? laneHost({
        policy,
        metered: config.fuel,
        vfs: caps.includes('vfs') ? new LaneVfs({ name: vfsName, maxBytes: config.vfsMaxBytes, maxInodes: config.vfsMaxInodes }) : null,
        command: (name) => services.command(name),
        run: parts.run,
        query: async (file, sql) => {
          const r = await parts.query({ file }, sql);
          return r.ok ? { ok: true, json: r.json } : { ok: false, errno: GUEST_ERR[r.code] };
        },
        takeExec: () => services.takeExec(tenant),
        admit,
        record: (kind, detail) => brokers.record({ tenant, instance, kind, detail }),
      })
    : undefined;
  return lanePowerServer({
    call: (name, args, cap) => brokers.call(who, name, args, cap),
    net: (name, args, stop, deadline) => brokers.net(who, name, args, stop, deadline),
    admit,
    ...(host ? { host } : {}),
  });
}
