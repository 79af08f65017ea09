/**
 * The budget stops runaways: a long loop, bulk fills charged by size (refused before the work
 * when the fuel cannot cover them), a spinning start function, and a guest that catches the
 * host's exhaustion exception.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { instrumentFuel } from '../../../src/wasm/index.ts';
import { wat } from '../../helpers/wat.ts';
import { fuelWat } from './fixtures.ts';
import { FuelExhausted, Meter, instantiateMetered, metered } from './host.ts';
import { LOAD_SLACK_MS } from '../../helpers/timing.ts';

function exhausts(f: () => unknown): FuelExhausted {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof FuelExhausted, `expected FuelExhausted, got ${String(e)}`);
    return e;
  }
  assert.fail('expected the budget to run out');
}

test('a loop of 1e9 iterations with a budget of 1e6 is stopped quickly, within one block of the budget', async () => {
  for (const chunk of [1000, 65536, 1e6]) {
    const m = metered(await fuelWat('runaway'), { budget: 1e6, chunk });
    const t = performance.now();
    const e = exhausts(() => m.call('spin', 1e9));
    assert.ok(performance.now() - t < LOAD_SLACK_MS);
    // The loop header block [local.get i32.const i32.sub local.tee br_if] costs 5.
    assert.ok(e.fuelUsed >= 1e6 && e.fuelUsed < 1e6 + 5, `fuelUsed ${e.fuelUsed}`);
    assert.equal(m.meter.used(), e.fuelUsed);
  }
});

test('fills of 60 MB in a loop exhaust a budget of 1e9 through their size charges', async () => {
  const m = metered(await fuelWat('runaway'), { budget: 1e9, chunk: 1e6 });
  const e = exhausts(() => m.call('fill_forever'));
  // Each fill charges ceil(60e6 / 8) = 7.5e6, so about 133 fills fit in the budget.
  assert.ok(e.fuelUsed >= 1e9 && e.fuelUsed < 1e9 + 7.5e6 + 10, `fuelUsed ${e.fuelUsed}`);
});

test('a single 60 MB fill with too little fuel is refused before it writes a byte', async () => {
  const m = metered(await fuelWat('runaway'), { budget: 7.4e6, chunk: 1e6 });
  const e = exhausts(() => m.call('fill_once', 1000));
  assert.ok(e.fuelUsed > 7.4e6);
  const mem = new Uint8Array((m.exports['memory'] as WebAssembly.Memory).buffer);
  assert.equal(mem[1000], 0);
  assert.equal(mem[1000 + 59_999_999], 0);
  // With enough fuel the same call does the work: 4 + 7.5e6 units.
  const rich = metered(await fuelWat('runaway'), { budget: 7.6e6, chunk: 1e6 });
  assert.deepEqual(rich.call('fill_once', 1000), { result: undefined, fuel: 5 + 7.5e6 });
  assert.equal(new Uint8Array((rich.exports['memory'] as WebAssembly.Memory).buffer)[1000], 255);
});

test('a start function that spins forever is stopped during instantiation', async () => {
  const r = instrumentFuel(await wat('spin-start'));
  const meter = new Meter(1e5, 1000);
  exhausts(() => instantiateMetered(r.bytes, meter));
  assert.ok(meter.used() >= 1e5);
});

test('catching the exhaustion exception with catch_all does not buy more work', async () => {
  const m = metered(await fuelWat('runaway'), { budget: 1e6, chunk: 1000 });
  const t = performance.now();
  const e = exhausts(() => m.call('catch_and_retry'));
  assert.ok(performance.now() - t < LOAD_SLACK_MS);
  // $forever's deficit was written to the global before refill threw, so the catcher's own
  // loop header finds the counter negative and asks again; the meter keeps refusing.
  assert.ok(e.fuelUsed >= 1e6 && e.fuelUsed < 1e6 + 10, `fuelUsed ${e.fuelUsed}`);
  assert.ok(m.meter.refills <= 1000 + 3, `refills ${m.meter.refills}`);
});
