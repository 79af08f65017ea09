/**
 * What each tenant owns through the API: its instances (ids are per tenant) and its recent runs.
 *
 * Owns: the namespacing of instance ids — tenant A's "p1" and tenant B's "p1" are different
 * engine instances (`t<hash of tenant>.<id>`) — and the per-tenant ring of recent run results.
 * Invariant: every lookup is keyed by (tenant, id); an id of another tenant is indistinguishable
 * from one that does not exist (the same NOT_FOUND, the same message); a tenant holds at most
 * `maxPerTenant` instances and the last RUNS_KEPT_PER_TENANT runs, each with its output cut to
 * KEPT_OUTPUT_BYTES.
 *
 * Does not protect against: a tenant exhausting the engine-wide instance bound before others
 * (the per-tenant cap bounds one tenant's share; the engine's bound is the operator's choice).
 */

import { createHash, randomBytes } from 'node:crypto';
import type { Engine, Instance, InstanceInfo, RunResult } from '../../engine/index.ts';
import { SandboxError } from '../../errors.ts';
import { httpError } from './respond.ts';

/** Runs remembered per tenant for GET /v1/runs (a ring: the oldest is dropped). */
export const RUNS_KEPT_PER_TENANT = 100;
/** stdout and stderr of a remembered run are cut to this (the POST answer had them whole). */
export const KEPT_OUTPUT_BYTES = 64 * 1024;
/** Instances one tenant may hold at once, unless the operator's config says otherwise. */
export const DEFAULT_MAX_INSTANCES_PER_TENANT = 16;

export interface RunSummary {
  readonly id: string;
  readonly time: string;
  readonly ok: boolean;
  readonly code?: string;
  readonly profile: string;
  readonly fuelUsed: number;
  readonly durationMs: number;
  /** `module` (uploaded bytes) or `command:NAME`. */
  readonly source: string;
}

interface KeptRun {
  readonly summary: RunSummary;
  readonly result: Record<string, unknown>;
}

function cut(text: string): string {
  if (Buffer.byteLength(text) <= KEPT_OUTPUT_BYTES) return text;
  return `${Buffer.from(text).subarray(0, KEPT_OUTPUT_BYTES).toString('utf8')}\n[membrane: kept output cut at ${KEPT_OUTPUT_BYTES} bytes]\n`;
}

export class Tenancy {
  /** engine id → owner. */
  private readonly owners = new Map<string, { readonly tenant: string; readonly id: string }>();
  private readonly reserved = new Set<string>();
  private readonly runs = new Map<string, KeptRun[]>();

  constructor(
    private readonly engine: Engine,
    private readonly maxPerTenant: number = DEFAULT_MAX_INSTANCES_PER_TENANT,
  ) {}

  /** The engine's name for a tenant's instance. */
  engineId(tenant: string, id: string): string {
    return `t${createHash('sha256').update(tenant).digest('hex').slice(0, 16)}.${id}`;
  }

  /** Start an instance for a tenant under its own id. */
  async start(tenant: string, id: string, bytes: Uint8Array, opts: Parameters<Engine['start']>[2]): Promise<InstanceInfo> {
    const key = this.engineId(tenant, id);
    if (this.owners.has(key) || this.reserved.has(key)) throw new SandboxError('POLICY_INVALID', `an instance named "${id}" already exists`);
    const mine = this.list(tenant).length + [...this.reserved].filter((k) => k.startsWith(this.engineId(tenant, ''))).length;
    if (mine >= this.maxPerTenant) throw new SandboxError('MEMORY_LIMIT', `a tenant may hold at most ${this.maxPerTenant} instances`);
    this.reserved.add(key);
    try {
      const instance = await this.engine.start(key, bytes, { ...opts, tenant });
      this.owners.set(key, { tenant, id });
      return this.publicInfo(instance, id);
    } finally {
      this.reserved.delete(key);
    }
  }

  /** The tenant's live instance, or NOT_FOUND (also for another tenant's id). */
  get(tenant: string, id: string): Instance {
    const key = this.engineId(tenant, id);
    const owner = this.owners.get(key);
    const instance = owner && owner.tenant === tenant ? this.engine.get(key) : undefined;
    if (!instance) {
      this.owners.delete(key);
      throw httpError('NOT_FOUND', 'no such instance');
    }
    return instance;
  }

  info(tenant: string, id: string): InstanceInfo {
    return this.publicInfo(this.get(tenant, id), id);
  }

  list(tenant: string): InstanceInfo[] {
    const out: InstanceInfo[] = [];
    for (const [key, owner] of this.owners) {
      if (owner.tenant !== tenant) continue;
      const instance = this.engine.get(key);
      if (!instance) this.owners.delete(key);
      else out.push(this.publicInfo(instance, owner.id));
    }
    return out;
  }

  async stop(tenant: string, id: string): Promise<void> {
    const instance = this.get(tenant, id);
    await instance.stop();
    this.owners.delete(this.engineId(tenant, id));
  }

  private publicInfo(instance: Instance, id: string): InstanceInfo {
    return { ...instance.info(), id };
  }

  // ---- runs ----

  newRunId(): string {
    return `run_${randomBytes(8).toString('hex')}`;
  }

  keepRun(tenant: string, id: string, source: string, result: RunResult & { readonly clamped?: readonly string[] }): void {
    const { stdoutBytes: _bytes, ...rest } = result;
    const kept = { ...rest, id, stdout: cut(result.stdout), stderr: cut(result.stderr) };
    const summary: RunSummary = {
      id,
      time: new Date().toISOString(),
      ok: result.ok,
      ...(result.error ? { code: result.error.code } : {}),
      profile: result.profile,
      fuelUsed: result.fuelUsed,
      durationMs: result.durationMs,
      source,
    };
    const ring = this.runs.get(tenant) ?? [];
    ring.push({ summary, result: kept });
    if (ring.length > RUNS_KEPT_PER_TENANT) ring.splice(0, ring.length - RUNS_KEPT_PER_TENANT);
    this.runs.set(tenant, ring);
  }

  /** Newest first. */
  listRuns(tenant: string): RunSummary[] {
    return (this.runs.get(tenant) ?? []).map((r) => r.summary).reverse();
  }

  getRun(tenant: string, id: string): Record<string, unknown> {
    const hit = (this.runs.get(tenant) ?? []).find((r) => r.summary.id === id);
    if (!hit) throw httpError('NOT_FOUND', 'no such run');
    return hit.result;
  }
}
