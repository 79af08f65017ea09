/**
 * The JS lane's wasm (worker side): QuickJS from `@jitl/quickjs-wasmfile-release-sync`, rewritten
 * by our fuel instrumenter (src/wasm/fuel) and compiled once per worker pool — a replacement
 * worker is handed the compiled module instead of rewriting it again.
 *
 * The rewritten bytes are cached on disk like the engine's modules
 * (`<cacheDir>/rewritten/quickjs-<sha256 of input + rewriter version>.wasm`, written atomically
 * with mode 0600); an entry that fails to compile is discarded and rebuilt.
 *
 * Does not protect against: a local user who can write the cache directory (it must be private to
 * the engine's user, like `$MEMBRANE_HOME`).
 */

import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FUEL_REWRITER_VERSION, instrumentFuel } from '../../wasm/fuel/index.ts';

export async function loadInstrumentedQuickJS(wasmPath: string, cacheDir: string | null): Promise<WebAssembly.Module> {
  const stock = new Uint8Array(readFileSync(wasmPath));
  const key = createHash('sha256').update(stock).update(`fuel:${FUEL_REWRITER_VERSION}`).digest('hex');
  const file = cacheDir ? join(cacheDir, 'rewritten', `quickjs-${key}.wasm`) : null;
  if (file) {
    try {
      return await WebAssembly.compile(new Uint8Array(readFileSync(file)));
    } catch {
      rmSync(file, { force: true });
    }
  }
  const bytes = instrumentFuel(stock).bytes as Uint8Array<ArrayBuffer>;
  if (file) {
    try {
      mkdirSync(join(file, '..'), { recursive: true, mode: 0o700 });
      const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
      writeFileSync(tmp, bytes, { mode: 0o600 });
      renameSync(tmp, file);
    } catch {
      // A cache that cannot be written only costs a rewrite next time.
    }
  }
  return WebAssembly.compile(bytes);
}
