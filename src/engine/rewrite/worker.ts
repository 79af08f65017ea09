/**
 * The rewrite worker: the load-time walls and compilation of an uploaded module, off the
 * engine's main thread (bundled to dist/rewrite-worker.cjs).
 *
 * Owns: one job at a time — describe, limits (memory/table maxima, the memory.grow guard), fuel
 * metering, then `WebAssembly.compile` of the result — and the answer: the compiled module (V8
 * shares its code with the receiving thread), what the engine keeps about the input, and the
 * disk cache entry (storage/cache-file.ts) when the cache wants one. A 'compile' job compiles a
 * disk cache entry read back; a 'python-interpreter' job instruments Pyodide's wasm into the
 * Python lane's cache (its own synchronous file I/O, harmless on this thread).
 * Invariant: a job either answers with a module that compiled, or with a SandboxError record;
 * guest-caused failures are INVALID_MODULE (malformed, does not compile) or MEMORY_LIMIT (over the
 * caps, or too large for the rewriter's heap), never INTERNAL.
 *
 * Does not protect against: the rewriter's own time and heap — the pool (rewrite/pool.ts) bounds
 * both (a deadline per job, `resourceLimits` on the thread) and replaces a worker that overran.
 */

import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { SandboxError } from '../../errors.ts';
import { applyLimits, describeModule, instrumentFuel, type FuelStats } from '../../wasm/index.ts';
import { encodeCacheEntry } from '../../storage/cache-file.ts';
import { preparePyodideWasm } from '../../lanes/python/wasm-prep.ts';
import { REWRITE_PROTOCOL_VERSION, type EntryMeta, type LimitsInfo, type RewriteReply, type RewriteRequest } from './protocol.ts';

/** Nice value of this thread: the server's main thread wins the CPU when both want it. */
const REWRITE_THREAD_NICE = 10;

const port = parentPort;
if (!port) throw new Error('the rewrite worker runs only as a worker thread');

lowerOwnPriority();

port.on('message', (msg: RewriteRequest) => {
  void handle(msg).then(
    ({ reply, transfer }) => port.postMessage(reply, transfer),
    (e: unknown) => port.postMessage({ v: REWRITE_PROTOCOL_VERSION, kind: 'failed', id: msg.id, error: asGuestError(e).toPublic() } satisfies RewriteReply),
  );
});
port.postMessage({ v: REWRITE_PROTOCOL_VERSION, kind: 'ready' } satisfies RewriteReply);

async function handle(msg: RewriteRequest): Promise<{ reply: RewriteReply; transfer: ArrayBuffer[] }> {
  if (msg.v !== REWRITE_PROTOCOL_VERSION) throw new SandboxError('INTERNAL', 'rewrite protocol version mismatch');
  if (msg.kind === 'python-interpreter') {
    return { reply: { v: REWRITE_PROTOCOL_VERSION, kind: 'python-interpreter', id: msg.id, prepared: preparePyodideWasm(msg.cacheDir) }, transfer: [] };
  }
  if (msg.kind === 'compile') {
    const module = await compile(msg.bytes.subarray(msg.offset));
    return { reply: { v: REWRITE_PROTOCOL_VERSION, kind: 'compiled', id: msg.id, module }, transfer: [] };
  }
  const desc = describeModule(msg.bytes);
  // applyLimits refuses a memory or table whose initial size is over its cap (MEMORY_LIMIT).
  const { bytes: limited, ...limits } = applyLimits(msg.bytes, msg.settings);
  let rewritten: Uint8Array = limited;
  let fuel: FuelStats | null = null;
  if (msg.settings.metered) {
    const r = instrumentFuel(limited);
    rewritten = r.bytes;
    fuel = r.stats;
  }
  const module = await compile(rewritten);
  const info: LimitsInfo = limits;
  // Only a module that compiled is ever offered to the disk cache.
  const entry = msg.entryKey === null ? null : encodeCacheEntry(JSON.stringify({ key: msg.entryKey, desc, limits: info } satisfies EntryMeta), rewritten);
  return {
    reply: { v: REWRITE_PROTOCOL_VERSION, kind: 'prepared', id: msg.id, module, desc, limits: info, fuel, entry },
    transfer: entry ? [entry.buffer] : [],
  };
}

async function compile(bytes: Uint8Array): Promise<WebAssembly.Module> {
  try {
    return await WebAssembly.compile(bytes as Uint8Array<ArrayBuffer>);
  } catch (e) {
    const msg = e instanceof Error ? e.message.replace(/^WebAssembly\.compile\(\): /, '') : 'compile failed';
    throw new SandboxError('INVALID_MODULE', `the module does not compile: ${msg.slice(0, 200)}`, {});
  }
}

function asGuestError(e: unknown): SandboxError {
  if (e instanceof SandboxError) return e;
  // The rewriter's only non-SandboxError failures on hostile input are resource ones
  // ("Invalid array length", "Maximum call stack size exceeded").
  if (e instanceof RangeError) return new SandboxError('MEMORY_LIMIT', 'the module is too large to rewrite', {});
  return new SandboxError('INTERNAL', 'the module rewriter failed', {});
}

/** Best effort: on Linux a thread's id is a valid target for setpriority(2). */
function lowerOwnPriority(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isSafeInteger(tid) && tid > 0) setPriority(tid, REWRITE_THREAD_NICE);
  } catch {
    // not Linux, or not permitted: the thread keeps the process's priority
  }
}
