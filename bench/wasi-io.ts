/**
 * WASI file I/O over the VFS against `node:wasi` on a tmp directory (the baseline only: node:wasi
 * is not a sandbox and never runs guests in Membrane). The same C guest (bench/io/fileio.c)
 * writes and reads back 64 MiB in 64 KiB chunks, then 1000 small files. Target: ≥ 0.5× the
 * baseline's throughput, i.e. a time ratio ≤ 2×.
 */

import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WASI } from 'node:wasi';
import { createEngine } from '../src/index.ts';
import { ROOT, median, printTable } from './lib.ts';

const RUNS = 5;

function nodeWasi(module: WebAssembly.Module, mode: string): number {
  const dir = mkdtempSync(join(tmpdir(), 'membrane-io-'));
  try {
    const devNull = openSync('/dev/null', 'w');
    const wasi = new WASI({ version: 'preview1', args: ['fileio', mode, '/work'], env: {}, preopens: { '/work': dir }, returnOnExit: true, stdout: devNull });
    const inst = new WebAssembly.Instance(module, { wasi_snapshot_preview1: wasi.wasiImport });
    const t = performance.now();
    const code = wasi.start(inst);
    if (code !== 0) throw new Error(`node:wasi run failed: ${code}`);
    return performance.now() - t;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function wasiIo(): Promise<void> {
  const bytes = new Uint8Array(readFileSync(join(ROOT, 'bench/io/fileio.wasm')));
  const module = new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>);
  const engine = createEngine({ poolSize: 1, cacheDir: false });
  const rows = [];
  for (const mode of ['big', 'small']) {
    const base: number[] = [];
    const ours: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      base.push(nodeWasi(module, mode));
      const r = await engine.run(bytes, { argv: [mode, '/tmp'], profile: 'network', timeoutMs: 30_000 });
      if (r.exitCode !== 0) throw new Error(`membrane run failed: ${JSON.stringify(r.error)} ${r.stderr}`);
      ours.push(r.durationMs);
    }
    const what = mode === 'big' ? '64 MiB write + read back, 64 KiB chunks' : '1000 files of 1 KiB, write + read back';
    rows.push({ what: `node:wasi on tmp: ${what}`, p50: median(base), unit: 'ms' as const });
    rows.push({ what: `membrane VFS: ${what}`, p50: median(ours), unit: 'ms' as const, vs: `node:wasi on tmp: ${what}`, target: '≤ 2× (≥ 0.5× throughput)' });
  }
  await engine.close();
  printTable('WASI file I/O: Membrane VFS vs node:wasi on a tmp directory', rows);
}

if (process.argv[1]?.endsWith('wasi-io.ts')) await wasiIo();
