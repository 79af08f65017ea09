// Attack: race the pool worker's give-up against main's claim so a run is lost, run twice, or
// sees another run's stdin/argv/env. After a fresh run a pool worker listens on the channel for
// its next held run (bridge/frames.ts): it spins, then sleeps on the word, then goes back to
// its event loop; main claims a listening worker with a compareExchange, else posts a message.
// Thousands of runs with random gaps around the listening window (none, within the spin, within
// the sleep, past it) must each run once, with exactly their own stdin, argv and env; a message
// that must go by postMessage (a module new to the worker, or any run posted while the worker
// is between its result and its listening) is never held up by a listener.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { watText } from '../helpers/wat.ts';
import { Channel } from '../../src/engine/bridge/channel.ts';

// One worker, short idle wait: the gaps below straddle every phase of its listening.
const engine = testEngine({ poolSize: 1, maxWorkers: 1, maxWorkersPerTenant: 1 });

// stdin → stdout; argv then environ (NUL-separated) → stderr.
const ECHO = `(module
  (import "wasi_snapshot_preview1" "fd_read" (func $r (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_sizes_get" (func $as (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_get" (func $ag (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $es (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_get" (func $eg (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 1024)) (i32.store (i32.const 4) (i32.const 1024))
    (drop (call $r (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))
    (i32.store (i32.const 4) (i32.load (i32.const 8)))
    (drop (call $w (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 12)))
    (drop (call $as (i32.const 16) (i32.const 20)))
    (drop (call $ag (i32.const 128) (i32.const 4096)))
    (i32.store (i32.const 24) (i32.const 4096)) (i32.store (i32.const 28) (i32.load (i32.const 20)))
    (drop (call $w (i32.const 2) (i32.const 24) (i32.const 1) (i32.const 12)))
    (drop (call $es (i32.const 16) (i32.const 20)))
    (drop (call $eg (i32.const 128) (i32.const 8192)))
    (i32.store (i32.const 24) (i32.const 8192)) (i32.store (i32.const 28) (i32.load (i32.const 20)))
    (drop (call $w (i32.const 2) (i32.const 24) (i32.const 1) (i32.const 12)))))`;

/** A deterministic pseudo-random sequence (the failure is reproducible). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

async function gap(ms: number): Promise<void> {
  if (ms <= 0) return;
  if (ms < 1) {
    const until = performance.now() + ms; // a busy gap: the timer granularity is 1 ms
    while (performance.now() < until);
    return;
  }
  await new Promise((r) => setTimeout(r, ms));
}

test('runs at random gaps around the listening window: each runs once, with its own stdin, argv and env', async () => {
  const bytes = await watText(ECHO);
  const next = rng(0x5eed);
  const N = 2000;
  // Count both ways a run reaches the worker: both must be exercised.
  let claimed = 0;
  let posted = 0;
  const claim = Channel.prototype.claimListener;
  Channel.prototype.claimListener = function (this: Channel) {
    const ok = claim.call(this);
    if (ok) claimed++;
    else posted++;
    return ok;
  };
  for (let i = 0; i < N; i++) {
    const pick = next();
    // No gap, inside the spin (≤ 0.1 ms), just past it, inside the sleep, and now and then past everything.
    await gap(pick < 0.3 ? 0 : pick < 0.55 ? next() * 0.12 : pick < 0.8 ? 0.1 + next() * 0.4 : pick < 0.997 ? 1 + next() * 3 : 1100);
    const stdin = `in-${i}-${'x'.repeat(i % 50)}`;
    const t = performance.now();
    const r = await engine.run(bytes, { stdin, argv: [`arg-${i}`], env: { RUN: `env-${i}` } });
    // A run posted by message just before the worker began to listen must not wait out the
    // listener's sleep (a second): loose, for a loaded machine.
    assert.ok(performance.now() - t < 900, `run ${i} took ${(performance.now() - t).toFixed(0)} ms: its message waited for a listener`);
    assert.equal(r.ok, true, `run ${i}: ${JSON.stringify(r.error)}`);
    assert.equal(r.stdout, stdin, `run ${i} saw another run's stdin`);
    const parts = r.stderr.split('\0');
    assert.ok(parts.includes(`arg-${i}`), `run ${i} saw another run's argv: ${JSON.stringify(r.stderr)}`);
    assert.ok(parts.includes(`RUN=env-${i}`), `run ${i} saw another run's env: ${JSON.stringify(r.stderr)}`);
    assert.equal(parts.filter((p) => p.startsWith('arg-')).length, 1, `run ${i}: one argv only`);
  }
  Channel.prototype.claimListener = claim;
  assert.ok(claimed > N / 4, `runs taken from the channel: ${claimed}`);
  assert.ok(posted > 0, `runs posted by message after the worker stopped listening: ${posted}`);
});

test('a run of a module new to a listening worker goes by message and is not held up', async () => {
  const bytes = await watText(ECHO);
  for (let i = 0; i < 40; i++) {
    await engine.run(bytes, { stdin: 'warm' }); // the worker now listens
    // A different module each time: it must be posted with its module (postMessage), at once.
    const other = await watText(`(module (memory 1) (func (export "run") (result i32) (i32.const ${900 + i})))`);
    const t = performance.now();
    const r = await engine.run(other, { invoke: 'run' });
    assert.equal(r.ok, true, JSON.stringify(r.error));
    assert.equal(Number(r.result), 900 + i);
    // Loose: a listener not told to leave would hold the message for its whole sleep (a second).
    assert.ok(performance.now() - t < 900, `run ${i} waited for the listener: ${performance.now() - t} ms`);
  }
});
