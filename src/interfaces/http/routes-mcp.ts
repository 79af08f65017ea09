/**
 * `/mcp`: MCP's streamable HTTP transport under `membrane serve`, after bearer authentication.
 *
 * Owns: the hand-off only — the token's tenant and profile become the MCP session's grant, and
 * a POST's JSON body is read under MAX_MCP_BODY_BYTES (a module upload in a JSON-RPC envelope) before `handleMcpRequest` sees it (the MCP
 * module, src/interfaces/mcp/http.ts, owns the protocol). Invariant: no MCP request reaches the
 * engine without a principal from a valid token; the grant is the token's, never the client's.
 *
 * Does not protect against: whatever the MCP module does not (see its header).
 */

import { MAX_MCP_BODY_BYTES, handleMcpRequest } from '../mcp/http.ts';
import { principalOf } from './routes-instances.ts';
import type { Answer, Ctx, Route } from './router.ts';
import type { Api } from './state.ts';

async function mcp(ctx: Ctx<Api>): Promise<Answer> {
  const who = principalOf(ctx);
  const body = ctx.req.method === 'POST' ? await ctx.body() : undefined;
  await handleMcpRequest(ctx.req, ctx.res, body, { engine: ctx.state.engine, tenant: who.tenant, profile: who.profile, hostCaps: who.hostCaps, commands: ctx.state.commands, log: ctx.state.log });
  return null;
}

export function mcpRoutes(): Route<Api>[] {
  const doc = { 200: 'application/json', 202: 'application/json' };
  return [
    { method: 'POST', path: '/mcp', auth: true, bodyCap: MAX_MCP_BODY_BYTES, summary: 'MCP streamable HTTP: a JSON-RPC message (the grant is the token’s profile)', responses: doc, handle: mcp },
    { method: 'GET', path: '/mcp', auth: true, summary: 'MCP streamable HTTP: the server-to-client stream', responses: { 200: 'text/event-stream', 405: 'application/json' }, handle: mcp },
    { method: 'DELETE', path: '/mcp', auth: true, summary: 'MCP streamable HTTP: end a session', responses: doc, handle: mcp },
  ];
}
