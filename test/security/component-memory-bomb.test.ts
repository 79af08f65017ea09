// The space wall for components: the C memory bomb (test/fixtures/c/membomb.c) wrapped as a
// command component grows its core module's memory until the cap, which traps: MEMORY_LIMIT.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { component } from '../helpers/components.ts';

const engine = testEngine({ poolSize: 1 });

test('a component allocating forever is stopped at the memory cap with MEMORY_LIMIT', async () => {
  const r = await engine.run(component('membomb'), { memoryBytes: 16 * 1024 * 1024 });
  assert.equal(r.error?.code, 'MEMORY_LIMIT', JSON.stringify(r.error));
  assert.ok(r.memoryBytes <= 16 * 1024 * 1024, `memoryBytes ${r.memoryBytes}`);
  assert.doesNotMatch(r.stdout, /malloc failed/, 'a grow past the cap traps, it does not return -1');
});
