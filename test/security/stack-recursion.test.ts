// The stack wall: unbounded recursion ends the call with STACK_OVERFLOW; the worker survives.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cGuest, wat } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';

const engine = testEngine({ poolSize: 1 });

test('infinite recursion in a .wat export is STACK_OVERFLOW', async () => {
  const r = await engine.run(await wat('recurse'), { invoke: 'run', args: [0] });
  assert.equal(r.error?.code, 'STACK_OVERFLOW');
});

test('infinite recursion in a C program is STACK_OVERFLOW', async () => {
  const r = await engine.run(cGuest('recurse'));
  assert.equal(r.error?.code, 'STACK_OVERFLOW', JSON.stringify(r.error));
});

test('the same worker serves normal calls after an overflow', async () => {
  for (let i = 0; i < 3; i++) assert.equal((await engine.run(await wat('recurse'), { invoke: 'run', args: [0] })).error?.code, 'STACK_OVERFLOW');
  assert.equal((await engine.run(await wat('noop'), { invoke: 'add', args: [1, 1] })).result, 2);
});

test('a persistent instance survives its own stack overflow', async () => {
  const inst = await engine.start('deep', await wat('recurse'));
  assert.equal((await inst.call('run', [0])).error?.code, 'STACK_OVERFLOW');
  assert.equal(inst.info().state, 'running');
  await inst.stop();
});
