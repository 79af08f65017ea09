import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cGuest, wat } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';

const engine = testEngine();

test('a WASI hello world prints its line, its arguments and only the env it was given', async () => {
  const r = await engine.run(cGuest('hello'), { argv: ['one', 'two words'], env: { WHO: 'tester' } });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(r.exitCode, 0);
  assert.equal(r.stdout, 'hello from a wasm guest\narg 1: one\narg 2: two words\nWHO=tester\n');
  assert.equal(r.stderr, '');
  assert.equal(r.profile, 'compute');
  assert.deepEqual(r.warnings, []);
  assert.ok(r.memoryBytes > 0 && r.durationMs >= 0 && r.fuelUsed > 0);
});

test('a guest environment is empty unless the operator passes variables', async () => {
  const r = await engine.run(cGuest('hello'));
  assert.equal(r.stdout, 'hello from a wasm guest\n');
});

test('WASI proc_exit(7) gives exit code 7 and keeps the guest stderr', async () => {
  const r = await engine.run(cGuest('exit7'));
  assert.equal(r.ok, false);
  assert.equal(r.exitCode, 7);
  assert.equal(r.error?.code, 'GUEST_EXIT');
  assert.equal(r.stderr, 'exiting with 7\n');
});

test('unreachable is GUEST_TRAP', async () => {
  const r = await engine.run(await wat('unreachable'), { invoke: 'run' });
  assert.equal(r.error?.code, 'GUEST_TRAP');
  assert.match(r.error!.message, /unreachable/);
});

test('exports are invoked with typed arguments and results', async () => {
  const m = await wat('noop');
  assert.equal((await engine.run(m, { invoke: 'add', args: [2, 3] })).result, 5);
  assert.equal((await engine.run(m, { invoke: 'add', args: ['0x10', '-1'] })).result, 15);
  assert.equal((await engine.run(m, { invoke: 'add64', args: ['9007199254740993', '1'] })).result, '9007199254740994');
  assert.equal((await engine.run(m, { invoke: 'add64', args: [2n, 3n] })).result, 5);
  assert.equal((await engine.run(m, { invoke: 'half', args: [3] })).result, 1.5);
  assert.equal((await engine.run(m, { invoke: 'noop' })).result, null);
});

test('bad invocations are POLICY_INVALID, not crashes', async () => {
  const m = await wat('noop');
  assert.equal((await engine.run(m, { invoke: 'nope' })).error?.code, 'POLICY_INVALID');
  assert.equal((await engine.run(m, { invoke: 'add', args: [1] })).error?.code, 'POLICY_INVALID');
  assert.equal((await engine.run(m, { invoke: 'add', args: ['x', 1] })).error?.code, 'POLICY_INVALID');
  assert.equal((await engine.run(m, { invoke: 'add', args: [2 ** 40, 1] })).error?.code, 'POLICY_INVALID');
  assert.equal((await engine.run(m)).error?.code, 'POLICY_INVALID', 'no _start and no --invoke');
  assert.equal((await engine.run(m, { invoke: 'noop', tenant: '../etc' })).error?.code, 'POLICY_INVALID');
});

test('garbage bytes are INVALID_MODULE', async () => {
  const r = await engine.run(new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 1, 5, 0]));
  assert.equal(r.error?.code, 'INVALID_MODULE');
  assert.equal((await engine.run(new Uint8Array([1, 2, 3]))).error?.code, 'INVALID_MODULE');
});

test('session_info answers {id, tenant, profile} and nothing else', async () => {
  const r = await engine.run(await wat('session'), { profile: 'minimal', tenant: 'acme', id: 'job-1' });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.deepEqual(JSON.parse(r.stdout), { id: 'job-1', tenant: 'acme', profile: 'minimal' });
});

test('membrane.log lines land on the captured stderr by default', async () => {
  const r = await engine.run(await wat('log'), { invoke: 'log_n', args: [2] });
  assert.equal(r.result, 2);
  assert.equal(r.stderr, '[info] ping\n[info] ping\n');
});

test('with an onLog hook, log lines travel to the host over the sync channel', async () => {
  const lines: string[] = [];
  const e = testEngine({ poolSize: 1, onLog: (l) => lines.push(`${l.tenant}/${l.instance}/${l.level}/${l.message}`) });
  const r = await e.run(await wat('log'), { invoke: 'log_n', args: [3], tenant: 't1', id: 'i1' });
  assert.equal(r.result, 3);
  assert.equal(r.stderr, '');
  assert.deepEqual(lines, ['t1/i1/info/ping', 't1/i1/info/ping', 't1/i1/info/ping']);
});

test('many concurrent fresh runs all complete', async () => {
  const m = await wat('noop');
  const rs = await Promise.all(Array.from({ length: 40 }, (_, i) => engine.run(m, { invoke: 'add', args: [i, 1] })));
  assert.deepEqual(rs.map((r) => r.result), Array.from({ length: 40 }, (_, i) => i + 1));
});
