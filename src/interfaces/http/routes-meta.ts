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
import { PROFILE_ROW } from './schemas.ts';
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
      summary: 'Liveness',
      responses: { 200: { type: 'object', properties: { ok: { const: true } }, required: ['ok'] } },
      handle: (): Answer => ({ status: 200, body: { ok: true } }),
    },
    {
      method: 'GET',
      path: '/openapi.json',
      auth: false,
      summary: 'This document',
      responses: { 200: { type: 'object' } },
      handle: (ctx): Answer => ({ status: 200, body: openApiDocument(ctx.state.routes()) }),
    },
    {
      method: 'GET',
      path: '/metrics',
      auth: false,
      summary: 'Prometheus metrics (aggregates only: no tenant, token or id)',
      responses: { 200: 'text/plain; version=0.0.4' },
      handle: (ctx): Answer => {
        sendText(ctx.res, 200, 'text/plain; version=0.0.4; charset=utf-8', ctx.state.metrics.render(ctx.state.engine.stats(), ctx.state.feed.size));
        return null;
      },
    },
    { method: 'GET', path: '/', auth: false, summary: 'The web dashboard', responses: { 200: 'text/html' }, handle: asset },
    { method: 'GET', path: '/dashboard/*', auth: false, summary: "The web dashboard's assets", label: '/dashboard/*', responses: { 200: 'text/javascript', 404: 'application/json' }, handle: asset },
    {
      method: 'GET',
      path: '/v1/whoami',
      auth: true,
      summary: "The token's tenant and profile",
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
      summary: 'The profile ladder (with the operator’s limits) and the profile this token grants',
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
