/**
 * The JS lane's call controls, timed (issue #15):
 * - streaming: when the first stdout chunk of a snippet that logs and then works ~100 ms reaches
 *   the caller, against the time to its result (baseline: the same call, same run);
 * - cancellation: abort → settled latency of a spin, against the timeout overshoot of the same
 *   spin (how long past its deadline a TIMEOUT takes to reach the caller) — both end the same way,
 *   the interrupt flag seen at the next refill. Targets: settled ≤ 50 ms after the abort.
 * Each measured on a warm lane with one worker; every call waits for a full pool first.
 */

import { JsLane } from '../src/lanes/js/index.ts';
import { median, printTable, quantile } from './lib.ts';
import { jsRequest } from '../test/helpers/js-request.ts';

const N = 30;
const WORK_MS = 100;
const SPIN_BEFORE_ABORT_MS = 50;
const TIMEOUT_MS = 100;

const req = jsRequest;

async function poolFull(lane: JsLane): Promise<void> {
  for (let i = 0; i < 500 && lane.stats().ready < 2; i++) await new Promise((r) => setTimeout(r, 2));
  await new Promise((r) => setTimeout(r, 20));
}

export async function jsStream(): Promise<void> {
  const lane = new JsLane({ poolSize: 2, cacheDir: false, workers: 1 });
  await lane.warm();
  const logThenWork = `console.log('started'); const t = Date.now(); let x = 0; while (Date.now() - t < ${WORK_MS}) x++; console.log('done'); 1`;
  for (let i = 0; i < 3; i++) await lane.exec(req(logThenWork, { onStdout: () => {} }));

  const first: number[] = [];
  const total: number[] = [];
  for (let i = 0; i < N; i++) {
    await poolFull(lane);
    let at = -1;
    const t0 = performance.now();
    const r = await lane.exec(req(logThenWork, { onStdout: () => void (at < 0 && (at = performance.now())) }));
    const end = performance.now();
    if (r.result !== 1 || at < 0) throw new Error(`unexpected ${JSON.stringify(r)}`);
    first.push(at - t0);
    total.push(end - t0);
  }

  const cancel: number[] = [];
  const over: number[] = [];
  let terminated = 0;
  for (let i = 0; i < N; i++) {
    await poolFull(lane);
    const ac = new AbortController();
    const p = lane.exec(req('for (;;) {}', { signal: ac.signal, timeoutMs: 60_000 }));
    await new Promise((r) => setTimeout(r, SPIN_BEFORE_ABORT_MS));
    const abortedAt = performance.now();
    ac.abort();
    const r = await p;
    cancel.push(performance.now() - abortedAt);
    if (r.error?.code !== 'CANCELLED') throw new Error(`expected CANCELLED, got ${JSON.stringify(r.error)}`);
    if (r.warnings.some((w) => /terminated|being stopped/.test(w))) terminated++;
    await poolFull(lane);
    const t0 = performance.now();
    const t = await lane.exec(req('for (;;) {}', { timeoutMs: TIMEOUT_MS }));
    if (t.error?.code !== 'TIMEOUT') throw new Error(`expected TIMEOUT, got ${JSON.stringify(t.error)}`);
    over.push(performance.now() - t0 - TIMEOUT_MS);
  }
  await lane.close();

  printTable(`JS lane streaming: a snippet that logs, then works ${WORK_MS} ms (${N} calls)`, [
    { what: 'time to result', p50: median(total), p99: quantile(total, 0.99), unit: 'ms' },
    { what: 'time to first stdout chunk', p50: median(first), p99: quantile(first, 0.99), unit: 'ms', vs: 'time to result' },
  ]);
  printTable(`JS lane cancellation: a spin aborted after ${SPIN_BEFORE_ABORT_MS} ms vs the same spin's timeout (${TIMEOUT_MS} ms budget), ${N} each`, [
    { what: 'timeout overshoot (deadline → TIMEOUT at the caller)', p50: median(over), p99: quantile(over, 0.99), unit: 'ms' },
    { what: 'abort → CANCELLED at the caller', p50: median(cancel), p99: quantile(cancel, 0.99), unit: 'ms', vs: 'timeout overshoot (deadline → TIMEOUT at the caller)', target: '≤ 50 ms' },
  ]);
  console.log(`cancelled calls answered by the backstop (interpreter not stopped in time): ${terminated} of ${N}`);
}

if (process.argv[1]?.endsWith('js-stream.ts')) await jsStream();
