// Attack: park a worker thread by sleeping — poll_oneoff on a one-hour clock (relative, or an
// absolute timestamp far in the future) — now that poll_oneoff is ambient. A sleep never outlasts
// the call's budget: it sleeps out what is left and the call ends TIMEOUT at the deadline.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli } from '../helpers/cli.ts';
import { FIXTURES, watText } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';
import { ERROR_TABLE } from '../../src/errors.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';

const HOME = tempDir('membrane-home-');
const HOUR_NS = 3_600_000_000_000n;

test('membrane run of a guest sleeping one hour under --timeout 1000 ends TIMEOUT after about a second', async () => {
  await runCli(['profiles'], { MEMBRANE_HOME: HOME }); // build the CLI bundle outside the timing
  const r = await runCli(['run', join(FIXTURES, 'c', 'sleeper.wasm'), '--timeout', '1000', '--json', '--', '3600000'], { MEMBRANE_HOME: HOME }, 60_000);
  const out = JSON.parse(r.stdout) as { ok: boolean; durationMs: number; error?: { code: string } };
  assert.equal(out.error?.code, 'TIMEOUT', r.stdout + r.stderr);
  assert.equal(r.code, ERROR_TABLE.TIMEOUT.exitCode);
  assert.ok(out.durationMs >= 950 && out.durationMs < 1000 + LOAD_SLACK_MS, `ended after ${out.durationMs} ms`);
  assert.ok(r.ms < 10_000, `the CLI took ${r.ms.toFixed(0)} ms`);
});

const engine = testEngine({ poolSize: 1 });

/** A guest polling one clock subscription (relative, or absolute on the realtime clock). */
const poller = (absolute: boolean) => watText(`(module
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "clock_time_get" (func $now (param i32 i64 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "run") (result i32)
    (i32.store8 (i32.const 8) (i32.const 0))            ;; tag: clock
    (i32.store (i32.const 16) (i32.const ${absolute ? 0 : 1}))  ;; realtime / monotonic
    ${absolute
      ? `(drop (call $now (i32.const 0) (i64.const 0) (i32.const 512)))
         (i64.store (i32.const 24) (i64.add (i64.load (i32.const 512)) (i64.const ${HOUR_NS})))
         (i32.store16 (i32.const 40) (i32.const 1))`
      : `(i64.store (i32.const 24) (i64.const ${HOUR_NS}))`}
    (call $poll (i32.const 0) (i32.const 256) (i32.const 1) (i32.const 600))))`);

for (const absolute of [false, true]) {
  test(`poll_oneoff on a ${absolute ? 'realtime timestamp an hour ahead' : 'relative one-hour clock'} ends TIMEOUT at the deadline, under every profile`, async () => {
    const m = await poller(absolute);
    const r = await engine.run(m, { invoke: 'run', profile: 'compute', timeoutMs: 500 });
    assert.equal(r.error?.code, 'TIMEOUT', JSON.stringify(r));
    assert.ok(r.durationMs >= 450 && r.durationMs < 500 + LOAD_SLACK_MS, `ended after ${r.durationMs} ms`);
  });
}

test('the worker is free again after a sleep hit the deadline', async () => {
  const r = await engine.run(await watText('(module (func (export "run") (result i32) (i32.const 7)))'), { invoke: 'run' });
  assert.equal(r.result, 7);
});
