// The attack: a pre-started os_process child dies (or is killed, or misbehaves) while it waits in
// the pool, so that a call is handed a dead child, or a child that wrote before its call, or the
// pool spins restarting children that never boot. A pooled child's death is noticed: it is never
// handed out, it is replaced; a child writing more than its ready line before its call is killed;
// boots that keep failing pause the refill (calls then start fresh children, as with no pool).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ChildPool } from '../../src/engine/os-process/pool.ts';
import { startChild } from '../../src/engine/os-process/spawn.ts';
import { testEngine } from '../helpers/engine.ts';
import { wat } from '../helpers/wat.ts';
import { gone, poolFull, waitGone } from '../helpers/os-pool.ts';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '../fixtures/os-process');
const OS = { tier: 'os_process', bwrapPath: '' } as const;

test('a child killed while idle in the pool is never handed out, and the pool replaces it', async () => {
  const engine = testEngine({ poolSize: 1, osProcessPool: 2 });
  const noop = await wat('noop');
  assert.equal((await engine.run(noop, { ...OS, invoke: 'noop' })).ok, true);
  const [victim, other] = await poolFull(engine, 2);
  process.kill(-victim!, 'SIGKILL'); // its whole group, as an OOM killer or an operator might
  assert.deepEqual(await waitGone([victim!]), []);
  const used: number[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await engine.run(noop, { ...OS, invoke: 'noop', onChildSpawn: (p) => used.push(p) });
    assert.equal(r.ok, true, JSON.stringify(r.error));
  }
  assert.ok(!used.includes(victim!), 'the dead child was handed to a call');
  assert.ok(used.includes(other!), 'the live pooled child was not used');
  const refilled = await poolFull(engine, 2);
  assert.ok(!refilled.includes(victim!) && !refilled.includes(other!), 'the pool was not refilled with new children');
});

test('a pooled child that writes more than its ready line before its call is killed (never handed out)', async () => {
  const child = startChild({ entry: join(FIXTURES, 'chatter.mjs'), readDirs: [], bwrap: null, addons: false, shareNet: false });
  child.hold(); // this test waits on it (an idle child does not keep the process alive)
  await assert.rejects(child.ready); // no ready line: killed at the idle cap
  assert.deepEqual(await waitGone([child.pid]), []);
  assert.equal(child.alive, false);
});

test('boots that keep failing pause the refill: no spawn loop, and take() says "start a fresh child"', async () => {
  let spawned = 0;
  // An entry that exits at once (Node cannot load it): every boot fails.
  const pool = new ChildPool({ size: 2, boot: () => 'x\n', bootMs: 5_000 }, async () => (spawned++, join(FIXTURES, 'no-such-entry.mjs')));
  const plan = { readDirs: [], bwrap: null, addons: false, shareNet: false, warm: 'run' } as const;
  for (let i = 0; i < 5; i++) {
    assert.equal(await pool.take(plan), null);
    pool.refill(plan); // as the lane does when its (fresh) call ends
  }
  assert.ok(spawned > 0, 'the pool never tried to boot');
  for (let i = 0; i < 100 && pool.size > 0; i++) await new Promise((r) => setTimeout(r, 50));
  const after = spawned;
  await new Promise((r) => setTimeout(r, 600));
  assert.equal(await pool.take(plan), null);
  pool.refill(plan);
  await new Promise((r) => setTimeout(r, 300));
  assert.ok(spawned - after <= 1, `the pool kept respawning: ${after} → ${spawned}`);
  assert.ok(spawned <= 8, `too many boots for 3 failures: ${spawned}`);
  assert.equal(pool.size, 0);
  const left = pool.children().map((c) => c.pid);
  await pool.close();
  assert.ok(left.every(gone));
});

test('a call that takes a booting pooled child and is cancelled is CANCELLED, and the child is gone', async () => {
  const engine = testEngine({ poolSize: 1, osProcessPool: 1 });
  const spin = await wat('spin');
  assert.equal((await engine.run(await wat('noop'), { ...OS, invoke: 'noop' })).ok, true); // the pool exists
  const ac = new AbortController();
  let pid = 0;
  setTimeout(() => ac.abort(), 300);
  const r = await engine.run(spin, { ...OS, invoke: 'run', timeoutMs: 20_000, signal: ac.signal, onChildSpawn: (p) => (pid = p) });
  assert.equal(r.error?.code, 'CANCELLED', JSON.stringify(r.error));
  assert.ok(pid > 0);
  assert.deepEqual(await waitGone([pid]), []);
});

test('a pooled child still gets the call\'s deadline: a spinning guest is TIMEOUT, its child gone', async () => {
  const engine = testEngine({ poolSize: 1, osProcessPool: 1 });
  assert.equal((await engine.run(await wat('noop'), { ...OS, invoke: 'noop' })).ok, true);
  const [pooled] = await poolFull(engine, 1);
  let pid = 0;
  const t0 = performance.now();
  const r = await engine.run(await wat('spin'), { ...OS, invoke: 'run', timeoutMs: 400, onChildSpawn: (p) => (pid = p) });
  assert.ok(['TIMEOUT', 'FUEL_EXHAUSTED'].includes(r.error?.code ?? ''), JSON.stringify(r.error));
  assert.equal(pid, pooled);
  assert.ok(performance.now() - t0 < 15_000);
  assert.deepEqual(await waitGone([pid]), []);
});
