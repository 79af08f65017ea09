// Fail closed: an unknown profile runs with the least privilege, says so and is audited; strict refuses.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { wat } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';

test('--profile bogus runs under compute with a warning', async () => {
  const engine = testEngine({ poolSize: 1 });
  const r = await engine.run(await wat('noop'), { invoke: 'add', args: [1, 2], profile: 'bogus' });
  assert.equal(r.ok, true);
  assert.equal(r.profile, 'compute');
  assert.deepEqual(r.warnings, ['unknown profile "bogus": running under "compute"']);
  // compute has no kv: the fallback really is the least-privileged world.
  assert.equal((await engine.run(await wat('kv-import'), { invoke: 'run', profile: 'bogus' })).error?.code, 'LINK_UNSATISFIED');
});

test('strictProfiles makes an unknown profile POLICY_INVALID', async () => {
  const engine = testEngine({ poolSize: 1, strictProfiles: true });
  const r = await engine.run(await wat('noop'), { invoke: 'noop', profile: 'bogus' });
  assert.equal(r.error?.code, 'POLICY_INVALID');
});

test('the fallback leaves an audit record naming what was asked for and what ran', async () => {
  const events: { tenant: string; instance: string; kind: string; detail: Record<string, unknown> }[] = [];
  const engine = testEngine({ poolSize: 1, brokers: { audit: () => ({ append: (e) => void events.push(e) }) } });
  await engine.run(await wat('noop'), { invoke: 'add', args: [1, 2], profile: 'root', tenant: 'acme', id: 'probe-1' });
  await engine.run(await wat('noop'), { invoke: 'add', args: [1, 2], profile: 'minimal', tenant: 'acme' });
  assert.deepEqual(events, [{ tenant: 'acme', instance: 'probe-1', kind: 'profile-fallback', detail: { requested: 'root', ran: 'compute' } }]);
});
