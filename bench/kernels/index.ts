/**
 * The CPU kernels of the fuel-overhead and rewriter-speed benchmarks: freestanding C compiled by
 * clang -O2 for wasm32 (scripts/build-c.ts, the in-sandbox compiler), each exporting `run(n)` that returns a checksum. `n` is sized
 * so that one uninstrumented run takes roughly 100–300 ms on the reference machines.
 */

import { readFileSync } from 'node:fs';

export interface Kernel {
  readonly name: string;
  /** What it stresses, for the report. */
  readonly shape: string;
  readonly n: number;
}

export const KERNELS: readonly Kernel[] = [
  { name: 'sha256', shape: 'integer rotates, 64-round inner loop', n: 200 },
  { name: 'matmul', shape: 'f64 multiply-add, tight triple loop', n: 60 },
  { name: 'nbody', shape: 'f64 arithmetic and sqrt, short loops', n: 1_200_000 },
  { name: 'vm', shape: 'switch-dispatch bytecode interpreter', n: 3_000_000 },
  { name: 'fib', shape: 'recursive calls', n: 37 },
  { name: 'sort', shape: 'quicksort: branches, recursion, memory', n: 20 },
];

export function kernelBytes(name: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(readFileSync(new URL(`./${name}.wasm`, import.meta.url)));
}
