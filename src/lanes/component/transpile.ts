/**
 * A component turned into what a worker runs: jco's glue (as a script yielding its `instantiate`)
 * and the component's core modules, by name. Transpiled once per component: cached in memory and
 * on disk (`<cacheDir>/components/<sha256>.json`), keyed by the component's SHA-256 and jco's
 * version.
 *
 * Owns: calling jco (`instantiation: 'sync'`, no WASI shim map: every import is supplied by the
 * worker), checking its output has the shape the worker expects (no `import`/`export` left in
 * the glue, a `wasi:cli/run` export), and the cache.
 * Invariant: the glue handed on is exactly jco's output with its two `export` keywords removed;
 * a cache entry is written only after a transpile succeeded, to a temporary name then renamed,
 * and a damaged entry is transpiled again.
 *
 * jco runs on a thread of its own per transpile, bounded in time (TRANSPILE_TIMEOUT_MS) and heap.
 *
 * The disk entries live under the engine's `cacheMaxBytes` with its module entries
 * (storage/cache-dir.ts: counted, least recently used evicted first).
 *
 * Does not protect against: a transpile's CPU (~0.2–0.5 s of one core, once per component per
 * machine thanks to the disk cache).
 */

import { createHash } from 'node:crypto';
import { BoundedCacheDir } from '../../storage/cache-dir.ts';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { SandboxError } from '../../errors.ts';

/** The jco-transpile version the glue comes from (a cache key part: other glue, other entry). */
export const JCO_VERSION = '0.15.0';
const ENTRY_VERSION = 1;
const MEMORY_ENTRIES = 32;

export interface Transpiled {
  readonly hash: string;
  readonly glue: string;
  /** The `wasi:cli/run` export's full name, or null when the component has none. */
  readonly run: string | null;
  readonly cores: readonly { readonly name: string; readonly bytes: Uint8Array }[];
}

interface DiskEntry {
  readonly v: number;
  readonly jco: string;
  readonly glue: string;
  readonly run: string | null;
  readonly cores: readonly { name: string; b64: string }[];
}

const memory = new Map<string, Promise<Transpiled>>();
let transpiles = 0;

/** How many times jco ran in this process (a test proves a refused component never reached it). */
export function transpileCount(): number {
  return transpiles;
}

export function componentHash(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Where transpiled components are kept on disk: the engine's cache directory and its bound (EngineConfig). */
export interface ComponentCache {
  readonly cacheDir: string | null;
  readonly cacheMaxBytes: number;
}

/** One bounded view per cache directory and bound, so this process's writes to it are serialized. */
const bounded = new Map<string, BoundedCacheDir>();

function boundedDir(cache: ComponentCache & { cacheDir: string }): BoundedCacheDir {
  const key = `${cache.cacheDir}\u0000${cache.cacheMaxBytes}`;
  let d = bounded.get(key);
  if (!d) bounded.set(key, (d = new BoundedCacheDir(cache.cacheDir, cache.cacheMaxBytes)));
  return d;
}

export function transpileCached(bytes: Uint8Array, cache: ComponentCache): Promise<Transpiled> {
  const hash = componentHash(bytes);
  let hit = memory.get(hash);
  if (!hit) {
    hit = load(hash, bytes, cache);
    hit.catch(() => memory.delete(hash));
    if (memory.size >= MEMORY_ENTRIES) memory.delete(memory.keys().next().value!);
    memory.set(hash, hit);
  }
  return hit;
}

async function load(hash: string, bytes: Uint8Array, cache: ComponentCache): Promise<Transpiled> {
  if (cache.cacheDir === null) return transpileNow(hash, bytes);
  const disk = boundedDir({ ...cache, cacheDir: cache.cacheDir });
  const rel = join('components', `${hash}.json`);
  const cached = readEntry(await disk.read(rel));
  if (cached) return { hash, glue: cached.glue, run: cached.run, cores: cached.cores.map((c) => ({ name: c.name, bytes: Buffer.from(c.b64, 'base64') })) };
  const t = await transpileNow(hash, bytes);
  const entry: DiskEntry = { v: ENTRY_VERSION, jco: JCO_VERSION, glue: t.glue, run: t.run, cores: t.cores.map((c) => ({ name: c.name, b64: Buffer.from(c.bytes).toString('base64') })) };
  // Within cacheMaxBytes, least recently used entries (modules or components) evicted first; an
  // entry that cannot be written costs the next process a transpile, nothing else.
  await disk.write(rel, Buffer.from(JSON.stringify(entry)));
  return t;
}

function readEntry(raw: Buffer | null): DiskEntry | null {
  if (raw === null) return null;
  try {
    const e = JSON.parse(raw.toString('utf8')) as DiskEntry;
    if (e.v !== ENTRY_VERSION || e.jco !== JCO_VERSION || typeof e.glue !== 'string' || !Array.isArray(e.cores)) return null;
    return e;
  } catch {
    return null;
  }
}

/** A transpile that takes longer is abandoned (its thread terminated): INVALID_MODULE. */
export const TRANSPILE_TIMEOUT_MS = 60_000;
/** The transpile thread's JS heap: a component that makes jco allocate more is refused. */
const TRANSPILE_HEAP_MB = 1024;

/** jco on a thread of its own: the main thread (other tenants, /health) never waits on it. */
const TRANSPILE_THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
import(workerData.jco).then(({ transpileBytes }) => transpileBytes(workerData.bytes, workerData.options)).then(
  (out) => parentPort.postMessage({ ok: true, files: out.files, exports: out.exports }),
  (e) => parentPort.postMessage({ ok: false, message: String((e && e.message) || e) }),
);`;

interface ThreadAnswer {
  readonly ok: boolean;
  readonly message?: string;
  readonly files?: Record<string, Uint8Array>;
  readonly exports?: [string, string][];
}

function transpileOnThread(bytes: Uint8Array): Promise<{ files: Record<string, Uint8Array>; exports: [string, string][] }> {
  const options = { name: 'component', instantiation: 'sync', base64Cutoff: 0, tlaCompat: false, wasiShim: false, map: {} };
  const jco = import.meta.resolve('@bytecodealliance/jco-transpile');
  return new Promise((resolve, reject) => {
    const worker = new Worker(TRANSPILE_THREAD, { eval: true, env: {}, workerData: { jco, bytes, options }, resourceLimits: { maxOldGenerationSizeMb: TRANSPILE_HEAP_MB } });
    const refuse = (why: string): void => reject(new SandboxError('INVALID_MODULE', `the component could not be transpiled: ${why.replace(/[^\x20-\x7e]/g, '?').slice(0, 300)}`, {}));
    const timer = setTimeout(() => {
      refuse(`jco took longer than ${TRANSPILE_TIMEOUT_MS} ms`);
      void worker.terminate();
    }, TRANSPILE_TIMEOUT_MS);
    worker.once('message', (m: ThreadAnswer) => {
      clearTimeout(timer);
      void worker.terminate();
      if (m.ok && m.files && m.exports) resolve({ files: m.files, exports: m.exports });
      else refuse(m.message ?? 'jco failed');
    });
    worker.once('error', (e) => {
      clearTimeout(timer);
      refuse(e.message);
    });
  });
}

async function transpileNow(hash: string, bytes: Uint8Array): Promise<Transpiled> {
  transpiles++;
  const out = await transpileOnThread(bytes);
  const source = new TextDecoder().decode(out.files['component.js'] ?? new Uint8Array(0));
  const glue = `${source.replace(/^export function instantiate\(/m, 'function instantiate(').replace(/^export const _util\b/m, 'const _util')}\n;instantiate;\n`;
  if (/^\s*(?:export|import)\s/m.test(glue) || !glue.includes('function instantiate(')) {
    throw new SandboxError('INTERNAL', 'jco produced glue of an unexpected shape');
  }
  const cores = Object.entries(out.files)
    .filter(([name]) => /^component\.core\d*\.wasm$/.test(name))
    .map(([name, b]) => ({ name, bytes: b }));
  const run = out.exports.map(([name]) => name).find((n) => /^wasi:cli\/run@0\.2\.\d+$/.test(n)) ?? null;
  return { hash, glue, run, cores };
}
