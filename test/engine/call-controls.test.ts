// Call controls on core wasm (issue #15): `signal` cancels a run or a call — before it starts
// (nothing runs), while it waits for a worker or in an instance's queue (it leaves, nothing runs),
// or while it runs (it ends like a timeout, CANCELLED, within 50 ms: the interrupt, a cut host
// call, the terminate backstop) — and `onStdout`/`onStderr` stream output while the guest runs:
// in order, whole characters, equal to the result's text, all delivered before the result.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CommandRegistry, type HostFunctionContext, type RunResult } from '../../src/index.ts';
import { testEngine } from '../helpers/engine.ts';
import { hostGuest } from '../helpers/host-functions.ts';
import { controlsGuest, eventually, sleep } from '../helpers/controls-guest.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-call-controls-');
/** The property: a cancelled call settles within 50 ms of the abort (bench/cancel-and-stream.ts measures it). */
const SETTLE_MS = 50 + LOAD_SLACK_MS;
/** `network`: 1e10 fuel, so a spinner meets the cancel, not its fuel budget. */
const SPIN = { profile: 'network', timeoutMs: 30_000 } as const;

let hits = 0;
const reasons: unknown[] = [];
const registry = CommandRegistry.withBuiltins();
registry.register('nest', new Uint8Array(readFileSync(new URL('../fixtures/c/nest.wasm', import.meta.url))));
const engine = testEngine({
  poolSize: 2,
  maxWorkers: 4,
  commands: registry,
  hostFunctions: {
    'probe:t': {
      hit: () => ++hits,
      never: (_a: unknown, ctx: HostFunctionContext) => {
        ctx.signal.addEventListener('abort', () => reasons.push(ctx.signal.reason));
        return new Promise<null>(() => {});
      },
    },
  },
});

/** Run `start`, abort `ac` after `afterMs`, and return the result and how long it took to settle after the abort. */
async function cancelAfter(afterMs: number, start: (signal: AbortSignal) => Promise<RunResult>): Promise<{ r: RunResult; settleMs: number }> {
  const ac = new AbortController();
  const p = start(ac.signal);
  await sleep(afterMs);
  const t = performance.now();
  ac.abort(new Error('secret-reason-7f3a'));
  const r = await p;
  return { r, settleMs: performance.now() - t };
}

function assertCancelled(r: RunResult, settleMs: number, what: string): void {
  assert.equal(r.ok, false, what);
  assert.equal(r.error?.code, 'CANCELLED', `${what}: ${JSON.stringify(r.error)}`);
  assert.doesNotMatch(JSON.stringify(r), /secret-reason/, 'the abort reason is not carried');
  assert.ok(settleMs < SETTLE_MS, `${what} settled ${settleMs.toFixed(1)} ms after the abort`);
}

test('run: a signal aborted before the call runs nothing (no worker taken, fuelUsed 0, no output)', async () => {
  const probe = await hostGuest('probe:t', 'hit');
  const ac = new AbortController();
  ac.abort({ secret: 'secret-reason-7f3a' });
  const before = hits;
  const out: string[] = [];
  const r = await engine.run(probe.bytes, { invoke: 'call', args: [0, 64], caps: ['probe:t'], signal: ac.signal, onStdout: (c) => out.push(c) });
  assert.equal(r.error?.code, 'CANCELLED');
  assert.equal(r.fuelUsed, 0);
  assert.equal(r.stdout, '');
  assert.deepEqual(out, []);
  assert.equal(hits, before, 'the guest never ran');
  assert.doesNotMatch(JSON.stringify(r), /secret-reason/);
  const ok = await engine.run(probe.bytes, { invoke: 'call', args: [0, 64], caps: ['probe:t'] });
  assert.equal(ok.ok, true, JSON.stringify(ok.error));
  assert.equal(hits, before + 1);
});

test('run: a signal aborted while waiting for a pool worker leaves the queue at once; nothing runs', async () => {
  const e = testEngine({ poolSize: 1, maxWorkers: 1, hostFunctions: { 'probe:t': { hit: () => ++hits } } });
  const g = await controlsGuest();
  const probe = await hostGuest('probe:t', 'hit');
  assert.equal((await e.run(probe.bytes, { invoke: 'call', args: [0, 64], caps: ['probe:t'] })).ok, true);
  assert.equal((await e.run(g, { invoke: 'incr' })).ok, true);
  const holder = new AbortController();
  const held = e.run(g, { ...SPIN, invoke: 'spin', signal: holder.signal });
  try {
    await sleep(100);
    const before = hits;
    const { r, settleMs } = await cancelAfter(100, (signal) => e.run(probe.bytes, { invoke: 'call', args: [0, 64], caps: ['probe:t'], timeoutMs: 20_000, signal }));
    assertCancelled(r, settleMs, 'waiting for a worker');
    assert.equal(r.fuelUsed, 0);
    assert.equal(hits, before, 'the waiting call never ran');
  } finally {
    holder.abort();
  }
  assert.equal((await held).error?.code, 'CANCELLED');
  const before = hits;
  const next = await e.run(probe.bytes, { invoke: 'call', args: [0, 64], caps: ['probe:t'] });
  assert.equal(next.ok, true, JSON.stringify(next.error));
  assert.equal(hits, before + 1);
  assert.ok(await eventually(() => e.stats().liveWorkers <= 1), JSON.stringify(e.stats()));
});

test('run: cancelled while spinning, sleeping in poll_oneoff, or blocked in a host function — CANCELLED within 50 ms, and the engine serves the next run', async () => {
  const g = await controlsGuest();
  assert.equal((await engine.run(g, { invoke: 'incr' })).result, 1); // compiled before the clock starts
  const replaced = engine.stats().workersReplaced;
  const spin = await cancelAfter(150, (signal) => engine.run(g, { ...SPIN, invoke: 'line_then_spin', signal }));
  assertCancelled(spin.r, spin.settleMs, 'spinning');
  // Stopped at its next refill, it keeps what it wrote (as a timeout does); a thread the machine
  // did not schedule within the grace was terminated instead.
  if (engine.stats().workersReplaced === replaced) {
    assert.equal(spin.r.stdout, 'hello\n');
    assert.ok(spin.r.fuelUsed > 0);
  }

  const slept = await cancelAfter(150, (signal) => engine.run(g, { invoke: 'line_then_sleep', args: [3_600_000], timeoutMs: 30_000, signal }));
  assertCancelled(slept.r, slept.settleMs, 'sleeping');
  assert.ok(slept.r.durationMs < 150 + SETTLE_MS, `slept ${slept.r.durationMs} ms`);

  const hung = await hostGuest('probe:t', 'never', '{}');
  const before = reasons.length;
  const blocked = await cancelAfter(150, (signal) => engine.run(hung.bytes, { invoke: 'call', args: [2, 4096], caps: ['probe:t'], timeoutMs: 30_000, signal }));
  assertCancelled(blocked.r, blocked.settleMs, 'in a host function');
  assert.ok(await eventually(() => reasons.length === before + 1), 'ctx.signal fired');
  assert.equal((reasons.at(-1) as { code?: string }).code, 'CANCELLED', 'ctx.signal fired with CANCELLED');

  const ok = await engine.run(g, { invoke: 'incr' });
  assert.equal(ok.result, 1);
  assert.ok(await eventually(() => engine.stats().liveWorkers <= engine.config.maxWorkers && engine.stats().liveWorkers >= 1), JSON.stringify(engine.stats()));
});

test('run: a spawned process (exec cap) is cancelled with its caller', async () => {
  const nest = new Uint8Array(readFileSync(new URL('../fixtures/c/nest.wasm', import.meta.url)));
  const { r, settleMs } = await cancelAfter(500, (signal) => engine.run(nest, { profile: 'minimal', tenant: 'spawner', argv: ['spawn', '1', 'nest', 'spin', '60000'], timeoutMs: 30_000, signal }));
  assertCancelled(r, settleMs, 'waiting for its process');
  assert.ok(await eventually(() => engine.principalUsage('spawner').processes === 0), 'the process was reaped');
  // The process's worker was freed too: four runs at once (maxWorkers 4) all get one within 2 s.
  const g = await controlsGuest();
  const rs = await Promise.all(Array.from({ length: 4 }, () => engine.run(g, { invoke: 'line_then_sleep', args: [200], timeoutMs: 2_000 })));
  for (const x of rs) assert.equal(x.ok, true, JSON.stringify(x.error));
});

test('call: a persistent instance\'s spawned process is cancelled with its call', async () => {
  const nest = new Uint8Array(readFileSync(new URL('../fixtures/c/nest.wasm', import.meta.url)));
  const inst = await engine.start('controls-spawner', nest, { profile: 'minimal', tenant: 'spawner-i', argv: ['spawn', '1', 'nest', 'spin', '60000'], timeoutMs: 30_000 });
  const { r, settleMs } = await cancelAfter(500, (signal) => inst.call('_start', [], { signal }));
  assertCancelled(r, settleMs, 'waiting for its process');
  assert.ok(await eventually(() => engine.principalUsage('spawner-i').processes === 0), 'the process was reaped with the call, not with the instance');
  await inst.stop();
});

test('call: an aborted signal runs nothing; one aborted while queued leaves the queue; the instance is unharmed', async () => {
  const inst = await engine.start('controls-queue', await controlsGuest(), { timeoutMs: 10_000 });
  const ac = new AbortController();
  ac.abort();
  const r0 = await inst.call('incr', [], { signal: ac.signal });
  assert.equal(r0.error?.code, 'CANCELLED');
  assert.equal(r0.fuelUsed, 0);
  assert.equal(inst.info().calls, 0);

  const busy = inst.call('line_then_sleep', [400]);
  const q = new AbortController();
  const queued = inst.call('incr', [], { signal: q.signal });
  await sleep(50);
  const t = performance.now();
  q.abort();
  const left = await queued;
  assert.equal(left.error?.code, 'CANCELLED');
  assert.ok(performance.now() - t < SETTLE_MS, 'it left the queue without waiting for the call ahead');
  assert.equal((await busy).ok, true, 'the call ahead was not disturbed');
  assert.equal((await inst.call('incr')).result, 1, 'the cancelled call never ran');
  assert.equal(inst.info().state, 'running');
  await inst.stop();
});

test('call: cancelled mid-call follows onTimeout — retire (INSTANCE_DEAD afterwards)', async () => {
  const inst = await engine.start('controls-retire', await controlsGuest(), SPIN);
  assert.equal((await inst.call('incr')).result, 1);
  const out: string[] = [];
  const { r, settleMs } = await cancelAfter(100, (signal) => inst.call('line_then_spin', [], { signal, onStdout: (c) => out.push(c) }));
  assertCancelled(r, settleMs, 'a spinning call');
  // What it wrote is kept (from the result frame, or — its thread terminated — from what it streamed).
  assert.equal(r.stdout, 'hello\n');
  assert.deepEqual(out, ['hello\n']);
  assert.equal((await inst.call('incr')).error?.code, 'INSTANCE_DEAD');
  assert.equal(inst.info().state, 'dead');
  await inst.stop();
});

test('call: cancelled mid-call follows onTimeout — restart (fresh state), also from a sleep', async () => {
  const e = testEngine({ poolSize: 1, onTimeout: 'restart' });
  const inst = await e.start('controls-restart', await controlsGuest(), SPIN);
  for (const [fn, args] of [['spin', []], ['line_then_sleep', [3_600_000]]] as const) {
    assert.equal((await inst.call('incr')).result, 1);
    assert.equal((await inst.call('incr')).result, 2);
    const { r, settleMs } = await cancelAfter(100, (signal) => inst.call(fn, args, { signal }));
    assertCancelled(r, settleMs, fn);
    assert.equal((await inst.call('incr')).result, 1, 'fresh state after the restart');
    assert.equal(inst.info().state, 'running');
    assert.equal((await inst.call('incr')).result, 2);
    // start over for the next round
    const again = await cancelAfter(50, (signal) => inst.call('spin', [], { signal }));
    assert.equal(again.r.error?.code, 'CANCELLED');
  }
  await inst.stop();
});

test('streaming: a chunk arrives while the guest still runs (the callback cancels a guest that would spin or sleep forever)', async () => {
  const g = await controlsGuest();
  for (const [fn, args] of [['line_then_spin', []], ['line_then_sleep', [3_600_000]]] as const) {
    const ac = new AbortController();
    const chunks: string[] = [];
    const r = await engine.run(g, {
      ...SPIN,
      invoke: fn,
      args,
      signal: ac.signal,
      onStdout: (c) => {
        chunks.push(c);
        ac.abort();
      },
    });
    assert.equal(r.error?.code, 'CANCELLED', fn);
    assert.deepEqual(chunks, ['hello\n'], fn);
    assert.equal(r.stdout, 'hello\n');
  }
});

test('streaming: every chunk is delivered before the result, in order, and they join to the result text', async () => {
  const g = await controlsGuest();
  for (const sleepMs of [0, 1]) {
    const out: string[] = [];
    const err: string[] = [];
    let resolved = false;
    let late = 0;
    const p = engine.run(g, {
      invoke: 'lines',
      args: [200, sleepMs],
      onStdout: (c) => (resolved ? late++ : out.push(c)),
      onStderr: (c) => (resolved ? late++ : err.push(c)),
    });
    const r = await p;
    resolved = true;
    await sleep(50);
    assert.equal(r.ok, true, JSON.stringify(r.error));
    assert.equal(late, 0, 'no chunk after the result');
    assert.equal(out.join(''), r.stdout);
    assert.equal(err.join(''), r.stderr);
    assert.equal(r.stdout, Array.from({ length: 200 }, (_, i) => `${i % 10}ello\n`).join(''));
    assert.equal(r.stderr, 'err\n'.repeat(200));
    if (sleepMs > 0) assert.ok(out.length > 1, `a guest that sleeps between lines streams them in several chunks (got ${out.length})`);
  }
});

test('streaming: a character split across two writes arrives whole', async () => {
  const out: string[] = [];
  const err: string[] = [];
  const r = await engine.run(await controlsGuest(), { invoke: 'utf8', onStdout: (c) => out.push(c), onStderr: (c) => err.push(c) });
  assert.equal(r.stdout, 'a€b\n');
  assert.equal(out.join(''), 'a€b\n');
  assert.ok(out.every((c) => !c.includes('\uFFFD')), JSON.stringify(out));
  assert.deepEqual(err, ['err\n']);
});

test('streaming on instance.call: each call streams its own output; calls without callbacks are unchanged', async () => {
  const inst = await engine.start('controls-stream', await controlsGuest(), { timeoutMs: 10_000 });
  for (let round = 0; round < 3; round++) {
    const out: string[] = [];
    const r = await inst.call('lines', [20, round], { onStdout: (c) => out.push(c) });
    assert.equal(r.ok, true);
    assert.equal(out.join(''), r.stdout);
    assert.equal(r.stdout.length, 20 * 6);
    const plain = await inst.call('lines', [3, 0]);
    assert.equal(plain.stdout, '0ello\n1ello\n2ello\n');
  }
  await inst.stop();
});
