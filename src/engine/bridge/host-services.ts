/**
 * The main thread's side of a guest's host calls: `log`, the command lanes (`run_command`,
 * `exec`, `process_*`), `vfs_query`, the brokers (handed to src/brokers/hub.ts) and the
 * embedder's host functions (src/brokers/host-functions.ts; an answer too big for the guest's
 * buffer is kept for its retry, so a function never runs twice for one request).
 *
 * Owns: resolving a command name in the operator's registry (or taking a path's module from the
 * caller's own VFS, as its worker read it) and preparing the module with the caller's limits and caps; taking the per-principal slots (tenant-slots.ts: ≤ 64 concurrent execs, ≤ 32 live
 * processes — a principal is the tenant, so a tenant's instances share them; an os_process
 * child takes its parent engine's, `slots`); the process table
 * of each job (processes run on other workers; they end when their job ends); handing
 * `vfs_query` to the query service with the caller's own database.
 * Invariant: every decision is made here from the caller's captured context (tenant, policy,
 * VFS, depth) — a request can name a registered command (or a module of its own) and its argv,
 * nothing else; a slot taken
 * is released on every path (the call's end, its job's end, a worker's death). Every host call
 * is served under its calling call's deadline (`HostCall`, worker-handle.ts): what it waits on
 * (a broker, a process, a query, a fan-out) gets at most the time left and its abort signal, and
 * once that signal has fired nothing of its late answer reaches the worker.
 *
 * Does not protect against: rate and revocation — the broker cadence (issue #5) wraps these.
 */

import { SandboxError, toSandboxError } from '../../errors.ts';
import type { ImageMount } from '../../storage/vfs-config.ts';
import type { PolicyConfig } from '../../policy/resolve.ts';
import { FUEL_REFILL_IMPORT, importKey } from '../../policy/catalog.ts';
import { planLinks } from '../linker.ts';
import type { PreparedModule } from '../module-cache.ts';
import { RetryHold, retryKey } from './retry-hold.ts';
import type { Declaration } from '../../policy/toolkit.ts';
import { REMOTE_CALLS, decodeManyRequest, encodeManyResponse, type BrokerAnswer } from '../../brokers/index.ts';
import { fanMap, values } from '../../fabric/fanout.ts';
import { GUEST_ERR, MAX_EXEC_DEPTH, MAX_REQUEST_BYTES, MAX_VFS_MODULE_BYTES, STATUS_ABNORMAL, decodeRequest, encodeResponse, type CommandRequest } from '../../abi/command.ts';
import { isCommandPath } from '../../abi/vfs-paths.ts';
import { UNSIGNED_VFS_MODULE, sha256Hex } from '../../provenance/artifact.ts';
import { PROTOCOL_VERSION, encodeStart, type GuestSpec, type HostReply, type HostRequest } from './protocol.ts';
import type { CommandRegistry } from '../registry.ts';
import { responseOf, type RunResult } from '../results.ts';
import { PARKED, type HostCall, type WorkerHandle } from './worker-handle.ts';
import { PARK, type PortHandler } from '../../wasi/port.ts';
import type { LogEntry } from '../options.ts';
import { LazyJob, type JobHost, type ServeSlot } from './job-host.ts';
import { MAX_CONCURRENT_EXECS, MAX_LIVE_PROCESSES, TenantSlots, type SlotKind } from './tenant-slots.ts';

/** The caps of the command lanes: their cadence is `admit` (an os_process child's runs in its parent). */
type SpawnCap = 'commands' | 'exec' | 'parallel';

/** A job's stop reason (an AbortError, as a reason-less abort's): made once, not a stack trace per job. */
const JOB_ENDED = new DOMException('the job ended', 'AbortError');

/** DESIGN §4: the exec cap's per-principal limits (tenant-slots.ts). */
export { MAX_CONCURRENT_EXECS, MAX_LIVE_PROCESSES };

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;

/** Who is calling: captured when the job started, never taken from the request. */
export interface Caller {
  readonly tenant: string;
  readonly instance: string;
  readonly policy: PolicyConfig;
  readonly spec: GuestSpec;
  /** A lane's port (its interpreter's requests: src/wasi/port.ts); only lane runs have one. */
  readonly port?: PortHandler;
}

export type { PortHandler };

export interface ProcessRun {
  readonly request: CommandRequest;
  readonly bytes: Uint8Array;
  readonly depth: number;
  readonly signal: AbortSignal;
}

export interface HostServicesDeps {
  readonly registry: CommandRegistry;
  readonly onLog: ((entry: LogEntry) => void) | null;
  readonly prepare: (bytes: Uint8Array, policy: PolicyConfig) => Promise<PreparedModule>;
  /** Run a spawned process on its own worker, as the caller, against the caller's VFS. */
  readonly runProcess: (caller: Caller, run: ProcessRun) => Promise<RunResult>;
  /** `vfs_query` in its child process, which runs no later than `deadline` (`performance.now()`). */
  readonly query: (caller: Caller, sql: string, snapshot: Uint8Array, deadline: number) => Promise<{ ok: true; json: Uint8Array } | { ok: false; errno: number }>;
  /** A main-thread broker call (kv, queue, secrets, …) after the cadence (a promise when the brokers are forwarded: an os_process child's). */
  readonly broker: (caller: Caller, name: string, args: readonly Uint8Array[], cap: number) => BrokerAnswer | Promise<BrokerAnswer>;
  /** The cadence's first four steps for a call served here (`run_command_many`): null = go. */
  readonly admit: (caller: Caller, cap: SpawnCap, op: string, bytes: number, max: number) => number | null | Promise<number | null>;
  /** An audit record for a refusal decided here (depth, concurrency, live processes). */
  readonly record: (caller: Caller, kind: string, detail: Record<string, unknown>) => void;
  /** Tasks `run_command_many` runs at once. */
  readonly parallelism: number;
  /**
   * A remote broker call (network, llm; the cadence runs inside): its answer bytes or a guest
   * error; `stop` aborts it (down to the socket) and its own timeouts end by `deadline`.
   */
  readonly net: (caller: Caller, name: string, args: readonly Uint8Array[], stop: AbortSignal, deadline: number) => Promise<Uint8Array | number>;
  /** The embedder's host caps and their functions (what a nested command may link). */
  readonly hostFunctions: Readonly<Record<string, readonly string[]>>;
  /** An embedder host function (the cadence runs inside): its JSON answer or a guest error. */
  readonly hostCall: (caller: Caller, cap: string, fn: string, args: Uint8Array | number, stops: readonly AbortSignal[], deadline: number) => Promise<Uint8Array | number>;
  /**
   * The engine runs only signed modules (`requireSigned`): a module a guest names by VFS path has
   * no signed manifest, so it is refused (DENIED, one `artifact.refused` record); the operator's
   * registered commands are not gated.
   */
  readonly signedOnly: boolean;
  /**
   * Where a tenant's exec and live-process slots are counted when not here: an os_process
   * child's are its parent engine's, shared with every call of the tenant (broker-link.ts). A
   * slot's release, or null at the limit.
   */
  readonly slots?: (kind: SlotKind) => Promise<(() => void) | null>;
}

interface Process {
  readonly promise: Promise<RunResult>;
  readonly abort: AbortController;
  readonly release: () => void;
  response: Uint8Array | null;
}

export type { JobHost, ServeSlot };

/** The largest answer a served guest may give (serve_respond). */
export const MAX_SERVE_RESPONSE_BYTES = 1024 * 1024;

export class HostServices {
  private readonly counters = new TenantSlots();
  /** Host calls (all but `log`) per watched instance id: a receipt's "did it call out?" (engine/receipts.ts). */
  private readonly watched = new Map<string, { calls: number }>();

  constructor(private readonly deps: HostServicesDeps) {}

  /** Concurrent execs and live processes of a tenant right now (for tests and metrics). */
  usage(tenant: string): { execs: number; processes: number } {
    return this.counters.usage(tenant);
  }

  /** A registered command (the operator's registry) for a snippet's commands: its module, full arguments, image mounts and toolkit declaration. */
  command(name: string, args: readonly string[]): { bytes: Uint8Array; argv: readonly string[]; images: readonly ImageMount[]; declared?: Declaration } | undefined {
    const bytes = this.deps.registry.get(name);
    const declared = this.deps.registry.declarationOf(name);
    return bytes ? { bytes, argv: this.deps.registry.argsFor(name, args), images: this.deps.registry.imagesFor(name), ...(declared ? { declared } : {}) } : undefined;
  }

  /**
   * One of `tenant`'s concurrent exec slots for a snippet's exec-cap call (src/lanes/host.ts):
   * its release (idempotent), or null when the tenant already has MAX_CONCURRENT_EXECS in flight.
   */
  takeExec(tenant: string): Promise<(() => void) | null> {
    return this.slot('exec', tenant);
  }

  /** One of `tenant`'s slots of `kind` counted here (idempotent release), or null at its limit. */
  takeSlot(kind: SlotKind, tenant: string): (() => void) | null {
    return this.counters.take(kind, tenant);
  }

  /** A slot of `tenant`: here, or where the slots are counted (an os_process child's parent). */
  private async slot(kind: SlotKind, tenant: string): Promise<(() => void) | null> {
    return this.deps.slots ? this.deps.slots(kind) : this.takeSlot(kind, tenant);
  }

  /** Count the host calls of jobs run as instance `id` until `unwatch()`. */
  watch(id: string): { readonly calls: number; unwatch(): void } {
    const counter = { calls: 0, unwatch: (): void => void (this.watched.get(id) === counter && this.watched.delete(id)) };
    this.watched.set(id, counter);
    return counter;
  }

  /** The host side of one job as `caller` (made in full at its first host call: job-host.ts). */
  job(caller: Caller): JobHost {
    return new LazyJob((serving) => this.fullJob(caller, serving));
  }

  private fullJob(caller: Caller, serving: ServeSlot): JobHost {
    const slots = new Map<number, () => void>();
    const processes = new Map<number, Process>();
    let nextSlot = 1;
    let nextPid = 1;
    let ended = false;
    // Made at the first host call that needs it (most jobs make none): aborted when the job ends or is interrupted.
    let stop: AbortController | null = null;
    const stopSignal = (): AbortSignal => (ended ? AbortSignal.abort(JOB_ENDED) : (stop ??= new AbortController()).signal);
    /** An answer too big for the guest's buffer, kept for the retry with the same request. */
    const hold = new RetryHold();
    const ok = (value: number, payload?: Uint8Array): HostReply =>
      payload ? { v: PROTOCOL_VERSION, kind: 'host-reply', ok: true, value, payload } : { v: PROTOCOL_VERSION, kind: 'host-reply', ok: true, value };
    const err = (errno: number): HostReply => ({ v: PROTOCOL_VERSION, kind: 'host-reply', ok: false, errno });
    const quota = (broker: string, op: string, why: string): HostReply => {
      this.deps.record(caller, 'denied', { broker, op, code: 'QUOTA', why });
      return err(GUEST_ERR.QUOTA);
    };
    const releaseExec = (slot: number): void => {
      const release = slots.get(slot);
      slots.delete(slot);
      release?.();
    };
    const reap = (pid: number): void => {
      const p = processes.get(pid);
      if (!p) return;
      processes.delete(pid);
      p.abort.abort();
      p.release();
    };

    const handle = async (req: HostRequest, blobs: readonly Uint8Array[], worker: WorkerHandle, call: HostCall): Promise<HostReply> => {
      // Looked up per request: a persistent instance's job outlives any one watched call.
      if (req.op !== 'log' && this.watched.size > 0) {
        const watched = this.watched.get(caller.instance);
        if (watched) watched.calls++;
      }
      switch (req.op) {
        case 'log':
          this.log(caller, req.level, req.message);
          return ok(0);
        case 'command': {
          const cap = req.mode === 'exec' ? 'exec' : 'commands';
          const op = req.mode === 'exec' ? 'exec' : 'run_command';
          const refused = await this.deps.admit(caller, cap, op, 0, 1);
          if (refused !== null) return err(refused);
          // Nested commands on the caller's worker call with their own depth: deeper, never past the cap.
          if (req.depth <= caller.spec.depth || req.depth > MAX_EXEC_DEPTH) return quota(cap, op, `depth ${req.depth} > ${MAX_EXEC_DEPTH}`);
          let slot = 0;
          if (req.mode === 'exec') {
            const release = await this.slot('exec', caller.tenant);
            if (release === null) return quota(cap, op, `${MAX_CONCURRENT_EXECS} execs in flight`);
            slot = nextSlot++;
            slots.set(slot, release);
            if (ended) releaseExec(slot); // the job ended while the slot was asked for
          }
          try {
            const resolved = await this.resolve(caller, req.name, blobs[0]);
            if (typeof resolved === 'number') {
              releaseExec(slot);
              return err(resolved);
            }
            // Cut at the deadline meanwhile: the worker has moved on, and may run someone else's
            // call by now — it must never find this module waiting for it.
            if (call.signal.aborted) {
              releaseExec(slot);
              return err(GUEST_ERR.TIMEOUT);
            }
            worker.postModule(resolved);
            return ok(slot);
          } catch (e) {
            releaseExec(slot);
            throw e;
          }
        }
        case 'command_end':
          releaseExec(req.slot);
          return ok(0);
        case 'process_spawn': {
          const refused = await this.deps.admit(caller, 'exec', 'process_spawn', blobs[0]?.length ?? 0, MAX_REQUEST_BYTES);
          if (refused !== null) return err(refused);
          if (req.depth <= caller.spec.depth || req.depth > MAX_EXEC_DEPTH) return quota('exec', 'process_spawn', `depth ${req.depth} > ${MAX_EXEC_DEPTH}`);
          const request = decodeRequest(blobs[0] ?? new Uint8Array(0));
          if (typeof request === 'number') return err(request);
          const release = await this.slot('process', caller.tenant);
          if (release === null) return quota('exec', 'process_spawn', `${MAX_LIVE_PROCESSES} live processes`);
          const bytes = this.commandBytes(caller, request.name, blobs[1]);
          if (typeof bytes === 'number' || ended) {
            release();
            return err(typeof bytes === 'number' ? bytes : GUEST_ERR.UNAVAILABLE);
          }
          const abort = new AbortController();
          const pid = nextPid++;
          const promise = this.deps.runProcess(caller, { request, bytes, depth: req.depth, signal: abort.signal });
          processes.set(pid, { promise, abort, release, response: null });
          return ok(pid);
        }
        case 'process_wait': {
          const p = processes.get(req.pid);
          if (!p) return err(GUEST_ERR.NOT_FOUND);
          const done = await p.promise;
          if (call.signal.aborted) return err(GUEST_ERR.TIMEOUT);
          p.response ??= encodeResponse(responseOf(done));
          const n = p.response.length;
          if (n > req.cap) return ok(n);
          reap(req.pid);
          return ok(n, p.response);
        }
        case 'process_kill': {
          if (!processes.has(req.pid)) return err(GUEST_ERR.NOT_FOUND);
          reap(req.pid);
          return ok(0);
        }
        case 'broker': {
          if (req.name === 'serve_request' || req.name === 'serve_respond') {
            if (!caller.policy.caps.includes('net')) return err(GUEST_ERR.DENIED);
            if (req.name === 'serve_request') {
              const r = serving.request;
              if (!r) return err(GUEST_ERR.NOT_FOUND);
              return r.length > req.cap ? ok(r.length) : ok(r.length, r);
            }
            const answer = blobs[0] ?? new Uint8Array(0);
            if (!serving.request) return err(GUEST_ERR.NOT_FOUND);
            if (answer.length > MAX_SERVE_RESPONSE_BYTES) return err(GUEST_ERR.TOO_LARGE);
            serving.response = answer.slice();
            return ok(0);
          }
          if (req.name === 'run_command_many' || REMOTE_CALLS[req.name] !== undefined) {
            // Long calls: what they fetched or ran is kept for the retry with a bigger buffer.
            const key = retryKey(req.name, blobs);
            const kept = hold.kept(key);
            const signal = AbortSignal.any([stopSignal(), call.signal]);
            const answer = kept ?? (req.name === 'run_command_many' ? await this.runMany(caller, blobs[0] ?? new Uint8Array(0), signal, call.deadline) : await this.deps.net(caller, req.name, blobs, signal, call.deadline));
            // A late answer (the call was cut at its deadline) is not kept for a retry.
            if (call.signal.aborted) return err(GUEST_ERR.TIMEOUT);
            if (typeof answer === 'number') return err(answer);
            return hold.fits(key, answer, req.cap) ? ok(answer.length, answer) : ok(answer.length);
          }
          const got = this.deps.broker(caller, req.name, blobs, req.cap);
          const answer = got instanceof Promise ? await got : got;
          if (got instanceof Promise && call.signal.aborted) return err(GUEST_ERR.TIMEOUT);
          return answer.ok ? ok(answer.value, answer.payload) : err(answer.errno);
        }
        case 'hostfn': {
          // Like a remote call: the answer is kept for the retry with a bigger buffer, so a host
          // function is never run twice for one request.
          const key = retryKey(`${req.cap}.${req.fn}`, blobs);
          const kept = req.oversized === undefined ? hold.kept(key) : null;
          const answer =
            kept ??
            (await this.deps.hostCall(caller, req.cap, req.fn, req.oversized ?? blobs[0] ?? new Uint8Array(0), [stopSignal(), call.signal], call.deadline));
          if (call.signal.aborted) return err(GUEST_ERR.TIMEOUT);
          if (typeof answer === 'number') return err(answer);
          return hold.fits(key, answer, req.out) ? ok(answer.length, answer) : ok(answer.length);
        }
        case 'port': {
          if (!caller.port) return err(GUEST_ERR.NOT_FOUND);
          const got = await caller.port(blobs[0] ?? new Uint8Array(0), req.fuelUsed, call);
          if (got === PARK) return PARKED;
          if (call.signal.aborted) return err(GUEST_ERR.TIMEOUT);
          if (typeof got === 'number') return err(got);
          // `value`: bit 0 starts the snippet (its budget before the answer); the rest is fuel to charge (protocol.ts).
          const charge = Math.max(0, Math.floor(got.charge ?? 0)) * 2;
          return got.start ? ok(charge + 1, encodeStart(got.start, got.answer)) : ok(charge, got.answer);
        }
        case 'vfs_query': {
          if (!caller.spec.vfs) return err(GUEST_ERR.DENIED);
          const answer = await this.deps.query(caller, req.sql, blobs[0] ?? new Uint8Array(0), call.deadline);
          return answer.ok ? ok(answer.json.length, answer.json) : err(answer.errno);
        }
      }
    };

    return {
      handle,
      serving,
      end: () => {
        ended = true;
        stop?.abort(JOB_ENDED);
        stop = null;
        for (const slot of [...slots.keys()]) releaseExec(slot);
        for (const pid of [...processes.keys()]) reap(pid);
      },
      interrupt: () => {
        stop?.abort(JOB_ENDED);
        stop = null;
        for (const slot of [...slots.keys()]) releaseExec(slot);
        for (const pid of [...processes.keys()]) reap(pid);
      },
    };
  }

  /** `run_command_many`: the cadence, then one task per input on the pool; the encoded responses. */
  private async runMany(caller: Caller, raw: Uint8Array, stop: AbortSignal, deadline: number): Promise<Uint8Array | number> {
    const refused = await this.deps.admit(caller, 'parallel', 'run_command_many', raw.byteLength, MAX_REQUEST_BYTES);
    if (refused !== null) return refused;
    const many = decodeManyRequest(raw);
    if (typeof many === 'number') return many;
    const depth = caller.spec.depth + 1;
    if (depth > MAX_EXEC_DEPTH) return GUEST_ERR.QUOTA;
    const bytes = this.deps.registry.get(many.request.name);
    if (!bytes) return GUEST_ERR.NOT_FOUND;
    const left = Math.floor(deadline - performance.now());
    if (left <= 0) return GUEST_ERR.TIMEOUT;
    const perTask = Math.min(many.timeoutMs || caller.policy.timeoutMs, caller.policy.timeoutMs, left);
    // The fabric's fan-out (src/fabric/fanout.ts): width, per-task timeout, the caller's stop.
    const outcomes = await fanMap(
      many.inputs,
      (stdin, _i, signal) => this.deps.runProcess(caller, { request: { ...many.request, stdin }, bytes, depth, signal }).then((r) => encodeResponse(responseOf(r))),
      { width: this.deps.parallelism, perTaskTimeoutMs: perTask, signal: stop },
    );
    const empty = new Uint8Array(0);
    return encodeManyResponse(values(outcomes, (e) => encodeResponse({ status: STATUS_ABNORMAL, error: e.code, stdout: empty, stderr: empty, stdoutTruncated: false, stderrTruncated: false })));
  }

  /** A registered command prepared and linked as the caller: its module message, or a guest error. */
  /** `fromVfs`: the bytes the worker read from the caller's VFS, when `name` is a path. */
  private async resolve(caller: Caller, name: string, fromVfs: Uint8Array | undefined): Promise<Parameters<WorkerHandle['postModule']>[0] | number> {
    const bytes = this.commandBytes(caller, name, fromVfs);
    if (typeof bytes === 'number') return bytes;
    const registered = !isCommandPath(name);
    let prepared: PreparedModule;
    try {
      prepared = await this.deps.prepare(bytes, caller.policy);
    } catch (e) {
      return toSandboxError(e).code === 'INVALID_MODULE' ? GUEST_ERR.INVALID : GUEST_ERR.UNAVAILABLE;
    }
    if (!prepared.desc.exports.some((e) => e.name === '_start' && e.kind === 'func')) return GUEST_ERR.INVALID;
    let plan;
    try {
      plan = planLinks(prepared.desc, caller.policy.caps, { defined: this.deps.hostFunctions, granted: caller.policy.hostCaps });
    } catch (e) {
      // The command needs a power its caller was not granted: it does not run.
      if (e instanceof SandboxError && e.code === 'LINK_UNSATISFIED') return GUEST_ERR.DENIED;
      throw e;
    }
    const link = prepared.metered ? [...plan.link, importKey(FUEL_REFILL_IMPORT.module, FUEL_REFILL_IMPORT.name)] : plan.link;
    return {
      kind: 'command-module',
      module: prepared.module,
      link,
      maxMemoryPages: prepared.maxMemoryPages,
      importedMemory: plan.importedMemory,
      growFailedExport: prepared.limits.growFailedExport,
      poolMemory: prepared.limits.poolMemory ?? null,
      metered: prepared.metered,
      ...(registered ? { images: this.deps.registry.imagesFor(name), argsPrefix: this.deps.registry.argsPrefix(name) } : {}),
    };
  }

  /**
   * A command's module: the registry's for a name; for a path, the bytes its worker read from the
   * caller's VFS (bounded like any frame, checked again here) — never looked up in the registry.
   * Under `requireSigned` a VFS module, which has no signed manifest, is DENIED and recorded.
   */
  private commandBytes(caller: Caller, name: string, fromVfs: Uint8Array | undefined): Uint8Array | number {
    if (!isCommandPath(name)) return this.deps.registry.get(name) ?? GUEST_ERR.NOT_FOUND;
    if (!fromVfs || fromVfs.byteLength > MAX_VFS_MODULE_BYTES) return GUEST_ERR.NOT_FOUND;
    if (!this.deps.signedOnly) return fromVfs;
    this.deps.record(caller, 'artifact.refused', { reason: UNSIGNED_VFS_MODULE, sha256: sha256Hex(fromVfs) });
    return GUEST_ERR.DENIED;
  }

  private log(caller: Caller, level: number, message: string): void {
    const onLog = this.deps.onLog;
    if (!onLog) return;
    try {
      onLog({ tenant: caller.tenant, instance: caller.instance, level: LOG_LEVELS[level] ?? 'info', message });
    } catch {
      // an operator's logger failing is not the guest's problem
    }
  }
}
