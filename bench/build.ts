/**
 * The build lane (issue #16): C/C++ compiled and linked inside the sandbox by `engine.build()`,
 * against Debian's native clang on the same files in the same run
 * (`clang --target=wasm32-wasi -O2 FILE -o OUT.wasm`, a whole process each, like the fresh-process
 * figure). Targets: a small C file (printf hello world) warm ≤ 1.0 s p50; the same file built by
 * a fresh Node process on a warm disk cache ≤ 3 s.
 *
 * Measured, all under a temporary MEMBRANE_HOME (mkdtemp; removed afterwards):
 *  - the very first build on the empty home (sysroot image build + the 75 MB module's rewrite),
 *    in a fresh process, once;
 *  - fresh processes on the now warm disk cache (bench/build-fresh.ts, timed as whole processes:
 *    Node start, imports, engine, the V8 compile of the rewritten module, the build, close);
 *  - warm builds in this process's engine (the module compiled, the workers up);
 *  - a generated ~2 000-line C file (bench/build-sources.ts) warm and in a fresh process;
 *  - a C++ file with <vector> and <iostream> once, in the warm engine, with its fuel (no native
 *    baseline: Debian has no wasm32 libc++).
 * About 3 minutes on a busy 2-core machine; the fresh-process big.c build is the longest part.
 * Every module built is run and its output checked (the big file prints a checksum computed in
 * TypeScript too), so a fast wrong build cannot pass. Where the time goes in a warm build: the
 * per-step medians (cc1, the driver's `-###` plan of the link, wasm-ld) from `steps`, beside
 * `clang --version` run as a guest (the floor of any step: an instance of the 75 MB module).
 */

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine, type Engine } from '../src/index.ts';
import type { BuildResult } from '../src/build/build.ts';
import { requireToolchain } from '../src/build/toolchain.ts';
import { HELLO_C, HELLO_OUT, VECTOR_CXX, VECTOR_OUT, bigProgram } from './build-sources.ts';
import { ROOT, median, printTable, quantile } from './lib.ts';

const NATIVE_SMALL = 5;
const NATIVE_BIG = 2;
const FRESH_SMALL = 3;
const FRESH_BIG = 1;
const WARM_SMALL = 5;
const WARM_BIG = 2;
const VERSION_RUNS = 5;
const TARGET_WARM_MS = 1000;
const TARGET_FRESH_MS = 3000;

interface Fresh {
  readonly wallMs: number;
  readonly importMs: number;
  readonly createMs: number;
  readonly buildMs: number;
  readonly durationMs: number;
  readonly closeMs: number;
  readonly fuelUsed: number;
  readonly steps: readonly { tool: string; fuelUsed: number; durationMs: number }[];
}

/** `clang`'s path, or null. */
function nativeClang(): string | null {
  try {
    return execFileSync('sh', ['-c', 'command -v clang'], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}

/** Whole-process times of native clang building `source` to wasm32-wasi, or null when it cannot. */
function native(clang: string, source: string, out: string, n: number): number[] | null {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    rmSync(out, { force: true });
    const t = performance.now();
    try {
      execFileSync(clang, ['--target=wasm32-wasi', '-O2', source, '-o', out], { stdio: 'pipe' });
    } catch (e) {
      console.log(`native clang failed on ${source}: ${String((e as { stderr?: unknown }).stderr ?? e).trim().split('\n')[0]}`);
      return null;
    }
    times.push(performance.now() - t);
  }
  return times;
}

/**
 * A fresh Node process building `source` once under `home` (bench/build-fresh.ts), timed whole;
 * a build that fails (a loaded machine can push the big file past the profile's 60 s) is reported.
 */
function fresh(home: string, source: string, out: string): Fresh | { wallMs: number; error: string } {
  rmSync(out, { force: true });
  const t = performance.now();
  const stdout = execFileSync(process.execPath, ['--import', 'tsx', join(ROOT, 'bench/build-fresh.ts'), source, out], {
    cwd: ROOT,
    env: { ...process.env, MEMBRANE_HOME: home },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const wallMs = performance.now() - t;
  const r = JSON.parse(stdout.trim().split('\n').pop()!) as Omit<Fresh, 'wallMs'> & { ok: boolean; error?: string };
  return r.ok ? { wallMs, ...r } : { wallMs, error: r.error ?? 'failed' };
}

/** `membrane build SOURCE -o OUT` as a user runs it (the bundled CLI, no tsx), timed whole. */
function cliFresh(home: string, source: string, out: string): number {
  const t0 = performance.now();
  execFileSync(process.execPath, [join(ROOT, 'bin/membrane.js'), 'build', source, '-o', out], { env: { ...process.env, MEMBRANE_HOME: home }, stdio: 'pipe' });
  return performance.now() - t0;
}

/** The fresh runs that built, and a line for each that did not. */
function succeeded(what: string, runs: readonly (Fresh | { wallMs: number; error: string })[], failures: string[]): Fresh[] {
  const ok: Fresh[] = [];
  for (const r of runs) {
    if ('error' in r) failures.push(`${what}: FAILED after ${fmtS(r.wallMs)}: ${r.error}`);
    else ok.push(r);
  }
  return ok;
}

async function built(engine: Engine, sources: Record<string, string>, language?: 'c' | 'c++'): Promise<BuildResult & { wallMs: number }> {
  const t = performance.now();
  const r = await engine.build({ sources, ...(language ? { language } : {}) });
  const wallMs = performance.now() - t;
  if (!r.ok || !r.wasm) throw new Error(`build failed: ${JSON.stringify(r.error)}\n${r.stderr}`);
  return { ...r, wallMs };
}

/** Run a built module and check what it prints. */
async function check(engine: Engine, wasm: Uint8Array, expected: string, what: string): Promise<void> {
  const r = await engine.run(wasm, {});
  if (!r.ok || r.stdout !== expected) throw new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(r.stdout)} ${JSON.stringify(r.error ?? {})}`);
}

const fmtS = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
const fmtFuel = (f: number): string => `${(f / 1e9).toFixed(2)}e9`;

export async function buildLane(): Promise<void> {
  const tStart = performance.now();
  const home = mkdtempSync(join(tmpdir(), 'membrane-bench-build-home-'));
  const work = mkdtempSync(join(tmpdir(), 'membrane-bench-build-src-'));
  const before = process.env['MEMBRANE_HOME'];
  process.env['MEMBRANE_HOME'] = home;
  let engine: Engine | null = null;
  try {
    const big = bigProgram(2000);
    const small = join(work, 'hello.c');
    const large = join(work, 'big.c');
    writeFileSync(small, HELLO_C);
    writeFileSync(large, big.source);

    // Native clang, first (nothing of ours is running yet).
    const clang = nativeClang();
    const nat = clang ? { small: native(clang, small, join(work, 'native-hello.wasm'), NATIVE_SMALL), big: native(clang, large, join(work, 'native-big.wasm'), NATIVE_BIG) } : null;

    // The very first build on an empty home, then fresh processes on the warm disk cache.
    const failures: string[] = [];
    const firstRun = fresh(home, small, join(work, 'first.wasm'));
    if ('error' in firstRun) throw new Error(`the first build on an empty home failed: ${firstRun.error}`);
    const first = firstRun;
    const freshSmallRuns: ReturnType<typeof fresh>[] = [];
    for (let i = 0; i < FRESH_SMALL; i++) freshSmallRuns.push(fresh(home, small, join(work, `fresh-hello-${i}.wasm`)));
    const freshBigRuns: ReturnType<typeof fresh>[] = [];
    for (let i = 0; i < FRESH_BIG; i++) freshBigRuns.push(fresh(home, large, join(work, `fresh-big-${i}.wasm`)));
    // The CLI itself (its bundle made first, untimed, if the checkout's is stale).
    execFileSync(process.execPath, [join(ROOT, 'bin/membrane.js'), '--version'], { stdio: 'pipe' });
    const cliSmall: number[] = [];
    for (let i = 0; i < FRESH_SMALL; i++) cliSmall.push(cliFresh(home, small, join(work, `cli-hello-${i}.wasm`)));
    const freshSmallOk = freshSmallRuns.map((r) => !('error' in r));
    const freshBigOk = freshBigRuns.map((r) => !('error' in r));
    const freshSmall = succeeded('fresh process, hello.c', freshSmallRuns, failures);
    const freshBig = succeeded('fresh process, big.c', freshBigRuns, failures);

    // This process's engine: its first build (compiles the module in V8), then warm builds.
    engine = createEngine();
    const inProcessFirst = await built(engine, { 'hello.c': HELLO_C });
    const warmSmall: (BuildResult & { wallMs: number })[] = [];
    for (let i = 0; i < WARM_SMALL; i++) warmSmall.push(await built(engine, { 'hello.c': HELLO_C }));
    // A step's floor: one toolchain instance that does next to nothing, with the sysroot mounted.
    const toolchain = requireToolchain(engine.config.cacheDir);
    const version: number[] = [];
    for (let i = 0; i < VERSION_RUNS; i++) {
      const t = performance.now();
      const r = await engine.run(toolchain.module(), { argv: ['--version'], argv0: 'clang', id: 'clang', profile: 'posix', caps: ['vfs'], images: [toolchain.sysroot()] });
      version.push(performance.now() - t);
      if (!r.ok || !r.stdout.startsWith('clang version')) throw new Error(`clang --version: ${JSON.stringify(r.error ?? r.stdout)}`);
    }
    const bigWarmup = await built(engine, { 'big.c': big.source }); // first big build here: V8 tiers up cc1's optimizer
    const warmBig: (BuildResult & { wallMs: number })[] = [];
    for (let i = 0; i < WARM_BIG; i++) warmBig.push(await built(engine, { 'big.c': big.source }));
    const cxx = await built(engine, { 'vector.cpp': VECTOR_CXX });

    // Every module is right: run them (the native ones too, where built).
    await check(engine, readFileSync(join(work, 'first.wasm')), HELLO_OUT, 'first build');
    for (let i = 0; i < FRESH_SMALL; i++) if (freshSmallOk[i]) await check(engine, readFileSync(join(work, `fresh-hello-${i}.wasm`)), HELLO_OUT, 'fresh hello');
    for (let i = 0; i < FRESH_BIG; i++) if (freshBigOk[i]) await check(engine, readFileSync(join(work, `fresh-big-${i}.wasm`)), big.expected, 'fresh big');
    for (const r of [inProcessFirst, ...warmSmall]) await check(engine, r.wasm!, HELLO_OUT, 'warm hello');
    for (const r of [bigWarmup, ...warmBig]) await check(engine, r.wasm!, big.expected, 'warm big');
    await check(engine, cxx.wasm!, VECTOR_OUT, 'C++ <vector>/<iostream>');
    if (nat?.small) await check(engine, readFileSync(join(work, 'native-hello.wasm')), HELLO_OUT, 'native hello');
    if (nat?.big) await check(engine, readFileSync(join(work, 'native-big.wasm')), big.expected, 'native big');
    const identical = warmBig.every((r) => Buffer.compare(r.wasm!, bigWarmup.wasm!) === 0) && warmSmall.every((r) => Buffer.compare(r.wasm!, inProcessFirst.wasm!) === 0);
    await engine.close();
    engine = null;

    // Tables.
    const row = (what: string, xs: readonly number[], vs?: string, target?: string) => ({
      what,
      p50: median(xs),
      ...(xs.length > 1 ? { p99: quantile(xs, 0.9) } : {}),
      unit: 'ms' as const,
      ...(vs ? { vs } : {}),
      ...(target ? { target } : {}),
    });
    const natSmall = nat?.small ?? null;
    const natBig = nat?.big ?? null;
    const NS = `native clang, hello.c (×${NATIVE_SMALL})`;
    const NB = `native clang, big.c (×${NATIVE_BIG})`;
    const vsS = natSmall ? NS : undefined;
    const vsB = natBig ? NB : undefined;
    printTable(`build lane: compile + link to a WASI command, -O2 (hello.c: printf; big.c: ${big.lines} generated lines)`, [
      ...(natSmall ? [row(NS, natSmall)] : []),
      row(`sandbox warm, hello.c (×${WARM_SMALL})`, warmSmall.map((r) => r.wallMs), vsS, `≤ ${TARGET_WARM_MS / 1000} s`),
      ...(freshSmall.length ? [row(`sandbox fresh process, hello.c (×${freshSmall.length})`, freshSmall.map((r) => r.wallMs), vsS, `≤ ${TARGET_FRESH_MS / 1000} s`)] : []),
      row(`membrane build hello.c, a fresh CLI process (×${cliSmall.length})`, cliSmall, vsS, `≤ ${TARGET_FRESH_MS / 1000} s`),
      row('sandbox first build, empty home (×1)', [first.wallMs], vsS),
      row('sandbox first build in this process (×1)', [inProcessFirst.wallMs], vsS),
      ...(natBig ? [row(NB, natBig)] : []),
      row(`sandbox warm, big.c (×${WARM_BIG})`, warmBig.map((r) => r.wallMs), vsB),
      ...(freshBig.length ? [row(`sandbox fresh process, big.c (×${freshBig.length})`, freshBig.map((r) => r.wallMs), vsB)] : []),
      row('sandbox first big.c in this process (×1)', [bigWarmup.wallMs], vsB),
    ], 'p90');
    console.log(`\nC++ (vector.cpp: <vector>, <iostream>, <numeric>), once, in the warm engine (its first C++: cc1's C++ paths not tiered up yet): ${fmtS(cxx.wallMs)}, fuel ${fmtFuel(cxx.fuelUsed)} (no native baseline: Debian has no wasm32 libc++)`);
    if (!clang) console.log('\nnative clang not installed (apt-get install clang lld wasi-libc libclang-rt-dev-wasm32): ratio not measured');
    else if (!natSmall || !natBig) console.log(`\nnative clang (${clang}) could not build wasm32-wasi (apt-get install lld wasi-libc libclang-rt-dev-wasm32): ratio not measured`);
    else console.log(`\nnative: ${execFileSync(clang, ['--version'], { encoding: 'utf8' }).split('\n')[0]}`);

    // Where the time goes.
    const stepRows: string[][] = [];
    const stepTable = (label: string, rs: readonly BuildResult[]) => {
      const n = rs[0]!.steps.length;
      for (let i = 0; i < n; i++) {
        const s = rs[0]!.steps[i]!;
        const kind = s.tool === 'wasm-ld' ? 'wasm-ld (link)' : s.argv.includes('-###') ? `${s.tool} -### (plan the link)` : s.argv.includes('-c') ? `${s.tool} -c (cc1)` : s.tool;
        stepRows.push([label, kind, fmtS(median(rs.map((r) => r.steps[i]!.durationMs))), fmtFuel(median(rs.map((r) => r.steps[i]!.fuelUsed)))]);
      }
      const inSteps = median(rs.map((r) => r.steps.reduce((a, s) => a + s.durationMs, 0)));
      stepRows.push([label, 'outside the steps (sources, VFS, readback)', fmtS(median(rs.map((r) => r.durationMs)) - inSteps), '']);
      stepRows.push([label, 'total (durationMs)', fmtS(median(rs.map((r) => r.durationMs))), fmtFuel(median(rs.map((r) => r.fuelUsed)))]);
    };
    stepRows.push(['warm engine', `clang --version (×${VERSION_RUNS}): a step's floor`, fmtS(median(version)), '']);
    stepTable('warm hello.c', warmSmall);
    stepTable('warm big.c', warmBig);
    stepTable('warm vector.cpp', [cxx]);
    const freshRows = (label: string, fs: readonly Fresh[]) => {
      const m = (k: 'importMs' | 'createMs' | 'buildMs' | 'closeMs' | 'wallMs') => fmtS(median(fs.map((f) => f[k])));
      const inSteps = median(fs.map((f) => f.steps.reduce((a, s) => a + s.durationMs, 0)));
      stepRows.push([label, 'node start + tsx + import', fmtS(median(fs.map((f) => f.wallMs - f.importMs - f.createMs - f.buildMs - f.closeMs)) + median(fs.map((f) => f.importMs))), '']);
      stepRows.push([label, 'createEngine', m('createMs'), '']);
      stepRows.push([label, 'build: module load/compile (outside the steps)', fmtS(median(fs.map((f) => f.durationMs)) - inSteps), '']);
      stepRows.push([label, 'build: the steps', fmtS(inSteps), fmtFuel(median(fs.map((f) => f.fuelUsed)))]);
      stepRows.push([label, 'engine.close', m('closeMs'), '']);
      stepRows.push([label, 'whole process', m('wallMs'), '']);
    };
    freshRows('first, empty home', [first]);
    if (freshSmall.length) freshRows('fresh hello.c', freshSmall);
    if (freshBig.length) freshRows('fresh big.c', freshBig);
    const head = ['', 'step', 'p50', 'fuel'];
    const w = head.map((h, i) => Math.max(h.length, ...stepRows.map((c) => c[i]!.length)));
    const line = (c: readonly string[]) => c.map((x, i) => x.padEnd(w[i]!)).join('  ').trimEnd();
    console.log('\n## build lane: where the time goes (medians)\n');
    console.log(line(head));
    console.log(w.map((n) => '-'.repeat(n)).join('  '));
    for (const c of stepRows) console.log(line(c));

    console.log(
      `\nchecked: every module built ran and printed what it should (big.c: ${JSON.stringify(big.expected.trim())}, the checksum computed in TypeScript too)` +
        `${nat?.big ? ', native clang\'s too' : ''}; repeated builds byte-identical: ${identical ? 'yes' : 'NO'}`,
    );
    for (const f of failures) console.log(f);
    const warmP50 = median(warmSmall.map((r) => r.wallMs));
    const freshP50 = freshSmall.length ? median(freshSmall.map((r) => r.wallMs)) : Infinity;
    console.log(`target warm hello.c p50 ≤ ${TARGET_WARM_MS / 1000} s: ${fmtS(warmP50)} — ${warmP50 <= TARGET_WARM_MS ? 'PASS' : 'MISS'}`);
    console.log(`target fresh-process hello.c p50 ≤ ${TARGET_FRESH_MS / 1000} s (library under tsx): ${freshSmall.length ? fmtS(freshP50) : 'no build succeeded'} — ${freshP50 <= TARGET_FRESH_MS ? 'PASS' : 'MISS'}`);
    const cliP50 = median(cliSmall);
    console.log(`target fresh CLI process (membrane build hello.c) p50 ≤ ${TARGET_FRESH_MS / 1000} s: ${fmtS(cliP50)} — ${cliP50 <= TARGET_FRESH_MS ? 'PASS' : 'MISS'}`);
    console.log(`bench took ${fmtS(performance.now() - tStart)}`);
  } finally {
    await engine?.close();
    if (before === undefined) delete process.env['MEMBRANE_HOME'];
    else process.env['MEMBRANE_HOME'] = before;
    rmSync(home, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1]?.endsWith('bench/build.ts')) await buildLane();
