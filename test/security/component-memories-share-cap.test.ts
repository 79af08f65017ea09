// The space wall for a component of several core modules: the memories they define share the one
// memory cap. twomem.wat grows two memories by 3 MiB each under a 4 MiB cap: MEMORY_LIMIT, not
// 6 MiB held by one guest. Under a cap that holds both, it runs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { component } from '../helpers/components.ts';

const engine = testEngine({ poolSize: 1 });

test('two memories growing 3 MiB each under a 4 MiB cap: MEMORY_LIMIT', async () => {
  const r = await engine.run(component('twomem'), { memoryBytes: 4 * 1024 * 1024 });
  assert.equal(r.error?.code, 'MEMORY_LIMIT', JSON.stringify(r.error));
  assert.ok(r.memoryBytes <= 4 * 1024 * 1024);
});

test('the same component under a 16 MiB cap runs to the end', async () => {
  const r = await engine.run(component('twomem'), { memoryBytes: 16 * 1024 * 1024 });
  assert.equal(r.ok, true, JSON.stringify(r.error));
});

test('one memory-defining core module instantiated twice is refused before it runs: MEMORY_LIMIT', async () => {
  const r = await engine.run(component('twice'), { memoryBytes: 4 * 1024 * 1024 });
  assert.equal(r.error?.code, 'MEMORY_LIMIT', JSON.stringify(r.error));
  assert.match(r.error?.message ?? '', /instantiated twice/);
});
