// A fresh run remembers the policy its limit options resolve to and, per module and policy, the
// link plan and the spec's fixed part (src/engine/fresh-run.ts). A call whose options differ from
// an earlier call's — in caps, limits, profile, tenant or id, on a new object or on the same object
// changed in place — never runs with what was remembered for the other; refusals are never remembered.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { watText, wat } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';
import { RunMemo, MAX_MEMO_POLICIES } from '../../src/engine/fresh-run.ts';
import { resolveEngine } from '../../src/engine/options.ts';

const KV_LINKED = `(module
  (import "membrane" "kv_get" (func $kv_get (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "run") (result i32) (i32.const 7)))`;

test('caps narrowed on the same options object (in place, or replaced) unlink what they dropped', async () => {
  const engine = testEngine({ poolSize: 1 });
  const kv = await watText(KV_LINKED);
  const caps = ['kv'];
  const opts = { invoke: 'run', profile: 'minimal', caps };
  assert.equal((await engine.run(kv, opts)).ok, true);
  caps.splice(0, 1, 'vfs');
  assert.equal((await engine.run(kv, opts)).error?.code, 'LINK_UNSATISFIED');
  opts.caps = ['kv'];
  assert.equal((await engine.run(kv, opts)).ok, true);
  assert.equal((await engine.run(kv, { ...opts, caps: [] })).error?.code, 'LINK_UNSATISFIED');
  assert.equal((await engine.run(kv, { ...opts, profile: 'compute', caps: undefined })).error?.code, 'LINK_UNSATISFIED');
});

test('caps that read differently on each access cannot plant a wider policy under a narrower key', async () => {
  const engine = testEngine({ poolSize: 1 });
  const kv = await watText(KV_LINKED);
  let reads = 0;
  const shifty = { invoke: 'run', profile: 'minimal', get caps() { return reads++ === 0 ? ['vfs'] : ['kv']; } };
  const r = await engine.run(kv, shifty);
  assert.ok(r.ok || r.error?.code === 'LINK_UNSATISFIED');
  // Whatever that call resolved, a plain ['vfs'] never links kv, and a plain ['kv'] does.
  assert.equal((await engine.run(kv, { invoke: 'run', profile: 'minimal', caps: ['vfs'] })).error?.code, 'LINK_UNSATISFIED');
  assert.equal((await engine.run(kv, { invoke: 'run', profile: 'minimal', caps: ['kv'] })).ok, true);
});

test('fuel and memory limits changed on the same options object are the ones enforced', async () => {
  const engine = testEngine({ poolSize: 1 });
  const count = await wat('count');
  const opts: { invoke: string; args: bigint[]; fuel?: number } = { invoke: 'count', args: [100_000n] };
  assert.equal((await engine.run(count, opts)).ok, true);
  opts.fuel = 1_000;
  assert.equal((await engine.run(count, opts)).error?.code, 'FUEL_EXHAUSTED');
  delete opts.fuel;
  assert.equal((await engine.run(count, opts)).ok, true);

  const big = await wat('big-initial'); // 2000 initial pages, 125 MiB
  const mem: { invoke: string; profile: string; memoryBytes?: number } = { invoke: 'run', profile: 'posix' };
  assert.equal((await engine.run(big, mem)).ok, true);
  mem.memoryBytes = 64 * 1024 * 1024;
  assert.equal((await engine.run(big, mem)).error?.code, 'MEMORY_LIMIT');
});

test('tenant and id are the call\'s own, whatever ran before with the same module and options', async () => {
  const engine = testEngine({ poolSize: 1 });
  const session = await wat('session');
  const opts = { tenant: 'alpha', id: 'first' };
  const a = JSON.parse((await engine.run(session, opts)).stdout) as { id: string; tenant: string };
  assert.deepEqual([a.id, a.tenant], ['first', 'alpha']);
  opts.tenant = 'beta';
  opts.id = 'second';
  const b = JSON.parse((await engine.run(session, opts)).stdout) as { id: string; tenant: string };
  assert.deepEqual([b.id, b.tenant], ['second', 'beta']);
});

test('a refused call is refused every time (nothing remembered), and each fallback run is audited', async () => {
  const events: { kind: string; instance: string }[] = [];
  const engine = testEngine({ poolSize: 1, brokers: { audit: () => ({ append: (e) => void events.push(e) }) } });
  const noop = await wat('noop');
  for (let i = 0; i < 3; i++) {
    assert.equal((await engine.run(noop, { invoke: 'noop', caps: ['bogus'] })).error?.code, 'POLICY_INVALID');
    assert.equal((await engine.run(noop, { invoke: 'noop', fuel: -1 })).error?.code, 'POLICY_INVALID');
    assert.equal((await engine.run(noop, { invoke: 'noop', fuel: Number.NaN })).error?.code, 'POLICY_INVALID');
    assert.equal((await engine.run(noop, { invoke: 'noop', caps: [42 as unknown as string] })).error?.code, 'POLICY_INVALID');
  }
  for (let i = 0; i < 3; i++) assert.equal((await engine.run(noop, { invoke: 'noop', profile: 'root', id: `probe-${i}` })).profile, 'compute');
  assert.deepEqual(events.filter((e) => e.kind === 'profile-fallback').map((e) => e.instance), ['probe-0', 'probe-1', 'probe-2']);
});

test('the policy memo holds at most MAX_MEMO_POLICIES entries, and each answer is its own options\'', () => {
  const memo = new RunMemo(resolveEngine({ cacheDir: false }));
  for (let i = 1; i <= MAX_MEMO_POLICIES * 3; i++) assert.equal(memo.policy({ timeoutMs: i }).timeoutMs, i);
  assert.ok((memo as unknown as { policies: Map<string, unknown> }).policies.size <= MAX_MEMO_POLICIES);
  assert.equal(memo.policy({ timeoutMs: 1 }).timeoutMs, 1);
  assert.deepEqual(memo.policy({ profile: 'minimal', caps: ['kv', 'vfs'] }).caps, ['vfs', 'kv']);
  assert.deepEqual(memo.policy({ profile: 'minimal', caps: ['kv'] }).caps, ['kv']);
});

test('an operator\'s limits object changed after the engine started does not reach its runs', async () => {
  const operatorLimits = { compute: { fuel: 1_000 } };
  const engine = testEngine({ poolSize: 1, operatorLimits });
  const count = await wat('count');
  assert.equal((await engine.run(count, { invoke: 'count', args: [100_000n] })).error?.code, 'FUEL_EXHAUSTED');
  operatorLimits.compute.fuel = 1e12;
  assert.equal((await engine.run(count, { invoke: 'count', args: [100_000n] })).error?.code, 'FUEL_EXHAUSTED');
});

test("a caller changing one result's warnings changes no later result (the remembered policy is shared, and frozen)", async () => {
  const engine = testEngine({ poolSize: 1 });
  const kv = await watText(KV_LINKED);
  // An unknown profile falls back with a warning; the second call resolves to the same remembered policy.
  const opts = { invoke: 'run', profile: 'no-such-profile', caps: ['kv'] };
  const failed = await engine.run(kv, { ...opts, caps: ['vfs'] });
  const ok = await engine.run(kv, opts);
  for (const r of [failed, ok]) (r.warnings as string[]).push('planted by the caller');
  for (const r of [await engine.run(kv, { ...opts, caps: ['vfs'] }), await engine.run(kv, opts)]) {
    assert.ok(!r.warnings.includes('planted by the caller'), JSON.stringify(r.warnings));
  }
  const memo = new RunMemo(resolveEngine({}));
  const p = memo.policy({ profile: 'compute' });
  assert.ok(Object.isFrozen(p) && Object.isFrozen(p.caps) && Object.isFrozen(p.warnings));
});
