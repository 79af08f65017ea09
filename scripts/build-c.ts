/**
 * Rebuilds every committed C output with the in-sandbox compiler (`engine.build`: @yowasp/clang's
 * LLVM run as a sandboxed WASI guest, wasm32-wasip1, the package's sysroot), so the project's own
 * C is built the way a user's is, on any machine with `npm ci` — no Debian clang.
 *
 *   node --import tsx scripts/build-c.ts [--check] [GROUP...]
 *
 * Without --check it writes each .wasm; with --check (`npm run check:c`) it builds into memory and
 * exits 1 naming every committed .wasm that differs byte for byte from what its source builds to
 * now. Builds are deterministic (no timestamps or host paths reach the tools), so a committed file
 * is either current or stale. GROUPs (default: all) are the keys of GROUPS below.
 *
 * Each build is the one its old shell script made (commands/build.sh, test/fixtures/c/build.sh via
 * scripts/build-c-wasm.sh, test/wasm/fixtures/build.sh, bench/kernels/build.sh, bench/io/build.sh):
 * the same -O level and flags, `--target=wasm32-wasi` now the lane's own wasm32-wasip1. Sources
 * keep their repository paths inside the build's VFS, so `-I commands/src` and `-I sdk/c` mean what
 * they did, and a diagnostic names the file as it is in the repository.
 */

import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEngine, type Engine } from '../src/index.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const REBUILD = 'node --import tsx scripts/build-c.ts';

interface Output {
  /** The committed .wasm (repository path). */
  readonly out: string;
  /** The files the build reads (repository paths): the .c to compile and the headers it includes. */
  readonly sources: readonly string[];
  readonly args: readonly string[];
}

const cFiles = (dir: string): string[] => readdirSync(join(ROOT, dir)).filter((f) => f.endsWith('.c')).sort().map((f) => `${dir}/${f}`);
const wasmOf = (src: string): string => src.replace(/\.c$/, '.wasm');
/** A source's own extra flags: its line `// clang-flags: ...` (e.g. -mexec-model=reactor). */
const ownFlags = (src: string): string[] => {
  const m = /^\/\/ clang-flags: (.*)$/m.exec(readFileSync(join(ROOT, src), 'utf8'));
  return m ? m[1]!.trim().split(/\s+/) : [];
};

/** Freestanding modules: no libc, no crt1, no `_start` (exports only). */
const KERNEL = ['-nostdlib', '-Wl,--no-entry'];
/**
 * The wasm tests' kernels are one source per feature set, so their baseline is the MVP: LLVM 20+
 * turns bulk memory, nontrapping-fptoint, reference types … on by default ("generic"), which would
 * make the plain build the bulk-memory one. (The libc programs get generic's features from libc.a.)
 */
const FEATURE_KERNEL = ['-mcpu=mvp', ...KERNEL];

const GROUPS: Record<string, () => Output[]> = {
  // The built-in commands. The stack is 1 MiB (wasm-ld defaults to 64 KiB) so that rm -r / cp -r
  // recurse deep trees.
  commands: () =>
    cFiles('commands/src').map((src) => ({
      out: `commands/bin/${src.slice('commands/src/'.length, -2)}.wasm`,
      sources: [src, 'commands/src/common.h'],
      args: ['-Wall', '-Wextra', '-Werror', '-I', 'commands/src', '-Wl,-z,stack-size=1048576', '-Wl,--strip-all'],
    })),
  // The C guests of the tests (WASI commands, or a reactor by its clang-flags line).
  fixtures: () =>
    cFiles('test/fixtures/c').map((src) => ({
      out: wasmOf(src),
      sources: [src, 'sdk/c/membrane.h'],
      args: ['-I', 'sdk/c', '-Wl,--strip-all', ...ownFlags(src)],
    })),
  // The C modules of the wasm tests (test/wasm/helpers.ts cModule): one source built with several
  // feature sets. Unstripped on purpose: the tests read the name and producers sections too.
  wasm: () => {
    const d = 'test/wasm/fixtures';
    return [
      { out: `${d}/program.wasm`, sources: [`${d}/program.c`], args: [] },
      { out: `${d}/program-simd.wasm`, sources: [`${d}/program.c`], args: ['-msimd128'] },
      { out: `${d}/kernels.wasm`, sources: [`${d}/kernels.c`], args: [...FEATURE_KERNEL] },
      { out: `${d}/kernels-simd.wasm`, sources: [`${d}/kernels.c`], args: [...FEATURE_KERNEL, '-msimd128'] },
      { out: `${d}/kernels-bulk.wasm`, sources: [`${d}/kernels.c`], args: [...FEATURE_KERNEL, '-mbulk-memory'] },
      {
        out: `${d}/kernels-atomics.wasm`,
        sources: [`${d}/kernels.c`],
        args: [...FEATURE_KERNEL, '-matomics', '-mbulk-memory', '-Wl,--shared-memory', '-Wl,--import-memory', '-Wl,--max-memory=1048576'],
      },
    ];
  },
  // The benchmark kernels (bench/fuel-overhead.ts, bench/rewriter-speed.ts): freestanding, `run(n)`.
  'bench-kernels': () => cFiles('bench/kernels').map((src) => ({ out: wasmOf(src), sources: [src], args: [...KERNEL, '-Wl,--strip-all'] })),
  // The WASI I/O benchmark guest (bench/wasi-io.ts).
  'bench-io': () => cFiles('bench/io').map((src) => ({ out: wasmOf(src), sources: [src], args: ['-Wl,--strip-all'] })),
};

async function buildOne(engine: Engine, o: Output): Promise<Uint8Array> {
  const sources: Record<string, string> = {};
  for (const s of o.sources) sources[s] = readFileSync(join(ROOT, s), 'utf8');
  const r = await engine.build({ language: 'c', sources, args: o.args, optimize: 2 });
  if (!r.ok || !r.wasm) {
    const why = r.error ? `${r.error.code}: ${r.error.message}` : 'no module';
    throw new Error(`${o.out} did not build (${why})\n${r.stderr}`);
  }
  // Warnings fail the build: a committed output is built clean (commands also use -Werror).
  if (r.stderr.trim() !== '') throw new Error(`${o.out}: the build printed\n${r.stderr}`);
  return r.wasm;
}

/** Run `fn` over `items`, at most `limit` at a time, results in order. */
async function pool<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

async function main(argv: readonly string[]): Promise<number> {
  const check = argv.includes('--check');
  const names = argv.filter((a) => a !== '--check');
  for (const n of names) {
    if (!(n in GROUPS)) {
      process.stderr.write(`usage: ${REBUILD} [--check] [${Object.keys(GROUPS).join('|')}]...\n`);
      return 2;
    }
  }
  const groups = names.length > 0 ? names : Object.keys(GROUPS);
  const outputs = groups.flatMap((g) => GROUPS[g]!());
  const t0 = performance.now();
  const engine = createEngine();
  let built: Uint8Array[];
  try {
    // Two at a time: each build is one ~256 MiB toolchain guest at a time, and most CI machines have 2 cores.
    built = await pool(outputs, 2, (o) => buildOne(engine, o));
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n`);
    return 1;
  } finally {
    await engine.close();
  }
  const seconds = ((performance.now() - t0) / 1000).toFixed(1);
  if (!check) {
    for (const [i, o] of outputs.entries()) writeFileSync(join(ROOT, o.out), built[i]!);
    process.stdout.write(`${outputs.length} modules written (${groups.join(', ')}) in ${seconds} s\n`);
    return 0;
  }
  const stale = outputs.filter((o, i) => {
    let committed: Uint8Array;
    try {
      committed = readFileSync(join(ROOT, o.out));
    } catch {
      return true;
    }
    return Buffer.compare(committed, built[i]!) !== 0;
  });
  for (const o of stale) process.stderr.write(`${o.out} is stale (it differs from what ${o.sources[0]} builds to): rebuild it with ${REBUILD}\n`);
  if (stale.length > 0) return 1;
  process.stdout.write(`${outputs.length} committed .wasm match their C sources (${groups.join(', ')}; ${seconds} s)\n`);
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
