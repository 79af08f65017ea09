// Attack: read what the previous guest left in memory. A worker hands a fresh run of a small
// module a recycled memory (engine/worker/memory-pool.ts) instead of making one. A guest fills
// its memory with a pattern (a tenant's secret), and the next guest on the same worker — another
// tenant, another module of the same memory shape — scans every byte of its own memory for it.
// It must find only zeros and its own data segments, see exactly the size it declared (a memory
// that grew is never reused), and a guest that traps mid-instantiation leaves nothing behind.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { watText } from '../helpers/wat.ts';

// One worker: every run below lands on the same thread, so the pool is the one under attack.
const engine = testEngine({ poolSize: 1, maxWorkers: 1, maxWorkersPerTenant: 1 });
test.after(() => engine.close());

/** Fill every byte of memory 0 (all of its pages) with 0xA5, optionally after growing by `grow` pages. */
const writer = (grow: number) => `(module
  (memory (export "memory") 1)
  (func (export "run") (result i32) (local $i i32) (local $end i32)
    (if (i32.gt_u (i32.const ${grow}) (i32.const 0)) (then (drop (memory.grow (i32.const ${grow})))))
    (local.set $end (i32.mul (memory.size) (i32.const 65536)))
    (block $done (loop $l
      (br_if $done (i32.ge_u (local.get $i) (local.get $end)))
      (i32.store8 (local.get $i) (i32.const 0xA5))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $l)))
    (memory.size)))`;

/** Count non-zero bytes outside its data segment (bytes 16..19 are "mine"); returns count * 1000 + pages. */
const reader = `(module
  (memory (export "memory") 1)
  (data (i32.const 16) "mine")
  (func (export "run") (result i32) (local $i i32) (local $n i32) (local $end i32)
    (local.set $end (i32.mul (memory.size) (i32.const 65536)))
    (block $done (loop $l
      (br_if $done (i32.ge_u (local.get $i) (local.get $end)))
      (if (i32.and (i32.ne (i32.load8_u (local.get $i)) (i32.const 0))
                   (i32.or (i32.lt_u (local.get $i) (i32.const 16)) (i32.ge_u (local.get $i) (i32.const 20))))
        (then (local.set $n (i32.add (local.get $n) (i32.const 1)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $l)))
    (i32.add (i32.mul (local.get $n) (i32.const 1000)) (memory.size))))`;

/** Writes the pattern from its start function, then traps on an out-of-bounds load. */
const trapper = `(module
  (memory (export "memory") 1)
  (func $start (local $i i32)
    (block $done (loop $l
      (br_if $done (i32.ge_u (local.get $i) (i32.const 65536)))
      (i32.store8 (local.get $i) (i32.const 0xA5))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $l)))
    (drop (i32.load (i32.const 70000))))
  (start $start)
  (func (export "run") (result i32) (i32.const 0)))`;

async function readBack(): Promise<number> {
  const r = await engine.run(await watText(reader), { invoke: 'run', tenant: 'victim' });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  return Number(r.result);
}

test('a recycled memory is all zero, holds the new data segment, and has the declared size', async () => {
  for (let round = 0; round < 3; round++) {
    const w = await engine.run(await watText(writer(0)), { invoke: 'run', tenant: 'attacker' });
    assert.equal(w.ok, true, JSON.stringify(w.error));
    assert.equal(await readBack(), 1, 'no byte of the earlier guest is visible (0 non-zero bytes, 1 page)');
  }
});

test('a memory that grew is not reused: the next guest sees one page of zeros', async () => {
  const w = await engine.run(await watText(writer(3)), { invoke: 'run', tenant: 'attacker' });
  assert.equal(w.ok, true, JSON.stringify(w.error));
  assert.equal(Number(w.result), 4);
  assert.equal(await readBack(), 1);
});

test('a guest that traps in its start function after writing leaves nothing behind', async () => {
  const t = await engine.run(await watText(trapper), { invoke: 'run', tenant: 'attacker' });
  assert.equal(t.ok, false);
  assert.equal(await readBack(), 1);
});
