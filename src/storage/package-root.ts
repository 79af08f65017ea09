/**
 * Where Membrane's own files are: the directory of its package.json, found by walking up from
 * this module (from src/ under tsx, from dist/ in the built package), and the built files in
 * dist/ that run in their own threads or processes (the guest worker, the rewriter's worker, the
 * JS lane's worker).
 *
 * Invariant: the directory returned holds a package.json named "membrane"; otherwise it throws.
 * Running from dist/ (an installed package) nothing is ever written into the package: a missing
 * built file is an error naming it. Only a source checkout running from src/ rebuilds stale
 * outputs (scripts/bundle.mjs), so a fresh clone works after `npm ci`.
 *
 * Does not protect against: an operator replacing files inside the package — they are trusted.
 */

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

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

/** The files in dist/ that run in a thread or process of their own. */
export interface BuiltFiles {
  readonly worker: string;
  readonly rewriteWorker: string;
  readonly jsWorker: string;
  /** The os_process tier's child entry. */
  readonly osChild: string;
}

const BUILT: Readonly<Record<keyof BuiltFiles, string>> = {
  worker: 'worker.cjs',
  rewriteWorker: 'rewrite-worker.cjs',
  jsWorker: 'js-lane-worker.cjs',
  osChild: 'os-child.mjs',
};

/** True when this module runs from the built package (dist/), not from the TypeScript sources. */
export function runningFromDist(): boolean {
  return dirname(fileURLToPath(import.meta.url)) === join(packageRoot(), 'dist');
}

let built: Promise<BuiltFiles> | null = null;
let jsOnly: Promise<BuiltFiles> | null = null;

/**
 * The built files. From dist/ they are only looked up; from src/ the stale ones are rebuilt first
 * (`jsLaneOnly` rebuilds just the JS lane's worker, so that lane starts while another target is broken).
 */
export function builtFiles(options: { jsLaneOnly?: boolean } = {}): Promise<BuiltFiles> {
  if (runningFromDist()) {
    built ??= Promise.resolve().then(() => {
      const dir = join(packageRoot(), 'dist');
      const files = Object.fromEntries(Object.entries(BUILT).map(([k, f]) => [k, join(dir, f)])) as unknown as BuiltFiles;
      for (const [k, f] of Object.entries(BUILT)) {
        if (!existsSync(files[k as keyof BuiltFiles])) throw new Error(`the membrane package is incomplete: dist/${f} is missing (reinstall it)`);
      }
      return files;
    });
    return built;
  }
  const load = async (fn: 'ensureBuilt' | 'ensureJsLaneBuilt'): Promise<BuiltFiles> => {
    const mod = (await import(pathToFileURL(join(packageRoot(), 'scripts/bundle.mjs')).href)) as Record<typeof fn, () => Promise<BuiltFiles>>;
    return mod[fn]();
  };
  if (options.jsLaneOnly === true) return (jsOnly ??= load('ensureJsLaneBuilt'));
  return (built ??= load('ensureBuilt'));
}
