/**
 * The `sandbox_execute` tool: model-written Python, JavaScript or TypeScript in a fresh
 * interpreter, under the server's grant narrowed by the call.
 *
 * Owns: the order of checks for one call — size bounds (TOO_LARGE), then the grant rule
 * (`resolveGrant`: a cap outside the grant is NOT_CAPABLE naming it, audited; timeout and fuel
 * clamped to the grant's maxima, the clamp reported), then `engine.exec` with exactly the granted
 * profile, caps, timeout and fuel.
 * Invariant: the snippet never runs with more than `grant ∩ capability_subset`; a refused call
 * runs nothing; a snippet's own failure (TIMEOUT, FUEL_EXHAUSTED, an exception) is a result with
 * `ok: false` and `error`, not a refusal.
 *
 * Does not protect against: what the lanes do not (docs/lanes.md) — this layer only decides what
 * a call may ask for.
 */

import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { SandboxError } from '../../errors.ts';
import { MAX_CODE_BYTES } from '../../lanes/index.ts';
import { PROFILES } from '../../policy/profiles.ts';
import { resolveGrant } from '../grant.ts';
import { toolControls, type ToolExtra } from './progress.ts';
import { grantOf, type McpContext } from './context.ts';
import { publicError, refusalText, renderOutcome, reply, resultError } from './reply.ts';
import { MAX_CONTEXT_BYTES, type ExecuteArgs, type ExecuteResult } from './schemas.ts';

function checkSizes(args: ExecuteArgs): void {
  if (Buffer.byteLength(args.code) > MAX_CODE_BYTES) throw new SandboxError('TOO_LARGE', `code is larger than ${MAX_CODE_BYTES} bytes`, { maxBytes: MAX_CODE_BYTES });
  if (args.context !== undefined) {
    const json = JSON.stringify(args.context);
    if (json !== undefined && Buffer.byteLength(json) > MAX_CONTEXT_BYTES) {
      throw new SandboxError('TOO_LARGE', `context is larger than ${MAX_CONTEXT_BYTES} bytes of JSON`, { maxBytes: MAX_CONTEXT_BYTES });
    }
  }
}

export async function sandboxExecute(ctx: McpContext, args: ExecuteArgs, extra?: ToolExtra): Promise<CallToolResult> {
  let granted;
  try {
    checkSizes(args);
    granted = resolveGrant(ctx.engine, grantOf(ctx), { capabilitySubset: args.capability_subset, timeoutMs: args.timeout_ms, fuel: args.fuel });
  } catch (e) {
    const error = publicError(e);
    const refused: ExecuteResult = { ok: false, result: null, stdout: '', stderr: '', error, fuelUsed: 0, durationMs: 0, profile: ctx.profile, caps: [], warnings: [], clamped: [] };
    return reply(refused, refusalText(error), true);
  }
  const caps = granted.caps ?? PROFILES[granted.profile].caps;
  const live = toolControls(extra);
  const r = await ctx.engine.exec({
    language: args.language,
    code: args.code,
    ...(args.context !== undefined ? { context: args.context } : {}),
    tenant: ctx.tenant,
    profile: granted.profile,
    caps,
    timeoutMs: granted.timeoutMs,
    fuel: granted.fuel,
    ...live.controls,
  });
  await live.flush();
  const out: ExecuteResult = {
    ok: r.ok,
    result: r.result ?? null,
    stdout: r.stdout,
    stderr: r.stderr,
    ...(r.error ? { error: resultError(r.error) } : {}),
    fuelUsed: r.fuelUsed,
    durationMs: Math.round(r.durationMs * 1000) / 1000,
    profile: r.profile,
    caps: [...caps],
    warnings: [...r.warnings],
    clamped: [...granted.clamped],
  };
  return reply(out, renderOutcome(out));
}
