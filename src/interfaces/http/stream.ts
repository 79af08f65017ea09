/**
 * Streamed answers for `POST /v1/exec?stream=…` and `POST /v1/runs?stream=…`: the guest's output
 * as it is written, then the result, as NDJSON (`application/x-ndjson`, one JSON object a line)
 * or server-sent events (`text/event-stream`, `event: stdout|stderr|result|lagged`).
 *
 * Owns: choosing the format (`stream=ndjson|sse`, or `1`/`true` and the Accept header), writing
 * the head lazily (a call refused before its first byte — OVERLOADED, a bad grant — is still an
 * ordinary JSON error with its status), the event framing, and the backlog bound.
 * Invariant: what a slow reader makes the server hold is bounded: past MAX_STREAM_BACKLOG_BYTES
 * unsent, output events are dropped (one `lagged` event says so) and the `result` event, which
 * carries the whole captured stdout/stderr, is still written. Events carry only what the JSON
 * answer would (no host detail).
 *
 * Does not protect against: a client that never reads the result — the socket's own timeouts and
 * the server's in-flight limit bound that.
 */

import type { ServerResponse } from 'node:http';

export type StreamFormat = 'ndjson' | 'sse';

/** Unsent bytes a slow reader may leave queued before output events are dropped. */
export const MAX_STREAM_BACKLOG_BYTES = 1024 * 1024;

/** null for a plain JSON answer; otherwise the format the client asked for (`stream`, already validated). */
export function streamFormat(stream: '1' | 'true' | 'ndjson' | 'sse' | undefined, accept: string | undefined): StreamFormat | null {
  if (stream === undefined) return null;
  if (stream === 'ndjson' || stream === 'sse') return stream;
  return /\btext\/event-stream\b/i.test(accept ?? '') ? 'sse' : 'ndjson';
}

export class EventStream {
  private opened = false;
  private lagged = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly format: StreamFormat,
    private readonly extraHeaders: Readonly<Record<string, string>> = {},
  ) {}

  /** Whether the head was written (after that, a failure can no longer change the status). */
  get started(): boolean {
    return this.opened;
  }

  stdout(chunk: string): void {
    this.output('stdout', chunk);
  }

  stderr(chunk: string): void {
    this.output('stderr', chunk);
  }

  /** The last event; ends the answer. */
  result(body: object): void {
    this.send('result', body);
    this.res.end();
  }

  private output(type: 'stdout' | 'stderr', data: string): void {
    if (this.res.destroyed) return;
    if (this.res.writableLength > MAX_STREAM_BACKLOG_BYTES) {
      if (!this.lagged) {
        this.lagged = true;
        this.send('lagged', { message: 'the reader fell behind: output events were dropped; the result carries the whole output' });
      }
      return;
    }
    this.send(type, { data });
  }

  private send(type: string, body: object): void {
    if (this.res.destroyed) return;
    this.open();
    if (this.format === 'sse') this.res.write(`event: ${type}\ndata: ${JSON.stringify(body)}\n\n`);
    else this.res.write(`${JSON.stringify({ type, ...body })}\n`);
  }

  private open(): void {
    if (this.opened) return;
    this.opened = true;
    this.res.writeHead(200, {
      'content-type': this.format === 'sse' ? 'text/event-stream; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'x-accel-buffering': 'no',
      ...this.extraHeaders,
    });
    this.res.flushHeaders();
  }
}
