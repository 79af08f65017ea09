/**
 * Golden fuel counts: each fixture's exact fuelUsed, computed by hand from the cost model
 * (src/wasm/fuel/cost.ts: 1 per instruction, +1 per call, size charges) and the basic-block rules
 * (src/wasm/fuel/scan.ts). In the comments, a block is written [instructions] = cost; `end`,
 * `else`, `br_if`… count in the block they end; block/loop/if count in the block before them;
 * code after br/br_table/return/throw/return_call is dead and never charged.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fuelWat } from './fixtures.ts';
import { metered } from './host.ts';

async function load(name: string, imports: WebAssembly.Imports = {}): Promise<ReturnType<typeof metered>> {
  return metered(await fuelWat(name), { imports });
}

test('straight-line code: one block', async () => {
  const m = await load('straight');
  // [local.get i32.const i32.mul i32.const i32.add end] = 6
  assert.deepEqual(m.call('run', 4), { result: 13, fuel: 6 });
  // taken br_if to the function label: [i32.const local.get br_if] = 3
  assert.deepEqual(m.call('leave_early', 1), { result: 9, fuel: 3 });
  // not taken: 3 + [drop i32.const end] = 3 + 3
  assert.deepEqual(m.call('leave_early', 0), { result: 4, fuel: 6 });
});

test('if/else: each arm is its own block', async () => {
  const m = await load('branches');
  // [local.get if] = 2, then [i32.const local.get i32.add else] = 4, after [i32.const i32.add end] = 3
  assert.deepEqual(m.call('run', 1), { result: 12, fuel: 2 + 4 + 3 });
  // 2 + else arm [i32.const end] = 2 + 3
  assert.deepEqual(m.call('run', 0), { result: 21, fuel: 2 + 2 + 3 });
  // [local.get if] = 2, then [i32.const local.set end] = 3, after [local.get end] = 2
  assert.deepEqual(m.call('noelse', 1), { result: 5, fuel: 2 + 3 + 2 });
  assert.deepEqual(m.call('noelse', 0), { result: 0, fuel: 2 + 2 });
});

test('a counted loop: the header block is charged on every iteration', async () => {
  const m = await load('loop');
  // [block] = 1, [loop] = 1, header [local.get local.get i32.ge_u br_if] = 4 (n + 1 times),
  // body [local.get local.get i32.add local.set local.get i32.const i32.add local.set br] = 9
  // (n times); after br: [end] is dead; [end] of $done is never reached by fall-through but is
  // its own block, skipped by br_if $done; after it [local.get end] = 2.
  // total = 1 + 1 + 4(n + 1) + 9n + 2 = 13n + 8
  assert.deepEqual(m.call('run', 10), { result: 45, fuel: 13 * 10 + 8 });
  assert.deepEqual(m.call('run', 0), { result: 0, fuel: 8 });
  // spin: [loop] = 1, header [local.get i32.const i32.sub local.tee br_if] = 5 (n times),
  // [end] (loop) = 1, [end] = 1: 5n + 3
  assert.deepEqual(m.call('spin', 3), { result: undefined, fuel: 18 });
});

test('nested loops', async () => {
  const m = await load('nested');
  // [loop] = 1; outer header [i32.const local.set loop] = 3 (n times); inner header
  // [local.get i32.const i32.add local.set local.get i32.const i32.add local.tee local.get
  // i32.lt_u br_if] = 11 (n² times); [end] = 1 (n times); [local.get i32.const i32.add local.tee
  // local.get i32.lt_u br_if] = 7 (n times); [end] = 1; [local.get end] = 2.
  // total = 11n² + 11n + 4
  assert.deepEqual(m.call('run', 3), { result: 9, fuel: 11 * 9 + 11 * 3 + 4 });
  assert.deepEqual(m.call('run', 1), { result: 1, fuel: 26 });
});

test('br_table dispatch', async () => {
  const m = await load('dispatch');
  // [block] [block] [block] = 3, [local.get br_table] = 2: 5 before the dispatch
  // $a: [i32.const i32.const i32.add return] = 4
  assert.deepEqual(m.call('run', 0), { result: 101, fuel: 5 + 4 });
  // $b: [i32.const return] = 2
  assert.deepEqual(m.call('run', 1), { result: 200, fuel: 5 + 2 });
  // $c (and the default): [i32.const i32.const i32.mul i32.const i32.add end] = 6
  assert.deepEqual(m.call('run', 2), { result: 300, fuel: 5 + 6 });
  assert.deepEqual(m.call('run', 99), { result: 300, fuel: 5 + 6 });
  // leave: [block] = 1, [i32.const local.get br_table] = 3; to $a: [i32.const i32.add end] = 3
  assert.deepEqual(m.call('leave', 0), { result: 8, fuel: 1 + 3 + 3 });
  // straight out of the function through br_table's second target
  assert.deepEqual(m.call('leave', 1), { result: 7, fuel: 1 + 3 });
});

test('calls: recursion, host imports, tail calls, call_indirect, the start function', async () => {
  const ticks: number[] = [];
  const m = await load('calls', { env: { tick: () => ticks.push(ticks.length) } });
  // start: [i32.const global.set end] = 3, charged during instantiation
  assert.equal(m.meter.used(), 3);
  // fact(n < 2) = [local.get i32.const i32.lt_u if] 4 + [i32.const else] 2 + [end] 1 = 7
  // fact(n ≥ 2) = 4 + [local.get local.get i32.const i32.sub call(+1) i32.mul end] 8 + [end] 1
  //             + fact(n − 1) = 13 + fact(n − 1);  fact(5) = 4 × 13 + 7 = 59
  // run = [local.get call(+1) end] 4 + fact
  assert.deepEqual(m.call('run', 5), { result: 120, fuel: 4 + 59 });
  assert.deepEqual(m.call('run', 1), { result: 1, fuel: 4 + 7 });
  // [call(+1) call(+1) call(+1) end] = 7
  assert.deepEqual(m.call('ticks'), { result: undefined, fuel: 7 });
  assert.deepEqual(ticks, [0, 1, 2]);
  // down(0) = [local.get i32.eqz if] 3 + [i32.const else] 2 + [end] 1 = 6
  // down(n > 0) = 3 + [local.get i32.const i32.sub return_call(+1)] 5 + down(n − 1)
  // tail(3) = [local.get call(+1) end] 4 + 3 × 8 + 6
  assert.deepEqual(m.call('tail', 3), { result: 0, fuel: 4 + 24 + 6 });
  // indirect = [local.get local.get call_indirect(+1) end] 5 + callee
  assert.deepEqual(m.call('indirect', 5, 0), { result: 120, fuel: 5 + 59 });
  assert.deepEqual(m.call('indirect', 3, 1), { result: 0, fuel: 5 + 30 });
  assert.deepEqual(m.call('started'), { result: 1, fuel: 2 });
});

test('bulk memory and grows are charged by size', async () => {
  const m = await load('bulk');
  // fill = [i32.const i32.const local.get memory.fill end] 5 + ceil(n / 8)
  assert.deepEqual(m.call('fill', 100), { result: undefined, fuel: 5 + 13 });
  assert.deepEqual(m.call('fill', 0), { result: undefined, fuel: 5 });
  assert.deepEqual(m.call('fill', 8), { result: undefined, fuel: 5 + 1 });
  assert.deepEqual(m.call('fill', 9), { result: undefined, fuel: 5 + 2 });
  assert.deepEqual(m.call('fill', 65536), { result: undefined, fuel: 5 + 8192 });
  assert.deepEqual(m.call('copy', 17), { result: undefined, fuel: 5 + 3 });
  assert.deepEqual(m.call('init', 32), { result: undefined, fuel: 5 + 4 });
  const mem = new Uint8Array((m.exports['memory'] as WebAssembly.Memory).buffer);
  assert.equal(String.fromCharCode(...mem.subarray(200, 204)), '0123');
  assert.equal(mem[100], 171);
  // grow = [local.get memory.grow end] 3 + 64 × pages
  assert.deepEqual(m.call('grow', 2), { result: 1, fuel: 3 + 128 });
  assert.deepEqual(m.call('grow', 0), { result: 3, fuel: 3 });
  // tgrow = [ref.null local.get table.grow end] 4 + n;  tfill = [i32.const ref.null local.get table.fill end] 5 + n
  assert.deepEqual(m.call('tgrow', 5), { result: 1, fuel: 4 + 5 });
  assert.deepEqual(m.call('tfill', 6), { result: undefined, fuel: 5 + 6 });
  assert.equal(m.stats.bulkSites, 6);
});

test('exception handling: charges survive unwinding', async () => {
  const m = await load('eh');
  // [try] 1, [local.get call(+1) i32.const catch] 5 (charged whole on entry), thrower
  // [local.get throw] 2, handler [i32.const i32.add end] 3, [end] 1
  assert.deepEqual(m.call('eh', 41), { result: 42, fuel: 1 + 5 + 2 + 3 + 1 });
  // $mid has no EH (counter in a local): [local.get call(+1) i32.const drop end] 6 is spilled
  // to the global before it calls the thrower, so the unwind does not lose it.
  // [try] 1, [local.get call(+1) i32.const catch_all] 5, mid 6, thrower 2, [i32.const end] 2, [end] 1
  assert.deepEqual(m.call('unwind', 7), { result: -1, fuel: 1 + 5 + 6 + 2 + 2 + 1 });
});

test('a custom cost model scales static and size charges', async () => {
  const bytes = await fuelWat('bulk');
  const m = metered(bytes, { costs: { instruction: 2, memoryBytesPerUnit: 3, memoryPage: 1 } });
  assert.deepEqual(m.call('fill', 100), { result: undefined, fuel: 5 * 2 + 34 });
  assert.deepEqual(m.call('grow', 1), { result: 1, fuel: 3 * 2 + 1 });
  const calls = metered(await fuelWat('calls'), { costs: { call: 10 }, imports: { env: { tick: () => {} } } });
  assert.deepEqual(calls.call('ticks'), { result: undefined, fuel: 3 * 11 + 1 });
});

test('branches out of loops: outlined refills renumber labels, counts are unchanged', async () => {
  const m = await load('labels');
  // escape: [block] 1, [loop $a] 1, $a header [loop $b] 1 (again each time br_table picks $a),
  // $b header [local.get i32.const i32.add local.tee local.get i32.ge_u br_if] 7 (n times),
  // [local.get i32.const i32.rem_u br_table] 4 (n − 1 times), after $out [local.get end] 2;
  // the ends after br_table are dead. n = 20: $a is re-entered for i = 6 and 13.
  assert.deepEqual(m.call('escape', 20), { result: 20, fuel: 3 + 7 * 20 + 4 * 19 + 2 + 2 });
  // result: [loop] 1, header [local.get i32.const i32.add local.tee local.get local.get i32.lt_u
  // br_if] 8 (n times), [end] 1, [end] 1: 8n + 3
  assert.deepEqual(m.call('result', 5), { result: 5, fuel: 8 * 5 + 3 });
  // pair: [loop] 1, header 9 (n times), [end] 1, [i32.add end] 2
  assert.deepEqual(m.call('pair', 4), { result: 7, fuel: 1 + 9 * 4 + 1 + 2 });
  // param (the loop takes a parameter; its refill stays inline): [i32.const loop] 2, header
  // [i32.const i32.add local.tee local.get local.get i32.lt_u br_if] 7 (n times), [end] 1, [end] 1
  assert.deepEqual(m.call('param', 5), { result: 5, fuel: 2 + 7 * 5 + 2 });
  // find: [loop] 1; header [local.get local.get i32.eq if] 4; for i < n also
  // [local.get i32.const i32.add local.set i32.const local.get i32.const i32.gt_u br_if] 9 and
  // [drop br] 2; at i = n [local.get i32.const i32.add return] 4.
  assert.deepEqual(m.call('find', 5), { result: 105, fuel: 1 + 15 * 5 + 8 });
  // n > 50: br_if 1 leaves the function with 7 once i reaches 51 (i = 0..50 run the header and the
  // 9-unit block; the 2-unit block runs for i = 0..49).
  assert.deepEqual(m.call('find', 100), { result: 7, fuel: 1 + 51 * 13 + 50 * 2 });
});
