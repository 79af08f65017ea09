/**
 * `/v1/instances`: start, list, read, call and stop a tenant's persistent instances.
 *
 * Owns: the instance routes, and the two helpers every route that runs code shares — the grant
 * of a request (src/interfaces/grant.ts, with the token's profile as the grant) and a module's
 * bytes from `module` (base64) or `command` (a registered name).
 * Invariant: every lookup goes through `Tenancy` with the caller's tenant, so another tenant's id
 * answers exactly like a missing one (404 NOT_FOUND).
 *
 * Does not protect against: a tenant starting many instances (bounded per tenant by Tenancy and
 * engine-wide by maxInstances).
 */

import { SandboxError } from '../../errors.ts';
import { resolveGrant, type Granted } from '../grant.ts';
import { decodeModuleBase64 } from '../module-upload.ts';
import { validate } from './body.ts';
import { httpError } from './respond.ts';
import type { Answer, Ctx, Principal, Route } from './router.ts';
import { CallBody, ERROR_SCHEMA, INSTANCE_INFO, RUN_RESULT, StartInstanceBody } from './schemas.ts';
import type { Api } from './state.ts';
import type { RunResult } from '../../engine/index.ts';


export function principalOf(ctx: Ctx<Api>): Principal {
  if (!ctx.principal) throw new SandboxError('INTERNAL', 'a route that needs a principal ran without one');
  return ctx.principal;
}

/** The request's grant: NOT_CAPABLE (audited) for anything above the token's profile; clamps reported. */
export function grantFor(api: Api, who: Principal, b: { profile?: string | undefined; capability_subset?: string[] | undefined; timeout_ms?: number | undefined; fuel?: number | undefined }): Granted {
  return resolveGrant(api.engine, { tenant: who.tenant, profile: who.profile, hostCaps: who.hostCaps, surface: 'http' }, { profile: b.profile, capabilitySubset: b.capability_subset, timeoutMs: b.timeout_ms, fuel: b.fuel });
}

/** The module's bytes: base64 `module`, or a registered `command`. */
export function moduleBytes(api: Api, b: { module?: string | undefined; command?: string | undefined }): { bytes: Uint8Array; source: string } {
  if (b.command !== undefined) {
    const bytes = api.commands.get(b.command);
    if (!bytes) throw httpError('NOT_FOUND', `no registered command named "${b.command}"`);
    return { bytes, source: `command:${b.command}` };
  }
  return { bytes: decodeModuleBase64(b.module ?? ''), source: 'module' };
}

/** The public result: no raw bytes, the clamps when there were any. */
export function publicResult(r: RunResult, clamped: readonly string[]): Record<string, unknown> {
  const { stdoutBytes: _bytes, ...rest } = r;
  return clamped.length > 0 ? { ...rest, clamped: [...clamped] } : rest;
}

const notFound = { 404: ERROR_SCHEMA };

export function instanceRoutes(): Route<Api>[] {
  return [
    {
      method: 'GET',
      path: '/v1/instances',
      auth: true,
      operationId: 'listInstances',
      summary: "The caller's tenant's instances",
      responses: { 200: { type: 'object', properties: { instances: { type: 'array', items: INSTANCE_INFO } }, required: ['instances'] } },
      handle: (ctx): Answer => ({ status: 200, body: { instances: ctx.state.tenancy.list(principalOf(ctx).tenant) } }),
    },
    {
      method: 'POST',
      path: '/v1/instances',
      auth: true,
      operationId: 'startInstance',
      summary: 'Start a persistent instance',
      description:
        'Start an instance from a base64 module or a registered command, under the request’s grant (at most the token’s profile). ' +
        'The id is the caller’s own name for it; tenants never see each other’s ids. Answers the instance’s info, with `clamped` and `warnings` when non-empty.',
      body: StartInstanceBody,
      largeBody: true,
      responses: { 201: INSTANCE_INFO, 403: ERROR_SCHEMA, 413: ERROR_SCHEMA, 422: ERROR_SCHEMA },
      handle: async (ctx): Promise<Answer> => {
        const who = principalOf(ctx);
        const b = validate(StartInstanceBody, await ctx.body());
        const g = grantFor(ctx.state, who, b);
        const { bytes } = moduleBytes(ctx.state, b);
        const info = await ctx.state.tenancy.start(who.tenant, b.id, bytes, {
          profile: g.profile,
          ...(g.caps ? { caps: g.caps } : {}),
          timeoutMs: g.timeoutMs,
          fuel: g.fuel,
          ...(b.memory_bytes !== undefined ? { memoryBytes: b.memory_bytes } : {}),
        });
        const warnings = ctx.state.engine.get(ctx.state.tenancy.engineId(who.tenant, b.id))?.warnings ?? [];
        return { status: 201, body: { ...info, ...(g.clamped.length ? { clamped: g.clamped } : {}), ...(warnings.length ? { warnings } : {}) } };
      },
    },
    {
      method: 'GET',
      path: '/v1/instances/{id}',
      auth: true,
      operationId: 'getInstance',
      summary: 'One instance of the caller',
      description: 'The instance’s info; 404 for an absent id and for another tenant’s alike.',
      responses: { 200: INSTANCE_INFO, ...notFound },
      handle: (ctx): Answer => ({ status: 200, body: ctx.state.tenancy.info(principalOf(ctx).tenant, ctx.params['id']!) }),
    },
    {
      method: 'POST',
      path: '/v1/instances/{id}/call',
      auth: true,
      operationId: 'callInstance',
      summary: 'Call an export of an instance',
      description: 'Call an exported function with numeric arguments (strings for i64 beyond 2^53). A guest failure is a 200 with `ok: false` and `error`.',
      body: CallBody,
      responses: { 200: RUN_RESULT, ...notFound },
      handle: async (ctx): Promise<Answer> => {
        const who = principalOf(ctx);
        const instance = ctx.state.tenancy.get(who.tenant, ctx.params['id']!);
        const b = validate(CallBody, await ctx.body());
        // A client that goes away cancels its call (the instance then follows its onTimeout rule).
        const r = await instance.call(b.export, b.args ?? [], { signal: ctx.signal });
        ctx.state.metrics.call('call', r.ok ? 'ok' : (r.error?.code ?? 'INTERNAL'), r.fuelUsed, r.durationMs);
        if (ctx.signal.aborted) throw httpError('CANCELLED', 'the client went away; the call was cancelled');
        return { status: 200, body: publicResult(r, []) };
      },
    },
    {
      method: 'DELETE',
      path: '/v1/instances/{id}',
      auth: true,
      operationId: 'stopInstance',
      summary: 'Stop an instance',
      description: 'Stop the instance and free its worker; its id may be reused.',
      responses: { 200: { type: 'object', properties: { stopped: { type: 'boolean' } }, required: ['stopped'] }, ...notFound },
      handle: async (ctx): Promise<Answer> => {
        await ctx.state.tenancy.stop(principalOf(ctx).tenant, ctx.params['id']!);
        return { status: 200, body: { stopped: true } };
      },
    },
  ];
}
