/**
 * The worker pool: warm worker threads for fresh runs, and dedicated workers for persistent
 * instances, under one bound on live threads.
 *
 * Owns: spawning (from the bundled worker file), keeping `size` workers warm, handing one out per
 * job, and replacing a worker that was terminated (timeout) or died. Invariant: live workers
 * never exceed `maxWorkers`; a waiter for a worker waits at most its call's own timeout (and
 * never past `acquireTimeoutMs`) and then fails with OVERLOADED — a declared, retryable refusal:
 * nothing ran — rather than queueing forever; a worker is handed out once the housekeeping
 * of its last job is done (or `acquireTimeoutMs` passed), so that work never eats a job's time;
 * a waiter whose caller's signal aborts leaves the queue at once (CANCELLED, nothing ran).
 *
 * Does not protect against: the host running out of memory because the operator allowed many
 * workers with large guest memories; size the pool for the machine.
 */

import { SandboxError } from '../errors.ts';
import { WorkerHandle, type WorkerLimits } from './bridge/worker-handle.ts';
import { cancelled } from '../lanes/controls.ts';
import type { EngineConfig } from './options.ts';

export interface PoolConfig {
  readonly file: () => Promise<string>;
  readonly size: number;
  readonly maxWorkers: number;
  readonly limits: WorkerLimits;
  readonly acquireTimeoutMs: number;
}

/** The pool an engine runs with: its configured sizes and worker limits. */
export function poolConfigFor(config: EngineConfig, file: () => Promise<string>): PoolConfig {
  return {
    file,
    size: config.poolSize,
    maxWorkers: config.maxWorkers,
    acquireTimeoutMs: 30_000,
    limits: { heapMb: config.workerHeapMb, stackMb: config.workerStackMb, spinMs: config.spinMs, idleWaitMs: 1_000 },
  };
}

interface Waiter {
  resolve: (h: WorkerHandle) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

export class WorkerPool {
  private idle: WorkerHandle[] = [];
  private live = 0;
  private spawning = 0;
  private waiters: Waiter[] = [];
  private closed = false;
  private readonly all = new Set<WorkerHandle>();
  /** Workers terminated because their job overran or they died: each one was replaced. */
  replaced = 0;

  constructor(private readonly config: PoolConfig) {}

  /** Start the warm workers (idempotent; failures surface on acquire). */
  warm(): void {
    while (!this.closed && this.idle.length + this.spawning < this.config.size && this.live + this.spawning < this.config.maxWorkers) {
      this.spawnOne();
    }
  }

  get liveWorkers(): number {
    return this.live;
  }

  /**
   * A worker for one fresh run. When every worker is busy (at `maxWorkers`, none starting) it
   * waits at most `waitMs` (the call's own timeout) for one to be free, then OVERLOADED; a worker
   * still starting for it (a cold pool, a replacement) is waited for up to `acquireTimeoutMs`.
   * `signal` aborting before a worker is handed out rejects with CANCELLED.
   */
  async acquire(waitMs = this.config.acquireTimeoutMs, signal?: AbortSignal): Promise<WorkerHandle> {
    if (this.closed) throw new SandboxError('INSTANCE_DEAD', 'the engine is closed');
    if (signal?.aborted) throw cancelled();
    const bound = Math.max(1, Math.min(waitMs, this.config.acquireTimeoutMs));
    const h = this.takeIdle();
    if (h) {
      this.warm();
      return this.ready(h, bound);
    }
    if (this.live + this.spawning < this.config.maxWorkers) this.spawnOne();
    const starting = this.spawning > this.waiters.length;
    return this.waitForWorker(starting ? this.config.acquireTimeoutMs : bound, signal).then((w) => this.ready(w, bound));
  }

  /**
   * A worker for one fresh run at once, without waiting: an idle one that has finished its last
   * job's housekeeping (newest first, as `acquire` takes them), or null — then `acquire`.
   */
  takeReady(signal?: AbortSignal): WorkerHandle | null {
    if (this.closed || signal?.aborted) return null;
    for (let i = this.idle.length - 1; i >= 0; i--) {
      const h = this.idle[i]!;
      if (h.alive && h.channel.isHousekept) {
        this.idle.splice(i, 1);
        this.warm();
        return h;
      }
    }
    return null;
  }

  /**
   * `h` once it has finished the housekeeping of its last job (closing that job's file VFS, see
   * worker/main.ts), so a job's deadline never includes it; waits at most `boundMs` (the call's
   * own timeout, or `acquireTimeoutMs`), after which the job is posted anyway (the worker takes
   * it when it is done).
   */
  private async ready(h: WorkerHandle, boundMs = this.config.acquireTimeoutMs): Promise<WorkerHandle> {
    await h.channel.housekept(boundMs);
    return h;
  }

  private waitForWorker(waitMs: number, signal?: AbortSignal): Promise<WorkerHandle> {
    return new Promise<WorkerHandle>((resolve, reject) => {
      const leave = (err: Error): void => {
        this.waiters = this.waiters.filter((w) => w.timer !== timer);
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        reject(err);
      };
      const onAbort = (): void => leave(cancelled());
      const timer = setTimeout(() => {
        leave(new SandboxError('OVERLOADED', `every guest worker is busy: none became free within the call's ${Math.round(waitMs)} ms; nothing ran`, { maxWorkers: this.config.maxWorkers, waitedMs: Math.round(waitMs) }));
      }, waitMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push({
        resolve: (h) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(h);
        },
        reject: (e) => {
          signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
        timer,
      });
    });
  }

  /**
   * A worker for a persistent instance: it leaves the pool's accounting (the instance owns and
   * terminates it; the engine bounds instances separately) and the pool refills.
   */
  async acquireDedicated(): Promise<WorkerHandle> {
    if (this.closed) throw new SandboxError('INSTANCE_DEAD', 'the engine is closed');
    const idle = this.takeIdle();
    const h = idle ? await this.ready(idle) : await WorkerHandle.spawn(await this.config.file(), this.config.limits);
    if (this.all.delete(h)) this.live--;
    this.warm();
    return h;
  }

  /**
   * Take back a worker `acquireDedicated` handed out (a parked interpreter's, after its one call
   * ended by itself): kept for fresh runs while the pool is below `maxWorkers`, else ended.
   */
  adopt(h: WorkerHandle): void {
    if (!h.alive || this.closed || this.all.has(h) || this.live + this.spawning >= this.config.maxWorkers) {
      if (!this.all.has(h)) void h.terminate().catch(() => {});
      return;
    }
    this.all.add(h);
    this.live++;
    this.give(h);
  }

  /** Return a healthy worker after a fresh run. */
  release(h: WorkerHandle): void {
    if (!h.alive || this.closed) {
      void this.discard(h);
      return;
    }
    this.give(h);
  }

  /** Terminate a worker (runaway, stopped instance) and keep the pool at size. */
  async discard(h: WorkerHandle): Promise<void> {
    this.replaced++;
    this.idle = this.idle.filter((x) => x !== h);
    await h.terminate().catch(() => {});
    if (this.all.delete(h)) this.live--;
    if (!this.closed) {
      this.warm();
      if (this.waiters.length && this.live + this.spawning < this.config.maxWorkers) this.spawnOne();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.reject(new SandboxError('INSTANCE_DEAD', 'the engine is closed'));
    }
    this.waiters = [];
    const all = [...this.all];
    this.idle = [];
    await Promise.all(all.map((h) => h.terminate().catch(() => {})));
    this.all.clear();
    this.live = 0;
  }

  private takeIdle(): WorkerHandle | undefined {
    // Newest first, but one still closing its last job's storage only when no other is free: a
    // job handed to it would wait for that housekeeping (bounded by its own timeout).
    for (let i = this.idle.length - 1; i >= 0; i--) {
      const h = this.idle[i]!;
      if (h.alive && h.channel.isHousekept) {
        this.idle.splice(i, 1);
        return h;
      }
    }
    while (this.idle.length) {
      const h = this.idle.pop()!;
      if (h.alive) return h;
      if (this.all.delete(h)) this.live--;
    }
    return undefined;
  }

  private give(h: WorkerHandle): void {
    const w = this.waiters.shift();
    if (w) {
      clearTimeout(w.timer);
      w.resolve(h);
    } else {
      this.idle.push(h);
    }
  }

  private spawnOne(): void {
    this.spawning++;
    this.config
      .file()
      .then((file) => WorkerHandle.spawn(file, this.config.limits))
      .then(
        (h) => {
          this.spawning--;
          if (this.closed) {
            void h.terminate();
            return;
          }
          this.live++;
          this.all.add(h);
          void h.whenExited().then(() => {
            if (this.all.delete(h)) this.live--;
            this.idle = this.idle.filter((x) => x !== h);
          });
          this.give(h);
        },
        (err: unknown) => {
          this.spawning--;
          const w = this.waiters.shift();
          if (w) {
            clearTimeout(w.timer);
            w.reject(err instanceof Error ? err : new SandboxError('INTERNAL', 'a guest worker failed to start'));
          }
        },
      );
  }
}
