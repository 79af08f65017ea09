/** Test helper: one engine per test file, closed when the file's tests end. */

import { after } from 'node:test';
import { createEngine, type Engine, type EngineOptions } from '../../src/index.ts';

export function testEngine(options: EngineOptions = {}): Engine {
  const engine = createEngine({ poolSize: 2, ...options });
  after(() => engine.close());
  return engine;
}
