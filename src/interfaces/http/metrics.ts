/**
 * Prometheus metrics for `/metrics`, written by hand in the text exposition format (0.0.4).
 *
 * Owns: the counters (requests by route/method/status, calls by kind and outcome, denials by
 * broker and code, fuel used), the call-duration histogram, and the gauges read at scrape time
 * (in-flight requests, open audit streams, the engine's live workers and instances).
 * Invariant: labels are drawn from closed sets — route templates (never concrete paths), methods,
 * status codes, error codes, broker names cut to a short word — and never hold a tenant, a token
 * or an id, so a scrape reveals aggregates only and the series count stays bounded.
 *
 * Does not protect against: someone who can reach /metrics learning aggregate load (bind the
 * server to loopback, as it is by default, or put it behind a proxy).
 */

import type { EngineStats } from '../../engine/index.ts';
import type { AuditRecord } from '../../storage/audit.ts';

/** Histogram buckets for call durations, in seconds. */
export const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Distinct label sets a counter keeps; past this, new ones fold into `other` (bounded series). */
const MAX_SERIES = 500;

export type CallKind = 'run' | 'exec' | 'call';

function label(v: string): string {
  return v.replace(/[^A-Za-z0-9_.:/{}-]/g, '_').slice(0, 64);
}

class Counter {
  readonly values = new Map<string, number>();
  add(labels: string, n = 1): void {
    const key = this.values.has(labels) || this.values.size < MAX_SERIES ? labels : 'other="true"';
    this.values.set(key, (this.values.get(key) ?? 0) + n);
  }
}

export class Metrics {
  private readonly requests = new Counter();
  private readonly calls = new Counter();
  private readonly denials = new Counter();
  private fuel = 0;
  private readonly buckets = new Map<CallKind, { counts: number[]; sum: number; count: number }>();
  inFlight = 0;

  request(route: string, method: string, status: number): void {
    this.requests.add(`route="${label(route)}",method="${label(method)}",status="${status}"`);
  }

  call(kind: CallKind, outcome: string, fuelUsed: number, durationMs: number): void {
    this.calls.add(`kind="${kind}",outcome="${label(outcome)}"`);
    if (Number.isFinite(fuelUsed) && fuelUsed > 0) this.fuel += fuelUsed;
    let h = this.buckets.get(kind);
    if (!h) this.buckets.set(kind, (h = { counts: DURATION_BUCKETS.map(() => 0), sum: 0, count: 0 }));
    const s = Math.max(0, durationMs) / 1000;
    DURATION_BUCKETS.forEach((b, i) => {
      if (s <= b) h.counts[i]!++;
    });
    h.sum += s;
    h.count++;
  }

  /** Every audit record passes here; denials are counted by their broker and code. */
  audit(r: AuditRecord): void {
    if (r.kind !== 'denied') return;
    const d = r.detail as { broker?: unknown; code?: unknown };
    const broker = typeof d.broker === 'string' ? d.broker : 'unknown';
    const code = typeof d.code === 'string' ? d.code : 'unknown';
    this.denials.add(`broker="${label(broker)}",code="${label(code)}"`);
  }

  render(stats: EngineStats, streams: number): string {
    const out: string[] = [];
    const counter = (name: string, help: string, c: Counter): void => {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} counter`);
      for (const [labels, v] of c.values) out.push(`${name}{${labels}} ${v}`);
    };
    const gauge = (name: string, help: string, v: number, type = 'gauge'): void => {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, `${name} ${v}`);
    };
    counter('membrane_http_requests_total', 'HTTP requests by route template, method and status.', this.requests);
    counter('membrane_calls_total', 'Guest calls by kind (run, exec, call) and outcome (ok or an error code).', this.calls);
    counter('membrane_denials_total', 'Audit records of kind "denied", by broker and code.', this.denials);
    gauge('membrane_fuel_used_total', 'Fuel used by calls made through the API.', this.fuel, 'counter');
    out.push('# HELP membrane_call_duration_seconds Duration of guest calls made through the API.', '# TYPE membrane_call_duration_seconds histogram');
    for (const [kind, h] of this.buckets) {
      DURATION_BUCKETS.forEach((b, i) => out.push(`membrane_call_duration_seconds_bucket{kind="${kind}",le="${b}"} ${h.counts[i]}`));
      out.push(`membrane_call_duration_seconds_bucket{kind="${kind}",le="+Inf"} ${h.count}`);
      out.push(`membrane_call_duration_seconds_sum{kind="${kind}"} ${h.sum}`, `membrane_call_duration_seconds_count{kind="${kind}"} ${h.count}`);
    }
    gauge('membrane_http_requests_in_flight', 'HTTP requests being served now.', this.inFlight);
    gauge('membrane_audit_streams', 'Open server-sent audit streams.', streams);
    gauge('membrane_pool_live_workers', 'Live worker threads of the engine.', stats.liveWorkers);
    gauge('membrane_instances', 'Persistent instances held by the engine.', stats.instances);
    gauge('membrane_workers_replaced_total', 'Workers terminated and replaced (runaways, deaths).', stats.workersReplaced, 'counter');
    return `${out.join('\n')}\n`;
  }
}
