/**
 * The rewrite pool: a few worker threads that rewrite and compile uploaded modules, so that a
 * large upload never stalls the engine's main thread (and the server's other tenants on it).
 *
 * Owns: spawning rewrite workers on demand (at most `workers`, retired after `idleMs` idle), a
 * FIFO queue of jobs (disk-entry compiles ahead of rewrites: they are short), and the bounds of a
 * job. Invariant: the queue holds at most `maxQueue` jobs and `maxQueueBytes` of module bytes
 * (beyond: OVERLOADED at once); a job waits at most `queueWaitMs` for a worker (OVERLOADED) and
 * runs at most `jobTimeoutMs` (TIMEOUT: the worker is terminated and replaced); a worker's JS heap
 * is capped by `resourceLimits` (a job that exhausts it is MEMORY_LIMIT, the worker replaced).
 * Guest-caused failures never surface as INTERNAL; a failing job never affects another's.
 *
 * Does not protect against: V8's compiled-code memory (outside the JS heap; bounded by the module
 * size cap of the caller) and CPU contention: V8's compile threads are shared with the process.
 */

import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { SandboxError } from '../../errors.ts';
import { REWRITE_PROTOCOL_VERSION, type RewriteReply, type RewriteRequest, type RewriteSettings } from './protocol.ts';

/**
 * Rewrite threads: one on a machine of two cores or fewer, two otherwise — each rewrite also
 * keeps V8's compile threads busy, and the main thread must keep a core's worth of room.
 */
export const REWRITE_WORKERS = availableParallelism() <= 2 ? 1 : 2;
/** JS heap of a rewrite worker: a 16 MiB module with a million functions needs ~600 MiB. */
export const REWRITE_HEAP_MB = 1024;
/** One job's wall-clock bound (a 16 MiB module rewrites and compiles in ~2 s on a loaded machine). */
export const REWRITE_TIMEOUT_MS = 30_000;
/** Jobs waiting for a worker; beyond this an upload is refused with OVERLOADED. */
export const MAX_REWRITE_QUEUE = 64;
/** Module bytes held by waiting jobs. */
export const MAX_REWRITE_QUEUE_BYTES = 256 * 1024 * 1024;
/** How long a job may wait for a worker. */
export const REWRITE_QUEUE_WAIT_MS = 120_000;
const REWRITE_IDLE_MS = 30_000;
const BOOT_TIMEOUT_MS = 20_000;

export interface RewritePoolOptions {
  readonly file: () => Promise<string>;
  readonly workers?: number;
  readonly heapMb?: number;
  readonly jobTimeoutMs?: number;
  readonly maxQueue?: number;
  readonly maxQueueBytes?: number;
  readonly queueWaitMs?: number;
  readonly idleMs?: number;
}

export type Prepared = Extract<RewriteReply, { kind: 'prepared' }>;

type Outcome = Extract<RewriteReply, { kind: 'prepared' | 'compiled' }>;

interface Job {
  readonly msg: RewriteRequest;
  readonly size: number;
  readonly resolve: (r: Outcome) => void;
  readonly reject: (e: SandboxError) => void;
  waitTimer: NodeJS.Timeout | null;
}

interface Slot {
  readonly worker: Worker;
  booted: boolean;
  job: Job | null;
  jobTimer: NodeJS.Timeout | null;
  idleTimer: NodeJS.Timeout | null;
  death: SandboxError | null;
}

export class RewritePool {
  private readonly queue: Job[] = [];
  private readonly slots = new Set<Slot>();
  private queuedBytes = 0;
  private nextId = 1;
  private closed = false;
  /** Workers terminated because a job overran its time or heap, or died. */
  replaced = 0;

  private readonly workers: number;
  private readonly heapMb: number;
  private readonly jobTimeoutMs: number;
  private readonly maxQueue: number;
  private readonly maxQueueBytes: number;
  private readonly queueWaitMs: number;
  private readonly idleMs: number;

  constructor(private readonly options: RewritePoolOptions) {
    this.workers = Math.max(1, options.workers ?? REWRITE_WORKERS);
    this.heapMb = options.heapMb ?? REWRITE_HEAP_MB;
    this.jobTimeoutMs = options.jobTimeoutMs ?? REWRITE_TIMEOUT_MS;
    this.maxQueue = options.maxQueue ?? MAX_REWRITE_QUEUE;
    this.maxQueueBytes = options.maxQueueBytes ?? MAX_REWRITE_QUEUE_BYTES;
    this.queueWaitMs = options.queueWaitMs ?? REWRITE_QUEUE_WAIT_MS;
    this.idleMs = options.idleMs ?? REWRITE_IDLE_MS;
  }

  /** Rewrite (limits, fuel) and compile; `bytes` is transferred to the worker. */
  async prepare(bytes: Uint8Array<ArrayBuffer>, settings: RewriteSettings, entryKey: string | null): Promise<Prepared> {
    const r = await this.submit({ v: REWRITE_PROTOCOL_VERSION, kind: 'prepare', id: this.nextId++, bytes, settings, entryKey }, false);
    if (r.kind !== 'prepared') throw new SandboxError('INTERNAL', 'the rewrite worker answered the wrong job');
    return r;
  }

  /** Compile a disk cache entry's wasm (from `offset`); `entry` is transferred. */
  async compile(entry: Uint8Array<ArrayBuffer>, offset: number): Promise<WebAssembly.Module> {
    const r = await this.submit({ v: REWRITE_PROTOCOL_VERSION, kind: 'compile', id: this.nextId++, bytes: entry, offset }, true);
    if (r.kind !== 'compiled') throw new SandboxError('INTERNAL', 'the rewrite worker answered the wrong job');
    return r.module;
  }

  get liveWorkers(): number {
    return this.slots.size;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) this.settle(job, new SandboxError('INSTANCE_DEAD', 'the engine is closed'));
    this.queuedBytes = 0;
    await Promise.all([...this.slots].map((s) => this.retire(s, new SandboxError('INSTANCE_DEAD', 'the engine is closed'))));
  }

  private submit(request: RewriteRequest, urgent: boolean): Promise<Outcome> {
    if (this.closed) return Promise.reject(new SandboxError('INSTANCE_DEAD', 'the engine is closed'));
    // Transferring a view's buffer sends all of it: a view into a larger (or pooled) buffer is copied.
    const b = 'bytes' in request ? request.bytes : null;
    const msg = b === null || (b.byteOffset === 0 && b.byteLength === b.buffer.byteLength) ? request : { ...request, bytes: new Uint8Array(b) };
    const size = 'bytes' in msg ? msg.bytes.byteLength : 0;
    if (this.queue.length >= this.maxQueue || (this.queue.length > 0 && this.queuedBytes + size > this.maxQueueBytes)) {
      return Promise.reject(
        new SandboxError('OVERLOADED', 'too many modules are waiting to be prepared; try again shortly', { queued: this.queue.length, maxQueue: this.maxQueue }),
      );
    }
    return new Promise<Outcome>((resolve, reject) => {
      const job: Job = { msg, size, resolve, reject, waitTimer: null };
      job.waitTimer = setTimeout(() => {
        const i = this.queue.indexOf(job);
        if (i < 0) return;
        this.queue.splice(i, 1);
        this.queuedBytes -= job.size;
        reject(new SandboxError('OVERLOADED', `the module waited ${this.queueWaitMs} ms for a rewrite worker`, { waitedMs: this.queueWaitMs }));
      }, this.queueWaitMs);
      job.waitTimer.unref();
      if (urgent) {
        const firstRewrite = this.queue.findIndex((j) => j.msg.kind !== 'compile');
        this.queue.splice(firstRewrite < 0 ? this.queue.length : firstRewrite, 0, job);
      } else {
        this.queue.push(job);
      }
      this.queuedBytes += size;
      this.dispatch();
    });
  }

  private dispatch(): void {
    while (!this.closed && this.queue.length > 0) {
      const slot = [...this.slots].find((s) => s.booted && s.job === null);
      if (!slot) {
        if (this.slots.size >= this.workers || [...this.slots].some((s) => !s.booted)) return;
        this.spawn();
        return;
      }
      const job = this.queue.shift()!;
      this.queuedBytes -= job.size;
      if (job.waitTimer) clearTimeout(job.waitTimer);
      this.run(slot, job);
    }
  }

  private run(slot: Slot, job: Job): void {
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    slot.idleTimer = null;
    slot.job = job;
    slot.jobTimer = setTimeout(() => {
      void this.retire(slot, new SandboxError('TIMEOUT', `preparing the module took longer than ${this.jobTimeoutMs} ms`, { timeoutMs: this.jobTimeoutMs }));
    }, this.jobTimeoutMs);
    slot.jobTimer.unref();
    slot.worker.ref(); // a job in flight keeps the process alive; an idle worker does not
    slot.worker.postMessage(job.msg, 'bytes' in job.msg ? [job.msg.bytes.buffer] : []);
  }

  private spawn(): void {
    const pending: Slot = { worker: null as unknown as Worker, booted: false, job: null, jobTimer: null, idleTimer: null, death: null };
    this.slots.add(pending);
    void this.options
      .file()
      .then((file) => {
        if (this.closed) throw new SandboxError('INSTANCE_DEAD', 'the engine is closed');
        const worker = new Worker(file, {
          env: {},
          argv: [],
          execArgv: [],
          // The rewriter never prints; captured stdio streams would keep the process alive.
          stdin: false,
          resourceLimits: { maxOldGenerationSizeMb: this.heapMb, maxYoungGenerationSizeMb: 32, stackSizeMb: 4 },
        });
        (pending as { worker: Worker }).worker = worker;
        this.attach(pending);
      })
      .catch((e: unknown) => {
        this.slots.delete(pending);
        const err = e instanceof SandboxError ? e : new SandboxError('INTERNAL', 'a rewrite worker could not start', {}, e);
        // Nothing can run without a worker: fail what waits rather than retry forever.
        for (const job of this.queue.splice(0)) this.settle(job, err);
        this.queuedBytes = 0;
      });
  }

  private attach(slot: Slot): void {
    const w = slot.worker;
    const boot = setTimeout(() => void this.retire(slot, new SandboxError('INTERNAL', 'a rewrite worker did not start in time')), BOOT_TIMEOUT_MS);
    boot.unref();
    w.on('message', (m: RewriteReply) => {
      if (m.kind === 'ready') {
        clearTimeout(boot);
        slot.booted = true;
        this.dispatch();
        if (slot.job === null) w.unref();
        this.idleCheck(slot);
        return;
      }
      const job = slot.job;
      if (!job || m.id !== job.msg.id) return;
      if (slot.jobTimer) clearTimeout(slot.jobTimer);
      slot.jobTimer = null;
      slot.job = null;
      w.unref();
      if (m.kind === 'failed') job.reject(SandboxError.fromSerialized(m.error));
      else job.resolve(m);
      this.dispatch();
      this.idleCheck(slot);
    });
    w.on('error', (err: Error & { code?: string }) => {
      slot.death ??=
        err.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? new SandboxError('MEMORY_LIMIT', `preparing the module needed more than ${this.heapMb} MiB of host heap`, { heapMb: this.heapMb })
          : new SandboxError('INTERNAL', 'a rewrite worker failed', {}, err);
    });
    w.once('exit', () => {
      clearTimeout(boot);
      const wasBooted = slot.booted;
      this.drop(slot, slot.death ?? new SandboxError('INTERNAL', 'a rewrite worker exited'));
      if (!wasBooted && !this.closed) {
        for (const job of this.queue.splice(0)) this.settle(job, slot.death ?? new SandboxError('INTERNAL', 'a rewrite worker exited while starting'));
        this.queuedBytes = 0;
      }
      this.dispatch();
    });
  }

  private idleCheck(slot: Slot): void {
    if (slot.job !== null || this.queue.length > 0) return;
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    slot.idleTimer = setTimeout(() => void this.retire(slot, new SandboxError('INSTANCE_DEAD', 'the rewrite worker retired')), this.idleMs);
    slot.idleTimer.unref();
  }

  /** Terminate a worker; its job (if any) fails with `reason`. */
  private async retire(slot: Slot, reason: SandboxError): Promise<void> {
    slot.death ??= reason;
    this.drop(slot, reason);
    // A worker still being created (no Worker object yet) is never started: spawn() sees `closed`.
    if (slot.worker) await slot.worker.terminate();
  }

  private drop(slot: Slot, reason: SandboxError): void {
    if (!this.slots.delete(slot)) return;
    if (slot.jobTimer) clearTimeout(slot.jobTimer);
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    const job = slot.job;
    slot.job = null;
    if (job) {
      if (!this.closed) this.replaced++;
      job.reject(slot.death ?? reason);
    }
  }

  private settle(job: Job, err: SandboxError): void {
    if (job.waitTimer) clearTimeout(job.waitTimer);
    job.reject(err);
  }
}
