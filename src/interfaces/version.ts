/**
 * Membrane's version: package.json's, found by walking up from this module to the first
 * package.json that declares the `membrane` bin, so it holds from src/ under tsx and from a
 * bundle in dist/ alike. `membrane --version` prints it; `/metrics` reports it in build info.
 *
 * Does not protect against: a package.json edited by hand; it is a label, not an attestation.
 */

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | null = null;

export function version(): string {
  if (cached !== null) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      try {
        const pkg = JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown; bin?: unknown };
        if (typeof pkg.version === 'string' && typeof pkg.bin === 'object' && pkg.bin !== null && 'membrane' in pkg.bin) return (cached = pkg.version);
      } catch {
        // not ours; keep walking
      }
    }
    const up = dirname(dir);
    if (up === dir) return (cached = 'unknown');
    dir = up;
  }
}
