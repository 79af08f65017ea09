import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { availableParallelism } from 'node:os';
import { fanMap } from '../../src/fabric/fanout.ts';
import { fanout } from '../../src/engine/fanout-lane.ts';
import { CommandRegistry } from '../../src/index.ts';
import type { KernelHandle } from '../../src/engine/kernel-lane.ts';
import { wat } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';

const engine = testEngine({ poolSize: 2, maxWorkers: 4 });
const dec = new TextDecoder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('fanMap never runs more than width tasks at once, and keeps input order', async () => {
  for (const width of [1, 3, 8]) {
    let running = 0;
    let peak = 0;
    const out = await fanMap(Array.from({ length: 40 }, (_, i) => i), async (x) => {
      running++;
      peak = Math.max(peak, running);
      await sleep(1 + (x % 3));
      running--;
      return x * 2;
    }, { width });
    assert.equal(peak, width, `width ${width}`);
    assert.deepEqual(out.map((o) => (o.ok ? o.value : -1)), Array.from({ length: 40 }, (_, i) => i * 2));
  }
});

test('fanMap: one failure is that input\'s error; the rest run', async () => {
  const out = await fanMap([1, 2, 3, 4], async (x) => {
    if (x === 2) throw new SandboxError('GUEST_TRAP', 'boom');
    return x;
  }, { width: 2 });
  assert.deepEqual(out.map((o) => (o.ok ? o.value : o.error.code)), [1, 'GUEST_TRAP', 3, 4]);
});

test('fanMap with failFast: the first failure stops the rest, which are reported CANCELLED', async () => {
  let started = 0;
  const out = await fanMap(Array.from({ length: 20 }, (_, i) => i), async (x, _i, signal) => {
    started++;
    if (x === 1) throw new SandboxError('GUEST_TRAP', 'boom');
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, 200);
      signal.addEventListener('abort', () => (clearTimeout(t), resolve()));
    });
    if (signal.aborted) throw new SandboxError('CANCELLED');
    return x;
  }, { width: 2, failFast: true });
  assert.equal(out.length, 20);
  assert.equal(out[1]!.ok, false);
  assert.ok(started <= 3, `started ${started}`);
  assert.ok(out.slice(2).every((o) => !o.ok && o.error.code === 'CANCELLED'));
});

test('fanMap pulls an iterable at most width ahead of what has finished (bounded backpressure)', async () => {
  let pulled = 0;
  let finished = 0;
  let worst = 0;
  function* source() {
    for (let i = 0; i < 50; i++) {
      pulled++;
      worst = Math.max(worst, pulled - finished);
      yield i;
    }
  }
  const out = await fanMap(source(), async (x) => {
    await sleep(1);
    finished++;
    return x;
  }, { width: 4 });
  assert.equal(out.length, 50);
  assert.ok(worst <= 4, `pulled ${worst} ahead`);
});

test('engine.fanout over a kernel: results in input order, width kernels at most', async () => {
  const inputs = Array.from({ length: 64 }, (_, i) => `input ${i} abc`);
  const out = await engine.fanout({ kernel: await wat('kernel'), inputs, width: 4 });
  assert.equal(out.length, 64);
  out.forEach((r, i) => {
    assert.ok(r.ok, JSON.stringify(r));
    assert.equal(dec.decode(r.output), inputs[i]!.toUpperCase());
  });
});

test('a kernel fan-out opens at most min(width, cores) handles; a failing open is each waiting input\'s error, never a hang', async () => {
  let opened = 0;
  let live = 0;
  let peak = 0;
  const handle = (): KernelHandle => ({
    id: `k${opened}`,
    placement: 'worker',
    lastFuelUsed: 1,
    call: async (input) => {
      peak = Math.max(peak, ++live);
      await new Promise((r) => setTimeout(r, 2));
      live--;
      return input;
    },
    callSync: () => { throw new Error('unused'); },
    close: async () => {},
  } as KernelHandle);
  const deps = { run: async () => { throw new Error('unused'); }, commands: CommandRegistry.withBuiltins(), kernel: async () => (opened++, handle()) };
  const inputs = Array.from({ length: 40 }, (_, i) => `in ${i}`);
  const out = await fanout(deps, { kernel: new Uint8Array(8), inputs, width: 16 });
  assert.deepEqual(out.map((r) => (r.ok ? dec.decode(r.output) : r.error.code)), inputs);
  assert.equal(opened, Math.min(16, availableParallelism()), 'one handle per core at most');
  assert.ok(peak <= opened, `calls at once ${peak}`);
  let tries = 0;
  const failing = { ...deps, kernel: async () => { tries++; await new Promise((r) => setTimeout(r, 1)); throw new SandboxError('GUEST_TRAP', 'no such kernel'); } };
  const bad = await fanout(failing, { kernel: new Uint8Array(8), inputs: inputs.slice(0, 12), width: 16 });
  assert.deepEqual(new Set(bad.map((r) => (r.ok ? 'ok' : r.error.code))), new Set(['GUEST_TRAP']));
  assert.equal(bad.length, 12);
  assert.equal(tries, 12, 'each input tried to open a handle once');
});

test('engine.fanout over a registered command: each input is its stdin; a bad input fails alone', async () => {
  const out = await engine.fanout({ command: 'wc', args: ['-c'], inputs: ['a', 'bb', 'ccc'], width: 2 });
  assert.deepEqual(out.map((r) => (r.ok ? dec.decode(r.output).trim() : r.error.code)), ['1', '2', '3']);
  const tr = await engine.fanout({ command: 'tr', args: ['a-z', 'A-Z'], inputs: ['x', 'y'] });
  assert.deepEqual(tr.map((r) => (r.ok ? dec.decode(r.output) : r.error.code)), ['X', 'Y']);
});

test('engine.fanout over a kernel: one input past the arena fails alone unless failFast', async () => {
  const inputs = [new Uint8Array(4), new Uint8Array(40_000), new Uint8Array(4)];
  const out = await engine.fanout({ kernel: await wat('kernel'), inputs, width: 1 });
  assert.deepEqual(out.map((r) => (r.ok ? 'ok' : r.error.code)), ['ok', 'POLICY_INVALID', 'ok']);
  const ff = await engine.fanout({ kernel: await wat('kernel'), inputs, width: 1, failFast: true });
  assert.deepEqual(ff.map((r) => (r.ok ? 'ok' : r.error.code)), ['ok', 'POLICY_INVALID', 'CANCELLED']);
});

test('engine.fanout takes exactly one shape and a width in range', async () => {
  await assert.rejects(engine.fanout({ inputs: [] }), (e: unknown) => e instanceof SandboxError && e.code === 'POLICY_INVALID');
  await assert.rejects(engine.fanout({ command: 'wc', module: new Uint8Array(8), inputs: [] }), (e: unknown) => e instanceof SandboxError && e.code === 'POLICY_INVALID');
  await assert.rejects(engine.fanout({ command: 'wc', inputs: [], width: 0 }), (e: unknown) => e instanceof SandboxError && e.code === 'POLICY_INVALID');
  // A malformed limit is the call's error up front, not one per input.
  for (const bad of [{ timeoutMs: -5 }, { fuel: Number.NaN }, { memoryBytes: Infinity }]) {
    await assert.rejects(engine.fanout({ command: 'wc', inputs: ['a', 'b'], ...bad }), (e: unknown) => e instanceof SandboxError && e.code === 'POLICY_INVALID', JSON.stringify(bad));
  }
});

test('engine.fanout over a WASI module: a fresh run per input, stdin in, stdout bytes out', async () => {
  const cat = engine.commands.get('cat')!;
  const out = await engine.fanout({ module: cat, inputs: ['one', new Uint8Array([0, 255, 7])], width: 2 });
  assert.ok(out[0]!.ok && dec.decode(out[0]!.output) === 'one', JSON.stringify(out[0]));
  assert.ok(out[1]!.ok);
  assert.deepEqual([...(out[1]!.ok ? out[1]!.output : [])], [0, 255, 7]);
});
