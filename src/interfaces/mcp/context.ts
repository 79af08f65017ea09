/**
 * What every MCP tool handler is given: the engine, the grant (tenant and maximum profile) and
 * the command registry `run_wasm` resolves names in.
 *
 * Owns: the `McpContext` shape and the `Grant` it implies. Invariant: the tenant and profile are
 * fixed when the server is built — by the operator (`membrane mcp --tenant --profile`) or by the
 * bearer token under `membrane serve` — and no tool argument can change them.
 *
 * Does not protect against: nothing by itself; it is a bag of references.
 */

import type { Engine } from '../../engine/index.ts';
import type { CommandRegistry } from '../../engine/registry.ts';
import type { ProfileName } from '../../policy/profiles.ts';
import type { Grant } from '../grant.ts';

/** One line per tool call, written by the server's logger (stderr under stdio). */
export interface McpLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

/** Where tool calls are counted (`/metrics` under `membrane serve`); absent over stdio. */
export interface McpMetrics {
  toolCall(tool: string, outcome: string, durationMs: number): void;
}

export interface McpContext {
  readonly engine: Engine;
  readonly tenant: string;
  /** The grant: the most any call may use. */
  readonly profile: ProfileName;
  /** Embedder host caps (`vendor:name`) the grant adds; none by default. */
  readonly hostCaps?: readonly string[];
  /** Names `run_wasm` accepts; default the built-in commands. */
  readonly commands?: CommandRegistry;
  readonly log?: McpLogger;
  readonly metrics?: McpMetrics;
}

export function grantOf(ctx: McpContext): Grant {
  return { tenant: ctx.tenant, profile: ctx.profile, ...(ctx.hostCaps ? { hostCaps: ctx.hostCaps } : {}), surface: 'mcp' };
}
