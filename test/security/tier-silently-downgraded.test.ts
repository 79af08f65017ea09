// Attack: ask for a stronger tier on a lane that cannot honour it and get the weaker one without
// being told. A kernel and a persistent instance keep one instance across calls; `os_process`
// runs one call per child and `remote` one job per worker run, so a JS caller (no types to stop
// it) asking either for them used to get a worker-thread instance silently. Now each is
// TIER_UNAVAILABLE with its reason, nothing is opened or started (the id stays free), and a word
// that is no tier is POLICY_INVALID.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { SandboxError } from '../../src/index.ts';
import { testEngine } from '../helpers/engine.ts';
import { wat as fixture } from '../helpers/wat.ts';

const engine = testEngine({ poolSize: 1 });
after(() => engine.close());

const code = (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => 'opened',
    (e: unknown) => (e instanceof SandboxError ? `${e.code}: ${e.message}` : `not a SandboxError: ${String(e)}`),
  );

test('a kernel asked for os_process or remote (worker or in process) is TIER_UNAVAILABLE, never a worker kernel', async () => {
  const bytes = await fixture('kernel');
  for (const tier of ['os_process', 'remote'] as const) {
    for (const inProcess of [false, true]) {
      const got = await code(engine.kernel(bytes, { tier, inProcess }));
      assert.match(got, new RegExp(`^TIER_UNAVAILABLE: the ${tier} tier is not available: a kernel keeps one instance across calls`), `${tier} inProcess=${inProcess}`);
    }
  }
  assert.match(await code(engine.kernel(bytes, { tier: 'machine' as never })), /^POLICY_INVALID: tier must be one of/);
  // The default and the instance tier still open.
  const k = await engine.kernel(bytes, { tier: 'instance', entry: 'copy' });
  assert.deepEqual([...(await k.call(new Uint8Array([1, 2, 3])))], [1, 2, 3]);
  await k.close();
});

test('a kernel fan-out asked for os_process is TIER_UNAVAILABLE before any input runs', async () => {
  const bytes = await fixture('kernel');
  const got = await code(engine.fanout({ kernel: bytes, inputs: ['a'], tier: 'os_process' }));
  assert.match(got, /^TIER_UNAVAILABLE: .*a kernel keeps one instance across calls/);
});

test('a persistent instance asked for os_process or remote is TIER_UNAVAILABLE and the id stays free', async () => {
  const bytes = await fixture('noop');
  for (const tier of ['os_process', 'remote'] as const) {
    const got = await code(engine.start('downgrade-me', bytes, { tier }));
    assert.match(got, new RegExp(`^TIER_UNAVAILABLE: the ${tier} tier is not available: a persistent instance keeps one instance across calls`));
    assert.equal(engine.get('downgrade-me'), undefined);
  }
  assert.match(await code(engine.start('downgrade-me', bytes, { tier: 'thread' as never })), /^POLICY_INVALID: tier must be one of/);
  const inst = await engine.start('downgrade-me', bytes, { tier: 'instance' });
  assert.equal(engine.info('downgrade-me').id, 'downgrade-me');
  await inst.stop();
});

test('an exec asked for the remote tier is TIER_UNAVAILABLE saying exec does not run there (also with Redis configured), not run on a worker', async () => {
  const withRedis = testEngine({ poolSize: 1, remote: { redis: 'redis://127.0.0.1:9' } });
  try {
    for (const e of [engine, withRedis]) {
      const r = await e.exec({ language: 'js', code: 'console.log("ran")', tier: 'remote' });
      assert.equal(r.ok, false);
      assert.equal(r.stdout, '');
      assert.equal(r.error?.code, 'TIER_UNAVAILABLE');
      assert.match(r.error?.message ?? '', /exec runs on the instance and os_process tiers/);
    }
  } finally {
    await withRedis.close();
  }
});
