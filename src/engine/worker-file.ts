/**
 * Where the worker threads' code lives: `dist/worker.cjs` and `dist/rewrite-worker.cjs` (plain JS
 * bundles: a worker boots in ~40 ms; a TypeScript loader in each worker costs ~300 ms). Located by
 * storage/package-root.ts, which rebuilds them only in a source checkout.
 */

import { builtFiles } from '../storage/package-root.ts';

export async function locateWorker(): Promise<string> {
  return (await builtFiles()).worker;
}

/** The module rewriter's thread (engine/rewrite/worker.ts). */
export async function locateRewriteWorker(): Promise<string> {
  return (await builtFiles()).rewriteWorker;
}
