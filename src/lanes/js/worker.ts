/**
 * The JS lane's worker thread (bundled to dist/js-lane-worker.cjs): compiles the instrumented
 * QuickJS once (and the TypeScript stripper, strip-module.ts, when the first TS interpreter is
 * made — a TS interpreter carries a stripper instance of its own), keeps pools of pre-initialized, never-used interpreters per language and memory
 * limit (refilled in the background, one interpreter per macrotask so a request is never stuck
 * behind a whole refill), and runs one job at a time, each in an interpreter of its own whose
 * linear-memory maximum is that job's memory limit (a job whose limit has no ready interpreter
 * makes one: a pool miss).
 *
 * A job's power calls block this thread on the power bridge (bridge.ts), bounded by its deadline
 * and woken by a cancel; a command's fuel, charged on its answer, goes into the job's meter. A job
 * that asked for streaming posts its output while it runs (stream.ts), always before its result.
 * Invariant: an interpreter leaves the pool at most once and is dropped after its job, whatever
 * happened. The thread has an empty environment and no stdio of its own (see slot.ts).
 *
 * Does not protect against: a job that never reaches a fuel refill or interrupt check; the main
 * thread terminates this worker at the deadline plus a grace.
 */

import { parentPort, workerData } from 'node:worker_threads';
import { InterpreterTooLarge, evaluate, prepare, type Interpreter, type PrepareConfig } from './interpreter.ts';
import { loadInstrumentedQuickJS } from './module.ts';
import { loadStripper } from './strip-module.ts';
import type { StripperModule } from './strip-module.ts';
import { PowerBridge } from './bridge.ts';
import { OutputStream } from './stream.ts';
import { MIN_PAGES, PAGE } from './heap.ts';
import { answerFuel } from '../powers.ts';
import { JS_LANE_PROTOCOL_VERSION, type HostToWorker, type JsWorkerData, type WorkerToHost } from './protocol.ts';

const data = workerData as JsWorkerData;
const port = parentPort;
const send = (m: WorkerToHost): void => port?.postMessage(m);
const bridge = new PowerBridge(data.powerPort, data.powerSignal, new Int32Array(data.interrupt), send);

type Kind = 'js' | 'ts';
/**
 * Pools keyed by memory limit: an interpreter's linear-memory maximum is fixed when it is made,
 * so it only ever runs a call with exactly that limit. `limits` holds the most recently asked
 * limits (newest first, at most MAX_POOLED_LIMITS); the pools of a limit that falls off are dropped.
 */
export const MAX_POOLED_LIMITS = 2;
const pools = new Map<string, Interpreter[]>();
let limits: number[] = [data.memoryBytes];
let wantTs = data.wantTs;
let filling = false;
const warmWaiters: number[] = [];
const poolOf = (kind: Kind, limit: number): Interpreter[] => {
  const key = `${kind}:${limit}`;
  let p = pools.get(key);
  if (!p) pools.set(key, (p = []));
  return p;
};
/** Limits whose interpreter could not even be set up: never pooled again. */
const tooSmall = new Set<number>();

/** Make `limit` the newest pooled limit (dropping the pools of the one that falls off). */
function useLimit(limit: number): void {
  limits = [limit, ...limits.filter((l) => l !== limit)];
  for (const old of limits.splice(MAX_POOLED_LIMITS)) {
    pools.delete(`js:${old}`);
    pools.delete(`ts:${old}`);
  }
}

function counts(): { js: number; ts: number } {
  let js = 0;
  let ts = 0;
  for (const [key, p] of pools) {
    if (key.startsWith('js:')) js += p.length;
    else ts += p.length;
  }
  return { js, ts };
}

/** The next (kind, limit) pool to top up, newest limit first; null when all are full. */
function nextToFill(): { kind: Kind; limit: number } | null {
  for (const limit of limits) {
    if (tooSmall.has(limit)) continue;
    if (poolOf('js', limit).length < data.poolSize) return { kind: 'js', limit };
    if (wantTs && poolOf('ts', limit).length < data.poolSize) return { kind: 'ts', limit };
  }
  return null;
}

/** Add one interpreter to the pool that needs it most, then yield; repeat until full. */
function fillSoon(cfg: PrepareConfig): void {
  if (filling) return;
  const next = nextToFill();
  if (next === null) {
    for (const id of warmWaiters.splice(0)) send({ v: 1, kind: 'warmed', id });
    return;
  }
  filling = true;
  setImmediate(() => {
    prepare(next.kind, cfg, next.limit).then(
      (it) => {
        // The limit may have fallen off while this one was being made.
        if (limits.includes(next.limit)) poolOf(next.kind, next.limit).push(it);
        filling = false;
        send({ v: 1, kind: 'pool', ...counts() });
        fillSoon(cfg);
      },
      (e: unknown) => {
        filling = false;
        if (e instanceof InterpreterTooLarge) {
          tooSmall.add(next.limit);
          fillSoon(cfg);
          return;
        }
        // Preparing is our own code; a failure here is a bug. Retry later rather than spin.
        setTimeout(() => fillSoon(cfg), 1000).unref();
      },
    );
  });
}

/** The TypeScript stripper, rewritten and compiled once, when the first TS interpreter is made. */
let stripperModule: Promise<StripperModule> | null = null;

async function main(): Promise<void> {
  if (!port) return;
  let cfg: PrepareConfig;
  try {
    const module = data.compiled ?? (await loadInstrumentedQuickJS(data.wasmPath, data.cacheDir));
    cfg = {
      module,
      interrupt: new Int32Array(data.interrupt),
      outputLimitBytes: data.outputLimitBytes,
      failOnOutputLimit: data.failOnOutputLimit,
      stripper: () => (stripperModule ??= loadStripper(data.stripperPath, data.cacheDir)),
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
    const limit = m.job.memoryBytes;
    const pooled = pools.get(`${kind}:${limit}`)?.shift();
    const ready = pooled ? Promise.resolve(pooled) : prepare(kind, cfg, limit);
    const failed = (e: unknown): void =>
      send({
        v: 1,
        kind: 'result',
        id: m.id,
        result: {
          ok: false,
          stdout: '',
          stderr: '',
          error:
            e instanceof InterpreterTooLarge
              ? { code: 'MEMORY_LIMIT', message: `the ${kind === 'ts' ? 'TypeScript' : 'JavaScript'} interpreter does not fit in the call's memory of ${limit} bytes (it starts with ${MIN_PAGES * PAGE})` }
              : { code: 'INTERNAL', message: 'internal error' },
          fuelUsed: 0,
          durationMs: performance.now() - t0,
          warnings: [],
          poolHit: false,
        },
      });
    ready
      .then((it) => {
        // Only a limit an interpreter fits in becomes a pooled one.
        useLimit(limit);
        const deadline = performance.now() + m.job.timeoutMs;
        // Live output, only when the caller listens (stream.ts): the plain path stays as it was.
        const stream = m.job.stream && (m.job.stream.stdout || m.job.stream.stderr) ? new OutputStream(m.id, m.job.stream, send) : null;
        if (stream) {
          it.sink.listener = stream.push;
          it.meter.onRefill = stream.tick;
        }
        // A command's answer carries its charge: one budget for the snippet and what it runs.
        const powerCall =
          m.job.powers.length > 0
            ? (power: string, args: string | { readonly oversized: number }): string => {
                // What it wrote before waiting on the host is seen while it waits.
                stream?.flush();
                const answer = bridge.call(m.id, power, args, deadline, it.meter.used());
                it.meter.charge(answerFuel(answer));
                // A power that ran into the deadline ends the snippet TIMEOUT, whatever it does with the error.
                it.meter.shouldInterrupt();
                return answer;
              }
            : null;
        const result = evaluate(it, m.job, pooled !== undefined, t0, powerCall);
        stream?.flush();
        send({ v: 1, kind: 'result', id: m.id, result });
      })
      .catch(failed)
      .finally(() => {
        send({ v: 1, kind: 'pool', ...counts() });
        fillSoon(cfg);
      });
  });
  fillSoon(cfg);
}

void main();
