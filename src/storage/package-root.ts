/**
 * Where Membrane's own files are: the directory of its package.json, found by walking up from
 * this module (from src/ under tsx, from dist/ in a bundle). Commands' committed wasm, the
 * bundler script and the dashboard's files are located from it.
 * Invariant: the directory returned holds a package.json named "membrane"; otherwise it throws.
 * Does not protect against: an operator replacing files inside the package — they are trusted.
 */

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

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
