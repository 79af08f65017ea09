/**
 * The `commands` and `exec` caps inside a worker: `run_command` and `exec` run a registered WASI
 * command as a nested guest on this thread, against the caller's own open VFS, within what is
 * left of the caller's deadline and fuel; `process_spawn/wait/kill` hand the command to the main
 * thread, which runs it on another worker (engine/bridge/host-services.ts).
 *
 * Owns: reading requests from guest memory and writing responses back (src/abi/command.ts is
 * the layout), the nesting depth as seen from this guest, the retry rule for a too-small buffer
 * (the last response is kept and served to the same request bytes without running the command
 * again), and the `_steps.jsonl` record every exec-cap call appends to the workspace volume.
 * Invariant: the main thread decides — it resolves the name in the operator's registry (or, for a
 * path, prepares the bytes this worker read from the caller's own VFS: code the guest could run
 * anyway, never a host file), links the command with the caller's caps (never more), and holds
 * the per-principal counters; the worker cannot widen a grant. A nested command shares its caller's deadline and
 * interrupt flag and is billed to its caller's fuel, so nesting never buys more time or work.
 *
 * Does not protect against: a command's output filling its caller's memory — responses are
 * written only into the buffer the caller offered, and its size is the caller's choice.
 */

import { SandboxError } from '../../errors.ts';
import { Vfs } from '../../storage/index.ts';
import {
  GUEST_ERR,
  MAX_REQUEST_BYTES,
  STATUS_ABNORMAL,
  decodeRequest,
  encodeResponse,
  type CommandRequest,
  type CommandResponse,
} from '../../abi/command.ts';
import type { GuestSpec, Outcome } from '../bridge/protocol.ts';
import type { HostBridge } from './host-bridge.ts';
import { FaultError, type GuestMemory } from '../../abi/memory.ts';
import type { CallState } from '../../abi/signals.ts';
import { appendStep, isCommandPath, readModule } from '../../abi/vfs-paths.ts';
import { RetryHold, retryKey } from '../bridge/retry-hold.ts';


/** What a nested command looks like to its caller: the Guest class, minus what is not needed. */
export interface ChildGuest {
  readonly stdout: { take(): Uint8Array; resetTruncation(): boolean };
  readonly stderr: { take(): Uint8Array; resetTruncation(): boolean };
  fuelUsed: number;
  instantiate(budget: { ms: number; fuel: number }): Outcome;
  call(name: string, args: readonly never[], budget: { ms: number; fuel: number }): Outcome;
  dispose(): void;
}

export interface CommandsContext {
  readonly host: HostBridge;
  readonly spec: GuestSpec;
  readonly memory: GuestMemory;
  readonly state: CallState;
  readonly vfs: () => Vfs | null;
  readonly fuelLeft: () => number;
  readonly spendFuel: (n: number) => void;
  /** End the caller's call: its nested command used up the budget they share, or the time. */
  readonly stop: (code: 'FUEL_EXHAUSTED' | 'TIMEOUT') => never;
  readonly remainingMs: () => number;
  readonly child: (module: WebAssembly.Module, spec: GuestSpec, vfs: Vfs | null) => ChildGuest;
}

type Mode = 'run' | 'exec';

export class Commands {
  /** The last response that did not fit, kept for the retry with a bigger buffer. */
  private readonly hold = new RetryHold();

  constructor(private readonly ctx: CommandsContext) {}

  imports(): Record<string, (...a: number[]) => number> {
    return {
      run_command: (p, l, o, c) => this.runImport('run', p, l, o, c),
      exec: (p, l, o, c) => this.runImport('exec', p, l, o, c),
      process_spawn: (p, l) => this.spawn(p, l),
      process_wait: (pid, o, c) => this.wait(pid, o, c),
      process_kill: (pid) => this.kill(pid),
    };
  }

  private runImport(mode: Mode, reqPtr: number, reqLen: number, outPtr: number, outCap: number): number {
    this.ctx.state.rethrow();
    const raw = this.readRequest(reqPtr, reqLen);
    if (typeof raw === 'number') return raw;
    const op = mode === 'run' ? 'run_command' : 'exec';
    const key = retryKey(op, [raw]);
    const kept = this.hold.kept(key);
    if (kept) return this.deliver(key, kept, outPtr, outCap);
    const request = decodeRequest(raw);
    if (typeof request === 'number') return request;
    const response = this.runNested(mode, request);
    if (typeof response === 'number') return response;
    return this.deliver(key, encodeResponse(response), outPtr, outCap);
  }

  /** Run one registered command on this thread; a number is a guest error code (nothing ran). */
  private runNested(mode: Mode, request: CommandRequest): CommandResponse | number {
    const { ctx } = this;
    const depth = ctx.spec.depth + 1;
    const t0 = performance.now();
    const refuse = (code: number): number => {
      if (mode === 'exec') this.step({ op: 'exec', depth, argv: [request.name, ...request.args], refused: errName(code) });
      return code;
    };
    // A path names a module in the caller's own VFS (a build's output): its bytes go along, and
    // the main thread prepares and links them exactly as it would a registered command's.
    const module = this.pathModule(request.name);
    if (typeof module === 'number') return refuse(module);
    // The main thread decides (and audits) the depth limit; the worker only reports its depth.
    const answer = ctx.host.call({ op: 'command', mode, name: request.name, depth }, module ? [module] : undefined);
    if (!answer.ok) return refuse(answer.errno);
    const slot = answer.value;
    try {
      const msg = ctx.host.receiveModule();
      if (!msg) throw new SandboxError('INTERNAL', 'the command module did not arrive');
      const spec: GuestSpec = {
        ...ctx.spec,
        link: msg.link,
        maxMemoryPages: msg.maxMemoryPages,
        importedMemory: msg.importedMemory,
        growFailedExport: msg.growFailedExport,
        poolMemory: msg.poolMemory ?? null,
        fuel: { ...ctx.spec.fuel, metered: msg.metered },
        ...(msg.images && ctx.spec.vfs ? { vfs: { ...ctx.spec.vfs, images: msg.images } } : {}),
        wasi: { argv: [request.name, ...(request.args[0] === '-cc1' ? [] : (msg.argsPrefix ?? [])), ...request.args], env: [], stdin: request.stdin },
        depth,
      };
      const child = ctx.child(msg.module, spec, ctx.vfs());
      let outcome: Outcome;
      let fuel = 0;
      try {
        const budget = (): { ms: number; fuel: number } => ({ ms: Math.max(0, ctx.remainingMs()), fuel: Math.max(0, ctx.fuelLeft() - fuel) });
        outcome = child.instantiate(budget());
        fuel += child.fuelUsed;
        if (outcome.ok) {
          outcome = child.call('_start', [], budget());
          fuel += child.fuelUsed;
        }
      } finally {
        child.dispose();
        ctx.spendFuel(fuel);
      }
      // Time and fuel are shared: a command that ran out of either leaves its caller none.
      if (!outcome.ok && (outcome.error.code === 'FUEL_EXHAUSTED' || outcome.error.code === 'TIMEOUT')) ctx.stop(outcome.error.code);
      const response = toResponse(outcome, child);
      if (mode === 'exec') {
        this.step({
          op: 'exec',
          depth,
          argv: [request.name, ...request.args],
          status: response.status,
          ...(response.error ? { error: response.error } : {}),
          fuelUsed: fuel,
          durationMs: Math.round((performance.now() - t0) * 1000) / 1000,
          stdoutBytes: response.stdout.length,
          stderrBytes: response.stderr.length,
        });
      }
      return response;
    } finally {
      if (mode === 'exec') ctx.host.call({ op: 'command_end', slot });
    }
  }

  private spawn(reqPtr: number, reqLen: number): number {
    this.ctx.state.rethrow();
    const raw = this.readRequest(reqPtr, reqLen);
    if (typeof raw === 'number') return raw;
    const request = decodeRequest(raw);
    if (typeof request === 'number') return request;
    const depth = this.ctx.spec.depth + 1;
    const argv = [request.name, ...request.args];
    const module = this.pathModule(request.name);
    if (typeof module === 'number') {
      this.step({ op: 'spawn', depth, argv, refused: errName(module) });
      return module;
    }
    const answer = this.ctx.host.call({ op: 'process_spawn', depth }, module ? [raw, module] : [raw]);
    this.step(answer.ok ? { op: 'spawn', depth, argv, pid: answer.value } : { op: 'spawn', depth, argv, refused: errName(answer.errno) });
    return answer.ok ? answer.value : answer.errno;
  }

  private wait(pid: number, outPtr: number, outCap: number): number {
    this.ctx.state.rethrow();
    const answer = this.ctx.host.call({ op: 'process_wait', pid: pid | 0, cap: outCap >>> 0 });
    if (!answer.ok) return answer.errno;
    if (answer.value > outCap >>> 0 || !answer.payload) return answer.value;
    if (!this.write(outPtr, answer.payload)) return GUEST_ERR.INVALID;
    this.step({ op: 'wait', pid: pid | 0, bytes: answer.value });
    return answer.value;
  }

  private kill(pid: number): number {
    this.ctx.state.rethrow();
    const answer = this.ctx.host.call({ op: 'process_kill', pid: pid | 0 });
    if (answer.ok) this.step({ op: 'kill', pid: pid | 0 });
    return answer.ok ? 0 : answer.errno;
  }

  /** null for a registered command's name; for a path, the module's bytes from the caller's VFS (none without the `vfs` cap). */
  private pathModule(name: string): Uint8Array | number | null {
    if (!isCommandPath(name)) return null;
    const vfs = this.ctx.vfs();
    const spec = this.ctx.spec.vfs;
    return vfs && spec ? readModule(vfs, spec, name) : GUEST_ERR.NOT_FOUND;
  }

  private readRequest(ptr: number, len: number): Uint8Array | number {
    if (len >>> 0 > MAX_REQUEST_BYTES) return GUEST_ERR.TOO_LARGE;
    try {
      return this.ctx.memory.copy(ptr, len >>> 0);
    } catch (e) {
      if (e instanceof FaultError) return GUEST_ERR.INVALID;
      throw e;
    }
  }

  private deliver(key: string, response: Uint8Array, outPtr: number, outCap: number): number {
    if (!this.hold.fits(key, response, outCap)) return response.length;
    return this.write(outPtr, response) ? response.length : GUEST_ERR.INVALID;
  }

  private write(ptr: number, bytes: Uint8Array): boolean {
    try {
      this.ctx.memory.write(ptr, bytes);
      return true;
    } catch (e) {
      if (e instanceof FaultError) return false;
      throw e;
    }
  }

  /** Append this exec-cap call's line to `_steps.jsonl` (src/abi/vfs-paths.ts), when the guest has a VFS. */
  private step(record: Record<string, unknown>): void {
    const vfs = this.ctx.vfs();
    if (vfs) appendStep(vfs, record);
  }
}

function toResponse(outcome: Outcome, child: ChildGuest): CommandResponse {
  const stdoutTruncated = child.stdout.resetTruncation();
  const stderrTruncated = child.stderr.resetTruncation();
  const base = { stdout: child.stdout.take(), stderr: child.stderr.take(), stdoutTruncated, stderrTruncated };
  if (outcome.ok) return { status: outcome.exitCode ?? 0, error: '', ...base };
  if (outcome.error.code === 'GUEST_EXIT' && outcome.exitCode !== null) return { status: outcome.exitCode, error: '', ...base };
  return { status: STATUS_ABNORMAL, error: outcome.error.code, ...base };
}

function errName(code: number): string {
  return Object.entries(GUEST_ERR).find(([, v]) => v === code)?.[0] ?? String(code);
}

