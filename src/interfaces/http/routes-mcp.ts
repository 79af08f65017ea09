/**
 * `/mcp`: MCP's streamable HTTP transport under `membrane serve`, after bearer authentication.
 *
 * Owns: the hand-off only — the token's tenant and profile become the MCP session's grant, the
 * request's logger and the server's metrics go along, and the JSON body is read under
 * MAX_MCP_BODY_BYTES (a module upload in a JSON-RPC envelope) before `handleMcpRequest` sees it
 * (the MCP module, src/interfaces/mcp/http.ts, owns the protocol). Only POST is routed: the
 * endpoint is stateless, so GET (a standalone stream) and DELETE (end a session) are the router's
 * 405 with `Allow: POST`, as a JSON-RPC error like every refusal here.
 * Invariant: no MCP request reaches the engine without a principal from a valid token; the grant
 * is the token's, never the client's.
 *
 * Does not protect against: whatever the MCP module does not (see its header).
 */

import { MAX_MCP_BODY_BYTES, handleMcpRequest } from '../mcp/http.ts';
import { principalOf } from './routes-instances.ts';
import type { Answer, Ctx, Route } from './router.ts';
import { JSON_RPC_ERROR, JSON_RPC_MESSAGE } from './schemas.ts';
import type { Api } from './state.ts';

async function mcp(ctx: Ctx<Api>): Promise<Answer> {
  const who = principalOf(ctx);
  const body = await ctx.body();
  await handleMcpRequest(ctx.req, ctx.res, body, { engine: ctx.state.engine, tenant: who.tenant, profile: who.profile, hostCaps: who.hostCaps, commands: ctx.state.commands, log: ctx.log, metrics: ctx.state.metrics });
  return null;
}

export function mcpRoutes(): Route<Api>[] {
  return [
    {
      method: 'POST',
      path: '/mcp',
      auth: true,
      bodyCap: MAX_MCP_BODY_BYTES,
      jsonRpcErrors: true,
      tag: 'mcp',
      operationId: 'mcpMessage',
      summary: 'MCP streamable HTTP: one JSON-RPC message',
      description:
        'The Model Context Protocol over streamable HTTP, stateless: each POST carries one JSON-RPC request or notification and is answered with JSON ' +
        '(no session id is issued; GET and DELETE are 405). The grant is the bearer token’s profile. Refusals before the MCP server runs (401, 413, 429, 503) ' +
        'are JSON-RPC error objects whose message is "CODE: message" and whose data.code is the error code.',
      responses: { 200: JSON_RPC_MESSAGE, 202: null, 413: JSON_RPC_ERROR, 429: JSON_RPC_ERROR, 503: JSON_RPC_ERROR },
      handle: mcp,
    },
  ];
}
