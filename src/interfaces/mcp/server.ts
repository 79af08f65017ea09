/**
 * The Membrane MCP server: one `McpServer` with three tools — `sandbox_execute`, `run_wasm`,
 * `list_profiles` — bound to one grant (tenant + maximum profile). The stdio command and the
 * streamable-HTTP handler both build it here, so both surfaces offer exactly the same tools.
 *
 * Owns: tool registration (names, descriptions, strict zod input schemas, output schemas), a
 * catch-all around every handler, and one log line and one metrics count per call (tool, tenant,
 * outcome, duration — never the code, the module or stdin; the count has no tenant).
 * Invariant: a handler never throws to the SDK: an unexpected exception becomes an INTERNAL
 * refusal with the table's bare message (the SDK would otherwise show the exception's own
 * message, which may name a host path). Bad input is rejected by the SDK's schema check as a
 * tool error naming the field, before any handler runs.
 *
 * Does not protect against: a client flooding calls — under `membrane serve` the HTTP layer's
 * in-flight and rate limits apply; over stdio the one client is the operator's own.
 *
 * The MCP SDK is loaded by a top-level `await import()` (a static import would be hoisted to the
 * top of the CLI bundle), so only a command that reaches this module (`serve`, `mcp`) pays for it.
 */

import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { McpContext } from './context.ts';
import { sandboxExecute } from './execute.ts';
import { listProfiles } from './profiles.ts';
import { publicError, refusalText } from './reply.ts';
import { runWasm } from './run-wasm.ts';
import { ExecuteInput, ExecuteOutput, ListProfilesInput, ListProfilesOutput, RunWasmInput, RunWasmOutput } from './schemas.ts';

const sdk = await import('@modelcontextprotocol/sdk/server/mcp.js');

export const SERVER_NAME = 'membrane';
export const SERVER_VERSION = '0.1.0';

async function guarded(ctx: McpContext, tool: string, run: () => Promise<CallToolResult> | CallToolResult): Promise<CallToolResult> {
  const t0 = performance.now();
  let r: CallToolResult;
  try {
    r = await run();
  } catch (e) {
    const error = publicError(e);
    ctx.log?.warn({ tool, tenant: ctx.tenant, code: error.code }, 'mcp tool failed');
    ctx.metrics?.toolCall(tool, error.code, performance.now() - t0);
    return { content: [{ type: 'text', text: refusalText(error) }], isError: true };
  }
  const s = r.structuredContent as { ok?: boolean; error?: { code?: string } } | undefined;
  ctx.metrics?.toolCall(tool, s?.ok === false || r.isError === true ? (s?.error?.code ?? 'INTERNAL') : 'ok', performance.now() - t0);
  ctx.log?.info(
    { tool, tenant: ctx.tenant, ok: s?.ok ?? !r.isError, ...(s?.error?.code ? { code: s.error.code } : {}), refused: r.isError === true, ms: Math.round(performance.now() - t0) },
    'mcp tool call',
  );
  return r;
}

export function createMcpServer(ctx: McpContext): McpServer {
  const server = new sdk.McpServer(
    { name: SERVER_NAME, version: SERVER_VERSION },
    {
      capabilities: { tools: {} },
      instructions:
        `Membrane runs untrusted code in a capability-secure WebAssembly sandbox. This server grants the "${ctx.profile}" profile; ` +
        'a call may narrow it with capability_subset, never widen it. Use list_profiles to see what each profile allows.',
    },
  );
  server.registerTool(
    'sandbox_execute',
    {
      title: 'Run a snippet in a sandbox',
      description:
        'Run Python, JavaScript or TypeScript in a fresh, fuel-metered interpreter with no network or host access beyond the granted caps. ' +
        'Returns stdout, stderr and the value of the last expression (result). A snippet that fails, times out or runs out of fuel returns ok=false with error.code.',
      inputSchema: ExecuteInput,
      outputSchema: ExecuteOutput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (args, extra) => guarded(ctx, 'sandbox_execute', () => sandboxExecute(ctx, args, extra)),
  );
  server.registerTool(
    'run_wasm',
    {
      title: 'Run a WebAssembly module',
      description:
        'Run a registered command (e.g. module="echo", args=["hi"]) or a base64-encoded WebAssembly module once in a fresh instance: ' +
        'its _start (a WASI command) or the export named by invoke. Returns the run result: ok, result or exitCode, stdout, stderr, fuelUsed, durationMs, memoryBytes.',
      inputSchema: RunWasmInput,
      outputSchema: RunWasmOutput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (args, extra) => guarded(ctx, 'run_wasm', () => runWasm(ctx, args, extra)),
  );
  server.registerTool(
    'list_profiles',
    {
      title: 'List sandbox profiles',
      description: 'The profile ladder (memory, timeout, fuel, cap words per profile) and the profile this server grants.',
      inputSchema: ListProfilesInput,
      outputSchema: ListProfilesOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    () => guarded(ctx, 'list_profiles', () => listProfiles(ctx)),
  );
  return server;
}
