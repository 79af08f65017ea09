/**
 * The Python lane's wasm (DESIGN §8 layer 5): Pyodide's `pyodide.asm.wasm` with its memory
 * maximum capped (src/wasm/limits.ts) and fuel-instrumented (src/wasm/fuel), written once per
 * machine to `$MEMBRANE_HOME/cache/python/<key>.wasm` so children only compile it.
 *
 * Owns: locating the Pyodide package (its core ships in node_modules/pyodide; nothing is ever
 * fetched), the cache key (input SHA-256, both rewriters' versions, the ceiling), atomic writes
 * (temp + rename, mode 0600) and discarding a corrupt entry.
 *
 * Invariant: the file handed to a child is either this rewrite of the package's own bytes or
 * nothing (stock Pyodide, fuel off, reported as a warning by the lane). The static memory ceiling
 * is `PYTHON_MEMORY_CEILING_BYTES`; each call's own, lower cap is enforced in the child by
 * refusing `emscripten_resize_heap`.
 *
 * Does not protect against: a local user who can write the cache directory (it must be private
 * to the engine's user, like `$MEMBRANE_HOME` itself).
 */

import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { FUEL_REWRITER_VERSION, applyLimits, instrumentFuel } from '../../wasm/index.ts';
import { SandboxError } from '../../errors.ts';
import { readCachedWasm, writeCacheFile } from '../../storage/cache-file.ts';
import { membraneHome } from '../../storage/sqlite.ts';

/** Static maximum of the guest's linear memory, whatever a call asks for: 1 GiB. */
export const PYTHON_MEMORY_CEILING_BYTES = 1024 * 1024 * 1024;
/** Bump when this file's rewrite of the same input could change. */
const PREP_VERSION = 1;
const PAGE = 65536;

/** The Pyodide package directory (holds pyodide.mjs, pyodide.asm.wasm, python_stdlib.zip). */
export function pyodideDir(): string {
  const req = createRequire(import.meta.url);
  // The package's `exports` hides package.json; resolve its entry and take the directory.
  return dirname(req.resolve('pyodide'));
}

export interface PreparedWasm {
  /** The instrumented module's path, or null when fuel is off. */
  readonly file: string | null;
  readonly fromCache: boolean;
  /** A directory to delete at close (cache disabled), or null. */
  readonly scratch: string | null;
}

/** `cacheDir` false: write to a private temporary directory removed at close. */
export function preparePyodideWasm(cacheDir: string | false | undefined): PreparedWasm {
  const src = readFileSync(join(pyodideDir(), 'pyodide.asm.wasm'));
  const hash = createHash('sha256').update(src).update(`:${FUEL_REWRITER_VERSION}:${PREP_VERSION}:${PYTHON_MEMORY_CEILING_BYTES}`).digest('hex');
  const scratch = cacheDir === false ? mkdtempSync(join(tmpdir(), 'membrane-py-')) : null;
  const dir = scratch ?? join(typeof cacheDir === 'string' ? cacheDir : join(membraneHome(), 'cache'), 'python');
  const file = join(dir, `pyodide-${hash.slice(0, 32)}.wasm`);
  if (scratch === null && readCachedWasm(file)) return { file, fromCache: true, scratch };
  const limited = applyLimits(new Uint8Array(src), {
    maxMemoryPages: PYTHON_MEMORY_CEILING_BYTES / PAGE,
    maxTableElements: 1 << 20,
    trapOnGrowFailure: false,
  });
  // applyLimits validated the interpreter as shipped; its output of a valid module is valid.
  const { bytes } = instrumentFuel(limited.bytes, { validated: true });
  if (!writeCacheFile(file, bytes)) throw new SandboxError('INTERNAL', 'could not write the prepared Python interpreter');
  return { file, fromCache: false, scratch };
}

