/**
 * `JsLane`: untrusted JavaScript and TypeScript in QuickJS-on-wasm (DESIGN §7), fresh every call.
 *
 * Owns: one worker thread (slot.ts) holding pools of pre-initialized, never-used interpreters
 * (worker.ts, interpreter.ts), a FIFO of calls (one runs at a time; the rest wait), replacing the
 * worker when the time wall's backstop had to terminate it, and the pool statistics. The main
 * thread never runs QuickJS or the TypeScript stripper.
 * Defaults: `poolSize` 2 interpreters per language, `outputLimitBytes` 1 MiB per stream, the disk
 * cache under `$MEMBRANE_HOME/cache` (`cacheDir: false` disables it). Linear memory: each call's
 * `memoryBytes` is QuickJS's allocation limit; every instance's wasm memory maximum is
 * `LINEAR_MEMORY_CEILING_BYTES` (a larger request is clamped, with a warning).
 * Caps: each granted cap with a lane power (src/lanes/powers.ts) becomes a global (`kv`, `queue`,
 * `secrets`, `fetch` for `net`, `llm`, `browse`, `tcp`/`udp`/`tls`) served by the request's
 * `powers` server; an ungranted cap's global is absent, never a stub. A granted cap without a lane
 * power (or any cap, when the request has no server) is named in `warnings`.
 *
 * Does not protect against: a queue of slow calls delaying later ones (their own deadlines start
 * when they run, not when they were queued).
 */

import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
import { packageRoot } from '../../engine/worker-file.ts';
import { membraneHome } from '../../storage/sqlite.ts';
import type { ExecRequest, ExecResult } from '../types.ts';
import { DEFAULT_OUTPUT_LIMIT_BYTES } from './output.ts';
import type { ExecJob, JsWorkerData } from './protocol.ts';
import { lanePowerCaps, type PowerServer } from '../powers.ts';
import { WorkerSlot } from './slot.ts';

export interface JsLaneOptions {
  /** Pre-initialized interpreters kept per language (js, ts). Default 2. */
  readonly poolSize?: number;
  /** Where the instrumented QuickJS is cached; `false` disables it. Default `$MEMBRANE_HOME/cache`. */
  readonly cacheDir?: string | false | undefined;
  /** Cap on each of stdout and stderr. Default 1 MiB. */
  readonly outputLimitBytes?: number | undefined;
  /** Fail with OUTPUT_LIMIT instead of truncating. Default false. */
  readonly failOnOutputLimit?: boolean | undefined;
}

export const DEFAULT_POOL_SIZE = 2;
export const MAX_POOL_SIZE = 16;
export const LINEAR_MEMORY_CEILING_BYTES = 1024 * 1024 * 1024;
const NO_SERVER = 'js: no power server was given; granted caps add no globals';

interface Queued {
  readonly job: ExecJob;
  readonly server: PowerServer | null;
  readonly resolve: (r: ExecResult) => void;
  readonly warnings: readonly string[];
}

const failed = (code: string, message: string): ExecResult => ({
  ok: false,
  stdout: '',
  stderr: '',
  error: { code, message },
  fuelUsed: 0,
  durationMs: 0,
  warnings: [],
  poolHit: false,
});

async function bundles(): Promise<{ worker: string; transpiler: string }> {
  const mod = (await import(pathToFileURL(join(packageRoot(), 'scripts/bundle.mjs')).href)) as { ensureJsLaneBuilt: () => Promise<{ jsWorker: string; jsTranspiler: string }> };
  const out = await mod.ensureJsLaneBuilt();
  return { worker: out.jsWorker, transpiler: out.jsTranspiler };
}

export class JsLane {
  private readonly poolSize: number;
  private readonly cacheDir: string | null;
  private readonly outputLimitBytes: number;
  private readonly failOnOutputLimit: boolean;
  private slot: Promise<WorkerSlot> | null = null;
  private module: WebAssembly.Module | null = null;
  private wantTs = false;
  private readonly queue: Queued[] = [];
  private running = false;
  private closed = false;
  private hits = 0;
  private misses = 0;
  private current: WorkerSlot | null = null;

  constructor(opts: JsLaneOptions = {}) {
    this.poolSize = Math.max(0, Math.min(MAX_POOL_SIZE, Math.floor(opts.poolSize ?? DEFAULT_POOL_SIZE)));
    this.cacheDir = opts.cacheDir === false ? null : (opts.cacheDir ?? join(membraneHome(), 'cache'));
    this.outputLimitBytes = Math.max(0, Math.floor(opts.outputLimitBytes ?? DEFAULT_OUTPUT_LIMIT_BYTES));
    this.failOnOutputLimit = opts.failOnOutputLimit ?? false;
  }

  private getSlot(): Promise<WorkerSlot> {
    if (this.slot) return this.slot;
    const p = (async () => {
      const b = await bundles();
      const data: Omit<JsWorkerData, 'powerPort' | 'powerSignal'> = {
        v: 1,
        wasmPath: createRequire(import.meta.url).resolve('@jitl/quickjs-wasmfile-release-sync/wasm'),
        transpilerPath: b.transpiler,
        cacheDir: this.cacheDir,
        compiled: this.module,
        poolSize: this.poolSize,
        wantTs: this.wantTs,
        outputLimitBytes: this.outputLimitBytes,
        failOnOutputLimit: this.failOnOutputLimit,
        memoryCeilingBytes: LINEAR_MEMORY_CEILING_BYTES,
        interrupt: new SharedArrayBuffer(4),
      };
      const slot = await WorkerSlot.spawn(b.worker, data, () => {});
      this.module = slot.module;
      this.current = slot;
      return slot;
    })();
    this.slot = p;
    p.catch(() => {
      if (this.slot === p) this.slot = null;
    });
    return p;
  }

  /** Start the worker and fill its pools (JS and TypeScript); `onProgress` sees each step. */
  async warm(onProgress?: (done: number, total: number) => void): Promise<void> {
    this.wantTs = true;
    const slot = await this.getSlot();
    const total = this.poolSize * 2;
    onProgress?.(slot.ready.js + slot.ready.ts, total);
    const tick = setInterval(() => onProgress?.(Math.min(total, slot.ready.js + slot.ready.ts), total), 100);
    try {
      await slot.warm(true);
    } finally {
      clearInterval(tick);
    }
    onProgress?.(Math.min(total, slot.ready.js + slot.ready.ts), total);
  }

  exec(req: ExecRequest): Promise<ExecResult> {
    if (this.closed) return Promise.resolve(failed('INSTANCE_DEAD', 'the JS lane is closed'));
    if (req.language !== 'js' && req.language !== 'ts') return Promise.resolve(failed('POLICY_INVALID', 'the JS lane runs "js" or "ts"'));
    if (typeof req.code !== 'string') return Promise.resolve(failed('POLICY_INVALID', 'code must be a string'));
    let contextJson = '';
    try {
      contextJson = req.context === undefined ? '' : (JSON.stringify(req.context) ?? '');
    } catch {
      return Promise.resolve(failed('POLICY_INVALID', 'context must be JSON-serializable'));
    }
    const warnings: string[] = [];
    const { powers, warning } = lanePowerCaps(req.caps, 'js');
    if (req.powers === undefined && req.caps.length > 0) warnings.push(`${NO_SERVER} (${req.caps.join(', ')})`);
    else if (warning !== null) warnings.push(warning);
    let memoryBytes = Math.floor(req.memoryBytes);
    if (memoryBytes > LINEAR_MEMORY_CEILING_BYTES) {
      memoryBytes = LINEAR_MEMORY_CEILING_BYTES;
      warnings.push(`memory capped at the JS lane's ceiling of ${LINEAR_MEMORY_CEILING_BYTES} bytes`);
    }
    if (req.language === 'ts') this.wantTs = true;
    const job: ExecJob = {
      language: req.language,
      code: req.code,
      contextJson,
      timeoutMs: Math.max(1, req.timeoutMs),
      fuel: Math.max(0, Math.floor(req.fuel)),
      memoryBytes: Math.max(1024 * 1024, memoryBytes),
      powers: req.powers === undefined ? [] : powers,
    };
    return new Promise((resolve) => {
      this.queue.push({ job, server: req.powers ?? null, resolve, warnings });
      void this.pump();
    });
  }

  private async pump(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      for (let q = this.queue.shift(); q; q = this.queue.shift()) {
        let r: ExecResult;
        try {
          const slot = await this.getSlot();
          r = await slot.run(q.job, q.server);
          if (!slot.alive && this.slot) {
            // Terminated at the backstop (or died): the next call gets a fresh worker.
            this.slot = null;
            this.current = null;
            if (!this.closed) void this.getSlot().catch(() => {});
          }
        } catch {
          r = failed('INTERNAL', 'the JS lane could not start its worker');
        }
        if (r.poolHit) this.hits++;
        else if (r.error?.code !== 'INTERNAL') this.misses++;
        q.resolve({ ...r, warnings: [...q.warnings, ...r.warnings] });
      }
    } finally {
      this.running = false;
    }
  }

  stats(): { poolHits: number; poolMisses: number; ready: number } {
    const ready = this.current?.alive ? this.current.ready.js + this.current.ready.ts : 0;
    return { poolHits: this.hits, poolMisses: this.misses, ready };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const q of this.queue.splice(0)) q.resolve(failed('INSTANCE_DEAD', 'the JS lane is closed'));
    const slot = this.slot;
    this.slot = null;
    this.current = null;
    if (slot) await (await slot.catch(() => null))?.terminate();
  }
}
