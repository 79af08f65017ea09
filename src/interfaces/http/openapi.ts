/**
 * The OpenAPI 3.1 document served at `/openapi.json`, generated from the route table: each
 * route's path, method, tag, operationId, summary, description, auth, request body (from its zod
 * schema via `z.toJSONSchema`), query parameters and responses, plus the shared error shape —
 * its `code` an enum of the error table — on every route.
 *
 * Owns: the document. Invariant: it is derived from the same route objects the router matches and
 * the same schemas the handlers validate with, so every implemented route appears exactly as
 * enforced (a test checks the table against the document, and lints it with Redocly's
 * `recommended` rules and Spectral's `spectral:oas`: 0 errors).
 *
 * Does not protect against: nothing; it is documentation.
 *
 * zod is loaded by a top-level `await import()` (a static import would be hoisted to the top of
 * the CLI bundle), so only a command that reaches this module (`serve`) pays for it.
 */

import type { z as Z } from 'zod';
import { ERROR_CODES, ERROR_TABLE } from '../../errors.ts';
import { version } from '../version.ts';
import type { Route } from './router.ts';
import { COMPONENT_SCHEMAS, ERROR_SCHEMA, JSON_RPC_ERROR } from './schemas.ts';

const { z } = await import('zod');

type Json = { [key: string]: unknown };

/** The tags, in the order a reader meets them; a route's tag defaults from its path (tagOf). */
export const TAGS: readonly { readonly name: string; readonly description: string }[] = [
  { name: 'exec', description: 'Run untrusted JavaScript, TypeScript or Python source in a fresh interpreter.' },
  { name: 'runs', description: 'Run a WebAssembly module or a registered command once, and read recent runs.' },
  { name: 'instances', description: 'Persistent instances of a module: start, call exports, stop.' },
  { name: 'audit', description: "The caller's tenant's view of the tamper-evident audit log, as queries and a server-sent event stream." },
  { name: 'account', description: "What the bearer token grants: its tenant and profile, and the profile ladder." },
  { name: 'mcp', description: 'The Model Context Protocol over streamable HTTP.' },
  { name: 'operations', description: 'Liveness, metrics and this document; open, no tenant data.' },
  { name: 'dashboard', description: 'The web dashboard’s static files.' },
];

export function tagOf(path: string): string {
  if (path === '/mcp') return 'mcp';
  if (path === '/' || path.startsWith('/dashboard')) return 'dashboard';
  const m = /^\/v1\/([a-z]+)/.exec(path);
  if (!m) return 'operations';
  return TAGS.some((t) => t.name === m[1]) ? m[1]! : 'account';
}

function jsonSchema(schema: Z.ZodType): Json {
  const s = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Json;
  delete s['$schema'];
  return s;
}

function queryParameters(schema: Z.ZodType): Json[] {
  const s = jsonSchema(schema);
  const props = (s['properties'] ?? {}) as Record<string, Json>;
  return Object.entries(props).map(([name, p]) => ({ name, in: 'query', required: false, ...(typeof p['description'] === 'string' ? { description: p['description'] } : {}), schema: p }));
}

/** The codes a status can carry, from the error table. */
function codesOf(status: number): string[] {
  return ERROR_CODES.filter((c) => ERROR_TABLE[c].httpStatus === status);
}

function description(status: number): string {
  if (status < 300) return status === 201 ? 'Created' : status === 202 ? 'Accepted; no body' : 'OK';
  const codes = codesOf(status);
  return codes.length > 0 ? `Refused: ${codes.join(', ')}` : 'Refused (see the error shape)';
}

function response(status: number, shape: Json | string | null): Json {
  if (shape === null) return { description: description(status) };
  if (typeof shape === 'string') return { description: description(status), content: { [shape]: { schema: { type: 'string' } } } };
  return { description: description(status), content: { 'application/json': { schema: shape } } };
}

/** A 200 that `?stream=` turns into events: the same result, preceded by the output as it was written. */
function streamed(plain: Json): Json {
  const content = (plain['content'] ?? {}) as Record<string, Json>;
  const result = (content['application/json'] as Json | undefined)?.['schema'] ?? {};
  const event = {
    oneOf: [
      { type: 'object', properties: { type: { const: 'stdout' }, data: { type: 'string' } }, required: ['type', 'data'] },
      { type: 'object', properties: { type: { const: 'stderr' }, data: { type: 'string' } }, required: ['type', 'data'] },
      { type: 'object', properties: { type: { const: 'lagged' }, message: { type: 'string' } }, required: ['type', 'message'] },
      { allOf: [{ type: 'object', properties: { type: { const: 'result' } }, required: ['type'] }, result] },
    ],
  };
  return {
    description: 'OK. With `?stream=`, the guest’s output as it is written, then the result, as NDJSON lines or server-sent events (`event: stdout|stderr|lagged|result`)',
    content: { ...content, 'application/x-ndjson': { schema: event }, 'text/event-stream': { schema: { type: 'string', description: 'events named stdout, stderr, lagged and result; each data line is the JSON of the NDJSON event without its type' } } },
  };
}

function operationId(method: string, path: string): string {
  const words = path.replace(/[{}]/g, '').split(/[^A-Za-z0-9]+/).filter((w) => w.length > 0);
  return method.toLowerCase() + (words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('') || 'Root');
}

export function openApiDocument<S>(routes: readonly Route<S>[]): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const r of routes) {
    const path = r.path.endsWith('/*') ? `${r.path.slice(0, -2)}/{asset}` : r.path;
    const params = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, description: m[1] === 'asset' ? 'a file of the dashboard' : `the ${m[1]}`, schema: { type: 'string' } }));
    const refusal = r.jsonRpcErrors ? JSON_RPC_ERROR : ERROR_SCHEMA;
    const responses: Record<string, Json> = {};
    for (const [status, shape] of Object.entries(r.responses)) responses[status] = response(Number(status), shape);
    if (r.streams && responses['200']) responses['200'] = streamed(responses['200']);
    if (r.auth) responses['401'] = { ...response(401, refusal), headers: { 'WWW-Authenticate': { description: 'Bearer realm="membrane" (plus error="invalid_token" for a bad token); never OAuth metadata', schema: { type: 'string' } } } };
    if (r.body || r.query) responses['400'] ??= response(400, refusal);
    responses['default'] = { description: 'Any other refusal, with the status of the error table', content: { 'application/json': { schema: refusal } } };
    const op: Json = {
      tags: [r.tag ?? tagOf(path)],
      summary: r.summary,
      description: r.description ?? `${r.summary}.`,
      operationId: r.operationId ?? operationId(r.method, path),
      security: r.auth ? [{ bearer: [] }] : [],
      ...(params.length || r.query || r.parameters ? { parameters: [...params, ...(r.query ? queryParameters(r.query) : []), ...(r.parameters ?? [])] } : {}),
      ...(r.body ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(r.body) } } } } : {}),
      responses,
    };
    (paths[path] ??= {})[r.method.toLowerCase()] = op;
  }
  const codes = ERROR_CODES.map((c) => `- \`${c}\`: ${ERROR_TABLE[c].httpStatus}, ${ERROR_TABLE[c].message}`).join('\n');
  return {
    openapi: '3.1.0',
    info: {
      title: 'Membrane HTTP API',
      version: version(),
      description:
        'A capability-secure WebAssembly sandbox. Every /v1 route and /mcp need `Authorization: Bearer <token>` (`membrane token create`). ' +
        'Refusals are `{ error: { code, message } }` with the status of the error table; a guest that ran and failed is a 200 with `ok: false`. ' +
        'Every answer carries `X-Request-Id` (the client’s, if it sent a sane one).',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      contact: { name: 'Membrane maintainers' },
    },
    servers: [{ url: '/', description: 'this server' }],
    tags: TAGS,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'mbt_ + 43 base64url characters, from `membrane token create`' } },
      schemas: {
        ErrorCode: { type: 'string', enum: [...ERROR_CODES], description: `The stable error codes (append-only) and their HTTP status:\n${codes}` },
        ...COMPONENT_SCHEMAS,
      },
    },
    paths,
  };
}
