/**
 * Instrumentation speed (DESIGN §11): `instrumentFuel` against binaryen's read + write of the same
 * module (`binaryen.readBinary` then `emitBinary`, no passes) — the least any binaryen-based
 * rewriter pays. Modules: the benchmark kernels, QuickJS's wasm (0.5 MB) and Pyodide's (9.6 MB).
 * Targets: binaryen ≥ 10× slower on real-size modules (≥ 100 KB: QuickJS, Pyodide); Pyodide
 * instrumented in ≤ 0.5 s. The kernels (≤ 2 KB) are listed for scale only: there both tools'
 * fixed per-call costs dominate.
 *
 * The two alternate within each repetition; the first (cold) instrumentFuel call of the run is
 * reported apart for Pyodide, since a process that instruments one big module pays it once.
 * Every output is checked with `WebAssembly.validate` (untimed). `instrumentFuel` is timed as
 * callers run it, V8's validation of the input included (about 1.2× the rewrite alone; the split
 * is bench/validation-cost.ts).
 */

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import binaryen from 'binaryen';
import { instrumentFuel } from '../src/wasm/index.ts';
import { KERNELS, kernelBytes } from './kernels/index.ts';
import { median, printTable } from './lib.ts';
import type { Row } from './lib.ts';

const SPEEDUP_TARGET = 10;
/** Modules at least this big are held to the speed-up target. */
const REAL_SIZE = 100_000;
const PYODIDE_TARGET_MS = 500;

interface Subject {
  readonly name: string;
  readonly bytes: Uint8Array<ArrayBuffer>;
  readonly reps: number;
}

function subjects(): Subject[] {
  const require = createRequire(import.meta.url);
  const file = (id: string) => new Uint8Array(readFileSync(require.resolve(id)));
  return [
    ...KERNELS.map((k) => ({ name: `${k.name}.wasm`, bytes: kernelBytes(k.name), reps: 51 })),
    { name: 'QuickJS', bytes: file('@jitl/quickjs-wasmfile-release-sync/wasm'), reps: 15 },
    { name: 'Pyodide', bytes: file('pyodide/pyodide.asm.wasm'), reps: 5 },
  ];
}

function binaryenRoundTrip(bytes: Uint8Array): number {
  const m = binaryen.readBinary(bytes);
  try {
    return m.emitBinary().length;
  } finally {
    m.dispose();
  }
}

function timed(f: () => unknown): number {
  const t = performance.now();
  f();
  return performance.now() - t;
}

export async function rewriterSpeed(): Promise<void> {
  const rows: Row[] = [];
  const ratios: { name: string; ratio: number; real: boolean }[] = [];
  const notes: string[] = [];
  let pyodide = { cold: 0, warm: 0 };
  for (const s of subjects()) {
    let out: Uint8Array<ArrayBuffer> | undefined;
    const cold = timed(() => (out = instrumentFuel(s.bytes).bytes));
    if (!WebAssembly.validate(out!)) throw new Error(`instrumentFuel(${s.name}) produced a module V8 rejects`);
    binaryenRoundTrip(s.bytes); // warm binaryen's own code too
    const ours: number[] = [];
    const theirs: number[] = [];
    for (let i = 0; i < s.reps; i++) {
      ours.push(timed(() => instrumentFuel(s.bytes)));
      theirs.push(timed(() => binaryenRoundTrip(s.bytes)));
    }
    const real = s.bytes.length >= REAL_SIZE;
    const unit = real ? 'ms' : 'µs';
    rows.push(
      { what: `${s.name} instrumentFuel`, p50: median(ours), unit },
      { what: `${s.name} binaryen read+write`, p50: median(theirs), unit, vs: `${s.name} instrumentFuel`, target: real ? `≥ ${SPEEDUP_TARGET}×` : '(scale)' },
    );
    ratios.push({ name: s.name, ratio: median(theirs) / median(ours), real });
    notes.push(`${s.name}: ${(s.bytes.length / 1e6).toFixed(3)} MB → ${(out!.length / 1e6).toFixed(3)} MB instrumented; first call ${cold.toFixed(1)} ms`);
    if (s.name === 'Pyodide') pyodide = { cold, warm: median(ours) };
  }
  printTable('fuel instrumentation speed: instrumentFuel vs binaryen read+write (median)', rows);
  const real = ratios.filter((r) => r.real);
  const small = ratios.filter((r) => !r.real).map((r) => r.ratio);
  const worst = real.reduce((a, b) => (b.ratio < a.ratio ? b : a));
  const py = Math.max(pyodide.cold, pyodide.warm);
  console.log(
    `binaryen / instrumentFuel on modules ≥ ${REAL_SIZE / 1000} KB: min ${worst.ratio.toFixed(1)}× (${worst.name}; target ≥ ${SPEEDUP_TARGET}×) — ${worst.ratio >= SPEEDUP_TARGET ? 'met' : 'MISSED'}; ` +
      `Pyodide ${pyodide.warm.toFixed(0)} ms warm, ${pyodide.cold.toFixed(0)} ms first call (target ≤ ${PYODIDE_TARGET_MS} ms) — ${py <= PYODIDE_TARGET_MS ? 'met' : 'MISSED'}; ` +
      `kernels ${Math.min(...small).toFixed(1)}–${Math.max(...small).toFixed(1)}× (fixed per-call costs dominate)`,
  );
  for (const n of notes) console.log(`  ${n}`);
}

if (process.argv[1]?.endsWith('rewriter-speed.ts')) await rewriterSpeed();
