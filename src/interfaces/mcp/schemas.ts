/**
 * The MCP tools' input and output schemas (zod 4), and the size bounds a request must respect.
 *
 * Owns: what a `tools/call` may carry — every input object is strict (an unknown key such as a
 * misspelt `capabilty_subset` is an error, never silently ignored: ignoring it would run with the
 * whole grant instead of the subset the caller meant) — and the shape of each structured result.
 * Invariant: a string that can be large (code, module, stdin, context) is measured by the tool
 * against a named bound before anything is decoded or run; zod bounds the small structures (how
 * many args, how many cap words).
 *
 * Does not protect against: the size of the JSON-RPC message itself — the stdio transport reads
 * whatever its (local, trusted) client sends, and under `membrane serve` the HTTP body cap
 * applies before this layer sees anything (see MAX_MCP_BODY_BYTES in http.ts).
 *
 * zod is loaded by a top-level `await import()` (a static import would be hoisted to the top of
 * the CLI bundle), so only a command that reaches this module (`serve`, `mcp`) pays for it.
 */

import type { z as Z } from 'zod';

const { z } = await import('zod');

/** A module upload decodes to at most 16 MiB (module-upload.ts refuses a bomb before decoding). */
export { MAX_MODULE_BYTES } from '../module-upload.ts';
/** Bytes of stdin a caller may hand a guest. */
export const MAX_STDIN_BYTES = 1024 * 1024;
/** Bytes of JSON a snippet's `context` may hold. */
export const MAX_CONTEXT_BYTES = 256 * 1024;
/** Arguments per run, and characters per argument: an argv flood is refused by schema. */
export const MAX_ARGS = 256;
export const MAX_ARG_CHARS = 4096;
/** Cap words in a subset (there are 14 words; more can only be repeats or junk). */
export const MAX_SUBSET_WORDS = 32;

const capabilitySubset = z
  .array(z.string().max(64))
  .max(MAX_SUBSET_WORDS)
  .describe("Cap words to keep (e.g. [\"vfs\"], or a host function cap like \"acme:orders\"); intersected with the server's grant. A word outside the grant is NOT_CAPABLE.");
const timeoutMs = z.number().positive().finite().describe("Wall-clock budget in ms; above the grant's maximum it is clamped (and the clamp reported).");
const fuel = z.number().positive().finite().describe("Fuel budget; above the grant's maximum it is clamped (and the clamp reported).");

export const ExecuteInput = z.strictObject({
  code: z.string().describe('The source to run. Python: stdout/stderr and the value of the last expression; JS/TS: the same. C/C++: a whole program (main), compiled inside the sandbox and run; the result is its exit status and `context` arrives as stdin (JSON); a compile error is BUILD_FAILED with diagnostics.'),
  language: z.enum(['python', 'js', 'ts', 'c', 'cpp']),
  capability_subset: capabilitySubset.optional(),
  timeout_ms: timeoutMs.optional(),
  fuel: fuel.optional(),
  context: z.unknown().optional().describe('Any JSON value, visible to the snippet as a read-only variable named `context`.'),
});

export const RunWasmInput = z.strictObject({
  module: z.string().min(1).describe('A registered command name (e.g. "echo") or a base64-encoded WebAssembly module (≤ 16 MiB decoded).'),
  args: z
    .array(z.string().max(MAX_ARG_CHARS))
    .max(MAX_ARGS)
    .optional()
    .describe('Without `invoke`: the command-line arguments after argv[0]. With `invoke`: the export\'s arguments (numbers as strings).'),
  stdin: z.string().optional().describe('Text given to the guest on stdin (≤ 1 MiB).'),
  invoke: z.string().min(1).max(256).optional().describe('Call this export instead of `_start`.'),
  capability_subset: capabilitySubset.optional(),
  timeout_ms: timeoutMs.optional(),
  fuel: fuel.optional(),
});

export const ListProfilesInput = z.strictObject({});

const ErrorShape = z.object({
  code: z.string(),
  message: z.string(),
  /** The JSON-RPC error number of this code (src/errors.ts), for clients that map codes. */
  mcpCode: z.number().int().optional(),
  details: z.record(z.string(), z.unknown()).optional(),
});

export const ExecuteOutput = z.object({
  ok: z.boolean(),
  /** The value of the last expression, or null. */
  result: z.unknown(),
  stdout: z.string(),
  stderr: z.string(),
  error: ErrorShape.optional(),
  fuelUsed: z.number(),
  durationMs: z.number(),
  profile: z.string(),
  caps: z.array(z.string()),
  warnings: z.array(z.string()),
  /** One note per clamped value, e.g. "timeout_ms 10000000 clamped to 5000". */
  clamped: z.array(z.string()),
});

export const RunWasmOutput = z.object({
  ok: z.boolean(),
  result: z.union([z.number(), z.string(), z.null(), z.array(z.union([z.number(), z.string(), z.null()]))]).optional(),
  exitCode: z.number().int().optional(),
  stdout: z.string(),
  stderr: z.string(),
  fuelUsed: z.number(),
  durationMs: z.number(),
  memoryBytes: z.number(),
  profile: z.string(),
  warnings: z.array(z.string()),
  error: ErrorShape.optional(),
  clamped: z.array(z.string()),
});

export const ListProfilesOutput = z.object({
  profiles: z.array(
    z.object({
      name: z.string(),
      memoryBytes: z.number(),
      timeoutMs: z.number(),
      fuel: z.number(),
      caps: z.array(z.string()),
    }),
  ),
  /** The profile this server grants: the most any call may use. */
  granted: z.string(),
  tenant: z.string(),
});

export type ExecuteArgs = Z.output<typeof ExecuteInput>;
export type RunWasmArgs = Z.output<typeof RunWasmInput>;
export type ExecuteResult = Z.output<typeof ExecuteOutput>;
export type RunWasmResult = Z.output<typeof RunWasmOutput>;
export type ListProfilesResult = Z.output<typeof ListProfilesOutput>;
export type ErrorResult = Z.output<typeof ErrorShape>;
