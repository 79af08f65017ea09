import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { wat } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';

const engine = testEngine();

test('a persistent instance keeps its state across calls and reports info()', async () => {
  const inst = await engine.start('counter', await wat('noop'), { profile: 'minimal', tenant: 'acme' });
  let fuel = 0;
  for (let i = 1; i <= 5; i++) {
    const r = await inst.call('incr');
    assert.equal(r.result, i);
    fuel += r.fuelUsed;
  }
  assert.ok(fuel > 0);
  assert.deepEqual(inst.info(), {
    id: 'counter',
    tenant: 'acme',
    profile: 'minimal',
    caps: ['vfs', 'commands', 'exec', 'kv', 'secrets', 'queue', 'tcp', 'udp', 'tls'],
    calls: 5,
    fuelUsed: fuel,
    memoryBytes: 65536,
    state: 'running',
  });
  assert.deepEqual(engine.info('counter'), inst.info());
  await inst.stop();
  assert.equal(inst.info().state, 'stopped');
  assert.equal((await inst.call('incr')).error?.code, 'INSTANCE_DEAD');
  assert.throws(() => engine.info('counter'), (e: unknown) => e instanceof SandboxError && e.code === 'INSTANCE_DEAD');
});

test('concurrent calls on one instance are serialized', async () => {
  const inst = await engine.start('serial', await wat('noop'));
  const rs = await Promise.all(Array.from({ length: 50 }, () => inst.call('incr')));
  assert.deepEqual(rs.map((r) => r.result), Array.from({ length: 50 }, (_, i) => i + 1));
  await inst.stop();
});

test('instance ids are unique', async () => {
  const inst = await engine.start('dup', await wat('noop'));
  await assert.rejects(engine.start('dup', await wat('noop')), (e: unknown) => e instanceof SandboxError && e.code === 'POLICY_INVALID');
  await inst.stop();
});

test('a start that fails to link rejects with LINK_UNSATISFIED and registers nothing', async () => {
  await assert.rejects(engine.start('kv', await wat('kv-import')), (e: unknown) => e instanceof SandboxError && e.code === 'LINK_UNSATISFIED');
  assert.equal(engine.get('kv'), undefined);
});
