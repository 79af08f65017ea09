// Attack: get another tenant's module, or the same module under another tenant's walls, by its id.
// A pool worker holds the compiled modules it ran by a module id (engine/bridge/held-modules.ts)
// and a later fresh run of one names it by that id only. Two tenants run many different modules
// on one worker — more than it holds, so ids are forgotten and modules sent again — and each run
// must execute its own module; the same bytes prepared under two memory caps are two modules, and
// each run keeps its own cap; a forged run naming an id the worker was never given is INTERNAL,
// never some other module it holds, and one whose spec lost a wall on the way (JSON) is refused.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { watText } from '../helpers/wat.ts';
import { HELD_MODULES, HeldModules, moduleId, runMessage, type HeldRunMessage } from '../../src/engine/bridge/held-modules.ts';
import { WorkerHandle, type HostHandler } from '../../src/engine/bridge/worker-handle.ts';
import { locateWorker } from '../../src/engine/worker-file.ts';
import { PROTOCOL_VERSION } from '../../src/engine/bridge/protocol.ts';
import { fixedOf, ownText } from '../../src/engine/bridge/held-specs.ts';
import { answer, forgedSpec } from '../helpers/forged-run.ts';

// One worker: every run lands on the same thread, the one whose held modules are under attack.
const engine = testEngine({ poolSize: 1, maxWorkers: 1, maxWorkersPerTenant: 1 });


test('many modules of two tenants on one worker: every run executes its own module', async () => {
  const count = HELD_MODULES + 4;
  const modules = await Promise.all(Array.from({ length: count }, (_, i) => watText(answer(7000 + i))));
  // Forward, backward and strided passes: held ids, forgotten ids and re-sent modules interleave.
  const order = [...modules.keys(), ...[...modules.keys()].reverse(), ...[...modules.keys()].map((i) => (i * 5) % count)];
  for (const [k, i] of order.entries()) {
    const tenant = k % 2 === 0 ? 'alice' : 'mallory';
    const r = await engine.run(modules[i]!, { invoke: 'run', tenant });
    assert.equal(r.ok, true, JSON.stringify(r.error));
    assert.equal(Number(r.result), 7000 + i, `run ${k} (module ${i}, ${tenant}) executed another module`);
  }
});

test('the same bytes under two memory caps stay two modules: each run keeps its own cap', async () => {
  // Grows by 8 pages: fine under the default cap, refused under a 4-page cap.
  const grower = await watText(`(module (memory 1) (func (export "run") (result i32) (memory.grow (i32.const 8))))`);
  for (let round = 0; round < 4; round++) {
    const big = await engine.run(grower, { invoke: 'run', tenant: 'alice' });
    assert.equal(big.ok, true, JSON.stringify(big.error));
    assert.equal(Number(big.result), 1, 'under the default cap the grow succeeds (old size 1)');
    const small = await engine.run(grower, { invoke: 'run', tenant: 'mallory', memoryBytes: 4 * 65536 });
    const refused = small.ok ? Number(small.result) === -1 : small.error?.code === 'MEMORY_LIMIT';
    assert.equal(refused, true, `round ${round}: a 4-page cap let the guest grow to 9 pages: ${JSON.stringify(small)}`);
  }
});

test('module ids: one per module object, never shared; a worker forgets the least recently used', async () => {
  const bytes = await watText(answer(1));
  const a = new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>);
  const b = new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>);
  assert.equal(moduleId(a), moduleId(a));
  assert.notEqual(moduleId(a), moduleId(b), 'two module objects of the same bytes get two ids');
  const held = new HeldModules();
  const ids = Array.from({ length: HELD_MODULES + 1 }, (_, i) => 1_000_000 + i);
  for (const id of ids.slice(0, HELD_MODULES)) assert.equal(held.add(id), null);
  held.touch(ids[0]!);
  assert.equal(held.add(ids[HELD_MODULES]!), ids[1], 'the least recently used id is forgotten');
  assert.equal(held.has(ids[1]!), false);
  assert.equal(held.has(ids[0]!), true);
});

test('a run naming an id the worker was never given is INTERNAL, not another module', async () => {
  const h = await WorkerHandle.spawn(await locateWorker(), { heapMb: 64, stackMb: 4, spinMs: 0.1, idleWaitMs: 1000 });
  try {
    const mod = new WebAssembly.Module((await watText(answer(42))) as Uint8Array<ArrayBuffer>);
    const spec = forgedSpec();
    const run = { spec, entry: { kind: 'invoke' as const, export: 'run', args: [] }, budget: { ms: 5000, fuel: 1e9 } };
    const noHost: HostHandler = () => ({ v: PROTOCOL_VERSION, kind: 'host-reply', ok: false, errno: -1 });
    // The worker is given one module, then asked for an id next to it.
    h.postRun(mod, { job: 1, ...run });
    const first = await h.awaitDone(performance.now() + 5000, noHost);
    assert.equal(first.kind, 'done');
    assert.equal(first.kind === 'done' && first.frame.outcome.ok && first.frame.outcome.values[0]?.v, 42);
    const fixed = JSON.stringify(fixedOf(spec));
    const held: HeldRunMessage = { v: PROTOCOL_VERSION, kind: 'run-held', moduleId: moduleId(mod), job: 2, specId: 1e9, fixed, forgetSpec: null, own: ownText(spec)!, stdin: null, entry: run.entry, budget: run.budget, stream: false };
    h.post(held);
    const again = await h.awaitDone(performance.now() + 5000, noHost);
    assert.equal(again.kind === 'done' && again.frame.outcome.ok && again.frame.outcome.values[0]?.v, 42, 'the held module, by its own id');
    h.post({ ...held, job: 3, moduleId: moduleId(mod) + 1 });
    const forged = await h.awaitDone(performance.now() + 5000, noHost);
    assert.equal(forged.kind, 'done');
    assert.equal(forged.kind === 'done' && !forged.frame.outcome.ok && forged.frame.outcome.error.code, 'INTERNAL');
    // A wall that JSON cannot carry (an output cap of Infinity arrives as null) is refused, not run uncapped.
    h.post({ ...held, job: 4, specId: 1e9 + 1, fixed: JSON.stringify({ ...fixedOf(spec), output: { limitBytes: Infinity, failOnLimit: false } }) });
    const uncapped = await h.awaitDone(performance.now() + 5000, noHost);
    assert.equal(uncapped.kind === 'done' && !uncapped.frame.outcome.ok && uncapped.frame.outcome.error.code, 'INTERNAL');
    // The main thread never sends such a spec by id: a spec JSON would change (an operator's
    // unbounded VFS, say) goes as the full, structured-cloned message, and runs with its walls.
    const unbounded = { ...spec, vfs: null, hostWaitMs: 5000, output: { limitBytes: Number.POSITIVE_INFINITY, failOnLimit: false } };
    assert.equal(runMessage(new HeldModules(), mod, { job: 5, ...run, spec: unbounded }).kind, 'run');
    const warmHeld = new HeldModules();
    warmHeld.add(moduleId(mod));
    assert.equal(runMessage(warmHeld, mod, { job: 6, ...run, spec: unbounded }).kind, 'run');
    assert.equal(runMessage(warmHeld, mod, { job: 7, ...run }).kind, 'run-held');
  } finally {
    await h.terminate();
  }
});
