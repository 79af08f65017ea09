/**
 * The JS lane's worker thread (bundled to dist/js-lane-worker.cjs): compiles the instrumented
 * QuickJS once, keeps a pool of pre-initialized, never-used interpreters per language (refilled in
 * the background, one interpreter per macrotask so a request is never stuck behind a whole
 * refill), and runs one job at a time, each in an interpreter of its own.
 *
 * A job's power calls block this thread on the power bridge (bridge.ts), bounded by its deadline;
 * a command's fuel, charged on its answer, goes into the job's meter.
 * Invariant: an interpreter leaves the pool at most once and is dropped after its job, whatever
 * happened. The thread has an empty environment and no stdio of its own (see slot.ts).
 *
 * Does not protect against: a job that never reaches a fuel refill or interrupt check; the main
 * thread terminates this worker at the deadline plus a grace.
 */

import { parentPort, workerData } from 'node:worker_threads';
import { evaluate, prepare, type Interpreter, type PrepareConfig } from './interpreter.ts';
import { loadInstrumentedQuickJS } from './module.ts';
import { PowerBridge } from './bridge.ts';
import { answerFuel } from '../powers.ts';
import { JS_LANE_PROTOCOL_VERSION, type HostToWorker, type JsWorkerData, type WorkerToHost } from './protocol.ts';

const data = workerData as JsWorkerData;
const port = parentPort;
const send = (m: WorkerToHost): void => port?.postMessage(m);
const bridge = new PowerBridge(data.powerPort, data.powerSignal, new Int32Array(data.interrupt), send);

const pools: Record<'js' | 'ts', Interpreter[]> = { js: [], ts: [] };
let wantTs = data.wantTs;
let filling = false;
const warmWaiters: number[] = [];

function full(): boolean {
  return pools.js.length >= data.poolSize && (!wantTs || pools.ts.length >= data.poolSize);
}

/** Add one interpreter to the emptier pool, then yield; repeat until full. */
function fillSoon(cfg: PrepareConfig): void {
  if (filling) return;
  if (full()) {
    for (const id of warmWaiters.splice(0)) send({ v: 1, kind: 'warmed', id });
    return;
  }
  filling = true;
  setImmediate(() => {
    const kind = pools.js.length < data.poolSize ? 'js' : 'ts';
    prepare(kind, cfg).then(
      (it) => {
        pools[kind].push(it);
        filling = false;
        send({ v: 1, kind: 'pool', js: pools.js.length, ts: pools.ts.length });
        fillSoon(cfg);
      },
      () => {
        // Preparing is our own code; a failure here is a bug. Retry later rather than spin.
        filling = false;
        setTimeout(() => fillSoon(cfg), 1000).unref();
      },
    );
  });
}

async function main(): Promise<void> {
  if (!port) return;
  let cfg: PrepareConfig;
  try {
    const module = data.compiled ?? (await loadInstrumentedQuickJS(data.wasmPath, data.cacheDir));
    cfg = {
      module,
      interrupt: new Int32Array(data.interrupt),
      memoryCeilingBytes: data.memoryCeilingBytes,
      outputLimitBytes: data.outputLimitBytes,
      failOnOutputLimit: data.failOnOutputLimit,
      transpilerPath: data.transpilerPath,
    };
    send({ v: 1, kind: 'ready', module });
  } catch (e) {
    send({ v: 1, kind: 'boot-failed', message: e instanceof Error ? e.message : 'boot failed' });
    return;
  }
  port.on('message', (m: HostToWorker) => {
    if (m.v !== JS_LANE_PROTOCOL_VERSION) return;
    if (m.kind === 'warm') {
      if (m.ts) wantTs = true;
      warmWaiters.push(m.id);
      fillSoon(cfg);
      return;
    }
    const t0 = performance.now();
    const kind = m.job.language === 'ts' ? 'ts' : 'js';
    if (kind === 'ts') wantTs = true;
    const pooled = pools[kind].shift();
    const ready = pooled ? Promise.resolve(pooled) : prepare(kind, cfg);
    const failed = (): void =>
      send({
        v: 1,
        kind: 'result',
        id: m.id,
        result: { ok: false, stdout: '', stderr: '', error: { code: 'INTERNAL', message: 'internal error' }, fuelUsed: 0, durationMs: performance.now() - t0, warnings: [], poolHit: false },
      });
    ready
      .then((it) => {
        const deadline = performance.now() + m.job.timeoutMs;
        // A command's answer carries its charge: one budget for the snippet and what it runs.
        const powerCall =
          m.job.powers.length > 0
            ? (power: string, args: string): string => {
                const answer = bridge.call(m.id, power, args, deadline, it.meter.used());
                it.meter.charge(answerFuel(answer));
                // A power that ran into the deadline ends the snippet TIMEOUT, whatever it does with the error.
                it.meter.shouldInterrupt();
                return answer;
              }
            : null;
        send({ v: 1, kind: 'result', id: m.id, result: evaluate(it, m.job, pooled !== undefined, t0, powerCall) });
      })
      .catch(failed)
      .finally(() => {
        send({ v: 1, kind: 'pool', js: pools.js.length, ts: pools.ts.length });
        fillSoon(cfg);
      });
  });
  fillSoon(cfg);
}

void main();
