/**
 * The worker thread's entry: the only code that runs on a guest's thread besides the guest.
 *
 * Owns: receiving `run`/`load` control messages, running them, posting results on the channel,
 * serving calls for a loaded (persistent) instance, forwarding the guest's host calls, and
 * streaming a job's output when it asked for it (output-forward.ts).
 * Invariant: the worker talks to the host only through the protocol (engine/bridge/protocol.ts) — control
 * messages in, channel frames both ways — and every wait for the host has a bound.
 *
 * Does not protect against: its own termination — the main thread may terminate this thread at
 * any instant (deadline, stop); nothing here needs to clean up for that to be safe.
 */

import { MessagePort, parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { SandboxError } from '../../errors.ts';
import { AdaptiveSpin, Channel, State } from '../bridge/channel.ts';
import {
  PROTOCOL_VERSION,
  isControlMessage,
  parseHostReply,
  type CommandModuleMessage,
  type HostOp,
  type ControlMessage,
  type DoneFrame,
  type Outcome,
} from '../bridge/protocol.ts';
import { FRAME_KERNEL, readCall, readKernel, writeDone } from '../bridge/frames.ts';
import { LISTEN_SPINS, readHeld } from '../bridge/held-frame.ts';
import { KernelCalls } from './kernel-call.ts';
import { HeldSpecTable, readHeldRun, type RunJob } from './held-run.ts';
import { Guest, type GuestHooks } from './guest.ts';
import { OutputForwarder } from './output-forward.ts';
import { MemoryPool } from './memory-pool.ts';
import type { HostAnswer, HostBridge } from './host-bridge.ts';
import { GuestFault } from '../../abi/signals.ts';
import { ComponentGuest } from './component-guest.ts';

interface WorkerBoot {
  readonly channel: SharedArrayBuffer;
  readonly spinMs: number;
  readonly idleWaitMs: number;
  readonly modules: MessagePort;
}

function isBoot(x: unknown): x is WorkerBoot {
  return (
    typeof x === 'object' &&
    x !== null &&
    (x as { channel?: unknown }).channel instanceof SharedArrayBuffer &&
    (x as { modules?: unknown }).modules instanceof MessagePort
  );
}

if (!parentPort || !isBoot(workerData)) throw new Error('membrane worker started without its boot data');
const port = parentPort;
const boot: WorkerBoot = workerData;
const ch = new Channel(boot.channel);
let currentJob = 0;
let hostWaitMs = 1000;

const pause = new Int32Array(new SharedArrayBuffer(4));
const memories = new MemoryPool();
/** A job's output on its way to a caller that streams it (posted, never waited for). */
const forward = new OutputForwarder(
  (msg, transfer) => port.postMessage(msg, transfer),
  () => ch.outputAcked,
);
const hooks: GuestHooks = { nap: (ms) => ch.nap(ms), tick: forward.tick, idle: forward.idle, stream: (out, err) => forward.begin(currentJob, out, err, true) };

const bridge: HostBridge = {
  call(op: HostOp, blobs: readonly Uint8Array[] = []): HostAnswer {
    ch.write({ v: PROTOCOL_VERSION, kind: 'host', job: currentJob, ...op }, blobs);
    ch.set(State.HOST_REQ);
    const s = ch.waitWhile(State.HOST_REQ, hostWaitMs, boot.spinMs);
    if (s !== State.HOST_REP) {
      throw new GuestFault(new SandboxError('TIMEOUT', 'the host did not answer a host call in time', { op: op.op }));
    }
    const frame = ch.read();
    const reply = parseHostReply(frame.header);
    ch.set(State.RUNNING);
    // The main thread cut this host call at the call's deadline: the guest stops here.
    if (ch.interrupted) throw new GuestFault(new SandboxError('TIMEOUT', 'the call reached its deadline inside a host call', { op: op.op }));
    if (!reply.ok) return { ok: false, errno: reply.errno };
    return { ok: true, value: reply.value, payload: frame.blobs[0] ?? null };
  },
  // Main posts the module before it answers the `command` call, so it is already queued here.
  receiveModule(): CommandModuleMessage | null {
    let got = receiveMessageOnPort(boot.modules) as { message: CommandModuleMessage } | undefined;
    for (let i = 0; got === undefined && i < 100; i++) {
      Atomics.wait(pause, 0, 0, 1);
      got = receiveMessageOnPort(boot.modules) as { message: CommandModuleMessage } | undefined;
    }
    const msg = got?.message;
    return msg && msg.kind === 'command-module' && msg.module instanceof WebAssembly.Module ? msg : null;
  },
};

/** What a finished job reports, from a core guest or a component. */
type Finished = Pick<Guest, 'memory' | 'fuelUsed' | 'stdout' | 'stderr'>;

function postDone(job: number, guest: Finished, outcome: Outcome, startedAt: number, output?: Uint8Array): void {
  forward.end(); // the result frame carries whatever was not streamed yet
  const frame: DoneFrame = {
    v: PROTOCOL_VERSION,
    kind: 'done',
    job,
    outcome,
    memoryBytes: guest.memory.byteLength,
    fuelUsed: guest.fuelUsed,
    stdoutTruncated: guest.stdout.resetTruncation(),
    stderrTruncated: guest.stderr.resetTruncation(),
    durationMs: performance.now() - startedAt,
  };
  writeDone(ch, frame, guest.stdout.take(), guest.stderr.take(), output);
  ch.set(State.DONE);
}

function postFailure(job: number, error: SandboxError): void {
  const frame: DoneFrame = {
    v: PROTOCOL_VERSION,
    kind: 'done',
    job,
    outcome: { ok: false, error: error.toPublic(), exitCode: null },
    memoryBytes: 0,
    fuelUsed: 0,
    stdoutTruncated: false,
    stderrTruncated: false,
    durationMs: 0,
  };
  ch.write(frame, [new Uint8Array(0), new Uint8Array(0)]);
  ch.set(State.DONE);
}

const idleSpin = new AdaptiveSpin(boot.spinMs);

/** Serve calls on a persistent instance until told to stop (or terminated). */
function serve(guest: Guest | ComponentGuest): void {
  let kernel: KernelCalls | null = null;
  for (;;) {
    const s = ch.state;
    if (s === State.DEAD) return;
    if (s === State.JOB && ch.frameKind === FRAME_KERNEL) {
      const t0 = performance.now();
      let k;
      try {
        k = readKernel(ch);
      } catch (e) {
        postFailure(0, e instanceof SandboxError ? e : new SandboxError('INTERNAL'));
        continue;
      }
      currentJob = k.job;
      ch.mark(State.RUNNING);
      if (!(guest instanceof Guest)) {
        postFailure(k.job, new SandboxError('POLICY_INVALID', 'a component instance takes no kernel calls'));
        continue;
      }
      const r = (kernel ??= new KernelCalls(guest)).call(k);
      postDone(k.job, guest, r.outcome, t0, r.output);
      continue;
    }
    if (s === State.JOB) {
      const t0 = performance.now();
      let frame;
      try {
        frame = readCall(ch);
      } catch (e) {
        postFailure(0, e instanceof SandboxError ? e : new SandboxError('INTERNAL'));
        continue;
      }
      currentJob = frame.job;
      forward.begin(frame.job, guest.stdout, guest.stderr, frame.stream === true);
      ch.set(State.RUNNING);
      const outcome = guest.call(frame.export, frame.args, frame.budget);
      postDone(frame.job, guest, outcome, t0);
      continue;
    }
    // DONE (main has not read yet) or IDLE: wait for the next job, spinning first while that pays (adaptive-spin.ts).
    ch.awaitJob(idleSpin, boot.idleWaitMs);
  }
}

/** The compiled modules this worker was given, by the id main chose (bridge/held-modules.ts); nothing else is found by id. */
const held = new Map<number, WebAssembly.Module>();
/** The fixed spec parts this worker was given, by the id main chose (bridge/held-specs.ts). */
const specs = new HeldSpecTable();

/** Messages taken off the port so far: the worker listens on the channel only when none is waiting. */
let received = 0;

port.on('message', (msg: unknown) => {
  const t0 = performance.now();
  received++;
  const run = readHeldRun(msg, specs);
  if (run) {
    const module = held.get(run.moduleId);
    if (module) runFresh(module, run, t0);
    else postFailure(run.job, new SandboxError('INTERNAL', 'the worker does not hold the module of this run'));
    listen();
    return;
  }
  if (!isControlMessage(msg)) {
    postFailure(0, new SandboxError('INTERNAL', 'malformed control message'));
    return;
  }
  if (msg.kind === 'component') {
    currentJob = msg.job;
    hostWaitMs = msg.spec.hostWaitMs;
    ch.set(State.RUNNING);
    const component = new ComponentGuest(msg, bridge, () => ch.interrupted, hooks);
    forward.begin(msg.job, component.stdout, component.stderr, msg.stream === true);
    let outcome;
    try {
      outcome = msg.load ? component.load(msg.budget) : component.run(msg.budget);
    } catch (e) {
      outcome = { ok: false as const, error: (e instanceof SandboxError ? e : new SandboxError('INTERNAL')).toPublic(), exitCode: null };
    }
    if (!msg.load) return finish(msg.job, component, outcome, t0);
    // A persistent component instance (engine.start): it serves calls of its exports.
    postDone(msg.job, component, outcome, t0);
    if (outcome.ok) serve(component);
    return;
  }
  if (msg.kind === 'load') {
    load(msg, t0);
    return;
  }
  if (typeof msg.moduleId === 'number') {
    if (typeof msg.forget === 'number') held.delete(msg.forget);
    held.set(msg.moduleId, msg.module);
  }
  runFresh(msg.module, msg, t0);
  listen();
});

const listenSpin = new AdaptiveSpin(boot.spinMs * LISTEN_SPINS);

/**
 * After a fresh run: take the next held runs from the channel while main posts them there
 * (bridge/frames.ts), then back to the event loop. A frame that is not a well-formed held
 * run of a module this worker holds is INTERNAL and runs nothing.
 */
function listen(): void {
  while (ch.listenForRun(listenSpin, boot.idleWaitMs, received)) {
    const t0 = performance.now();
    let run;
    try {
      run = readHeldRun(readHeld(ch), specs);
    } catch {
      run = null;
    }
    const module = run ? held.get(run.moduleId) : undefined;
    if (run && module) runFresh(module, run, t0);
    else postFailure(run?.job ?? 0, new SandboxError('INTERNAL', run ? 'the worker does not hold the module of this run' : 'malformed held-run frame'));
  }
}

function load(msg: ControlMessage & { kind: 'load' }, t0: number): void {
  currentJob = msg.job;
  hostWaitMs = msg.spec.hostWaitMs;
  ch.set(State.RUNNING);
  const guest = new Guest(msg.module, msg.spec, bridge, () => ch.interrupted, null, hooks, null);
  forward.begin(msg.job, guest.stdout, guest.stderr, false);
  const started = guest.instantiate(msg.budget);
  if (started.ok && guest.hasExport('_initialize')) {
    const startFuel = guest.fuelUsed;
    const rest = { ms: Math.max(0, msg.budget.ms - (performance.now() - t0)), fuel: Math.max(0, msg.budget.fuel - guest.fuelUsed) };
    const init = guest.call('_initialize', [], rest);
    guest.fuelUsed += startFuel;
    postDone(msg.job, guest, init, t0);
    if (init.ok) serve(guest);
    return;
  }
  postDone(msg.job, guest, started, t0);
  if (started.ok) serve(guest);
}

/** A fresh instance of `module`: instantiated, its entry called, disposed; never reused. */
function runFresh(module: WebAssembly.Module, run: RunJob, t0: number): void {
  currentJob = run.job;
  hostWaitMs = run.spec.hostWaitMs;
  ch.set(State.RUNNING);
  // A fresh run's memory is recycled (memory-pool.ts); a persistent instance keeps its own.
  const guest = new Guest(module, run.spec, bridge, () => ch.interrupted, null, hooks, memories);
  forward.begin(run.job, guest.stdout, guest.stderr, run.stream === true);
  const started = guest.instantiate(run.budget);
  if (!started.ok) {
    guest.dispose();
    postDone(run.job, guest, started, t0);
    return;
  }
  const startFuel = guest.fuelUsed;
  const left = { ms: Math.max(0, run.budget.ms - (performance.now() - t0)), fuel: Math.max(0, run.budget.fuel - guest.fuelUsed) };
  const entry = run.entry;
  const outcome = entry.kind === 'start' ? guest.call('_start', [], left) : guest.call(entry.export, entry.args, left);
  guest.fuelUsed += startFuel;
  // Everything the run wrote is committed (the call commits a staged creation when it ends).
  // Closing its own file VFS may checkpoint the WAL into the database file, which moves committed
  // pages and changes nothing any reader sees: that happens after the result is out, with the
  // housekeeping word up so the pool gives this worker its next job only when it is done.
  finish(run.job, guest, outcome, t0);
}

/** Post a run's result; closing its own file VFS happens after, with the housekeeping word up. */
function finish(job: number, guest: Finished & { holdsStorage: boolean; dispose(): void }, outcome: Outcome, t0: number): void {
  const closing = guest.holdsStorage;
  if (closing) ch.beginHousekeeping();
  else guest.dispose();
  postDone(job, guest, outcome, t0);
  if (closing) {
    try {
      guest.dispose();
    } catch {
      // Nothing to report: the result is out and every write is in the WAL, which the next
      // open of the database reads.
    } finally {
      ch.endHousekeeping();
    }
  }
}

port.postMessage({ v: PROTOCOL_VERSION, kind: 'ready' });
