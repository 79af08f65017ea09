/**
 * The `run_wasm` tool: a registered command or an uploaded WebAssembly module, run once in a fresh
 * instance under the server's grant; the answer is the run result object of DESIGN §9.
 *
 * Owns: resolving `module` (a registered command name first, else strict base64 of a module),
 * the size bounds (the decoded size is computed from the base64 length and refused before
 * decoding: a 1 GiB upload never becomes a 768 MiB buffer), and the grant rule shared with
 * `sandbox_execute` (resolveGrant).
 * Invariant: a name resolves only to a module the operator registered or shipped; the module runs
 * with `grant ∩ capability_subset` and the grant's (possibly clamped) timeout and fuel.
 *
 * Does not protect against: a hostile module — it meets the engine's walls like any guest.
 */

import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { SandboxError } from '../../errors.ts';
import { CommandRegistry } from '../../engine/registry.ts';
import { resolveGrant } from '../grant.ts';
import { toolControls, type ToolExtra } from './progress.ts';
import { grantOf, type McpContext } from './context.ts';
import { decodeModuleBase64 } from '../module-upload.ts';
import { publicError, refusalText, renderOutcome, reply, resultError } from './reply.ts';
import { MAX_STDIN_BYTES, type RunWasmArgs, type RunWasmResult } from './schemas.ts';

const COMMAND_NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/;
/** Every wasm module's base64 starts with this ("\0asm"). */
const WASM_BASE64_PREFIX = 'AGFzbQ';

let builtins: CommandRegistry | null = null;

function registry(ctx: McpContext): CommandRegistry {
  return ctx.commands ?? (builtins ??= CommandRegistry.withBuiltins());
}

/** `module` → bytes: a registered command, or base64 of a module (module-upload.ts). */
export function resolveModule(commands: CommandRegistry, module: string): Uint8Array {
  if (COMMAND_NAME.test(module) && !module.startsWith(WASM_BASE64_PREFIX)) {
    const bytes = commands.get(module);
    if (bytes) return bytes;
    throw new SandboxError('NOT_FOUND', `no registered command named "${module}" (registered: ${commands.names().join(' ') || 'none'})`, { command: module });
  }
  return decodeModuleBase64(module);
}

export async function runWasm(ctx: McpContext, args: RunWasmArgs, extra?: ToolExtra): Promise<CallToolResult> {
  let bytes: Uint8Array;
  let granted;
  try {
    if (args.stdin !== undefined && Buffer.byteLength(args.stdin) > MAX_STDIN_BYTES) {
      throw new SandboxError('TOO_LARGE', `stdin is larger than ${MAX_STDIN_BYTES} bytes`, { maxBytes: MAX_STDIN_BYTES });
    }
    bytes = resolveModule(registry(ctx), args.module);
    granted = resolveGrant(ctx.engine, grantOf(ctx), { capabilitySubset: args.capability_subset, timeoutMs: args.timeout_ms, fuel: args.fuel });
  } catch (e) {
    const error = publicError(e);
    const refused: RunWasmResult = { ok: false, stdout: '', stderr: '', fuelUsed: 0, durationMs: 0, memoryBytes: 0, profile: ctx.profile, warnings: [], error, clamped: [] };
    return reply(refused, refusalText(error), true);
  }
  const live = toolControls(extra);
  const r = await ctx.engine.run(bytes, {
    tenant: ctx.tenant,
    profile: granted.profile,
    ...(granted.caps ? { caps: granted.caps } : {}),
    timeoutMs: granted.timeoutMs,
    fuel: granted.fuel,
    ...(args.invoke !== undefined ? { invoke: args.invoke, args: args.args ?? [] } : { argv: args.args ?? [] }),
    ...(args.stdin !== undefined ? { stdin: args.stdin } : {}),
    ...live.controls,
  });
  await live.flush();
  const out: RunWasmResult = {
    ok: r.ok,
    ...(r.result !== undefined ? { result: r.result } : {}),
    ...(r.exitCode !== undefined ? { exitCode: r.exitCode } : {}),
    stdout: r.stdout,
    stderr: r.stderr,
    fuelUsed: r.fuelUsed,
    durationMs: r.durationMs,
    memoryBytes: r.memoryBytes,
    profile: r.profile,
    warnings: [...r.warnings],
    ...(r.error ? { error: resultError(r.error) } : {}),
    clamped: [...granted.clamped],
  };
  return reply(out, renderOutcome(out));
}
