/** Test helper: one engine per test file, closed when the file's tests end. */

import { after } from 'node:test';
import { createEngine, type Engine, type EngineOptions } from '../../src/index.ts';
import { tempDir } from './tmp.ts';

/**
 * The module cache of the test engines, so tests never touch ~/.membrane. Under the test scripts
 * (scripts/with-tmpdir.mjs) every test process of a run shares one, inside the run's TMPDIR and
 * removed with it (MEMBRANE_TEST_RUN_CACHE): the lanes' interpreters (CPython, QuickJS) and the
 * fixtures are rewritten once per run, not once per file — the cache is made for engine processes
 * sharing it (src/storage/cache-dir.ts). A file run on its own (or with the variable empty) gets a
 * private one, removed when its process ends (tempDir): left behind, one per test file and run
 * (up to a few hundred MB each), they once filled this machine's disk. A test about the cache
 * itself makes its own directory.
 */
export const TEST_CACHE = process.env['MEMBRANE_TEST_RUN_CACHE'] || tempDir('membrane-test-cache-');

export function testEngine(options: EngineOptions = {}): Engine {
  const engine = createEngine({ poolSize: 2, cacheDir: TEST_CACHE, ...options });
  after(() => engine.close());
  return engine;
}
