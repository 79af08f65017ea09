/**
 * `/v1/runs` (one-shot modules and commands) and `/v1/exec` (untrusted JS/TS/Python source).
 *
 * Owns: turning a validated request plus its grant into `engine.run` / `engine.exec`, counting
 * the call in the metrics, and remembering a tenant's recent runs. Invariant: every run and exec
 * passes the grant rule first (a cap or profile above the token's is NOT_CAPABLE, audited; a
 * timeout or fuel above the ceiling is clamped and reported in `clamped`); a guest-level failure
 * (TIMEOUT, FUEL_EXHAUSTED, a trap…) is a 200 whose result has `ok: false` and `error` — the
 * request succeeded, the guest did not.
 *
 * Does not protect against: what the engine's walls do not (DESIGN §3).
 */

import { validate } from './body.ts';
import { httpError } from './respond.ts';
import { grantFor, moduleBytes, principalOf, publicResult } from './routes-instances.ts';
import type { Answer, Route } from './router.ts';
import { ERROR_SCHEMA, EXEC_RESULT, ExecBody, RUN_RESULT, RUN_SUMMARY, RunBody, OutputStreamQuery } from './schemas.ts';
import type { Api } from './state.ts';
import { EventStream, streamFormat } from './stream.ts';
import type { CallControls } from '../../lanes/controls.ts';

export function runRoutes(): Route<Api>[] {
  return [
    {
      method: 'POST',
      path: '/v1/runs',
      auth: true,
      operationId: 'createRun',
      summary: 'Run a module or a command once',
      description:
        'Run a base64 WebAssembly module or a registered command once, in a fresh sandbox, under the request’s grant. ' +
        'A guest failure (TIMEOUT, FUEL_EXHAUSTED, a trap…) is a 200 with `ok: false` and `error`; 503 OVERLOADED means nothing ran.',
      body: RunBody,
      query: OutputStreamQuery,
      streams: true,
      largeBody: true,
      responses: { 200: RUN_RESULT, 403: ERROR_SCHEMA, 404: ERROR_SCHEMA, 413: ERROR_SCHEMA, 503: ERROR_SCHEMA },
      handle: async (ctx): Promise<Answer> => {
        const who = principalOf(ctx);
        const format = streamFormat(validate(OutputStreamQuery, Object.fromEntries(ctx.query)).stream, ctx.req.headers['accept']);
        const b = validate(RunBody, await ctx.body());
        const g = grantFor(ctx.state, who, b);
        const { bytes, source } = moduleBytes(ctx.state, b);
        const id = ctx.state.tenancy.newRunId();
        const events = format ? new EventStream(ctx.res, format, { 'x-request-id': ctx.requestId }) : null;
        const r = await ctx.state.engine.run(bytes, {
          tenant: who.tenant,
          id,
          profile: g.profile,
          ...(g.caps ? { caps: g.caps } : {}),
          timeoutMs: g.timeoutMs,
          fuel: g.fuel,
          ...(b.argv ? { argv: b.argv } : {}),
          ...(b.stdin !== undefined ? { stdin: b.stdin } : {}),
          ...(b.invoke !== undefined ? { invoke: b.invoke, args: b.args ?? [] } : {}),
          ...controls(ctx.signal, events),
        });
        ctx.state.metrics.call('run', r.ok ? 'ok' : (r.error?.code ?? 'INTERNAL'), r.fuelUsed, r.durationMs);
        if (ctx.signal.aborted) throw httpError('CANCELLED', 'the client went away; the run was cancelled');
        // Every worker busy for the call's whole timeout: nothing ran — a declared, retryable refusal (503).
        if (r.error?.code === 'OVERLOADED' && !events?.started) throw httpError('OVERLOADED', r.error.message);
        const body = { id, ...publicResult(r, g.clamped) };
        ctx.state.tenancy.keepRun(who.tenant, id, source, { ...r, clamped: g.clamped });
        if (events) {
          events.result(body);
          return null;
        }
        return { status: 200, body };
      },
    },
    {
      method: 'GET',
      path: '/v1/runs',
      auth: true,
      operationId: 'listRuns',
      summary: "The caller's tenant's recent runs",
      description: 'The last runs of the caller’s tenant, newest first (at most 100 are kept).',
      responses: { 200: { type: 'object', properties: { runs: { type: 'array', items: RUN_SUMMARY } }, required: ['runs'] } },
      handle: (ctx): Answer => ({ status: 200, body: { runs: ctx.state.tenancy.listRuns(principalOf(ctx).tenant) } }),
    },
    {
      method: 'GET',
      path: '/v1/runs/{id}',
      auth: true,
      operationId: 'getRun',
      summary: 'One recent run of the caller',
      description: 'One run’s result, its output cut to 64 KiB per stream; 404 for an absent id and for another tenant’s alike.',
      responses: { 200: RUN_RESULT, 404: ERROR_SCHEMA },
      handle: (ctx): Answer => ({ status: 200, body: ctx.state.tenancy.getRun(principalOf(ctx).tenant, ctx.params['id']!) }),
    },
    {
      method: 'POST',
      path: '/v1/exec',
      auth: true,
      operationId: 'exec',
      summary: 'Run a JavaScript, TypeScript or Python snippet',
      description:
        'Run untrusted source in a fresh, fuel-metered interpreter under the request’s grant. Answers stdout, stderr and the value of the last expression; ' +
        'a snippet that fails is a 200 with `ok: false` and `error`.',
      body: ExecBody,
      query: OutputStreamQuery,
      streams: true,
      responses: { 200: EXEC_RESULT, 403: ERROR_SCHEMA, 503: ERROR_SCHEMA },
      handle: async (ctx): Promise<Answer> => {
        const who = principalOf(ctx);
        const format = streamFormat(validate(OutputStreamQuery, Object.fromEntries(ctx.query)).stream, ctx.req.headers['accept']);
        const b = validate(ExecBody, await ctx.body());
        const g = grantFor(ctx.state, who, b);
        const events = format ? new EventStream(ctx.res, format, { 'x-request-id': ctx.requestId }) : null;
        const r = await ctx.state.engine.exec({
          language: b.language,
          code: b.code,
          tenant: who.tenant,
          profile: g.profile,
          ...(g.caps ? { caps: g.caps } : {}),
          timeoutMs: g.timeoutMs,
          fuel: g.fuel,
          ...(b.context !== undefined ? { context: b.context } : {}),
          ...controls(ctx.signal, events),
        });
        ctx.state.metrics.call('exec', r.ok ? 'ok' : (r.error?.code ?? 'INTERNAL'), r.fuelUsed, r.durationMs);
        if (ctx.signal.aborted) throw httpError('CANCELLED', 'the client went away; the snippet was cancelled');
        // A lane at capacity ran nothing: a declared, retryable refusal (503), not a guest failure.
        if (r.error?.code === 'OVERLOADED' && !events?.started) throw httpError('OVERLOADED', r.error.message);
        const body = g.clamped.length > 0 ? { ...r, clamped: g.clamped } : r;
        if (events) {
          events.result(body);
          return null;
        }
        return { status: 200, body };
      },
    },
  ];
}

/** The call's signal (the client's connection) and, when streaming, its output as events. */
function controls(signal: AbortSignal, events: EventStream | null): CallControls {
  return { signal, ...(events ? { onStdout: (c: string) => events.stdout(c), onStderr: (c: string) => events.stderr(c) } : {}) };
}
