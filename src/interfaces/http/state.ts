/**
 * What every route handler can reach: the engine, the tenancy registry, the audit log and feed,
 * the metrics, the token store, the logger and the resolved limits.
 *
 * Owns: the `Api` shape and the resolved server limits (`ServerLimits`). Invariant: handlers get
 * tenant data only through `Tenancy` and tenant-filtered audit queries, both keyed by the
 * caller's principal.
 *
 * Does not protect against: nothing by itself; it is a bag of references.
 */

import type { Engine } from '../../engine/index.ts';
import type { CommandRegistry } from '../../engine/registry.ts';
import type { AuditLog } from '../../storage/audit.ts';
import type { AuditFeed } from './audit-feed.ts';
import type { Logger } from './log.ts';
import type { Metrics } from './metrics.ts';
import type { Tenancy } from './tenancy.ts';
import type { TokenStore } from './tokens.ts';
import type { Route } from './router.ts';

export interface ServerLimits {
  readonly bodyBytes: number;
  readonly moduleBodyBytes: number;
  readonly maxInFlight: number;
  readonly requestsPerMinute: number;
  /** How long shutdown waits for in-flight requests before closing their connections. */
  readonly shutdownGraceMs: number;
}

export interface Api {
  readonly engine: Engine;
  readonly commands: CommandRegistry;
  readonly tenancy: Tenancy;
  readonly audit: AuditLog;
  readonly feed: AuditFeed;
  readonly metrics: Metrics;
  readonly tokens: TokenStore;
  readonly log: Logger;
  readonly limits: ServerLimits;
  /** The route table (for /openapi.json). */
  routes(): readonly Route<Api>[];
}
