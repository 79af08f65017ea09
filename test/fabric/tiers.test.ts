import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { checkTier, tierFor } from '../../src/fabric/tiers.ts';
import { wat } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';

const engine = testEngine({ poolSize: 1 });
const unavailable = (reason: RegExp) => (e: unknown) =>
  e instanceof SandboxError && e.code === 'TIER_UNAVAILABLE' && reason.test(e.message) && reason.test(String(e.details['reason']));

test('tierFor: first-party work gets its shape\'s tier; third-party escalates one rung', () => {
  assert.equal(tierFor('core', 'first-party').tier, 'instance');
  assert.equal(tierFor('kernel', 'first-party').tier, 'instance');
  assert.equal(tierFor('core', 'third-party').tier, 'os_process');
  assert.equal(tierFor('python', 'third-party').tier, 'os_process');
  assert.equal(tierFor('fanout-wide', 'first-party').tier, 'remote');
  assert.equal(tierFor('fanout-wide', 'third-party').tier, 'remote');
  assert.match(tierFor('js', 'third-party').reason, /escalated one rung from instance to os_process/);
});

test('remote without a configured Redis is TIER_UNAVAILABLE "redis not configured" — on run and on fanout', async () => {
  const r = await engine.run(await wat('noop'), { invoke: 'noop', tier: 'remote' });
  assert.equal(r.ok, false);
  assert.equal(r.error?.code, 'TIER_UNAVAILABLE');
  assert.equal(r.error?.details['reason'], 'redis not configured');
  await assert.rejects(engine.fanout({ module: await wat('noop'), inputs: ['x'], tier: 'remote' }), unavailable(/redis not configured/));
});

test('os_process with strict isolation and no bubblewrap on PATH is TIER_UNAVAILABLE "bwrap not installed"', () => {
  assert.throws(() => checkTier('os_process', { strictIsolation: true, path: '' }), unavailable(/bwrap not installed/));
});

test('os_process runs without bubblewrap unless strict isolation is asked for; a kernel fan-out on it is TIER_UNAVAILABLE, nothing runs', async () => {
  assert.equal(checkTier('os_process', { path: '' }), 'os_process');
  let ran = false;
  await assert.rejects(
    engine.fanout({ kernel: await wat('kernel'), inputs: (function* () { ran = true; yield 'x'; })(), tier: 'os_process' }),
    unavailable(/kernel/),
  );
  assert.equal(ran, false);
});

test('instance is the default tier and runs; an unknown tier is POLICY_INVALID', async () => {
  const r = await engine.run(await wat('noop'), { invoke: 'noop', tier: 'instance' });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.throws(() => checkTier('gpu'), (e: unknown) => e instanceof SandboxError && e.code === 'POLICY_INVALID');
});
