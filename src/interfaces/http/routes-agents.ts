/**
 * `/v1/agents`: start, read, follow (server-sent events), stop and resume a tenant's agent
 * sessions (src/agent), and their review queues.
 *
 * Owns: the agent routes and their request schemas. Invariant: every route passes the caller's
 * tenant to the session table, so another tenant's session answers exactly like a missing one
 * (404 NOT_FOUND); session ids and VFS names are chosen by the server, never by the client; the
 * grant is the request's profile and capability subset under the token's profile, like every
 * route that runs code (and the agent's grant must hold `llm`).
 *
 * Does not protect against: the model endpoint's cost (the operator's to meter); sessions are
 * bounded per tenant and per engine (src/agent/sessions.ts), not per token.
 */

// The agent module plugs `engine.agent` into the engine when it loads.
import '../../agent/index.ts';
import type { AgentEvent } from '../../agent/index.ts';
import { validate } from './body.ts';
import { principalOf, grantFor } from './routes-instances.ts';
import type { Answer, Route } from './router.ts';
import { ERROR_SCHEMA } from './schemas.ts';
import type { Api } from './state.ts';

const { z } = await import('zod');

const StartAgentBody = z.strictObject({
  system: z.string().min(1).max(128 * 1024),
  task: z.string().min(1).max(128 * 1024),
  model: z.string().min(1).max(256).optional(),
  tools: z.array(z.string().max(32)).max(16).optional(),
  toolkits: z.array(z.string().max(32)).max(8).optional(),
  profile: z.string().max(64).optional(),
  capability_subset: z.array(z.string().max(64)).max(32).optional(),
  max_steps: z.number().int().min(1).max(1000).optional(),
  tool_timeout_ms: z.number().int().min(1).max(3_600_000).optional(),
});
const ResumeBody = z.strictObject({ max_steps: z.number().int().min(1).max(1000).optional() });
const ReviewBody = z.strictObject({ item: z.unknown() });

const STATUS = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    status: { enum: ['running', 'ended'] },
    live: { type: 'boolean' },
    outcome: { enum: ['done', 'finished', 'max_steps', 'stopped', 'error'] },
    result: { type: ['string', 'null'] },
    turns: { type: 'number' },
    steps: { type: 'number' },
    maxSteps: { type: 'number' },
    tools: { type: 'array', items: { type: 'string' } },
    usage: { type: 'object' },
    error: { type: 'object' },
  },
  required: ['id', 'status', 'live', 'turns', 'steps', 'tools', 'usage'],
} as const;
const notFound = { 404: ERROR_SCHEMA };
/** How often an idle event stream gets a comment line. */
const SSE_KEEPALIVE_MS = 15_000;

/** The public status: the VFS name and tenant stay on the server. */
function statusOf(api: Api, tenant: string, id: string): Record<string, unknown> {
  const { vfs: _vfs, tenant: _tenant, ...rest } = api.engine.agent.status(id, { tenant });
  return rest;
}

export function agentRoutes(): Route<Api>[] {
  return [
    {
      method: 'POST',
      path: '/v1/agents',
      auth: true,
      operationId: 'startAgent',
      summary: 'Start an agent session',
      description:
        'The agent loop over the operator’s model endpoint: tools from the grant (shell, vfs_read, vfs_write, vfs_list, exec, fetch, done), each call time-bounded, ' +
        'every step in the session’s VFS and the audit log. The grant must hold `llm`. Answers the session’s status; follow it with GET /v1/agents/{id}/events.',
      body: StartAgentBody,
      responses: { 201: STATUS, 400: ERROR_SCHEMA, 403: ERROR_SCHEMA },
      handle: async (ctx): Promise<Answer> => {
        const who = principalOf(ctx);
        const b = validate(StartAgentBody, await ctx.body());
        const g = grantFor(ctx.state, who, { profile: b.profile, capability_subset: b.capability_subset });
        const id = ctx.state.engine.agent.start({
          system: b.system,
          task: b.task,
          tenant: who.tenant,
          profile: g.profile,
          ...(g.caps ? { caps: g.caps } : {}),
          ...(b.model ? { model: b.model } : {}),
          ...(b.tools ? { tools: b.tools } : {}),
          ...(b.toolkits ? { toolkits: b.toolkits } : {}),
          ...(b.max_steps ? { maxSteps: b.max_steps } : {}),
          ...(b.tool_timeout_ms ? { toolTimeoutMs: b.tool_timeout_ms } : {}),
        });
        return { status: 201, body: statusOf(ctx.state, who.tenant, id) };
      },
    },
    {
      method: 'GET',
      path: '/v1/agents/{id}',
      auth: true,
      operationId: 'getAgent',
      summary: 'One agent session of the caller',
      responses: { 200: STATUS, ...notFound },
      handle: (ctx): Answer => ({ status: 200, body: statusOf(ctx.state, principalOf(ctx).tenant, ctx.params['id']!) }),
    },
    {
      method: 'GET',
      path: '/v1/agents/{id}/events',
      auth: true,
      operationId: 'streamAgentEvents',
      summary: 'Server-sent events: the session’s steps so far, then live, until it ends',
      description: 'Each event is `event: model|step|end`, `data: <JSON>`. A session that is not running answers one `event: status` and ends.',
      responses: { 200: 'text/event-stream', ...notFound },
      handle: (ctx): Answer => {
        const tenant = principalOf(ctx).tenant;
        const id = ctx.params['id']!;
        const status = statusOf(ctx.state, tenant, id); // NOT_FOUND before any byte is written
        const res = ctx.res;
        res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', 'x-accel-buffering': 'no' });
        const send = (type: string, body: unknown): void => {
          if (!res.writableEnded) res.write(`event: ${type}\ndata: ${JSON.stringify(body)}\n\n`);
        };
        // A tool call may run for minutes without an event: keep the connection visibly alive.
        const keepalive = setInterval(() => {
          if (!res.writableEnded) res.write(': keepalive\n\n');
        }, SSE_KEEPALIVE_MS);
        keepalive.unref();
        let off: (() => void) | null = null;
        const end = (): void => {
          clearInterval(keepalive);
          off?.();
          if (!res.writableEnded) res.end();
        };
        let ended = false;
        off = ctx.state.engine.agent.subscribe(
          id,
          (e: AgentEvent) => {
            send(e.kind, e);
            if (e.kind === 'end') {
              ended = true;
              queueMicrotask(end);
            }
          },
          { tenant },
        );
        if (off === null) {
          send('status', status);
          end();
        } else if (ended) queueMicrotask(end);
        res.on('close', end);
        return null;
      },
    },
    {
      method: 'DELETE',
      path: '/v1/agents/{id}',
      auth: true,
      operationId: 'stopAgent',
      summary: 'Stop an agent session (its tool in flight is aborted); it may be resumed',
      responses: { 200: STATUS, ...notFound },
      handle: async (ctx): Promise<Answer> => {
        const tenant = principalOf(ctx).tenant;
        await ctx.state.engine.agent.stop(ctx.params['id']!, { tenant });
        return { status: 200, body: statusOf(ctx.state, tenant, ctx.params['id']!) };
      },
    },
    {
      method: 'POST',
      path: '/v1/agents/{id}/resume',
      auth: true,
      operationId: 'resumeAgent',
      summary: 'Resume a stopped session, or one an engine restart interrupted, from its VFS',
      body: ResumeBody,
      responses: { 202: STATUS, ...notFound },
      handle: async (ctx): Promise<Answer> => {
        const tenant = principalOf(ctx).tenant;
        const b = validate(ResumeBody, await ctx.body());
        const id = ctx.params['id']!;
        ctx.state.engine.agent.resume(id, { tenant, ...(b.max_steps ? { maxSteps: b.max_steps } : {}) }).catch(() => {});
        return { status: 202, body: statusOf(ctx.state, tenant, id) };
      },
    },
    {
      method: 'POST',
      path: '/v1/agents/{id}/reviews',
      auth: true,
      operationId: 'putAgentReview',
      summary: 'Queue an item for review on the session (persisted in its VFS)',
      body: ReviewBody,
      responses: { 201: { type: 'object', properties: { queued: { type: 'number' } }, required: ['queued'] }, ...notFound },
      handle: async (ctx): Promise<Answer> => {
        const b = validate(ReviewBody, await ctx.body());
        const queued = ctx.state.engine.agent.putReview(ctx.params['id']!, b.item, { tenant: principalOf(ctx).tenant });
        return { status: 201, body: { queued } };
      },
    },
    {
      method: 'POST',
      path: '/v1/agents/{id}/reviews/take',
      auth: true,
      operationId: 'takeAgentReview',
      summary: 'Take the oldest review item of the session (null when the queue is empty)',
      responses: { 200: { type: 'object', properties: { review: {} }, required: ['review'] }, ...notFound },
      handle: (ctx): Answer => ({ status: 200, body: { review: ctx.state.engine.agent.takeReview(ctx.params['id']!, { tenant: principalOf(ctx).tenant }) } }),
    },
  ];
}
