// The reach wall at link time: an import outside the guest's world fails the link, names what
// is missing and why, and the guest's start function never runs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { wat, watText } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';

const engine = testEngine();

interface Missing {
  import: string;
  cap: string | null;
  profiles: string[];
  reason: string;
}
const missingOf = (d: unknown) => (d as { missing: Missing[] }).missing;

test('membrane.kv_get under compute → LINK_UNSATISFIED naming kv and the profiles that grant it', async () => {
  const t = performance.now();
  const r = await engine.run(await wat('kv-import'), { invoke: 'run', profile: 'compute' });
  assert.equal(r.error?.code, 'LINK_UNSATISFIED');
  assert.match(r.error!.message, /membrane\.kv_get/);
  assert.match(r.error!.message, /"kv"/);
  assert.match(r.error!.message, /minimal, network, posix/);
  assert.deepEqual(missingOf(r.error!.details), [
    { import: 'membrane.kv_get', kind: 'function', cap: 'kv', profiles: ['minimal', 'network', 'posix'], reason: 'needs cap "kv", which this instance was not granted' },
  ]);
  // Its start function spins forever: LINK_UNSATISFIED before the 5 s deadline proves it never ran.
  assert.ok(performance.now() - t < LOAD_SLACK_MS);
});

test('env.system → LINK_UNSATISFIED saying no capability grants it; start never runs', async () => {
  const t = performance.now();
  const r = await engine.run(await wat('env-system'), { invoke: 'run', profile: 'posix' });
  assert.equal(r.error?.code, 'LINK_UNSATISFIED');
  assert.match(r.error!.message, /env\.system: no capability grants this/);
  assert.deepEqual(missingOf(r.error!.details)[0]?.cap, null);
  assert.ok(performance.now() - t < LOAD_SLACK_MS);
});

test('every missing import is named, not just the first', async () => {
  const m = await watText(`(module
    (import "membrane" "kv_get" (func (param i32 i32 i32 i32) (result i32)))
    (import "membrane" "http_fetch" (func (param i32 i32 i32 i32) (result i32)))
    (import "membrane" "run_command_many" (func (param i32 i32 i32 i32) (result i32)))
    (import "env" "system" (func (param i32) (result i32)))
    (func (export "run")))`);
  const r = await engine.run(m, { invoke: 'run' });
  assert.deepEqual(missingOf(r.error!.details).map((x) => [x.import, x.cap]), [
    ['membrane.kv_get', 'kv'],
    ['membrane.http_fetch', 'net'],
    ['membrane.run_command_many', 'parallel'],
    ['env.system', null],
  ]);
});

test('WASI socket calls link under every profile and with no caps, and find no socket (ENOTSOCK on stdout, EBADF elsewhere)', async () => {
  const m = await watText(`(module (import "wasi_snapshot_preview1" "sock_send" (func $send (param i32 i32 i32 i32 i32) (result i32)))
    (import "wasi_snapshot_preview1" "sock_shutdown" (func $shut (param i32 i32) (result i32)))
    (memory 1)
    (func (export "run") (result i32)
      (i32.add (i32.mul (call $send (i32.const 1) (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 0)) (i32.const 1000))
               (call $shut (i32.const 42) (i32.const 2)))))`);
  for (const opts of [{ profile: 'compute' }, { profile: 'minimal' }, { profile: 'network' }, { profile: 'posix' }, { caps: [] }]) {
    const r = await engine.run(m, { invoke: 'run', ...opts });
    assert.equal(r.ok, true, JSON.stringify(opts) + JSON.stringify(r.error));
    assert.equal(r.result, 57 * 1000 + 8, 'ENOTSOCK, then EBADF');
  }
});

test('a narrowed cap list removes imports the profile would link', async () => {
  const m = await watText(`(module (import "membrane" "run_command_many" (func (param i32 i32 i32 i32) (result i32)))
    (func (export "run")))`);
  assert.equal((await engine.run(m, { invoke: 'run', profile: 'posix' })).ok, true);
  const r = await engine.run(m, { invoke: 'run', profile: 'posix', caps: ['vfs', 'net'] });
  assert.equal(r.error?.code, 'LINK_UNSATISFIED');
  assert.equal(missingOf(r.error!.details)[0]?.cap, 'parallel');
  assert.equal((await engine.run(m, { invoke: 'run', profile: 'compute' })).error?.code, 'LINK_UNSATISFIED');
});

test('an ambient import declared with the wrong signature does not link', async () => {
  const m = await watText('(module (import "membrane" "clock_ms" (func (result i32))) (func (export "run")))');
  const r = await engine.run(m, { invoke: 'run' });
  assert.equal(r.error?.code, 'LINK_UNSATISFIED');
  assert.match(r.error!.message, /signature mismatch: Membrane provides \(\) -> i64, the module declares \(\) -> i32/);
});

test('an import of the right name but the wrong kind does not link', async () => {
  const m = await watText('(module (import "membrane" "log" (global i32)) (func (export "run")))');
  assert.equal((await engine.run(m, { invoke: 'run' })).error?.code, 'LINK_UNSATISFIED');
});
