/**
 * The remote tier's queue (DESIGN §7): BullMQ on Redis, both ends — `RemoteQueue` (submit a job,
 * wait for its one outcome) and `serveQueue` (a BullMQ Worker that hands each checked job to a
 * runner). bullmq and ioredis are imported here only, and only when a Redis URL is configured.
 *
 * Owns: the module store (bytes under their sha256, SET NX with a TTL: stored once per TTL, the
 * job carries only the hash), the queue and worker settings that make a dead worker's job
 * visible (lockDuration, stalledInterval, maxStalledCount 1), and mapping a job's end to one
 * outcome: completed → the worker's reply; failed (stalled twice, refused) → INSTANCE_DEAD or
 * the refusal's code; no end within the wait bound → TIMEOUT (the job is removed if no worker took it).
 * Invariant: a job ends exactly once (BullMQ moves it to completed or failed under its lock
 * token; a worker that lost its lock cannot complete it), and the submitter reports exactly that
 * end, once.
 *
 * Does not protect against: anyone with access to the Redis — it can read inputs, forge jobs
 * (workers check them: protocol.ts) and forge replies. Run Redis on a private network with auth.
 */

import { randomUUID } from 'node:crypto';
import { SandboxError } from '../../errors.ts';
import { checkJob, checkReply, moduleKey, sha256Hex, MAX_REMOTE_MODULE_BYTES, type RemoteJob, type RemoteReply } from './protocol.ts';

export const DEFAULT_QUEUE = 'membrane-runs';
export const DEFAULT_MODULE_TTL_S = 3600;
/** A worker's lock on a job; renewed every half of it while the worker lives. */
export const LOCK_MS = 4000;
/** How often workers look for jobs whose lock expired (a dead worker's). */
export const STALLED_INTERVAL_MS = 2000;
const PREFIX = 'membrane';

export interface RemoteQueueOptions {
  readonly redis: string;
  readonly queue?: string;
  readonly moduleTtlSeconds?: number;
}

// The packages are loaded on first use only (an engine without `remote` never imports them).
type Bull = typeof import('bullmq');
type IORedisCtor = typeof import('ioredis').Redis;
async function load(): Promise<{ bull: Bull; Redis: IORedisCtor }> {
  const [bull, io] = await Promise.all([import('bullmq'), import('ioredis')]);
  return { bull, Redis: io.Redis };
}

function connect(Redis: IORedisCtor, url: string): import('ioredis').Redis {
  const c = new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, lazyConnect: false });
  c.on('error', () => undefined); // refused/reset: ioredis reconnects; a request in flight fails on its own
  return c;
}

/** The submitting side: one Queue, one QueueEvents, one Redis connection for the module store. */
export class RemoteQueue {
  private parts: Promise<{ queue: import('bullmq').Queue; events: import('bullmq').QueueEvents; store: import('ioredis').Redis; conns: import('ioredis').Redis[] }> | null = null;
  /** Hashes stored recently (until half their TTL): not sent again. */
  private readonly stored = new Map<string, number>();
  private readonly ttl: number;

  constructor(private readonly o: RemoteQueueOptions) {
    this.ttl = o.moduleTtlSeconds ?? DEFAULT_MODULE_TTL_S;
  }

  private open() {
    return (this.parts ??= (async () => {
      const { bull, Redis } = await load();
      const name = this.o.queue ?? DEFAULT_QUEUE;
      // BullMQ never closes a connection it was handed: each is ours to disconnect (close()).
      const conns = [connect(Redis, this.o.redis), connect(Redis, this.o.redis)];
      const queue = new bull.Queue(name, { connection: conns[0]!, prefix: PREFIX });
      const events = new bull.QueueEvents(name, { connection: conns[1]!, prefix: PREFIX });
      // Each waiting run listens on both (removed when it ends): many runs in flight are normal, not a leak.
      queue.setMaxListeners(0);
      events.setMaxListeners(0);
      await events.waitUntilReady();
      return { queue, events, store: connect(Redis, this.o.redis), conns };
    })());
  }

  /** Store `bytes` under their hash unless stored within half the TTL; the hash. */
  async putModule(bytes: Uint8Array): Promise<string> {
    if (bytes.byteLength > MAX_REMOTE_MODULE_BYTES) throw new SandboxError('POLICY_INVALID', 'the module is larger than the remote tier carries (64 MiB)');
    const hash = sha256Hex(bytes);
    const now = Date.now();
    if ((this.stored.get(hash) ?? 0) > now) return hash;
    const { store } = await this.open();
    const key = moduleKey(PREFIX, hash);
    const set = await store.set(key, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), 'EX', this.ttl, 'NX');
    if (set === null) await store.expire(key, this.ttl); // already there: keep it alive
    this.stored.set(hash, now + (this.ttl * 1000) / 2);
    return hash;
  }

  /**
   * Submit a checked job and wait for its one outcome, at most `waitMs`. `signal` stops the wait
   * (the job is removed if still waiting). Errors: INSTANCE_DEAD (its worker died, and it could not
   * or may not run again), TIMEOUT / CANCELLED (the submitter stopped waiting), or the worker's refusal.
   */
  async submit(job: RemoteJob, waitMs: number, retrySafe: boolean, signal?: AbortSignal): Promise<RemoteReply> {
    checkJob(job); // what the worker will check, checked here first
    const { queue, events } = await this.open();
    const j = await queue.add('run', job, { jobId: randomUUID(), attempts: 1, removeOnComplete: { age: 300 }, removeOnFail: { age: 3600 } });
    let stop: (() => void) | undefined;
    const stopped = new Promise<never>((_, reject) => {
      const t = setTimeout(() => reject(new SandboxError('TIMEOUT', 'no remote worker finished the job in time', { waitMs })), waitMs);
      const onAbort = (): void => reject(new SandboxError('CANCELLED', 'the caller stopped waiting for the remote job'));
      signal?.addEventListener('abort', onAbort, { once: true });
      stop = () => (clearTimeout(t), signal?.removeEventListener('abort', onAbort));
    });
    try {
      return checkReply(await Promise.race([j.waitUntilFinished(events), stopped]));
    } catch (e) {
      if (e instanceof SandboxError) {
        await j.remove().catch(() => undefined); // still waiting: nobody will run it; active: left to finish on its worker
        throw e;
      }
      throw failedToError(e instanceof Error ? e.message : String(e), retrySafe);
    } finally {
      stop?.();
    }
  }

  async close(): Promise<void> {
    const p = this.parts;
    this.parts = null;
    if (!p) return;
    const { queue, events, store, conns } = await p;
    await Promise.allSettled([events.close(), queue.close()]);
    for (const c of [store, ...conns]) c.disconnect();
  }
}

/** A failed job's reason → the one error the submitter reports. */
export function failedToError(reason: string, retrySafe: boolean): SandboxError {
  if (/stalled more than allowable limit|started more than allowable limit/.test(reason)) {
    return new SandboxError('INSTANCE_DEAD', retrySafe ? 'the remote worker died twice running the job' : 'the remote worker died running the job', { tier: 'remote' });
  }
  const m = /^([A-Z_]+): (.*)$/s.exec(reason);
  if (m && m[1] === 'INSTANCE_DEAD') return new SandboxError('INSTANCE_DEAD', m[2]!.slice(0, 300), { tier: 'remote' });
  if (m && m[1] === 'POLICY_INVALID') return new SandboxError('POLICY_INVALID', m[2]!.slice(0, 300));
  return new SandboxError('INTERNAL', 'the remote job failed on its worker');
}

export interface ServeOptions extends RemoteQueueOptions {
  readonly concurrency: number;
  readonly worker: string;
}

/** What a worker does with one checked job: run it, return the reply (ok or not). */
export type JobRunner = (job: RemoteJob, bytes: Uint8Array, meta: { jobId: string; attempt: number }) => Promise<RemoteReply>;

/** Join the fleet: run jobs from the queue until `close`. A job that may not run again after a death fails INSTANCE_DEAD. */
export async function serveQueue(o: ServeOptions, run: JobRunner, retrySafe: (job: RemoteJob) => boolean): Promise<{ close(): Promise<void> }> {
  const { bull, Redis } = await load();
  const store = connect(Redis, o.redis);
  const conn = connect(Redis, o.redis);
  const worker = new bull.Worker(
    o.queue ?? DEFAULT_QUEUE,
    async (j) => {
      let job: RemoteJob;
      try {
        job = checkJob(j.data);
      } catch (e) {
        throw new bull.UnrecoverableError(`POLICY_INVALID: ${(e as Error).message}`);
      }
      const attempt = Math.max(1, j.attemptsStarted ?? 1, (j.stalledCounter ?? 0) + 1);
      // A second start means the first worker died mid-run: only a grant with no lasting effects runs again.
      if (attempt > 1 && !retrySafe(job)) throw new bull.UnrecoverableError('INSTANCE_DEAD: the remote worker died running the job; its grant may have had effects, so it is not run again');
      const bytes = await store.getBuffer(moduleKey(PREFIX, job.module));
      if (!bytes || bytes.byteLength > MAX_REMOTE_MODULE_BYTES || sha256Hex(bytes) !== job.module) {
        throw new bull.UnrecoverableError('POLICY_INVALID: the job\'s module is not in the store (expired?) or does not match its hash');
      }
      return run(job, new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), { jobId: String(j.id), attempt });
    },
    { connection: conn, prefix: PREFIX, concurrency: o.concurrency, lockDuration: LOCK_MS, stalledInterval: STALLED_INTERVAL_MS, maxStalledCount: 1, name: o.worker },
  );
  worker.on('error', () => undefined); // connection blips: ioredis reconnects
  await worker.waitUntilReady();
  return {
    async close() {
      await worker.close();
      store.disconnect();
      conn.disconnect();
    },
  };
}
