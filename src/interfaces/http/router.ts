/**
 * The route table's shape and the matcher: a path template (`/v1/instances/{id}`, or a trailing
 * `*` for asset trees) plus a method → a handler and the documentation the OpenAPI document is
 * built from.
 *
 * Owns: matching. Invariant: a path no route matches is 404 NOT_FOUND; a path some route matches
 * under another method is 405 METHOD_NOT_ALLOWED with an `Allow` header; path parameters are
 * percent-decoded once and never contain `/`.
 *
 * Does not protect against: a handler that forgets its own checks — authentication is decided by
 * the `auth` flag here, before any handler runs (server.ts).
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';
import type { ProfileName } from '../../policy/profiles.ts';
import type { Logger } from './log.ts';
import { httpError } from './respond.ts';

export type Method = 'GET' | 'POST' | 'DELETE';

/** Who is calling: the bearer token's grant. */
export interface Principal {
  readonly tokenId: string;
  readonly tenant: string;
  /** The token's profile (lowered to the operator's ceiling, if one is configured). */
  readonly profile: ProfileName;
  /** The embedder host caps the token grants that this server's engine defines. */
  readonly hostCaps: readonly string[];
}

export interface Ctx<S> {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  /** Present on every `auth: true` route. */
  readonly principal: Principal | null;
  readonly state: S;
  /** The request's id (echoed in `X-Request-Id`) and a logger whose every line carries it. */
  readonly requestId: string;
  readonly log: Logger;
  /** Aborted when the client goes away before its answer was written: a call running for it is cancelled. */
  readonly signal: AbortSignal;
  /** The parsed JSON body, read under the route's cap. */
  body(): Promise<unknown>;
}

/** A handler returns a JSON answer, or null when it wrote the response itself (SSE, text, MCP). */
export type Answer = { readonly status: number; readonly body: unknown } | null;

export interface Route<S> {
  readonly method: Method;
  readonly path: string;
  readonly auth: boolean;
  readonly summary: string;
  /** Longer prose for the OpenAPI document (default: the summary). */
  readonly description?: string;
  /** The OpenAPI tag grouping the route (default: derived from its path). */
  readonly tag?: string;
  /** The OpenAPI operationId (default: derived from method and path). */
  readonly operationId?: string;
  /** Errors are answered as JSON-RPC error objects, not `{ error: { code, message } }` (/mcp). */
  readonly jsonRpcErrors?: boolean;
  /** Request body schema (documentation and validation). */
  readonly body?: z.ZodType;
  /** Further OpenAPI parameter objects (headers the route reads). */
  readonly parameters?: readonly { readonly [key: string]: unknown }[];
  /** Request query schema (documentation and validation). */
  readonly query?: z.ZodType;
  /** The route takes a module: its body cap is the module cap, not the JSON cap. */
  readonly largeBody?: boolean;
  /** An explicit body cap (wins over `largeBody`): /mcp's envelope around a module. */
  readonly bodyCap?: number;
  /** status → JSON Schema of the body, a media type for non-JSON answers, or null for no body. */
  readonly responses: Readonly<Record<number, { readonly [key: string]: unknown } | string | null>>;
  /** `?stream=` answers the 200 as NDJSON or server-sent events (stream.ts); documented as such. */
  readonly streams?: boolean;
  /** The label used in metrics and logs (the template, never the concrete path). */
  readonly label?: string;
  handle(ctx: Ctx<S>): Promise<Answer> | Answer;
}

interface Compiled<S> {
  readonly route: Route<S>;
  readonly re: RegExp;
  readonly names: readonly string[];
}

export interface Match<S> {
  readonly route: Route<S>;
  readonly params: Record<string, string>;
}

function compile<S>(route: Route<S>): Compiled<S> {
  const names: string[] = [];
  let src = '';
  for (const part of route.path.split('/').slice(1)) {
    if (part === '*') src += '(?:/.*)?';
    else if (part.startsWith('{') && part.endsWith('}')) {
      names.push(part.slice(1, -1));
      src += '/([^/]+)';
    } else src += `/${part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`;
  }
  return { route, re: new RegExp(`^${src || '/'}$`), names };
}

export class Router<S> {
  private readonly compiled: Compiled<S>[];

  constructor(readonly routes: readonly Route<S>[]) {
    this.compiled = routes.map(compile);
  }

  /** Whether refusals at this path are JSON-RPC errors (some route there says so), whatever the method. */
  jsonRpcAt(pathname: string): boolean {
    return this.compiled.some((c) => c.route.jsonRpcErrors === true && c.re.test(pathname));
  }

  /** The route for this method and path, or a 404/405 SandboxError. */
  match(method: string, pathname: string): Match<S> {
    const allowed: string[] = [];
    for (const c of this.compiled) {
      const m = c.re.exec(pathname);
      if (!m) continue;
      if (c.route.method !== method) {
        allowed.push(c.route.method);
        continue;
      }
      const params: Record<string, string> = {};
      c.names.forEach((n, i) => {
        let v = m[i + 1]!;
        try {
          v = decodeURIComponent(v);
        } catch {
          throw httpError('BAD_REQUEST', 'a path segment is not valid percent-encoding');
        }
        params[n] = v;
      });
      return { route: c.route, params };
    }
    if (allowed.length > 0) throw Object.assign(httpError('METHOD_NOT_ALLOWED', `${method.slice(0, 16)} is not allowed here (allowed: ${[...new Set(allowed)].join(', ')})`), { allow: [...new Set(allowed)].join(', ') });
    throw httpError('NOT_FOUND', 'no such route');
  }
}
