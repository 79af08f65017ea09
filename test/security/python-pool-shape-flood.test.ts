// Attack: park the engine's workers away. Every parked Python interpreter holds one of the
// engine's workers, and the lane keeps interpreters per shape (memory cap, vfs or not). A caller
// may lower its memory cap to any value, so a tenant that sends Python calls each with a new
// memory cap would — if every shape were pooled — make the lane park two interpreters per value
// until no worker is left for anyone: every other call would wait and end OVERLOADED. The lane
// parks only the profiles' own shapes, and no more than its bound over all of them; an odd shape
// boots its own interpreter inside its call and parks nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { watText } from '../helpers/wat.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-py-shape-flood-');
const MAX_WORKERS = 4;
const engine = testEngine({ poolSize: 2, maxWorkers: MAX_WORKERS, maxWorkersPerTenant: MAX_WORKERS });
const internals = engine as unknown as { lanes: { get(language: 'python'): Promise<{ warm(): Promise<void>; stats(): { ready: number } }> } };

test.after(() => engine.close());

test('python calls with eight odd memory caps park nothing for them, and wasm runs still get workers', { timeout: 240_000 }, async () => {
  const lane = await internals.lanes.get('python');
  await lane.warm();
  const before = lane.stats().ready;
  assert.ok(before >= 1 && before <= 2, `the default shape is parked (${before})`);
  const MiB = 1024 * 1024;
  for (let i = 0; i < 8; i++) {
    const r = await engine.exec({ language: 'python', code: 'print(6*7)', memoryBytes: (40 + i) * MiB, timeoutMs: 20_000, tenant: 'hostile' });
    assert.equal(r.ok, true, JSON.stringify(r.error));
    assert.equal(r.stdout.trim(), '42');
  }
  await lane.warm(); // every refill the flood started has parked (or none was started)
  assert.ok(lane.stats().ready <= 4, `parked interpreters stay within the lane's bound: ${lane.stats().ready}`);
  // Every worker the flood might have parked would be missing here: these runs would wait and end OVERLOADED.
  const sleepy = await watText('(module (func (export "run") (local i32) (loop (local.set 0 (i32.add (local.get 0) (i32.const 1))) (br_if 0 (i32.lt_u (local.get 0) (i32.const 30000000))))))');
  const runs = await Promise.all(Array.from({ length: MAX_WORKERS - 2 }, () => engine.run(sleepy, { invoke: 'run', timeoutMs: 10_000, tenant: 'honest' })));
  for (const r of runs) assert.equal(r.ok, true, `an honest run got a worker: ${JSON.stringify(r.error)}`);
});
