/**
 * `startServer`: the JSON API over node:http (HTTP/1.1) — routing, bearer authentication, the
 * in-flight bound, per-tenant request rate, one log line per request, and graceful shutdown.
 *
 * Owns: the request lifecycle: a request id (the client's sane `X-Request-Id` or a new one, echoed
 * in the answer's header and carried by every log line of the request) → overload and drain
 * checks → route (404/405) → bearer token (401) → tenant rate (429) → handler → JSON answer or
 * the error shape (a JSON-RPC error object on /mcp); and `close()`: stop accepting,
 * answer new requests on open connections with OVERLOADED, close audit streams, let in-flight
 * requests finish (their calls end by their own deadlines) for at most `shutdownGraceMs`, then
 * close the engine if this server created it.
 * Invariant: a `/v1/*` or `/mcp` handler never runs without a principal from a stored, unrevoked
 * token; an error answer never carries a stack or host path; a request past its body cap gets a
 * 413 and its connection is closed without reading the rest.
 *
 * Does not protect against: TLS (bind to loopback, the default, or terminate TLS in a proxy);
 * a client holding many idle keep-alive connections (Node's keepAliveTimeout bounds them).
 */

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createEngine, type Engine } from '../../engine/index.ts';
import { CommandRegistry } from '../../engine/registry.ts';
import { PROFILE_NAMES, type ProfileName } from '../../policy/profiles.ts';
import { AuditLog } from '../../storage/audit.ts';
import { membraneHome } from '../../storage/sqlite.ts';
import { engineOptionsFrom, type OperatorConfig } from '../config.ts';
import { AuditFeed } from './audit-feed.ts';
import { MAX_BODY_BYTES, MAX_MODULE_BODY_BYTES, readJson } from './body.ts';
import { DEFAULT_LOG_LEVEL, createLogger, errorField, requestIdOf, type LogOptions, type Logger } from './log.ts';
import { Metrics } from './metrics.ts';
import { httpError, sendError, sendJson, sendJsonRpcError } from './respond.ts';
import { Router, type Principal, type Route } from './router.ts';
import { auditRoutes } from './routes-audit.ts';
import { instanceRoutes } from './routes-instances.ts';
import { mcpRoutes } from './routes-mcp.ts';
import { agentRoutes } from './routes-agents.ts';
import { metaRoutes } from './routes-meta.ts';
import { didRoutes } from './routes-did.ts';
import { runRoutes } from './routes-runs.ts';
import type { Api, ServerLimits } from './state.ts';
import { Tenancy } from './tenancy.ts';
import { TokenStore, tokensFile } from './tokens.ts';

export const DEFAULT_PORT = 7070;
export const DEFAULT_HOST = '127.0.0.1';
/** Requests served at once; the next gets 503 OVERLOADED (a declared, retryable refusal). */
export const MAX_IN_FLIGHT = 256;
/** Per tenant per minute. */
export const MAX_REQUESTS_PER_MINUTE = 60_000;
/** Longer than the largest profile's per-call timeout (posix: 60 s) plus a cold interpreter start. */
export const SHUTDOWN_GRACE_MS = 75_000;
/** The bearer challenge of a 401: a realm, and no OAuth resource metadata (this server has no OAuth). */
const CHALLENGE = 'Bearer realm="membrane"';
/** A request's headers and body must arrive within this (slow-loris bound). */
export const REQUEST_TIMEOUT_MS = 60_000;

export interface ServerOptions {
  /** The engine to serve; default one created (and closed) by the server from `config`. */
  engine?: Engine;
  host?: string;
  /** Default 7070; 0 picks a free port. */
  port?: number;
  /** Where tokens.sqlite (and, for an engine the server creates, engine.sqlite) live. Default $MEMBRANE_HOME. */
  home?: string;
  /** The engine database holding the audit log, for a given `engine`. Default `home`/engine.sqlite. */
  databaseFile?: string;
  config?: OperatorConfig | null;
  /** Logger, or options for the default pino logger on stderr (level default: config `server.logLevel`, else info). */
  logger?: Logger | LogOptions;
  limits?: Partial<ServerLimits>;
  /** SSE keepalive period (tests shorten it). */
  keepaliveMs?: number;
}

export interface RunningServer {
  readonly url: string;
  readonly port: number;
  readonly api: Api;
  close(): Promise<void>;
}

function isLogger(v: unknown): v is Logger {
  return typeof v === 'object' && v !== null && typeof (v as { info?: unknown }).info === 'function' && typeof (v as { child?: unknown }).child === 'function';
}

function lower(a: ProfileName, ceiling: ProfileName | undefined): ProfileName {
  return ceiling !== undefined && PROFILE_NAMES.indexOf(a) > PROFILE_NAMES.indexOf(ceiling) ? ceiling : a;
}

/** The request's path, or '' when its target does not parse. */
function pathOf(req: IncomingMessage): string {
  try {
    return new URL(req.url ?? '/', 'http://localhost').pathname;
  } catch {
    return '';
  }
}

/** The request declared a body that has not been read to its end. */
function bodyLeft(req: IncomingMessage): boolean {
  const declared = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  return declared && !req.complete;
}

/**
 * Stop reading a request whose body was not consumed: half-close once the answer is written, and
 * drop the connection a moment later (time for the answer to leave) — Node would otherwise read
 * and discard the rest of a flood to keep the connection alive.
 */
function hangUpAfter(req: IncomingMessage, res: ServerResponse): void {
  const hangUp = (): void => {
    req.socket.end();
    setTimeout(() => req.socket.destroy(), 50).unref();
  };
  if (res.writableFinished) hangUp();
  else res.once('finish', hangUp);
}

export async function startServer(opts: ServerOptions = {}): Promise<RunningServer> {
  const config = opts.config ?? null;
  const did = didRoutes(config); // before anything is opened: a missing identity refuses to start
  const home = opts.home ?? membraneHome();
  const databaseFile = opts.databaseFile ?? join(home, 'engine.sqlite');
  const ownsEngine = opts.engine === undefined;
  const commands = CommandRegistry.withBuiltins();
  const fromConfig = engineOptionsFrom(config);
  const engine = opts.engine ?? createEngine({ ...fromConfig, commands, cacheDir: join(home, 'cache'), brokers: { ...fromConfig.brokers, databaseFile } });
  const log = isLogger(opts.logger) ? opts.logger : createLogger({ level: opts.logger?.level ?? config?.server?.logLevel ?? DEFAULT_LOG_LEVEL, ...(opts.logger?.destination ? { destination: opts.logger.destination } : {}) });
  const limits: ServerLimits = {
    bodyBytes: opts.limits?.bodyBytes ?? config?.limits?.bodyBytes ?? MAX_BODY_BYTES,
    moduleBodyBytes: opts.limits?.moduleBodyBytes ?? config?.limits?.moduleBodyBytes ?? MAX_MODULE_BODY_BYTES,
    maxInFlight: opts.limits?.maxInFlight ?? config?.limits?.maxInFlight ?? MAX_IN_FLIGHT,
    requestsPerMinute: opts.limits?.requestsPerMinute ?? config?.limits?.requestsPerMinute ?? MAX_REQUESTS_PER_MINUTE,
    shutdownGraceMs: opts.limits?.shutdownGraceMs ?? SHUTDOWN_GRACE_MS,
  };
  const ceiling = config?.profile;
  const tokens = new TokenStore(tokensFile(home));
  const audit = AuditLog.open(databaseFile);
  const metrics = new Metrics({ stats: () => engine.stats(), streams: () => feed.size });
  const feed = new AuditFeed(audit, (r) => metrics.audit(r), (err) => log.error({ error: errorField(err, true) }, 'audit feed poll failed'), opts.keepaliveMs);
  let routes: Route<Api>[] = [];
  const api: Api = {
    engine,
    commands,
    tenancy: new Tenancy(engine, config?.limits?.maxInstancesPerTenant),
    audit,
    feed,
    metrics,
    tokens,
    log,
    limits,
    routes: () => routes,
  };
  routes = [...metaRoutes(), ...instanceRoutes(), ...runRoutes(), ...auditRoutes(), ...mcpRoutes(), ...agentRoutes(), ...did];
  const router = new Router(routes);
  const rate = new Map<string, { minute: number; count: number }>();
  let draining = false;
  let inFlight = 0;
  let idle: (() => void) | null = null;

  function authenticate(req: IncomingMessage): Principal {
    const header = req.headers['authorization'];
    const m = typeof header === 'string' ? /^Bearer ([^\s]+)$/i.exec(header.trim()) : null;
    const grant = m ? tokens.check(m[1]!) : null;
    if (!grant) {
      // RFC 6750 §3: no error attributes when no token came; no resource_metadata (no OAuth here).
      const message = m ? 'the bearer token is not valid (unknown or revoked)' : 'an Authorization: Bearer <token> header is required (membrane token create)';
      throw Object.assign(httpError('UNAUTHENTICATED', message), { challenge: m ? `${CHALLENGE}, error="invalid_token", error_description="${message}"` : CHALLENGE });
    }
    const defined = engine.config.hostFunctions;
    return { tokenId: grant.id, tenant: grant.tenant, profile: lower(grant.profile, ceiling), hostCaps: grant.hostCaps.filter((c) => Object.hasOwn(defined, c)) };
  }

  function admitRate(tenant: string): void {
    const minute = Math.floor(Date.now() / 60_000);
    const r = rate.get(tenant);
    if (!r || r.minute !== minute) rate.set(tenant, { minute, count: 1 });
    else if (++r.count > limits.requestsPerMinute) throw httpError('RATE_LIMITED', `more than ${limits.requestsPerMinute} requests this minute`);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const t0 = performance.now();
    const requestId = requestIdOf(req.headers['x-request-id']);
    const rlog = log.child({ requestId });
    res.setHeader('x-request-id', requestId);
    // The client gone before its answer was written (a closed socket, an aborted fetch): whatever
    // runs for it is cancelled — its worker freed now, not at the call's deadline.
    const gone = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) gone.abort();
    });
    let label = 'unmatched';
    let tenant: string | undefined;
    inFlight++;
    metrics.inFlight = inFlight;
    try {
      if (draining) throw httpError('OVERLOADED', 'the server is shutting down');
      if (inFlight > limits.maxInFlight) throw httpError('OVERLOADED', 'too many requests in flight; retry');
      const url = new URL(req.url ?? '/', 'http://localhost');
      const { route, params } = router.match(req.method ?? 'GET', url.pathname);
      label = route.label ?? route.path;
      const principal = route.auth ? authenticate(req) : null;
      if (principal) {
        tenant = principal.tenant;
        admitRate(principal.tenant);
      }
      const cap = route.bodyCap ?? (route.largeBody ? limits.moduleBodyBytes : limits.bodyBytes);
      const answer = await route.handle({ req, res, params, query: url.searchParams, principal, state: api, requestId, log: rlog, signal: gone.signal, body: () => readJson(req, cap) });
      if (answer) sendJson(res, answer.status, answer.body, bodyLeft(req) ? { connection: 'close' } : {});
    } catch (err) {
      const headers: Record<string, string> = {};
      // A body left unread (refused at the door, or past its cap) is not drained: the connection goes.
      if (bodyLeft(req) || draining) headers['connection'] = 'close';
      if (err instanceof Error && 'allow' in err && typeof err.allow === 'string') headers['allow'] = err.allow;
      if (err instanceof Error && 'code' in err && err.code === 'UNAUTHENTICATED') headers['www-authenticate'] = 'challenge' in err && typeof err.challenge === 'string' ? err.challenge : CHALLENGE;
      const midAnswer = res.headersSent;
      const jsonRpc = router.jsonRpcAt(pathOf(req));
      const e = midAnswer ? null : (jsonRpc ? sendJsonRpcError : sendError)(res, err, headers);
      if (midAnswer) res.destroy();
      if (e?.unexpected || midAnswer) rlog.error({ error: errorField(err, true), route: label }, 'unexpected error');
    } finally {
      if (bodyLeft(req)) hangUpAfter(req, res);
      inFlight--;
      metrics.inFlight = inFlight;
      const status = res.statusCode;
      metrics.request(label, req.method ?? '', status);
      rlog[status >= 500 ? 'error' : 'info']({ method: req.method, route: label, status, ms: Math.round((performance.now() - t0) * 10) / 10, ...(tenant ? { tenant } : {}) }, 'request');
      if (inFlight === 0 && idle) idle();
    }
  }

  const server = createServer({ requestTimeout: REQUEST_TIMEOUT_MS, headersTimeout: 30_000 }, (req, res) => void handle(req, res));
  const host = opts.host ?? config?.server?.host ?? DEFAULT_HOST;
  const port = opts.port ?? config?.server?.port ?? DEFAULT_PORT;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (e) {
    // Nothing is served: release what was opened, so a failed start leaves no handle behind.
    server.close();
    if (ownsEngine) await engine.close();
    audit.close();
    tokens.close();
    throw e;
  }
  feed.start();
  const bound = (server.address() as AddressInfo).port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${bound}`;
  log.info({ url, ownsEngine }, 'listening');

  let closing: Promise<void> | null = null;
  async function close(): Promise<void> {
    draining = true;
    const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
    feed.close();
    server.closeIdleConnections();
    if (inFlight > 0) {
      log.info({ inFlight }, 'draining');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, limits.shutdownGraceMs);
        idle = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    server.closeAllConnections();
    await stopped;
    if (ownsEngine) await engine.close();
    audit.close();
    tokens.close();
    log.info({}, 'closed');
  }

  return { url, port: bound, api, close: () => (closing ??= close()) };
}
