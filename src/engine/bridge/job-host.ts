/**
 * One job's host side as the engine holds it (`JobHost`), and the lazy form a job starts in.
 *
 * Owns: `JobHost` and `ServeSlot` (the shapes host-services.ts makes and the engine, the lanes
 * and serve.ts hold); `LazyJob` — a job whose full host side (its process table, exec slots,
 * abort controller, retry hold) is made at its first host call, since most fresh runs make none.
 * Invariant: a lazy job behaves as the full one would have from its start: its first host call
 * is served by a full job made then, which is ended at once when the lazy job had already ended
 * (so nothing is spawned or kept for a job that is over); `end`/`interrupt` before any host call
 * have nothing to stop.
 *
 * Does not protect against: nothing beyond the above; the decisions are host-services.ts's.
 */

import type { HostCall, HostHandler, WorkerHandle } from './worker-handle.ts';
import type { HostReply, HostRequest } from './protocol.ts';

/** The inbound HTTP request an instance is serving right now (engine.serve), and its answer. */
export interface ServeSlot {
  request: Uint8Array | null;
  response: Uint8Array | null;
}

/** One job's host calls; `end()` when the job is over, whatever way it ended. */
export interface JobHost {
  readonly handle: HostHandler;
  readonly serving: ServeSlot;
  end(): void;
  /**
   * A persistent instance's call was stopped (its deadline, a cancel): what that call started
   * stops too — brokered calls in flight are aborted, its processes killed, its exec slots
   * released — and the job serves the instance's next call.
   */
  interrupt(): void;
}

export class LazyJob implements JobHost {
  readonly serving: ServeSlot = { request: null, response: null };
  readonly handle: HostHandler;
  private full: JobHost | null = null;
  private ended = false;

  /** `make` builds the full job around this job's serve slot. */
  constructor(private readonly make: (serving: ServeSlot) => JobHost) {
    this.handle = this.serve.bind(this);
  }

  end(): void {
    this.ended = true;
    this.full?.end();
  }

  interrupt(): void {
    this.full?.interrupt();
  }

  private serve(req: HostRequest, blobs: readonly Uint8Array[], worker: WorkerHandle, call: HostCall): HostReply | Promise<HostReply> {
    if (this.full === null) {
      this.full = this.make(this.serving);
      if (this.ended) this.full.end();
    }
    return this.full.handle(req, blobs, worker, call);
  }
}
