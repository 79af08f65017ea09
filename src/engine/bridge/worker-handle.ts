/**
 * The main thread's end of one guest worker: spawning it, posting jobs, waiting for results
 * while serving the guest's host calls, and noticing its death.
 *
 * Owns: the worker's options (empty env, captured stdio, bounded resourceLimits), the wait
 * strategy (spin briefly on the state word, then `Atomics.waitAsync` bounded by the deadline),
 * and the mapping of a worker's death to an error code.
 * Invariant: `awaitDone` always settles — with the result, at the deadline, or when the worker
 * dies (the exit handler marks the channel DEAD and wakes every waiter).
 *
 * A host call is bounded by the call's deadline too: at the deadline its handler's signal fires
 * (brokers pass it down to their sockets), the worker is answered TIMEOUT with the interrupt word
 * up, and a late answer is never written — the channel only ever carries the current call's reply.
 * The caller's signal (a cancel, a killed process) is a deadline that comes early, with at most
 * CANCEL_GRACE_MS for the job to stop by itself. Streamed output arrives as messages, each
 * acknowledged on the channel, and goes to the current job's sink (stream-sink.ts).
 *
 * Does not protect against: a handler that ignores its signal — it is no longer waited on, but
 * whatever it holds (a socket, a child) lives until its own timeout.
 */

import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { SandboxError, toSandboxError } from '../../errors.ts';
import { Channel, State } from './channel.ts';
import { doneFuel, kernelOutput, readDone, writeCall, writeKernel, type KernelFrame } from './frames.ts';
import { sendHeld } from './held-frame.ts';
import { grace, pastLimit, within } from './wait-bounds.ts';
import { HOST_CALL_GRACE_MS, PARKED, RELEASE_OPS, TIMEOUT_REPLY, type Awaited, type HostCall, type WorkerLimits } from './worker-wait.ts';
import type { StreamSink } from './stream-sink.ts';
import { HeldModules, runMessage, type HeldRunMessage, type RunJob } from './held-modules.ts';
import {
  PROTOCOL_VERSION,
  parseHostRequest,
  parseOutputMessage,
  type CallFrame,
  type CommandModuleMessage,
  type ControlMessage,
  type DoneFrame,
  type HostReply,
  type HostRequest,
} from './protocol.ts';

export { CANCEL_GRACE_MS, HOST_CALL_GRACE_MS, PARKED, type Awaited, type HostCall, type WorkerLimits } from './worker-wait.ts';

/** Serves one host call; `blobs` are the request's byte payloads; `handle` is the calling worker. */
export type HostHandler = (req: HostRequest, blobs: readonly Uint8Array[], handle: WorkerHandle, call: HostCall) => HostReply | Promise<HostReply>;

const BOOT_TIMEOUT_MS = 10_000;
let nextWorkerId = 1;

export class WorkerHandle {
  readonly id = nextWorkerId++;
  readonly channel = new Channel();
  /** Carries compiled command modules to the worker (read there with receiveMessageOnPort). */
  private modulePort: MessagePort | null = null;
  private worker!: Worker;
  private deathError: SandboxError | null = null;
  private exited!: Promise<void>;
  /** Where the current job's streamed output goes (null: the job does not stream). */
  private sink: StreamSink | null = null;
  /** The compiled modules this worker holds by id (held-modules.ts). */
  private readonly held = new HeldModules();
  alive = false;

  private constructor(private readonly limits: WorkerLimits) {}

  static async spawn(file: string, limits: WorkerLimits): Promise<WorkerHandle> {
    const h = new WorkerHandle(limits);
    await h.boot(file);
    return h;
  }

  private async boot(file: string): Promise<void> {
    const { port1, port2 } = new MessageChannel();
    this.modulePort = port1;
    port1.unref();
    const w = new Worker(file, {
      env: {},
      argv: [],
      execArgv: [],
      stdin: false,
      stdout: true,
      stderr: true,
      workerData: { channel: this.channel.sab, spinMs: this.limits.spinMs, idleWaitMs: this.limits.idleWaitMs, modules: port2 },
      transferList: [port2],
      resourceLimits: {
        maxOldGenerationSizeMb: this.limits.heapMb,
        maxYoungGenerationSizeMb: Math.max(8, Math.floor(this.limits.heapMb / 4)),
        stackSizeMb: this.limits.stackMb,
      },
    });
    this.worker = w;
    // The worker's own stdio is never the guest's (guest output is captured in-protocol) and is
    // never read: reading a worker's stdio refs its port for the worker's whole life (an idle
    // pool would keep the process alive). Unread, a chatty runtime's writes wait on the worker's
    // side (backpressure), inside its heap limit, not on the host.
    w.unref();
    this.exited = new Promise((resolve) => {
      w.once('exit', () => {
        this.alive = false;
        this.modulePort?.close();
        this.deathError ??= new SandboxError('INSTANCE_DEAD', 'the guest worker exited');
        this.channel.set(State.DEAD);
        this.channel.endHousekeeping(); // a dead worker has nothing left to finish
        resolve();
      });
    });
    w.on('error', (err: Error & { code?: string }) => {
      this.deathError =
        err.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? new SandboxError('MEMORY_LIMIT', 'the guest worker ran out of host heap', {})
          : new SandboxError('INSTANCE_DEAD', 'the guest worker failed', {}, err);
    });
    await new Promise<void>((resolve, reject) => {
      // A thread that cannot even start in time means a host too busy: retryable, and the thread goes.
      const timer = setTimeout(() => {
        void w.terminate();
        reject(new SandboxError('OVERLOADED', `the host is too busy: a guest worker did not start within ${BOOT_TIMEOUT_MS} ms`));
      }, BOOT_TIMEOUT_MS);
      w.once('message', () => {
        clearTimeout(timer);
        this.alive = true;
        // From now on the worker posts only streamed output: each is acknowledged (its window,
        // output-forward.ts) and handed to the job's sink, if the job still has one.
        w.on('message', (m: unknown) => this.onOutput(m));
        w.unref(); // a 'message' listener refs the worker's port: an idle worker must not keep Node alive
        resolve();
      });
      w.once('exit', () => {
        clearTimeout(timer);
        reject(this.deathError ?? new SandboxError('INTERNAL', 'a guest worker exited while starting'));
      });
    });
  }

  private onOutput(m: unknown): void {
    this.channel.ackOutput();
    let msg;
    try {
      msg = parseOutputMessage(m);
    } catch {
      return; // a malformed message is dropped: the result frame carries the output anyway
    }
    if (msg) this.sink?.receive(msg);
  }

  /** Hand the worker a compiled command module; it is read before the host reply is. */
  postModule(msg: CommandModuleMessage): void {
    if (!this.alive || !this.modulePort) throw this.deathError ?? new SandboxError('INSTANCE_DEAD');
    this.modulePort.postMessage(msg);
  }

  post(msg: ControlMessage | HeldRunMessage): void {
    if (!this.alive) throw this.deathError ?? new SandboxError('INSTANCE_DEAD');
    this.channel.unlisten(); // a worker listening for a held run on the channel takes this message at once
    this.channel.clearInterrupt();
    this.channel.set(State.RUNNING);
    this.worker.postMessage(msg);
  }

  /** Post a fresh run: its module goes only on its first run on this worker (held-modules.ts), on the channel if the worker listens (frames.ts). */
  postRun(module: WebAssembly.Module, run: RunJob): void {
    const msg = runMessage(this.held, module, run);
    if (msg.kind === 'run-held' && this.alive && sendHeld(this.channel, msg)) return;
    this.post(msg);
  }

  /** Post a call to a loaded instance (the worker is in its serve loop). */
  postCall(frame: CallFrame): void {
    if (!this.alive) throw this.deathError ?? new SandboxError('INSTANCE_DEAD');
    this.channel.clearInterrupt();
    writeCall(this.channel, frame);
    this.channel.set(State.JOB);
  }

  /** Post a kernel-lane call to a loaded kernel (src/fabric: input into its arena, `entry(len)`). */
  postKernel(frame: KernelFrame): void {
    if (!this.alive) throw this.deathError ?? new SandboxError('INSTANCE_DEAD');
    this.channel.clearInterrupt();
    writeKernel(this.channel, frame);
    this.channel.set(State.JOB);
  }

  /**
   * Wait for the job's result until `deadline` (a `performance.now()` value), serving host calls
   * meanwhile. At the deadline the job is interrupted (a metered guest stops at its next fuel
   * refill and reports TIMEOUT itself, keeping its worker); if no result arrives within
   * `graceMs` after that, the wait ends with `timeout` and the caller terminates the worker.
   * Leaves the channel IDLE after a result. `signal` aborting (a cancel, a killed process) is a
   * deadline that comes early, with a grace of at most CANCEL_GRACE_MS. With a `sink`, the job's
   * streamed output is delivered as it arrives and completed from the result before this returns.
   */
  async awaitDone(deadline: number, onHost: HostHandler, graceMs = 0, signal?: AbortSignal, sink?: StreamSink | null): Promise<Awaited> {
    // A short job (a kernel call, a small fresh run) is often done within the spin: taken here,
    // without the timer, listeners and async frames the full wait sets up.
    const quick = sink || this.polled ? null : this.doneWithinSpin(deadline, signal);
    this.polled = false;
    if (quick) return quick;
    this.spun = sink ? 0 : 1; // the full wait does not spin a second time
    // A pending Atomics.waitAsync does not keep Node alive by itself, nor does a worker that has
    // exited (stopped or killed mid-call): a timer does, until the call is settled.
    const keepAlive = setInterval(() => {}, 60_000);
    // Wake the wait to notice the abort.
    const wake = (): void => void Atomics.notify(this.channel.words, 0);
    signal?.addEventListener('abort', wake);
    this.sink = sink ?? null;
    try {
      const a = await this.waitLoop(deadline, onHost, graceMs, signal);
      if (a.kind === 'done') sink?.finish(a.stdout, a.stderr);
      return a;
    } finally {
      this.sink = null;
      sink?.end();
      signal?.removeEventListener('abort', wake);
      clearInterval(keepAlive);
    }
  }

  private async waitLoop(deadline: number, onHost: HostHandler, graceMs: number, signal?: AbortSignal): Promise<Awaited> {
    // One host call is in flight at a time: `cut` ends the wait for it (at the deadline, or when
    // `signal` aborts); one timer per job, armed at the first host call, serves them all.
    let cut: ((v: null) => void) | null = null;
    let timer: ReturnType<typeof setTimeout> | null = null;
    let expired = false;
    const stop = (): void => {
      expired = true;
      cut?.(null);
    };
    signal?.addEventListener('abort', stop);
    try {
      return await this.serveLoop(deadline, onHost, graceMs, signal, (r, limit) => {
        if (expired || signal?.aborted) return Promise.resolve(null);
        timer ??= setTimeout(stop, Math.max(0, limit - performance.now()));
        return new Promise<HostReply | null>((resolve, reject) => {
          cut = resolve;
          r.then(resolve, reject);
        }).finally(() => {
          cut = null;
        });
      });
    } finally {
      if (timer) clearTimeout(timer);
      signal?.removeEventListener('abort', stop);
    }
  }

  private async serveLoop(
    deadline: number,
    onHost: HostHandler,
    graceMs: number,
    signal: AbortSignal | undefined,
    bounded: (r: Promise<HostReply>, limit: number) => Promise<HostReply | null>,
  ): Promise<Awaited> {
    const ch = this.channel;
    let limit = deadline;
    let interrupted = false;
    let spinUntil = performance.now() + (this.spun ? 0 : this.limits.spinMs);
    this.spun = 0;
    for (;;) {
      if (signal?.aborted && !interrupted) limit = Math.min(limit, performance.now());
      const s = ch.state;
      if (s === State.DONE) {
        const done = readDone(ch);
        ch.mark(State.IDLE);
        return { kind: 'done', ...done };
      }
      if (s === State.HOST_REQ) {
        // A host call is bounded by the calling call's deadline: past it (or once the call was
        // interrupted) the handler is aborted, the worker is answered TIMEOUT with the interrupt
        // word up — it stops the guest as soon as it reads that — and the late answer is dropped.
        let reply: HostReply | null = null;
        const late = interrupted || performance.now() >= limit;
        const abort = new AbortController();
        try {
          const frame = ch.read();
          const req = parseHostRequest(frame.header);
          // Past the deadline only bookkeeping that frees what the call holds is still served.
          if (!late || RELEASE_OPS.has(req.op)) {
            const until = late ? performance.now() + HOST_CALL_GRACE_MS : limit;
            const r = onHost(req, frame.blobs, this, { deadline: until, signal: abort.signal });
            const answered = !(r instanceof Promise) ? r : late ? await within(r, until) : await bounded(r, limit);
            if (answered === PARKED && !late && ch.state === State.HOST_REQ) return { kind: 'parked' };
            // An answer at the deadline is the deadline: the guest must not run on past it. A
            // handler's own TIMEOUT from a timer of its own may land up to a clock tick early.
            if (!late && answered !== null && !pastLimit(answered, limit)) reply = answered;
          }
        } catch (e) {
          void toSandboxError(e);
          reply = { v: PROTOCOL_VERSION, kind: 'host-reply', ok: false, errno: -8 };
        }
        if (reply === null) {
          abort.abort(
            signal?.aborted
              ? new SandboxError('CANCELLED', 'the call was stopped inside a host call')
              : new SandboxError('TIMEOUT', 'the call reached its deadline inside a host call'),
          );
        }
        if (ch.state !== State.HOST_REQ) continue; // died meanwhile
        if (reply === null) {
          ch.interrupt();
          if (!interrupted) limit = performance.now() + grace(Math.max(graceMs, HOST_CALL_GRACE_MS), signal);
          interrupted = true;
          ch.write(TIMEOUT_REPLY);
        } else if (reply.ok && reply.payload) {
          const { payload, ...header } = reply;
          ch.write(header, [payload]);
        } else {
          ch.write(reply);
        }
        ch.set(State.HOST_REP);
        spinUntil = performance.now() + this.limits.spinMs;
        continue;
      }
      if (s === State.DEAD) {
        return { kind: 'dead', error: this.deathError ?? new SandboxError('INSTANCE_DEAD') };
      }
      const now = performance.now();
      if (now >= limit) {
        if (interrupted || graceMs <= 0) return { kind: 'timeout' };
        ch.interrupt();
        interrupted = true;
        limit = Math.min(deadline, now) + grace(graceMs, signal);
        continue;
      }
      if (now < spinUntil) continue;
      const res = Atomics.waitAsync(ch.words, 0, s, Math.max(1, limit - now));
      if (res.async) await res.value;
    }
  }

  /**
   * The job's result if it is there within the spin window (and before `deadline`, with `signal`
   * not aborted), else null — nothing consumed, and the full wait takes over from the state as it is.
   */
  /** Set by awaitDone when its quick spin already ran: the wait loop starts without spinning. */
  private spun = 0;

  private doneWithinSpin(deadline: number, signal?: AbortSignal, spinMs = this.limits.spinMs): Awaited | null {
    const ch = this.channel;
    const until = Math.min(deadline, performance.now() + spinMs);
    for (;;) {
      const s = ch.state;
      if (s === State.DONE) {
        if (signal?.aborted) return null;
        const done = readDone(ch);
        ch.mark(State.IDLE);
        return { kind: 'done', ...done };
      }
      if (s !== State.RUNNING && s !== State.JOB && s !== State.IDLE) return null; // IDLE: a posted run not taken up yet
      if (performance.now() >= until) return null;
    }
  }

  /** Set by pollKernel when it answered nothing: the next awaitDone does not spin a second time. */
  private polled = false;

  /** The fuel of the last kernel call `pollKernel` answered. */
  kernelFuel = 0;

  /**
   * The kernel lane's hot path: a kernel call's output when its plain success is there within the
   * spin (its fuel in `kernelFuel`), else null — a failure's frame, or none yet, is left for
   * awaitDone, which then does not spin again.
   */
  pollKernel(deadline: number, spinMs: number): Uint8Array | null {
    const ch = this.channel;
    const until = Math.min(deadline, performance.now() + spinMs);
    for (;;) {
      const s = ch.state;
      if (s === State.DONE) {
        const out = kernelOutput(ch); // a malformed result frame throws INTERNAL here
        if (out !== null) {
          this.kernelFuel = doneFuel(ch);
          ch.mark(State.IDLE);
          return out;
        }
        break;
      }
      if ((s !== State.RUNNING && s !== State.JOB) || performance.now() >= until) break;
    }
    this.polled = true;
    return null;
  }

  /** Answer the host call a job was parked in (then `awaitDone` again to wait for its result). */
  answerParked(reply: HostReply): void {
    const ch = this.channel;
    if (!this.alive || ch.state !== State.HOST_REQ) throw this.deathError ?? new SandboxError('INSTANCE_DEAD', 'the parked job is gone');
    if (reply.ok && reply.payload) {
      const { payload, ...header } = reply;
      ch.write(header, [payload]);
    } else {
      ch.write(reply);
    }
    ch.set(State.HOST_REP);
  }

  /** Tell a serving worker to leave its loop, then end the thread. */
  async terminate(): Promise<void> {
    if (this.alive) {
      this.channel.set(State.DEAD);
      this.channel.unlisten();
      this.deathError ??= new SandboxError('INSTANCE_DEAD', 'the instance was stopped');
    }
    await this.worker.terminate();
    await this.exited;
  }

  /** Resolves when the thread has really exited (the runaway no longer holds a core). */
  whenExited(): Promise<void> {
    return this.exited;
  }
}
