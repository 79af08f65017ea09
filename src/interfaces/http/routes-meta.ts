/**
 * The routes that describe the server rather than run code: `/health`, `/openapi.json`,
 * `/metrics`, the dashboard's assets, `/v1/whoami` and `/v1/profiles`.
 *
 * Owns: which of these are open (health, the OpenAPI document, metrics and the dashboard's static
 * files carry no tenant data) and which need a token (whoami, profiles). Invariant: nothing an
 * open route answers names a tenant, a token or an instance.
 *
 * Does not protect against: /metrics revealing aggregate load to whoever can reach the port.
 */

import { PROFILE_NAMES } from '../../policy/profiles.ts';
import { resolvePolicy } from '../../policy/resolve.ts';
import { DASHBOARD_HEADERS, dashboardAsset } from './dashboard.ts';
import { openApiDocument } from './openapi.ts';
import { httpError, sendText } from './respond.ts';
import { principalOf } from './routes-instances.ts';
import type { Answer, Ctx, Route } from './router.ts';
import { METRICS_CONTENT_TYPE } from './metrics.ts';
import { ERROR_SCHEMA, PROFILE_ROW } from './schemas.ts';
import type { Api } from './state.ts';

function asset(ctx: Ctx<Api>): Answer {
  const a = dashboardAsset(new URL(ctx.req.url ?? '/', 'http://x').pathname);
  if (!a) throw httpError('NOT_FOUND', 'no such route');
  ctx.res.writeHead(200, { ...DASHBOARD_HEADERS, 'content-type': a.type, 'content-length': String(a.body.length) });
  ctx.res.end(a.body);
  return null;
}

export function metaRoutes(): Route<Api>[] {
  return [
    {
      method: 'GET',
      path: '/health',
      auth: false,
      operationId: 'health',
      summary: 'Liveness',
      description: 'Answers `{ ok: true }` while the server accepts requests (503 OVERLOADED while it shuts down).',
      responses: { 200: { type: 'object', properties: { ok: { const: true } }, required: ['ok'] } },
      handle: (): Answer => ({ status: 200, body: { ok: true } }),
    },
    {
      method: 'GET',
      path: '/openapi.json',
      auth: false,
      operationId: 'openApiDocument',
      summary: 'This document',
      description: 'The OpenAPI 3.1 document, generated from the route table and the schemas the routes validate with.',
      responses: { 200: { type: 'object', additionalProperties: true } },
      handle: (ctx): Answer => ({ status: 200, body: openApiDocument(ctx.state.routes()) }),
    },
    {
      method: 'GET',
      path: '/metrics',
      auth: false,
      operationId: 'metrics',
      summary: 'Prometheus metrics',
      description:
        'The Prometheus text exposition format 0.0.4: requests, guest calls, MCP tool calls, denials, fuel, durations, pool gauges, build info, ' +
        'and the process and event-loop metrics. Aggregates only: no label holds a tenant, a token or an id.',
      responses: { 200: 'text/plain; version=0.0.4' },
      handle: async (ctx): Promise<Answer> => {
        sendText(ctx.res, 200, METRICS_CONTENT_TYPE, await ctx.state.metrics.render());
        return null;
      },
    },
    { method: 'GET', path: '/', auth: false, operationId: 'dashboard', summary: 'The web dashboard', description: 'The dashboard’s HTML page; it asks for a token and calls the /v1 routes with it.', responses: { 200: 'text/html' }, handle: asset },
    {
      method: 'GET',
      path: '/dashboard/*',
      auth: false,
      operationId: 'dashboardAsset',
      summary: "The web dashboard's assets",
      description: 'A script or stylesheet of the dashboard; anything else is 404.',
      label: '/dashboard/*',
      responses: { 200: 'text/javascript', 404: ERROR_SCHEMA },
      handle: asset,
    },
    {
      method: 'GET',
      path: '/v1/whoami',
      auth: true,
      operationId: 'whoami',
      summary: "The token's tenant and profile",
      description: 'The tenant the token belongs to and the profile it grants (lowered to the operator’s ceiling, if one is configured).',
      responses: { 200: { type: 'object', properties: { tenant: { type: 'string' }, profile: { type: 'string' } }, required: ['tenant', 'profile'] } },
      handle: (ctx): Answer => {
        const who = principalOf(ctx);
        return { status: 200, body: { tenant: who.tenant, profile: who.profile } };
      },
    },
    {
      method: 'GET',
      path: '/v1/profiles',
      auth: true,
      operationId: 'listProfiles',
      summary: 'The profile ladder and the granted profile',
      description: 'Every profile with its memory, timeout, fuel and cap words (the operator’s limits applied), and the profile this token grants.',
      responses: { 200: { type: 'object', properties: { profiles: { type: 'array', items: PROFILE_ROW }, granted: { type: 'string' } }, required: ['profiles', 'granted'] } },
      handle: (ctx): Answer => {
        const profiles = PROFILE_NAMES.map((name) => {
          const p = resolvePolicy({ profile: name }, ctx.state.engine.config);
          return { name, memoryBytes: p.memoryBytes, timeoutMs: p.timeoutMs, fuel: p.fuel, caps: [...p.caps] };
        });
        return { status: 200, body: { profiles, granted: principalOf(ctx).profile } };
      },
    },
  ];
}
