/**
 * The request shapes of the JSON API, as strict zod schemas (an unknown field is a 400), and the
 * response shapes as JSON Schema for the OpenAPI document.
 *
 * Owns: every field a client may send, its type and its bound. Invariant: the routes parse with
 * these and nothing else, and /openapi.json is generated from the same objects, so the document
 * cannot drift from what is enforced.
 *
 * Does not protect against: values that are well-formed but refused by policy (the grant rule and
 * the engine decide those).
 *
 * zod is loaded by a top-level `await import()` (a static import would be hoisted to the top of
 * the CLI bundle), so only a command that reaches this module (`serve`) pays for it.
 */

import type { z as Z } from 'zod';
import { CAP_WORDS, PROFILE_NAMES } from '../../policy/profiles.ts';

const { z } = await import('zod');

/** Names of instances: the engine's id alphabet, kept short enough to be namespaced by tenant. */
export const ID = z.string().regex(/^[A-Za-z0-9._:@-]{1,64}$/, 'expected 1-64 characters of [A-Za-z0-9._:@-]');
const PROFILE = z.string().max(64).describe(`a profile: ${PROFILE_NAMES.join(', ')}`);
const CAPS = z.array(z.string().max(64)).max(CAP_WORDS.length * 2).describe(`cap words: ${CAP_WORDS.join(' ')}, or a host function cap (vendor:name) the token grants`);
const POSITIVE = z.number().positive().finite();
/** Base64 of a wasm module; the route's body cap bounds it. */
const MODULE = z.string().min(1).describe('the module as base64');
const COMMAND = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'expected a registered command name').describe('a registered command name');
const ARG = z.union([z.number().finite(), z.string().max(64)]);

const grantFields = {
  profile: PROFILE.optional(),
  capability_subset: CAPS.optional(),
  timeout_ms: POSITIVE.optional(),
  fuel: POSITIVE.optional(),
};

export const StartInstanceBody = z
  .strictObject({ id: ID, module: MODULE.optional(), command: COMMAND.optional(), ...grantFields, memory_bytes: POSITIVE.optional() })
  .refine((b) => (b.module === undefined) !== (b.command === undefined), { message: 'give exactly one of "module" or "command"' });

export const CallBody = z.strictObject({
  export: z.string().min(1).max(256),
  args: z.array(ARG).max(64).optional(),
});

export const RunBody = z
  .strictObject({
    module: MODULE.optional(),
    command: COMMAND.optional(),
    argv: z.array(z.string().max(4096)).max(256).optional(),
    stdin: z.string().max(1024 * 1024).optional(),
    invoke: z.string().min(1).max(256).optional(),
    args: z.array(ARG).max(64).optional(),
    ...grantFields,
  })
  .refine((b) => (b.module === undefined) !== (b.command === undefined), { message: 'give exactly one of "module" or "command"' });

export const ExecBody = z.strictObject({
  code: z.string().max(1024 * 1024),
  language: z.enum(['python', 'js', 'ts', 'c', 'cpp']),
  context: z.unknown().optional(),
  ...grantFields,
});

export const AuditQuery = z.strictObject({
  kind: z.string().regex(/^[a-z][a-z0-9_.:-]{0,63}$/, 'expected an audit kind').optional(),
  limit: z.coerce.number().int().min(1).max(1000).optional(),
});

/** An audit seq: what an SSE event's `id:` carries and `Last-Event-ID` / `?after=` send back. */
export const AuditSeq = z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

export const StreamQuery = z.strictObject({
  backlog: z.coerce.number().int().min(0).max(1000).optional().describe('first send the newest N records of the tenant (ignored when resuming)'),
  after: AuditSeq.optional().describe('resume after this seq, like a Last-Event-ID header (the header wins)'),
});

/** `?stream=` on /v1/runs and /v1/exec: output as it is written, then the result (stream.ts). */
export const OutputStreamQuery = z.strictObject({
  stream: z.enum(['1', 'true', 'ndjson', 'sse']).optional().describe('answer with the output as it is written, then the result: NDJSON, or server-sent events (`sse`, or `1` with Accept: text/event-stream)'),
});

// ---- response shapes (documentation: the OpenAPI document) ----

type Json = { [key: string]: unknown };
const str = { type: 'string' };
const num = { type: 'number' };
const obj = (properties: Json, required: string[] = Object.keys(properties)): Json => ({ type: 'object', properties, required });
const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });

/** One of the stable error codes (src/errors.ts); the document lists them as an enum. */
export const ERROR_CODE = ref('ErrorCode');
/** `{ error: { code, message } }`: every refusal outside /mcp. */
export const ERROR_SCHEMA = ref('Error');
/** An error a guest call ended with, inside a 200 result (`ok: false`). */
const CALL_ERROR = ref('CallError');

/** The reusable schemas, placed under `components.schemas`. */
export const COMPONENT_SCHEMAS: Readonly<Record<string, Json>> = {
  Error: {
    ...obj({ error: { ...obj({ code: ERROR_CODE, message: { ...str, description: 'for people; no stack, no host path' } }), additionalProperties: false } }),
    additionalProperties: false,
    description: 'A refusal: the request was not served. The HTTP status is the code’s row in the error table.',
  },
  CallError: {
    ...obj({ code: ERROR_CODE, message: str, details: { type: 'object', additionalProperties: true, description: 'JSON facts about the failure (e.g. a guest exception’s name and stack); never host paths' } }, ['code', 'message']),
    description: 'Why a guest call failed: the request succeeded (200), the guest did not.',
  },
  AuditDetail: {
    type: 'object',
    additionalProperties: true,
    description:
      'The record’s facts; non-secret by construction. Which fields appear depends on `kind`: a `denied` record has broker, op, code and why ' +
      '(and target, client, quota, limit where they apply); `profile-fallback` has requested and ran; `revoke` and `restore` have none. New kinds may add fields.',
    properties: {
      broker: { ...str, description: 'the broker or surface that refused (net, kv, exec, serve, grant, …)' },
      op: { ...str, description: 'the operation refused' },
      code: { ...str, description: 'an error code, or a broker word such as DENIED or QUOTA' },
      why: { ...str, description: 'a short reason' },
      target: { ...str, description: 'what was asked for (a host, a key prefix), cut short' },
      client: { ...str, description: 'the client address of a served port' },
      quota: { ...str, description: 'the quota that was reached' },
      limit: { ...num, description: 'the quota’s limit' },
      inFlight: { type: 'boolean', description: 'the request was cut off mid-flight' },
      requested: { ...str, description: 'the profile asked for' },
      ran: { ...str, description: 'the profile that ran instead' },
    },
  },
  AuditRecord: {
    ...obj({
      v: { ...num, description: 'record format version' },
      seq: { ...num, description: 'position in the log; the SSE event id' },
      time: { ...str, format: 'date-time' },
      tenant: str,
      instance: { ...str, description: 'the instance, or empty for engine-level events' },
      kind: { ...str, description: 'denied, revoke, restore, profile-fallback, …' },
      detail: ref('AuditDetail'),
    }),
  },
};

export const JSON_RPC_ERROR: Json = {
  ...obj({
    jsonrpc: { const: '2.0' },
    error: obj({ code: { type: 'integer', description: 'the error code’s MCP number (src/errors.ts)' }, message: { ...str, description: 'CODE: message' }, data: obj({ code: ERROR_CODE }) }, ['code', 'message']),
    id: { type: ['string', 'integer', 'null'] },
  }),
  description: 'A JSON-RPC 2.0 error object.',
};
export const JSON_RPC_MESSAGE: Json = {
  type: 'object',
  properties: { jsonrpc: { const: '2.0' }, id: { type: ['string', 'integer', 'null'] }, result: { type: 'object', additionalProperties: true }, error: { type: 'object', additionalProperties: true } },
  required: ['jsonrpc'],
  description: 'A JSON-RPC 2.0 response (see the MCP specification for results).',
};
export const INSTANCE_INFO = obj(
  {
    id: str,
    tenant: str,
    profile: str,
    caps: { type: 'array', items: str },
    calls: num,
    fuelUsed: num,
    memoryBytes: num,
    state: { type: 'string', enum: ['starting', 'running', 'dead', 'stopped'] },
    clamped: { type: 'array', items: str },
    warnings: { type: 'array', items: str },
  },
  ['id', 'tenant', 'profile', 'caps', 'calls', 'fuelUsed', 'memoryBytes', 'state'],
);
export const RUN_RESULT = obj(
  {
    id: str,
    ok: { type: 'boolean' },
    result: { description: 'the export’s return value (numbers, or strings for i64 beyond 2^53)' },
    exitCode: num,
    stdout: str,
    stderr: str,
    fuelUsed: num,
    durationMs: num,
    memoryBytes: num,
    profile: str,
    warnings: { type: 'array', items: str },
    clamped: { type: 'array', items: str },
    error: CALL_ERROR,
  },
  ['ok', 'stdout', 'stderr', 'fuelUsed', 'durationMs', 'memoryBytes', 'profile', 'warnings'],
);
export const RUN_SUMMARY = obj(
  { id: str, time: { ...str, format: 'date-time' }, ok: { type: 'boolean' }, code: ERROR_CODE, profile: str, fuelUsed: num, durationMs: num, source: str },
  ['id', 'time', 'ok', 'profile', 'fuelUsed', 'durationMs', 'source'],
);
export const EXEC_RESULT = obj(
  {
    ok: { type: 'boolean' },
    result: { description: 'the value of the snippet’s last expression, as JSON' },
    stdout: str,
    stderr: str,
    error: CALL_ERROR,
    fuelUsed: num,
    durationMs: num,
    profile: str,
    warnings: { type: 'array', items: str },
    poolHit: { type: 'boolean' },
    clamped: { type: 'array', items: str },
  },
  ['ok', 'stdout', 'stderr', 'fuelUsed', 'durationMs', 'profile', 'warnings', 'poolHit'],
);
export const AUDIT_RECORD = ref('AuditRecord');
export const PROFILE_ROW = obj({ name: str, memoryBytes: num, timeoutMs: num, fuel: num, caps: { type: 'array', items: str } });
