/**
 * Prometheus metrics for `/metrics` (text exposition format 0.0.4), kept with prom-client.
 *
 * Owns: one private `Registry` per server (never prom-client's global one, so two servers in one
 * process keep separate counts) holding the counters (requests by route/method/status, calls by
 * kind and outcome, MCP tool calls by tool and outcome, denials by broker and code, fuel used),
 * the call and tool-call duration histograms, build info, and the gauges read at scrape time
 * (in-flight requests, open audit streams, the engine's live workers, instances and replaced
 * workers); plus the process and event-loop metrics (`process_*`, `nodejs_*`), collected once per
 * process into a second private registry that every server's scrape appends, since they describe
 * the process, not the server (and a second collector would add a second GC observer).
 * Invariant: labels are drawn from closed sets — route templates (never concrete paths), methods,
 * status codes, error codes, tool names, broker names cut to a short word — and never hold a
 * tenant, a token or an id; each labelled metric keeps at most MAX_SERIES label sets and folds
 * the rest into one whose every label is `other`, so a scrape reveals aggregates only and its
 * size stays bounded.
 *
 * Does not protect against: someone who can reach /metrics learning aggregate load (bind the
 * server to loopback, as it is by default, or put it behind a proxy).
 *
 * prom-client is loaded by a top-level `await import()` (a static import would be hoisted to the
 * top of the CLI bundle), so only `membrane serve` pays for it.
 */

import type { Counter, Histogram, Registry } from 'prom-client';
import type { EngineStats } from '../../engine/index.ts';
import type { AuditRecord } from '../../storage/audit.ts';
import { version } from '../version.ts';

const prom = await import('prom-client');

/** Histogram buckets for call durations, in seconds. */
export const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Distinct label sets one metric keeps; past this, new ones fold into `other` (bounded series). */
export const MAX_SERIES = 500;
/** The exposition format's media type. */
export const METRICS_CONTENT_TYPE = prom.Registry.PROMETHEUS_CONTENT_TYPE;

export type CallKind = 'run' | 'exec' | 'call';

/** What the gauges read at scrape time. */
export interface MetricsSources {
  stats(): EngineStats;
  streams(): number;
}

function label(v: string): string {
  return v.replace(/[^A-Za-z0-9_.:/{}-]/g, '_').slice(0, 64) || '_';
}

/** Label values for a new series, or all-`other` once MAX_SERIES sets exist. */
class SeriesBound<L extends string> {
  private readonly seen = new Set<string>();
  constructor(private readonly names: readonly L[]) {}
  admit(values: Record<L, string>): Record<L, string> {
    const clean = Object.fromEntries(this.names.map((n) => [n, label(values[n])])) as Record<L, string>;
    const key = this.names.map((n) => clean[n]).join('\u0000');
    if (this.seen.has(key)) return clean;
    if (this.seen.size < MAX_SERIES) {
      this.seen.add(key);
      return clean;
    }
    return Object.fromEntries(this.names.map((n) => [n, 'other'])) as Record<L, string>;
  }
}

let processRegistry: Registry | null = null;

/** The process-wide registry of prom-client's default metrics, created on first use. */
function processMetrics(): Registry {
  if (processRegistry) return processRegistry;
  processRegistry = new prom.Registry();
  prom.collectDefaultMetrics({ register: processRegistry });
  return processRegistry;
}

export class Metrics {
  readonly registry = new prom.Registry();
  inFlight = 0;
  private readonly requests: Counter<'route' | 'method' | 'status'>;
  private readonly requestSeries = new SeriesBound(['route', 'method', 'status'] as const);
  private readonly calls: Counter<'kind' | 'outcome'>;
  private readonly callSeries = new SeriesBound(['kind', 'outcome'] as const);
  private readonly durations: Histogram<'kind'>;
  private readonly tools: Counter<'tool' | 'outcome'>;
  private readonly toolSeries = new SeriesBound(['tool', 'outcome'] as const);
  private readonly toolDurations: Histogram<'tool'>;
  private readonly denials: Counter<'broker' | 'code'>;
  private readonly denialSeries = new SeriesBound(['broker', 'code'] as const);
  private readonly fuel: Counter;

  constructor(sources: MetricsSources) {
    const registers = [this.registry];
    processMetrics();
    this.requests = new prom.Counter({ name: 'membrane_http_requests_total', help: 'HTTP requests by route template, method and status.', labelNames: ['route', 'method', 'status'], registers });
    this.calls = new prom.Counter({ name: 'membrane_calls_total', help: 'Guest calls made through the HTTP API by kind (run, exec, call) and outcome (ok or an error code).', labelNames: ['kind', 'outcome'], registers });
    this.durations = new prom.Histogram({ name: 'membrane_call_duration_seconds', help: 'Duration of guest calls made through the HTTP API.', labelNames: ['kind'], buckets: DURATION_BUCKETS, registers });
    this.tools = new prom.Counter({ name: 'membrane_mcp_tool_calls_total', help: 'MCP tool calls at /mcp by tool and outcome (ok, or the error code of a failed run or a refusal).', labelNames: ['tool', 'outcome'], registers });
    this.toolDurations = new prom.Histogram({ name: 'membrane_mcp_tool_call_duration_seconds', help: 'Duration of MCP tool calls at /mcp.', labelNames: ['tool'], buckets: DURATION_BUCKETS, registers });
    this.denials = new prom.Counter({ name: 'membrane_denials_total', help: 'Audit records of kind "denied", by broker and code.', labelNames: ['broker', 'code'], registers });
    this.fuel = new prom.Counter({ name: 'membrane_fuel_used_total', help: 'Fuel used by calls made through the HTTP API.', registers });
    new prom.Gauge({ name: 'membrane_build_info', help: 'Always 1; the labels name the Membrane version and the Node.js runtime serving it.', labelNames: ['version', 'node'], registers }).set({ version: label(version()), node: label(process.version) }, 1);
    const metrics = this;
    new prom.Gauge({
      name: 'membrane_http_requests_in_flight',
      help: 'HTTP requests being served now.',
      registers,
      collect() {
        this.set(metrics.inFlight);
      },
    });
    new prom.Gauge({
      name: 'membrane_audit_streams',
      help: 'Open server-sent audit streams.',
      registers,
      collect() {
        this.set(sources.streams());
      },
    });
    // The engine's pool, read once per scrape by the first of the three collectors.
    let snapshot: EngineStats | null = null;
    const stats = (): EngineStats => (snapshot ??= sources.stats());
    new prom.Gauge({
      name: 'membrane_pool_live_workers',
      help: 'Live worker threads of the engine.',
      registers,
      collect() {
        snapshot = null;
        this.set(stats().liveWorkers);
      },
    });
    new prom.Gauge({
      name: 'membrane_instances',
      help: 'Persistent instances held by the engine.',
      registers,
      collect() {
        this.set(stats().instances);
      },
    });
    new prom.Counter({
      name: 'membrane_workers_replaced_total',
      help: 'Workers terminated and replaced (runaways, deaths).',
      registers,
      collect() {
        this.reset();
        this.inc(stats().workersReplaced);
      },
    });
  }

  request(route: string, method: string, status: number): void {
    this.requests.inc(this.requestSeries.admit({ route, method, status: String(status) }));
  }

  call(kind: CallKind, outcome: string, fuelUsed: number, durationMs: number): void {
    this.calls.inc(this.callSeries.admit({ kind, outcome }));
    if (Number.isFinite(fuelUsed) && fuelUsed > 0) this.fuel.inc(fuelUsed);
    this.durations.observe({ kind }, Math.max(0, durationMs) / 1000);
  }

  /** One MCP tool call: its tool name, `ok` or an error code, and how long it took. */
  toolCall(tool: string, outcome: string, durationMs: number): void {
    const labels = this.toolSeries.admit({ tool, outcome });
    this.tools.inc(labels);
    this.toolDurations.observe({ tool: labels.tool }, Math.max(0, durationMs) / 1000);
  }

  /** Every audit record passes here; denials are counted by their broker and code. */
  audit(r: AuditRecord): void {
    if (r.kind !== 'denied') return;
    const d = r.detail as { broker?: unknown; code?: unknown };
    this.denials.inc(this.denialSeries.admit({ broker: typeof d.broker === 'string' ? d.broker : 'unknown', code: typeof d.code === 'string' ? d.code : 'unknown' }));
  }

  /** The exposition text: this server's metrics, then the process's. */
  async render(): Promise<string> {
    const own = await this.registry.metrics();
    const proc = await processMetrics().metrics();
    // prom-client writes NaN (an event-loop histogram with no samples yet) as `Nan`; the format says `NaN`.
    return `${own.trimEnd()}\n${proc.trimEnd()}\n`.replace(/ Nan$/gm, ' NaN');
  }
}
