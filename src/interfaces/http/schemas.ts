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
 */

import { z } from 'zod';
import { CAP_WORDS, PROFILE_NAMES } from '../../policy/profiles.ts';

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
  language: z.enum(['python', 'js', 'ts']),
  context: z.unknown().optional(),
  ...grantFields,
});

export const AuditQuery = z.strictObject({
  kind: z.string().regex(/^[a-z][a-z0-9_.:-]{0,63}$/, 'expected an audit kind').optional(),
  limit: z.coerce.number().int().min(1).max(1000).optional(),
});

export const StreamQuery = z.strictObject({
  backlog: z.coerce.number().int().min(0).max(1000).optional(),
});

// ---- response shapes (documentation: the OpenAPI document) ----

type Json = { [key: string]: unknown };
const str = { type: 'string' };
const num = { type: 'number' };
const obj = (properties: Json, required: string[] = Object.keys(properties)): Json => ({ type: 'object', properties, required });

export const ERROR_SCHEMA = obj({ error: obj({ code: str, message: str }) });
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
    result: {},
    exitCode: num,
    stdout: str,
    stderr: str,
    fuelUsed: num,
    durationMs: num,
    memoryBytes: num,
    profile: str,
    warnings: { type: 'array', items: str },
    clamped: { type: 'array', items: str },
    error: obj({ code: str, message: str, details: { type: 'object' } }, ['code', 'message']),
  },
  ['ok', 'stdout', 'stderr', 'fuelUsed', 'durationMs', 'memoryBytes', 'profile', 'warnings'],
);
export const RUN_SUMMARY = obj(
  { id: str, time: str, ok: { type: 'boolean' }, code: str, profile: str, fuelUsed: num, durationMs: num, source: str },
  ['id', 'time', 'ok', 'profile', 'fuelUsed', 'durationMs', 'source'],
);
export const EXEC_RESULT = obj(
  {
    ok: { type: 'boolean' },
    result: {},
    stdout: str,
    stderr: str,
    error: obj({ code: str, message: str }),
    fuelUsed: num,
    durationMs: num,
    profile: str,
    warnings: { type: 'array', items: str },
    poolHit: { type: 'boolean' },
    clamped: { type: 'array', items: str },
  },
  ['ok', 'stdout', 'stderr', 'fuelUsed', 'durationMs', 'profile', 'warnings', 'poolHit'],
);
export const AUDIT_RECORD = obj({ v: num, seq: num, time: str, tenant: str, instance: str, kind: str, detail: { type: 'object' } });
export const PROFILE_ROW = obj({ name: str, memoryBytes: num, timeoutMs: num, fuel: num, caps: { type: 'array', items: str } });
