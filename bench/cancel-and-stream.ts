/**
 * Call controls (issue #15): how fast a cancel takes effect, and how early streamed output
 * arrives, each against a baseline measured in the same run.
 *
 * (a) abort → settled: a metered spinner, and a guest parked in a poll_oneoff sleep, cancelled
 *     mid-run (time from `abort()` until the caller has the CANCELLED result), against the
 *     timeout overshoot of the same guest (time past its deadline until the caller has TIMEOUT).
 *     Target: ≤ 50 ms p99.
 * (b) first chunk: a guest writes one line then works ~200 ms; time from the call to the line
 *     reaching `onStdout`, against the time to the result.
 * (c) the cost of streaming: a guest making 5 000 small writes, with and without `onStdout`.
 */

import { createEngine } from '../src/index.ts';
import { fixture, printTable, quantile } from './lib.ts';

const RUNS = 40;
const BUDGET_MS = 100;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function cancelAndStream(): Promise<void> {
  const g = await fixture('controls'); // test/fixtures/wat/controls.wat
  const engine = createEngine({ poolSize: 2, cacheDir: false });
  await engine.run(g, { invoke: 'incr' });
  const guests = {
    spinner: { invoke: 'spin', args: [] as number[] },
    sleeper: { invoke: 'line_then_sleep', args: [3_600_000] },
  };
  const settle: Record<string, number[]> = {};
  const overshoot: Record<string, number[]> = {};
  for (const [name, { invoke, args }] of Object.entries(guests)) {
    settle[name] = [];
    overshoot[name] = [];
    for (let i = 0; i < RUNS; i++) {
      const t = await engine.run(g, { invoke, args, profile: 'network', timeoutMs: BUDGET_MS });
      if (t.error?.code !== 'TIMEOUT') throw new Error(`expected TIMEOUT, got ${JSON.stringify(t.error)}`);
      overshoot[name].push(t.durationMs - BUDGET_MS);
      const ac = new AbortController();
      const p = engine.run(g, { invoke, args, profile: 'network', timeoutMs: 60_000, signal: ac.signal });
      await sleep(BUDGET_MS / 2);
      const t0 = performance.now();
      ac.abort();
      const c = await p;
      settle[name].push(performance.now() - t0);
      if (c.error?.code !== 'CANCELLED') throw new Error(`expected CANCELLED, got ${JSON.stringify(c.error)}`);
    }
  }
  const replaced = engine.stats().workersReplaced;

  // (b) a line, then ~200 ms of work: calibrate the work on this machine first.
  let n = 20;
  for (let i = 0; i < 5; i++) {
    const probe = await engine.run(g, { invoke: 'line_then_work', args: [n], profile: 'network' }); // V8 tiers up meanwhile
    n = Math.max(1, Math.round((n * 200) / Math.max(1, probe.durationMs)));
  }
  const first: number[] = [];
  const whole: number[] = [];
  for (let i = 0; i < 20; i++) {
    let at = 0;
    const t0 = performance.now();
    const r = await engine.run(g, { invoke: 'line_then_work', args: [n], profile: 'network', onStdout: () => (at ||= performance.now()) });
    whole.push(performance.now() - t0);
    first.push(at - t0);
    if (!r.ok || at === 0) throw new Error(`unexpected ${JSON.stringify(r)}`);
  }

  // (c) 5 000 small writes per stream (30 KB of stdout, 20 KB of stderr), plain and streamed.
  const plain: number[] = [];
  const streamed: number[] = [];
  for (let i = 0; i < 30; i++) {
    let t0 = performance.now();
    await engine.run(g, { invoke: 'lines', args: [5_000, 0] });
    plain.push(performance.now() - t0);
    t0 = performance.now();
    await engine.run(g, { invoke: 'lines', args: [5_000, 0], onStdout: () => {}, onStderr: () => {} });
    streamed.push(performance.now() - t0);
  }
  await engine.close();

  const row = (what: string, xs: number[], vs?: string, target?: string) => ({ what, p50: quantile(xs, 0.5), p99: quantile(xs, 0.99), unit: 'ms' as const, ...(vs ? { vs } : {}), ...(target ? { target } : {}) });
  printTable(`cancel: abort → settled vs timeout overshoot (${RUNS} runs each, ${BUDGET_MS} ms budget)`, [
    row('spinner: timeout overshoot', overshoot['spinner']!),
    row('spinner: abort → CANCELLED', settle['spinner']!, 'spinner: timeout overshoot', 'p99 ≤ 50 ms'),
    row('poll_oneoff sleeper: timeout overshoot', overshoot['sleeper']!),
    row('poll_oneoff sleeper: abort → CANCELLED', settle['sleeper']!, 'poll_oneoff sleeper: timeout overshoot', 'p99 ≤ 50 ms'),
  ]);
  console.log(`workers replaced: ${replaced} of ${RUNS * 4} stopped calls`);
  printTable(`streaming: a line, then ~200 ms of work (${n}M loop iterations)`, [
    row('time to the result', whole),
    row('time to the first chunk', first, 'time to the result'),
  ]);
  printTable('streaming cost: 5 000 writes to stdout and 5 000 to stderr', [
    row('no callbacks', plain),
    row('onStdout + onStderr', streamed, 'no callbacks'),
  ]);
}

if (process.argv[1]?.endsWith('cancel-and-stream.ts')) await cancelAndStream();
