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
import { readFileSync, rmSync } from 'node:fs';
import { readCachedWasm, writeCacheFile } from '../../storage/cache-file.ts';
import { join } from 'node:path';
import { FUEL_REWRITER_VERSION, instrumentFuel } from '../../wasm/fuel/index.ts';

export async function loadInstrumentedQuickJS(wasmPath: string, cacheDir: string | null): Promise<WebAssembly.Module> {
  const stock = new Uint8Array(readFileSync(wasmPath));
  const key = createHash('sha256').update(stock).update(`fuel:${FUEL_REWRITER_VERSION}`).digest('hex');
  const file = cacheDir ? join(cacheDir, 'rewritten', `quickjs-${key}.wasm`) : null;
  const cached = file ? readCachedWasm(file) : null;
  if (file && cached) {
    try {
      return await WebAssembly.compile(cached as Uint8Array<ArrayBuffer>);
    } catch {
      rmSync(file, { force: true });
    }
  }
  const bytes = instrumentFuel(stock).bytes as Uint8Array<ArrayBuffer>;
  if (file) writeCacheFile(file, bytes);
  return WebAssembly.compile(bytes);
}
