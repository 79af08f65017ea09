/**
 * One interpreter child, seen from the host: spawn it (spawn.ts), wait for `ready`, send it one
 * exec, collect the one answer, and make sure it is gone afterwards.
 *
 * Owns: locating child.mjs (beside this module under tsx, with the modules it imports, or
 * `python-child.mjs` beside the bundle in dist/), the boot bound, the deadline kill (SIGKILL at
 * the call's deadline plus `KILL_GRACE_MS`, for code that never reaches a fuel refill), the
 * cancel kill (SIGKILL as soon as the call's signal aborts), the relay of `output` messages
 * (a child that streams more than the cap, or a stream it was not asked for, is killed) and the
 * death of the child after its one call.
 *
 * Powers: the child's fd 4 is a pipe of length-prefixed frames (protocol.ts); while its one exec
 * runs, each request frame (with the fuel the child says its snippet has used) is handed to the
 * call's `PowerServer` and its answer written back — a
 * frame past `MAX_POWER_FRAME_BYTES`, or any frame when no server was given, ends or denies it.
 * Invariant: a child serves at most one exec and is killed as soon as it has answered, timed out
 * or misbehaved; every wait has a bound; the child's stdout/stderr are never read into results
 * (Pyodide's own fatal-error chatter goes nowhere).
 *
 * Does not protect against: a host so loaded that a healthy boot takes longer than
 * `BOOT_TIMEOUT_MS` (the lane reports INTERNAL and replaces the child).
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Duplex } from 'node:stream';
import { MAX_POWER_FRAME_BYTES, answerPowerFrame, encodeAnswer, type PowerAnswer, type PowerServer } from '../powers.ts';

/** A request frame's header: the JSON's length (u32) and the snippet's fuel used so far (f64), big-endian. */
const REQUEST_HEAD_BYTES = 12;
import { parseChildMessage, type ChildMessage, type ExecMessage } from './protocol.ts';
import type { ChildCommand } from './spawn.ts';
import type { OutputRelay } from './relay.ts';

/** How long a child may take to load and harden Pyodide. */
export const BOOT_TIMEOUT_MS = 60_000;
/** How long past the deadline a child may take to stop itself before it is killed. */
export const KILL_GRACE_MS = 200;

export type ResultMessage = Extract<ChildMessage, { kind: 'result' }>;
export type ExecAnswer = ResultMessage | { readonly kind: 'killed'; readonly reason: 'TIMEOUT' | 'DIED' | 'OUT_OF_MEMORY' | 'CANCELLED' };

/** What a call adds to its exec: the caller's signal (kill at once → CANCELLED) and its output relay. */
export interface ExecControls {
  readonly signal?: AbortSignal | undefined;
  readonly relay?: OutputRelay | undefined;
}
/** V8 aborts a process whose JavaScript heap passed `--max-old-space-size` (SIGABRT; 128 + 6 through bubblewrap). */
const abortedForMemory = (code: number | null, signal: NodeJS.Signals | null): boolean => signal === 'SIGABRT' || code === 134;

export function childScript(): string {
  for (const name of ['./child.mjs', './python-child.mjs']) {
    const p = fileURLToPath(new URL(name, import.meta.url));
    if (existsSync(p)) return p;
  }
  throw new Error('python lane: child script not found');
}

/** The modules child.mjs imports, when it runs unbundled (dist/python-child.mjs has them inside). */
export const CHILD_MODULES = ['./child-driver.mjs', './common-py.mjs', './child-output.mjs'];
export function childModules(script: string): string[] {
  if (!script.endsWith('/child.mjs')) return [];
  return CHILD_MODULES.map((name) => fileURLToPath(new URL(name, pathToFileURL(script))));
}

export class PythonChild {
  readonly ready: Promise<void>;
  private readonly proc: ChildProcess;
  private used = false;
  private dead = false;
  private onMessage: ((m: ChildMessage) => void) | null = null;
  private onExit: (() => void) | null = null;
  private outOfMemory = false;
  private bootTimer: ReturnType<typeof setTimeout> | null = null;
  private holds = 1;

  constructor(cmd: ChildCommand, private readonly maxOutputChars: number) {
    // Its own session and process group (no controlling terminal; one group to kill): bubblewrap's
    // outer process may exit or be killed while the sandboxed interpreter lives on, so the whole
    // group is what `kill` ends.
    this.proc = spawn(cmd.command, [...cmd.args], { env: {}, stdio: ['ignore', 'ignore', 'ignore', 'ipc', 'pipe'], detached: true });
    this.ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.kill();
        reject(new Error('boot timeout'));
      }, BOOT_TIMEOUT_MS);
      this.bootTimer = timer;
      this.onMessage = (m) => {
        if (m.kind !== 'ready') return;
        clearTimeout(timer);
        resolve();
      };
      this.onExit = () => {
        clearTimeout(timer);
        reject(new Error('child exited during boot'));
      };
    });
    this.ready.catch(() => undefined);
    this.proc.on('message', (raw: unknown) => {
      const m = parseChildMessage(raw, this.maxOutputChars);
      if (m === null) {
        this.kill();
        return;
      }
      this.onMessage?.(m);
    });
    this.proc.on('exit', (code, signal) => {
      this.dead = true;
      this.outOfMemory = abortedForMemory(code, signal);
      // The process Node started may be bubblewrap's outer half: close the channel too, so an
      // interpreter that outlived it sees `disconnect` and exits, and nothing keeps this
      // process's event loop alive.
      this.disconnect();
      this.onExit?.();
    });
    this.proc.on('error', () => {
      this.dead = true;
      this.onExit?.();
    });
  }

  /**
   * Whether this child keeps the host process alive, counted: a pooled child, booting or ready,
   * does not (a script that never closes its engine still exits); while anyone waits on it or it
   * runs an exec, it does. A new child starts held once (its spawner releases a pooled one).
   */
  hold(on: boolean): void {
    const before = this.holds;
    this.holds = Math.max(0, this.holds + (on ? 1 : -1));
    if ((before > 0) === (this.holds > 0)) return;
    const pipe = this.proc.stdio[4] as (Duplex & { ref?: () => void; unref?: () => void }) | null | undefined;
    for (const h of [this.proc, this.proc.channel, pipe, this.bootTimer]) {
      if (h && typeof h.ref === 'function' && typeof h.unref === 'function') {
        if (this.holds > 0) h.ref();
        else h.unref();
      }
    }
  }

  get alive(): boolean {
    return !this.dead;
  }

  /**
   * Run the one exec this child will ever serve (its powers served by `server`); the child is dead
   * when this resolves. `controls.signal` aborting kills it at once (CANCELLED); `output` messages
   * go to `controls.relay`, and the rest of the result's output is relayed before this resolves.
   */
  exec(msg: ExecMessage, server: PowerServer | null = null, controls: ExecControls = {}): Promise<ExecAnswer> {
    if (this.used) throw new Error('python child reused');
    this.used = true;
    this.hold(true);
    const { signal, relay } = controls;
    const deadlineAt = Date.now() + msg.timeoutMs;
    this.servePowers(server, deadlineAt);
    return new Promise<ExecAnswer>((resolve) => {
      let settled = false;
      const finish = (a: ExecAnswer): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.kill();
        if (a.kind === 'result') relay?.finish(a);
        else relay?.end();
        resolve(a);
      };
      const onAbort = (): void => finish({ kind: 'killed', reason: 'CANCELLED' });
      const timer = setTimeout(() => finish({ kind: 'killed', reason: 'TIMEOUT' }), msg.timeoutMs + KILL_GRACE_MS);
      this.onMessage = (m) => {
        if (m.kind === 'result' && m.id === msg.id) finish(m);
        else if (m.kind === 'output' && m.id === msg.id) {
          // More than it was asked for, or past the cap: the child is not following the protocol.
          const fine = (m.stdout === undefined || relay?.push('stdout', m.stdout) === true) && (m.stderr === undefined || relay?.push('stderr', m.stderr) === true);
          if (!fine) finish({ kind: 'killed', reason: 'DIED' });
        }
      };
      this.onExit = () => finish({ kind: 'killed', reason: this.outOfMemory ? 'OUT_OF_MEMORY' : 'DIED' });
      if (signal?.aborted) return finish({ kind: 'killed', reason: 'CANCELLED' });
      signal?.addEventListener('abort', onAbort, { once: true });
      if (this.dead) finish({ kind: 'killed', reason: 'DIED' });
      else this.proc.send({ ...msg, deadlineAt }, (err) => err && finish({ kind: 'killed', reason: 'DIED' }));
    });
  }

  /** Answer the child's power frames, one at a time, until it dies; a bad frame kills it. */
  private servePowers(server: PowerServer | null, deadline: number): void {
    const pipe = this.proc.stdio[4] as Duplex | null | undefined;
    if (!pipe) return;
    let buffered: Buffer = Buffer.alloc(0);
    let busy = false;
    const answer = (a: PowerAnswer): void => {
      const body = Buffer.from(encodeAnswer(a));
      const head = Buffer.alloc(4);
      head.writeUInt32BE(body.length, 0);
      if (!this.dead) pipe.write(Buffer.concat([head, body]));
    };
    const next = async (): Promise<void> => {
      while (!busy && buffered.length >= REQUEST_HEAD_BYTES) {
        const n = buffered.readUInt32BE(0);
        if (n > MAX_POWER_FRAME_BYTES) return this.kill();
        if (buffered.length < REQUEST_HEAD_BYTES + n) return;
        const reported = buffered.readDoubleBE(4);
        const fuelUsed = Number.isFinite(reported) && reported > 0 ? reported : 0;
        const frame = buffered.subarray(REQUEST_HEAD_BYTES, REQUEST_HEAD_BYTES + n);
        buffered = buffered.subarray(REQUEST_HEAD_BYTES + n);
        busy = true;
        const a = await answerPowerFrame(frame.toString('utf8'), server, fuelUsed, deadline);
        busy = false;
        answer(a);
      }
    };
    pipe.on('data', (chunk: Buffer) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      void next();
    });
    pipe.on('error', () => {});
  }

  /**
   * End the child: close its IPC channel (the interpreter exits on `disconnect` even when the
   * signal below only reaches bubblewrap's outer process) and SIGKILL what Node started.
   */
  kill(): void {
    this.disconnect();
    const pid = this.proc.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // the group is gone already
    }
  }

  private disconnect(): void {
    if (this.proc.connected) {
      try {
        this.proc.disconnect();
      } catch {
        // already closed
      }
    }
  }
}
