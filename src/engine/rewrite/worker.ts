/**
 * The rewrite worker: the load-time walls and compilation of an uploaded module, off the
 * engine's main thread (bundled to dist/rewrite-worker.cjs).
 *
 * Owns: one job at a time — describe, limits (memory/table maxima, the memory.grow guard), fuel
 * metering, then `WebAssembly.compile` of the result (rewrite/prepare.ts) — and the answer: the compiled module (V8
 * shares its code with the receiving thread), what the engine keeps about the input, and the
 * disk cache entry (storage/cache-file.ts) when the cache wants one. A 'compile' job compiles a
 * disk cache entry read back.
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
import { asGuestError, compileRewritten, prepareModule } from './prepare.ts';
import { REWRITE_PROTOCOL_VERSION, type RewriteReply, type RewriteRequest } from './protocol.ts';

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
  if (msg.kind === 'compile') {
    const module = await compileRewritten(msg.bytes.subarray(msg.offset));
    return { reply: { v: REWRITE_PROTOCOL_VERSION, kind: 'compiled', id: msg.id, module }, transfer: [] };
  }
  const r = await prepareModule(msg.bytes, msg.settings, msg.entryKey);
  return {
    reply: { v: REWRITE_PROTOCOL_VERSION, kind: 'prepared', id: msg.id, module: r.module, desc: r.desc, limits: r.limits, fuel: r.fuel, entry: r.entry },
    transfer: r.entry ? [r.entry.buffer] : [],
  };
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
