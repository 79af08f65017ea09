// engine.start with a component (src/engine/component-instance.ts): a persistent instance of
// test/fixtures/components/counter (no wasi:cli/run; exports `membrane:fixtures/tally` and
// `adds`) whose calls keep its state, each under the instance's walls — time, fuel, memory.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { transpileCount } from '../../src/lanes/component/index.ts';
import { component } from '../helpers/components.ts';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-component-instance-');
// The spins below are to end at their 300 ms deadline: at compute's own 1e9 fuel an idle fast
// machine can burn through it first (FUEL_EXHAUSTED), so the operator raises compute's fuel and
// only the deadline can end them. The fuel wall is checked with a budget of its own.
const SPIN_FUEL = { compute: { fuel: 1e13 } };
const engine = testEngine({ poolSize: 1, operatorLimits: SPIN_FUEL });
const T = 'membrane:fixtures/tally';

test('start, call an export again and again with its state kept, read it through other exports, stop', async () => {
  const inst = await engine.start('tally-1', component('counter'), { profile: 'compute' });
  try {
    const totals = [];
    for (const n of [5, 10, -3]) {
      const r = await inst.call(`${T}#add`, [n]);
      assert.equal(r.ok, true, JSON.stringify(r.error));
      assert.ok(r.fuelUsed > 0 && r.fuelUsed < 1000, `fuel of one call: ${r.fuelUsed}`);
      totals.push(r.result);
    }
    assert.deepEqual(totals, [5, 15, 12]);
    assert.equal((await inst.call('adds')).result, 3, 'a top-level export');
    assert.equal((await inst.call('tally#total')).result, 12, 'the interface by its short name');
    const shown = await inst.call(`${T}#show`);
    assert.equal(shown.stdout, 'total 12\n', 'each call has its own captured stdout');
    assert.equal((await inst.call(`${T}#show`)).stdout, 'total 12\n');
    const info = engine.info('tally-1');
    assert.equal(info.state, 'running');
    assert.equal(info.calls, 7);
  } finally {
    await inst.stop();
  }
  assert.equal((await inst.call(`${T}#total`)).error?.code, 'INSTANCE_DEAD');
});

test('what does not cross is refused by name: an unknown export, a string argument, a receipt', async () => {
  const inst = await engine.start('tally-2', component('counter'), { profile: 'compute' });
  try {
    assert.equal((await inst.call('no-such')).error?.code, 'POLICY_INVALID');
    assert.equal((await inst.call(`${T}#add`, ['5'])).error?.code, 'POLICY_INVALID');
    assert.equal((await inst.call(`${T}#total`, [], { receipt: true })).error?.code, 'POLICY_INVALID');
    assert.equal((await inst.call(`${T}#add`, [1])).result, 1, 'the refusals changed nothing');
  } finally {
    await inst.stop();
  }
});

test('walls per call: a spin times out (the instance retires), fuel runs out, memory.grow past the cap traps', async () => {
  const fuel = await engine.start('tally-fuel', component('counter'), { profile: 'compute' });
  try {
    const r = await fuel.call(`${T}#spin`, [], { fuel: 100_000 });
    assert.equal(r.error?.code, 'FUEL_EXHAUSTED');
    assert.equal(r.fuelUsed, 100_000);
    const mem = await fuel.call(`${T}#grow`, [4096]); // 256 MiB more, past compute's 64 MiB
    assert.equal(mem.error?.code, 'MEMORY_LIMIT', JSON.stringify(mem));
  } finally {
    await fuel.stop();
  }
  const spin = await engine.start('tally-spin', component('counter'), { profile: 'compute' });
  await spin.call(`${T}#add`, [7]);
  const t0 = performance.now();
  const r = await spin.call(`${T}#spin`, [], { timeoutMs: 300 });
  assert.equal(r.error?.code, 'TIMEOUT');
  assert.ok(performance.now() - t0 < 5_000);
  assert.equal((await spin.call(`${T}#total`)).error?.code, 'INSTANCE_DEAD', 'a runaway\'s state is not trusted: retired');
  await spin.stop();
  // The pool's thread was not taken by the runaway: a fresh run goes on.
  assert.equal((await engine.run(component('hello'))).ok, true);
});

test("onTimeout 'restart': after a runaway the instance restarts with fresh state", async () => {
  const restarting = testEngine({ poolSize: 1, onTimeout: 'restart', operatorLimits: SPIN_FUEL });
  const inst = await restarting.start('tally-r', component('counter'), { profile: 'compute' });
  try {
    await inst.call(`${T}#add`, [9]);
    assert.equal((await inst.call(`${T}#spin`, [], { timeoutMs: 300 })).error?.code, 'TIMEOUT');
    assert.equal((await inst.call(`${T}#total`)).result, 0);
  } finally {
    await inst.stop();
  }
});

test('the world is checked before anything is transpiled or runs: kv under compute is LINK_UNSATISFIED', async () => {
  const before = transpileCount();
  await assert.rejects(engine.start('kv-1', component('kv'), { profile: 'compute' }), (e: unknown) => e instanceof SandboxError && e.code === 'LINK_UNSATISFIED' && /membrane:engine\/kv@0\.1\.0/.test(e.message));
  assert.equal(transpileCount(), before);
  assert.equal(engine.stats().instances, 0);
});
