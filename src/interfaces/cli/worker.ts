/**
 * `membrane worker --redis URL [--concurrency N] [--queue NAME]`: join a remote-tier fleet
 * (src/engine/remote-worker.ts): serve jobs from the BullMQ queue on a local engine with the
 * same walls as `membrane run`. Prints "membrane worker: ID serving QUEUE" on stdout once it is
 * taking jobs; SIGTERM/SIGINT finish the jobs in hand and exit 0.
 *
 * Invariant: the Redis URL is never printed (it may hold a password).
 * Does not protect against: a Redis reachable by others (see src/fabric/remote/queue.ts).
 */

import { UsageError, parse, str } from './args.ts';

export async function workerCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { redis: { type: 'string' }, concurrency: { type: 'string' }, queue: { type: 'string' } });
  if (positionals.length > 0) throw new UsageError('worker takes no arguments');
  const redis = str(values['redis']) ?? process.env['MEMBRANE_REDIS_URL'];
  if (redis === undefined || !/^rediss?:\/\/\S+$/.test(redis)) throw new UsageError('worker needs --redis redis://HOST:PORT (or $MEMBRANE_REDIS_URL)');
  const c = str(values['concurrency']) ?? '2';
  const concurrency = Number(c);
  if (!/^\d+$/.test(c) || concurrency < 1 || concurrency > 256) throw new UsageError('--concurrency must be 1..256');
  const queue = str(values['queue']);
  if (queue !== undefined && !/^[A-Za-z0-9._-]{1,64}$/.test(queue)) throw new UsageError('--queue must be 1..64 characters of [A-Za-z0-9._-]');
  const { startRemoteWorker } = await import('../../engine/remote-worker.ts');
  const w = await startRemoteWorker({ redis, concurrency, ...(queue ? { queue } : {}) });
  process.stdout.write(`membrane worker: ${w.id} serving ${queue ?? 'membrane-runs'} (concurrency ${concurrency})\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await w.close();
  return 0;
}
