/**
 * Where the worker threads' code lives: `dist/worker.cjs` and `dist/rewrite-worker.cjs`, bundled from src/ by
 * scripts/bundle.mjs whenever a source is newer (plain JS boots a worker in ~40 ms; a TypeScript
 * loader in each worker costs ~300 ms).
 */

import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { packageRoot } from '../storage/package-root.ts';

let cached: Promise<{ worker: string; rewriteWorker: string }> | null = null;

function built(): Promise<{ worker: string; rewriteWorker: string }> {
  cached ??= (async () => {
    const root = packageRoot();
    const mod = (await import(pathToFileURL(join(root, 'scripts/bundle.mjs')).href)) as {
      ensureBuilt: () => Promise<{ worker: string; rewriteWorker: string }>;
    };
    return mod.ensureBuilt();
  })();
  return cached;
}

export async function locateWorker(): Promise<string> {
  return (await built()).worker;
}

/** The module rewriter's thread (engine/rewrite/worker.ts). */
export async function locateRewriteWorker(): Promise<string> {
  return (await built()).rewriteWorker;
}
