/** Test helper: one engine per test file, closed when the file's tests end. */

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { createEngine, type Engine, type EngineOptions } from '../../src/index.ts';

/** A private cache directory per test process, so tests never touch ~/.membrane. */
export const TEST_CACHE = mkdtempSync(join(tmpdir(), 'membrane-test-cache-'));

export function testEngine(options: EngineOptions = {}): Engine {
  const engine = createEngine({ poolSize: 2, cacheDir: TEST_CACHE, ...options });
  after(() => engine.close());
  return engine;
}
