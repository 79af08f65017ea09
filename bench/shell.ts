/**
 * Shell pipeline latency: `membrane sh` pipelines (every stage a fresh sandboxed wasm guest,
 * files in the VFS) against the same pipeline in the host's /bin/sh with GNU coreutils, measured
 * in the same run (the host baseline starts real processes; ours starts sandboxes).
 */

import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine } from '../src/index.ts';
import { CommandRegistry, runShell } from '../src/shell/index.ts';
import { median, printTable } from './lib.ts';

const PIPELINES = {
  'echo hello | wc -c': 'echo hello | wc -c',
  '10-stage pipeline': 'seq 1 50 | sort -r | head -n 40 | tail -n 30 | grep 1 | sort -n | uniq | tr 1 X | cat | wc -l',
  // 150 000 one-line writes captured (~0.9 MB): the output capture's per-write cost.
  'seq 1 150000 | wc -c': 'seq 1 150000 | wc -c',
};

export async function shellLatency(): Promise<void> {
  process.env['MEMBRANE_HOME'] ??= mkdtempSync(join(tmpdir(), 'membrane-bench-'));
  const engine = createEngine({ poolSize: 2, cacheDir: false });
  const registry = CommandRegistry.withBuiltins();
  const rows = [];
  for (const [label, script] of Object.entries(PIPELINES)) {
    const host: number[] = [];
    const ours: number[] = [];
    for (let i = 0; i < 12; i++) {
      let t = performance.now();
      const expected = execFileSync('/bin/sh', ['-c', script], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' } });
      host.push(performance.now() - t);
      t = performance.now();
      const r = await runShell(engine, registry, script);
      ours.push(performance.now() - t);
      if (r.stdout !== expected) throw new Error(`${label}: ${JSON.stringify(r.stdout)} != ${JSON.stringify(expected)}`);
    }
    rows.push({ what: `host /bin/sh: ${label}`, p50: median(host.slice(2)), unit: 'ms' as const });
    rows.push({ what: `membrane sh: ${label}`, p50: median(ours.slice(2)), unit: 'ms' as const, vs: `host /bin/sh: ${label}` });
  }
  await engine.close();
  printTable('shell pipeline latency (same output checked against the host shell)', rows);
}

if (process.argv[1]?.endsWith('shell.ts')) await shellLatency();
