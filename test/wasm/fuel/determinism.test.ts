/**
 * Determinism: the same module and inputs use the same fuel on every run, whatever the chunk size
 * the host grants (chunks change when refills happen, never what is charged).
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { cModule } from '../helpers.ts';
import { fuelWat } from './fixtures.ts';
import { metered } from './host.ts';

type Call = readonly [name: string, ...args: number[]];

const CHUNKS = [1, 7, 1000, 1e9];

const SCRIPTS: Record<string, readonly Call[]> = {
  straight: [['run', 4], ['leave_early', 0], ['leave_early', 1]],
  branches: [['run', 0], ['run', 1], ['noelse', 1]],
  loop: [['run', 100], ['spin', 1000]],
  nested: [['run', 12]],
  dispatch: [['run', 0], ['run', 1], ['run', 5], ['leave', 0], ['leave', 1]],
  calls: [['run', 10], ['ticks'], ['tail', 50], ['indirect', 6, 0], ['indirect', 6, 1]],
  bulk: [['fill', 1000], ['copy', 333], ['init', 7], ['grow', 1], ['tgrow', 3], ['tfill', 4]],
  eh: [['eh', 1], ['unwind', 2]],
  labels: [['escape', 300], ['result', 40], ['pair', 9], ['param', 30], ['find', 20], ['find', 80]],
};

/** Fuel per call (and the fuel of instantiation first), on a fresh instance. */
function fuelTrace(bytes: Uint8Array, calls: readonly Call[], chunk: number): number[] {
  const m = metered(bytes, { chunk, imports: { env: { tick: () => {} } } });
  return [m.meter.used(), ...calls.map(([name, ...args]) => m.call(name, ...args).fuel)];
}

test('every golden fixture: same fuel for chunk sizes 1, 7, 1000 and 1e9, and on every run', async () => {
  for (const [name, calls] of Object.entries(SCRIPTS)) {
    const bytes = await fuelWat(name);
    const reference = fuelTrace(bytes, calls, 1000);
    for (const chunk of CHUNKS) assert.deepEqual(fuelTrace(bytes, calls, chunk), reference, `${name}, chunk ${chunk}`);
    assert.deepEqual(fuelTrace(bytes, calls, 1000), reference, `${name}, second run`);
  }
});

test('a C module (clang -O2): same fuel for every chunk size', () => {
  const calls: Call[] = [
    ['apply', 0, 7, 5],
    ['apply', 2, 7, 5],
    ['fill', 3000, 3],
    ['copy', 777],
    ['dot', 4096, 8192, 500],
  ];
  for (const build of ['kernels.c', 'kernels.c -msimd128', 'kernels.c -mbulk-memory']) {
    const bytes = cModule(build);
    const reference = fuelTrace(bytes, calls, 1000);
    assert.ok(reference.slice(1).every((f) => f > 0));
    for (const chunk of CHUNKS) assert.deepEqual(fuelTrace(bytes, calls, chunk), reference, `${build}, chunk ${chunk}`);
  }
});

test('any chunk size and any input: the loop fixture uses 13n + 8', async () => {
  const bytes = await fuelWat('loop');
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 5000 }), fc.integer({ min: 0, max: 3000 }), (chunk, n) => {
      const m = metered(bytes, { chunk });
      assert.equal(m.call('run', n).fuel, 13 * n + 8);
    }),
    { numRuns: 200 },
  );
});
