// The space wall on instances: an engine runs at most maxInstances persistent instances (each owns
// a thread), and concurrent starts cannot race past the bound or share an id.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { testEngine } from '../helpers/engine.ts';
import { wat } from '../helpers/wat.ts';

test('concurrent starts can neither share an id nor exceed maxInstances', async () => {
  const small = testEngine({ poolSize: 1, maxInstances: 3 });
  const m = await wat('noop');
  const same = await Promise.allSettled([small.start('x', m), small.start('x', m)]);
  assert.equal(same.filter((r) => r.status === 'fulfilled').length, 1);
  const many = await Promise.allSettled([1, 2, 3, 4].map((i) => small.start(`n${i}`, m)));
  const refused = many.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  assert.equal(refused.length, 2, 'x plus two more fill the three slots');
  assert.ok(refused.every((r) => r.reason instanceof SandboxError && r.reason.code === 'MEMORY_LIMIT'));
  assert.equal(small.stats().instances, 3);
});
