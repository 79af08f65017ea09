/**
 * The OpenAPI 3.1 document served at `/openapi.json`, generated from the route table: each
 * route's path, method, summary, auth, request body (from its zod schema via `z.toJSONSchema`),
 * query parameters and responses, plus the shared error shape on every route.
 *
 * Owns: the document. Invariant: it is derived from the same route objects the router matches and
 * the same schemas the handlers validate with, so every implemented route appears exactly as
 * enforced (a test checks the table against the document).
 *
 * Does not protect against: nothing; it is documentation.
 */

import { z } from 'zod';
import { ERROR_TABLE } from '../../errors.ts';
import type { Route } from './router.ts';
import { ERROR_SCHEMA } from './schemas.ts';

type Json = { [key: string]: unknown };

function jsonSchema(schema: z.ZodType): Json {
  const s = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Json;
  delete s['$schema'];
  return s;
}

function queryParameters(schema: z.ZodType): Json[] {
  const s = jsonSchema(schema);
  const props = (s['properties'] ?? {}) as Record<string, Json>;
  return Object.entries(props).map(([name, p]) => ({ name, in: 'query', required: false, schema: p }));
}

function response(status: number, shape: Json | string): Json {
  const description = status < 400 ? 'OK' : `error (${Object.entries(ERROR_TABLE).filter(([, v]) => v.httpStatus === status).map(([k]) => k).join(', ') || 'see error shape'})`;
  if (typeof shape === 'string') return { description, content: { [shape]: {} } };
  return { description, content: { 'application/json': { schema: shape } } };
}

export function openApiDocument<S>(routes: readonly Route<S>[]): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const r of routes) {
    const path = r.path.endsWith('/*') ? `${r.path.slice(0, -2)}/{asset}` : r.path;
    const params = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    const responses: Record<string, Json> = {};
    for (const [status, shape] of Object.entries(r.responses)) responses[status] = response(Number(status), shape);
    if (r.auth) responses['401'] = response(401, ERROR_SCHEMA);
    if (r.body) responses['400'] ??= response(400, ERROR_SCHEMA);
    responses['default'] = { description: 'any error: { error: { code, message } } with the status of the error table', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
    const op: Json = {
      summary: r.summary,
      operationId: `${r.method.toLowerCase()}${path.replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
      ...(r.auth ? { security: [{ bearer: [] }] } : { security: [] }),
      ...(params.length || r.query ? { parameters: [...params, ...(r.query ? queryParameters(r.query) : [])] } : {}),
      ...(r.body ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(r.body) } } } } : {}),
      responses,
    };
    (paths[path] ??= {})[r.method.toLowerCase()] = op;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Membrane HTTP API',
      version: '1.0.0',
      description: 'A capability-secure WebAssembly sandbox. Every /v1 route needs Authorization: Bearer <token> (membrane token create). Errors are { error: { code, message } } with the status of the error table.',
    },
    servers: [{ url: '/' }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'mbt_ + 43 base64url characters' } },
      schemas: { Error: ERROR_SCHEMA },
    },
    paths,
  };
}
