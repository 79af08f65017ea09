/**
 * Benchmark helpers: timing loops, order statistics and the ratio table every bench prints.
 * Benchmarks report medians and ratios to a baseline measured in the same run (DESIGN §11),
 * because absolute times drift on shared machines.
 */

import { execFileSync } from 'node:child_process';
import initWabt from 'wabt';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

let wabtP: ReturnType<typeof initWabt> | null = null;
export async function watText(source: string): Promise<Uint8Array> {
  const wabt = await (wabtP ??= initWabt());
  const m = wabt.parseWat('bench.wat', source, { bulk_memory: true });
  try {
    return new Uint8Array(m.toBinary({}).buffer);
  } finally {
    m.destroy();
  }
}
export const fixture = async (name: string) => watText(readFileSync(join(ROOT, 'test/fixtures/wat', `${name}.wat`), 'utf8'));

export function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.floor(q * s.length)))]!;
}
export const median = (xs: readonly number[]) => quantile(xs, 0.5);

/** Per-operation samples (ms) of an async operation, after a warmup. */
export async function sample(n: number, warmup: number, op: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await op();
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await op();
    out[i] = performance.now() - t;
  }
  return out;
}

/** Per-operation samples (ms) of a sync operation, after a warmup (the same clock reads as `sample`). */
export function sampleSync(n: number, warmup: number, op: () => unknown): number[] {
  for (let i = 0; i < warmup; i++) op();
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    op();
    out[i] = performance.now() - t;
  }
  return out;
}

/** Median per-operation time (ms) of a sync operation, measured in batches. */
export function batchMedian(batches: number, perBatch: number, op: () => void): number {
  const times: number[] = [];
  for (let b = 0; b < batches; b++) {
    const t = performance.now();
    for (let i = 0; i < perBatch; i++) op();
    times.push((performance.now() - t) / perBatch);
  }
  return median(times);
}

export interface Row {
  readonly what: string;
  readonly p50: number;
  readonly p99?: number;
  readonly unit: 'µs' | 'ms';
  /** The row this one is compared with (same run); omitted for baselines. */
  readonly vs?: string;
  readonly target?: string;
}

export function fmt(ms: number, unit: 'µs' | 'ms'): string {
  const v = unit === 'µs' ? ms * 1000 : ms;
  return v >= 100 ? v.toFixed(0) : v >= 0.1 ? v.toPrecision(3) : v.toPrecision(2);
}

/** `tail` names the `p99` column when a bench fills it with another quantile (few samples: p90, max). */
export function printTable(title: string, rows: readonly Row[], tail = 'p99'): void {
  const byName = new Map(rows.map((r) => [r.what, r]));
  const cells = rows.map((r) => {
    const base = r.vs ? byName.get(r.vs) : undefined;
    const ratio = base ? `${(r.p50 / base.p50).toFixed(2)}× ${r.vs}` : 'baseline';
    return [r.what, `${fmt(r.p50, r.unit)} ${r.unit}`, r.p99 !== undefined ? `${fmt(r.p99, r.unit)} ${r.unit}` : '', ratio, r.target ?? ''];
  });
  const head = ['', 'p50', tail, 'ratio', 'target'];
  const w = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((x, i) => x.padEnd(w[i]!)).join('  ').trimEnd();
  console.log(`\n## ${title}\n`);
  console.log(line(head));
  console.log(w.map((n) => '-'.repeat(n)).join('  '));
  for (const c of cells) console.log(line(c));
}

/** Run an Extism baseline in a plain Node child process (see extism-baseline.mjs). */
export function extismBaseline(mode: 'worker-call' | 'create-call-close', n: number, env: Record<string, string> = {}): { p50: number; p99: number } {
  const out = execFileSync(process.execPath, ['--no-warnings', join(ROOT, 'bench/extism-baseline.mjs'), mode, String(n)], {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    encoding: 'utf8',
  });
  return JSON.parse(out.trim().split('\n').pop()!) as { p50: number; p99: number };
}
