/**
 * The live audit feed: one poller reads new audit records by seq from the engine database and
 * hands each to the metrics and to the server-sent-event streams of its tenant.
 *
 * Owns: the poll (every POLL_INTERVAL_MS, an indexed `seq > cursor` query, so records appended by
 * any process — a CLI run, another server on the same home — appear), the SSE framing
 * (`event: audit`, `id: <seq>`, `data: <record JSON>`), keepalive comments, and closing streams
 * on disconnect and shutdown.
 * Also resuming: a stream opened after a seq (`Last-Event-ID`) first gets the tenant's records
 * after it up to the cursor — at most MAX_RESUME_RECORDS; past that, an `event: gap` frame naming
 * what was skipped and then the newest MAX_RESUME_RECORDS.
 * Invariant: a stream only ever receives records whose `tenant` is its caller's; a record is sent
 * at most once per stream, in seq order, and never one at or below the seq it resumed after; the
 * backlog (or the catch-up) and the live tail meet at the cursor, so nothing between them is
 * skipped or repeated. A stream that cannot keep up (its socket buffer passes
 * MAX_STREAM_BUFFER_BYTES) is closed rather than buffered without bound.
 *
 * Does not protect against: a client that reconnects in a loop (each stream is cheap; the
 * server's in-flight bound applies to the connects).
 */

import type { ServerResponse } from 'node:http';
import type { AuditLog, AuditRecord } from '../../storage/audit.ts';

export const POLL_INTERVAL_MS = 250;
export const KEEPALIVE_MS = 15_000;
/** Records read per poll step (a burst is drained in several steps). */
const POLL_BATCH = 1000;
/** A slow reader's unsent bytes past this close its stream. */
export const MAX_STREAM_BUFFER_BYTES = 4 * 1024 * 1024;
/** Open streams per server; the next is refused with OVERLOADED. */
export const MAX_STREAMS = 256;
/** Records a resuming stream catches up on at most (one indexed query; a longer absence gets a gap). */
export const MAX_RESUME_RECORDS = 1000;

/** Where a new stream starts: the newest `backlog` records, or after the seq it last received. */
export type StreamStart = { readonly backlog: number } | { readonly after: number };

interface Stream {
  readonly tenant: string;
  readonly res: ServerResponse;
  readonly keepalive: NodeJS.Timeout;
  /** Records at or below this seq are never sent (the client has them). */
  readonly floor: number;
}

export class AuditFeed {
  private cursor = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly streams = new Set<Stream>();

  constructor(
    private readonly log: AuditLog,
    private readonly onRecord: (r: AuditRecord) => void,
    private readonly onError: (err: unknown) => void,
    private readonly keepaliveMs = KEEPALIVE_MS,
  ) {}

  get size(): number {
    return this.streams.size;
  }

  start(): void {
    const last = this.log.tail({ limit: 1 });
    this.cursor = last.length > 0 ? last[last.length - 1]!.seq : 0;
    this.timer = setInterval(() => this.poll(), POLL_INTERVAL_MS);
    this.timer.unref();
  }

  /** Read everything appended since the cursor (also called by tests and at shutdown). */
  poll(): void {
    try {
      for (let step = 0; step < 100; step++) {
        const batch = this.log.tail({ afterSeq: this.cursor, limit: POLL_BATCH });
        for (const r of batch) {
          this.cursor = r.seq;
          this.onRecord(r);
          for (const s of this.streams) if (s.tenant === r.tenant) this.send(s, r);
        }
        if (batch.length < POLL_BATCH) break;
      }
    } catch (err) {
      this.onError(err);
    }
  }

  /** Turn a response into a stream of the tenant's records, from `start`. */
  open(res: ServerResponse, tenant: string, start: StreamStart): boolean {
    if (this.streams.size >= MAX_STREAMS) return false;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'x-accel-buffering': 'no',
      connection: 'keep-alive',
    });
    res.write(': membrane audit stream\n\n');
    const keepalive = setInterval(() => {
      if (!res.writableEnded) res.write(': keepalive\n\n');
    }, this.keepaliveMs);
    keepalive.unref();
    const stream: Stream = { tenant, res, keepalive, floor: 'after' in start ? start.after : 0 };
    // Backlog or catch-up up to the cursor; everything after it comes from the poller.
    if ('after' in start) this.catchUp(stream, start.after);
    else if (start.backlog > 0) for (const r of this.log.tail({ tenant, limit: start.backlog })) if (r.seq <= this.cursor) this.send(stream, r);
    this.streams.add(stream);
    res.on('close', () => this.drop(stream));
    return true;
  }

  /** The tenant's records in (after, cursor]: all of them, or a gap frame and the newest MAX_RESUME_RECORDS. */
  private catchUp(s: Stream, after: number): void {
    if (after >= this.cursor) return;
    const missed = this.log.tail({ tenant: s.tenant, afterSeq: after, limit: MAX_RESUME_RECORDS + 1 }).filter((r) => r.seq <= this.cursor);
    if (missed.length <= MAX_RESUME_RECORDS) {
      for (const r of missed) this.send(s, r);
      return;
    }
    const newest = this.log.tail({ tenant: s.tenant, limit: MAX_RESUME_RECORDS }).filter((r) => r.seq <= this.cursor);
    if (newest.length === 0) return;
    s.res.write(`event: gap\ndata: ${JSON.stringify({ after, resumedAfter: newest[0]!.seq - 1 })}\n\n`);
    for (const r of newest) this.send(s, r);
  }

  private send(s: Stream, r: AuditRecord): void {
    if (s.res.writableEnded || r.seq <= s.floor) return;
    if (s.res.writableLength > MAX_STREAM_BUFFER_BYTES) {
      this.end(s);
      return;
    }
    s.res.write(`event: audit\nid: ${r.seq}\ndata: ${JSON.stringify(r)}\n\n`);
  }

  private drop(s: Stream): void {
    clearInterval(s.keepalive);
    this.streams.delete(s);
  }

  private end(s: Stream): void {
    this.drop(s);
    if (!s.res.writableEnded) s.res.end();
  }

  /** Close every stream (shutdown) after a last poll, and stop polling. */
  close(): void {
    this.poll();
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    for (const s of [...this.streams]) this.end(s);
  }
}
