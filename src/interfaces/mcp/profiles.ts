/**
 * The `list_profiles` tool: the profile ladder as this server's engine applies it (the operator's
 * limits included), and which profile this server grants.
 *
 * Owns: rendering the table. Invariant: the numbers come from `resolvePolicy` over the one policy
 * literal and the engine's configuration — never written here.
 *
 * Does not protect against: nothing; it only reads.
 */

import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { PROFILE_NAMES } from '../../policy/profiles.ts';
import { resolvePolicy } from '../../policy/resolve.ts';
import type { McpContext } from './context.ts';
import { reply } from './reply.ts';
import type { ListProfilesResult } from './schemas.ts';

export function profileTable(ctx: McpContext): ListProfilesResult {
  const profiles = PROFILE_NAMES.map((name) => {
    const p = resolvePolicy({ profile: name }, ctx.engine.config);
    return { name, memoryBytes: p.memoryBytes, timeoutMs: p.timeoutMs, fuel: p.fuel, caps: [...p.caps] };
  });
  return { profiles, granted: ctx.profile, tenant: ctx.tenant };
}

export function listProfiles(ctx: McpContext): CallToolResult {
  const t = profileTable(ctx);
  const lines = t.profiles.map(
    (p) =>
      `${p.name === t.granted ? '*' : ' '} ${p.name.padEnd(8)} ${`${p.memoryBytes / 1048576} MiB`.padEnd(9)} ${`${p.timeoutMs} ms`.padEnd(9)} fuel ${p.fuel.toExponential(0).padEnd(5)} ${p.caps.join(' ')}`,
  );
  return reply(t, `granted: ${t.granted} (* below); a call may narrow it, never widen it\n${lines.join('\n')}`);
}
