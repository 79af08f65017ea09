/**
 * The main thread's end of one JS-lane worker: spawning it (empty environment, no stdio of its
 * own, bounded heap and stack), running one job at a time on it, and the time wall's backstop.
 *
 * Owns: the deadline and the caller's abort. At `timeoutMs` the interrupt flag is raised (the
 * interpreter stops at its next fuel refill or interrupt check, and the worker lives on); if no
 * result has arrived `TERMINATE_GRACE_MS` later, the worker is terminated — a runaway never keeps
 * a core — and the slot reports itself dead so the lane replaces it. An abort does the same with
 * the CANCELLED reason (and wakes a power wait at once), its grace counted from the abort.
 * Output: a streaming job's `output` messages go to the run's `onOutput`, all before its result.
 * Powers: while a job runs, the worker's power requests (protocol.ts) are handed to that job's
 * `PowerServer` and answered on the power port; a request for any other job, or when the job has
 * no server, answers DENIED. Every request is answered (the worker's own wait is bounded).
 * Invariant: `run()` always settles: with the worker's result, at the backstop, or when the
 * worker dies.
 *
 * Does not protect against: the worker's own bugs beyond what `resourceLimits` bounds.
 */

import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import type { ExecResult } from '../types.ts';
import { answerPowerFrame, encodeAnswer, type PowerServer } from '../powers.ts';
import { parseWorkerMessage, type ExecJob, type HostToWorker, type JsWorkerData, type PowerReply } from './protocol.ts';
import { INTERRUPT_CANCELLED, INTERRUPT_DEADLINE } from './meter.ts';
import { CANCELLED_MESSAGE } from '../controls.ts';

export const TERMINATE_GRACE_MS = 200;

/** What a caller gives one run besides the job: its abort signal and where live output goes. */
export interface RunControls {
  readonly signal?: AbortSignal | undefined;
  /** A piece of the job's kept output (only when the job asked for streaming), before its result. */
  readonly onOutput?: ((fd: 1 | 2, text: string) => void) | undefined;
}
/** V8 heap of the worker; the interpreters' linear memories are outside it (capped per call). */
export const WORKER_HEAP_MB = 256;
export const WORKER_STACK_MB = 4;
const BOOT_TIMEOUT_MS = 30_000;

const failure = (code: string, message: string, t0: number, warnings: string[] = []): ExecResult => ({
  ok: false,
  stdout: '',
  stderr: '',
  error: { code, message },
  fuelUsed: 0,
  durationMs: performance.now() - t0,
  warnings,
  poolHit: false,
});

export class WorkerSlot {
  private nextId = 1;
  private readonly pending = new Map<number, (r: ExecResult) => void>();
  private readonly outputs = new Map<number, (fd: 1 | 2, text: string) => void>();
  private readonly warming = new Map<number, () => void>();
  private readonly flag: Int32Array;
  private readonly powerFlag: Int32Array;
  /** The running job's id, its power server and its deadline (Date.now()-based). */
  private serving: { id: number; server: PowerServer | null; deadline: number } | null = null;
  alive = true;
  busy = false;
  ready = { js: 0, ts: 0 };
  module: WebAssembly.Module | null = null;

  private constructor(
    private readonly worker: Worker,
    interrupt: SharedArrayBuffer,
    private readonly onPool: () => void,
    private readonly powerPort: MessagePort,
    powerSignal: SharedArrayBuffer,
  ) {
    this.flag = new Int32Array(interrupt);
    this.powerFlag = new Int32Array(powerSignal);
  }

  static async spawn(file: string, base: Omit<JsWorkerData, 'powerPort' | 'powerSignal'>, onPool: () => void): Promise<WorkerSlot> {
    const channel = new MessageChannel();
    channel.port1.unref();
    const data: JsWorkerData = { ...base, powerPort: channel.port2, powerSignal: new SharedArrayBuffer(4) };
    const worker = new Worker(file, {
      transferList: [channel.port2],
      env: {},
      argv: [],
      execArgv: [],
      stdin: false,
      stdout: true,
      stderr: true,
      workerData: data,
      resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB, maxYoungGenerationSizeMb: 32, stackSizeMb: WORKER_STACK_MB },
    });
    // stdio is captured and never read (reading refs the worker's port for good; unread writes
    // wait on the worker's side, inside its heap limit).
    const slot = new WorkerSlot(worker, data.interrupt, onPool, channel.port1, data.powerSignal);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        void worker.terminate();
        reject(new Error('the JS lane worker did not start in time'));
      }, BOOT_TIMEOUT_MS);
      worker.on('message', (raw: unknown) => {
        const m = parseWorkerMessage(raw);
        if (m?.kind === 'ready') {
          clearTimeout(timer);
          slot.module = m.module;
          resolve();
        } else if (m?.kind === 'boot-failed') {
          clearTimeout(timer);
          reject(new Error(`the JS lane worker failed to start: ${m.message}`));
        } else if (m) slot.receive(m);
      });
      worker.on('error', () => {});
      // Idle, the worker does not keep the process alive (a job's timers do while it runs). After
      // the listeners: adding a 'message' listener refs the worker's port again.
      worker.unref();
      worker.once('exit', (code) => {
        clearTimeout(timer);
        slot.died(code);
        reject(new Error('the JS lane worker exited while starting'));
      });
    });
    return slot;
  }

  private receive(m: NonNullable<ReturnType<typeof parseWorkerMessage>>): void {
    if (m.kind === 'result') {
      this.pending.get(m.id)?.(m.result);
      this.pending.delete(m.id);
    } else if (m.kind === 'pool') {
      this.ready = { js: m.js, ts: m.ts };
      this.onPool();
    } else if (m.kind === 'warmed') {
      this.warming.get(m.id)?.();
      this.warming.delete(m.id);
    } else if (m.kind === 'output') {
      this.outputs.get(m.id)?.(m.fd, m.text);
    } else if (m.kind === 'power') {
      void this.power(m.id, m.seq, m.request, m.fuelUsed);
    }
  }

  /** Serve one power request of the running job and post the answer (always). */
  private async power(id: number, seq: number, request: string, fuelUsed: number): Promise<void> {
    const job = this.serving;
    const answer = await answerPowerFrame(request, job !== null && job.id === id ? job.server : null, fuelUsed, job?.deadline ?? 0);
    if (!this.alive) return;
    const reply: PowerReply = { seq, answer: encodeAnswer(answer) };
    this.powerPort.postMessage(reply);
    Atomics.store(this.powerFlag, 0, seq);
    Atomics.notify(this.powerFlag, 0);
  }

  private died(_code: number): void {
    if (!this.alive) return;
    this.alive = false;
    this.ready = { js: 0, ts: 0 };
    const t0 = performance.now();
    for (const settle of this.pending.values()) settle(failure('INTERNAL', 'the JS lane worker exited', t0));
    this.pending.clear();
    for (const done of this.warming.values()) done();
    this.warming.clear();
    this.onPool();
  }

  private post(m: HostToWorker): void {
    this.worker.postMessage(m);
  }

  /** Fill this worker's pools (TypeScript too when `ts`); resolves when full or dead. */
  warm(ts: boolean): Promise<void> {
    if (!this.alive) return Promise.resolve();
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.warming.set(id, resolve);
      this.post({ v: 1, kind: 'warm', id, ts });
    });
  }

  /** Stop the running job: `reason` in the interrupt flag (unless one is there), a power wait woken. */
  private interrupt(reason: number): void {
    Atomics.compareExchange(this.flag, 0, 0, reason);
    Atomics.notify(this.powerFlag, 0);
  }

  /**
   * Run one job (its powers served by `server`); the caller runs at most one at a time per slot.
   * An abort of `controls.signal` stops it CANCELLED: the interpreter at its next refill or
   * interrupt check, a power wait at once (its request is no longer served); if no result arrives
   * TERMINATE_GRACE_MS after the abort, the worker is terminated.
   */
  run(job: ExecJob, server: PowerServer | null = null, controls: RunControls = {}): Promise<ExecResult> {
    const t0 = performance.now();
    if (!this.alive) return Promise.resolve(failure('INTERNAL', 'the JS lane worker exited', t0));
    const { signal, onOutput } = controls;
    if (signal?.aborted) return Promise.resolve(failure('CANCELLED', CANCELLED_MESSAGE, t0));
    const id = this.nextId++;
    this.serving = { id, server, deadline: Date.now() + job.timeoutMs };
    this.busy = true;
    Atomics.store(this.flag, 0, 0);
    return new Promise<ExecResult>((resolve) => {
      const raise = setTimeout(() => this.interrupt(INTERRUPT_DEADLINE), job.timeoutMs);
      const stopAt = (ms: number, code: string, message: string, warning: string): ReturnType<typeof setTimeout> =>
        setTimeout(() => {
          this.pending.delete(id);
          settle(failure(code, message, t0, [warning]));
          void this.terminate();
        }, ms);
      let backstop = stopAt(job.timeoutMs + TERMINATE_GRACE_MS, 'TIMEOUT', 'the call ran past its wall-clock budget', 'the interpreter did not stop at its deadline; its worker was terminated');
      const onAbort = (): void => {
        this.interrupt(INTERRUPT_CANCELLED);
        // The job's power requests are no longer served (one in flight is answered to nobody).
        if (this.serving?.id === id) this.serving = { ...this.serving, server: null };
        clearTimeout(backstop);
        backstop = stopAt(TERMINATE_GRACE_MS, 'CANCELLED', CANCELLED_MESSAGE, 'the interpreter did not stop when cancelled; its worker was terminated');
      };
      const settle = (r: ExecResult): void => {
        if (this.serving?.id === id) this.serving = null;
        clearTimeout(raise);
        clearTimeout(backstop);
        signal?.removeEventListener('abort', onAbort);
        this.outputs.delete(id);
        this.busy = false;
        resolve(r);
      };
      this.pending.set(id, settle);
      if (onOutput && job.stream) this.outputs.set(id, onOutput);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.post({ v: 1, kind: 'exec', id, job });
    });
  }

  async terminate(): Promise<void> {
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    const alive = this.alive;
    this.died(0);
    this.powerPort.close();
    if (alive) {
      await this.worker.terminate();
      await Promise.race([exited, new Promise((r) => setTimeout(r, 1000).unref())]);
    }
  }
}
