/**
 * Where the worker threads' code lives: `dist/worker.cjs` and `dist/rewrite-worker.cjs`, bundled from src/ by
 * scripts/bundle.mjs whenever a source is newer (plain JS boots a worker in ~40 ms; a TypeScript
 * loader in each worker costs ~300 ms).
 */

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

let cached: Promise<{ worker: string; rewriteWorker: string }> | null = null;

/** The directory of Membrane's package.json (src/ or dist/ alike). */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'membrane') return dir;
      } catch {
        // keep walking
      }
    }
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find the membrane package root');
    dir = up;
  }
}

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
