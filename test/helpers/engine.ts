/** Test helper: one engine per test file, closed when the file's tests end. */

import { after } from 'node:test';
import { createEngine, type Engine, type EngineOptions } from '../../src/index.ts';
import { tempDir } from './tmp.ts';

/** A private cache directory per test process, so tests never touch ~/.membrane. */
// Removed when the test process ends (tempDir): left behind, one per test file and run (up to a
// few hundred MB each, rewritten and compiled modules), they once filled this machine's disk.
export const TEST_CACHE = tempDir('membrane-test-cache-');

export function testEngine(options: EngineOptions = {}): Engine {
  const engine = createEngine({ poolSize: 2, cacheDir: TEST_CACHE, ...options });
  after(() => engine.close());
  return engine;
}
