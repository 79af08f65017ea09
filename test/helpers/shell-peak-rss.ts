/**
 * Test helper: run one `membrane sh` script in a fresh child process (the same library path the
 * CLI takes: an engine with its worker threads, the registry, runShell) and report how far the
 * child's peak RSS rose above its RSS just before the script — worker threads included, since
 * they share the process. The peak is the kernel's (getrusage ru_maxrss), so a spike between
 * samples is not missed.
 *
 * Usage from a test: `await shellPeakRss({ script, options, engine })`.
 * As the child: `node --import tsx test/helpers/shell-peak-rss.ts` with the request in
 * $SHELL_RSS_REQUEST; prints one JSON line.
 */

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { EngineOptions } from '../../src/index.ts';
import type { ShellOptions, ShellResult } from '../../src/shell/index.ts';
import { tempDir } from './tmp.ts';

export interface RssRequest {
  readonly script: string;
  readonly options?: ShellOptions;
  readonly engine?: Pick<EngineOptions, 'operatorLimits' | 'outputLimitBytes' | 'failOnOutputLimit'>;
}

export interface RssReport {
  readonly result: ShellResult;
  /** RSS just before the script, after a warm-up script loaded the workers and commands. */
  readonly rssBeforeBytes: number;
  /** The process's peak RSS by the end of the script. */
  readonly peakRssBytes: number;
  readonly growthBytes: number;
  readonly wallMs: number;
}

const self = fileURLToPath(import.meta.url);

export function shellPeakRss(req: RssRequest, limitMs = 240_000): Promise<RssReport> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', self], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, SHELL_RSS_REQUEST: JSON.stringify(req), MEMBRANE_HOME: tempDir('membrane-sh-rss-') },
    });
    let out = '';
    let err = '';
    const timer = setTimeout(() => p.kill('SIGKILL'), limitMs);
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('error', reject);
    p.on('close', (code, signal) => {
      clearTimeout(timer);
      const line = out.trim().split('\n').pop() ?? '';
      try {
        resolve(JSON.parse(line) as RssReport);
      } catch {
        reject(new Error(`the shell RSS child exited ${code ?? signal} without a report (limit ${limitMs} ms): ${err.slice(-2000)}`));
      }
    });
  });
}

async function child(req: RssRequest): Promise<void> {
  const { createEngine } = await import('../../src/index.ts');
  const { CommandRegistry, runShell } = await import('../../src/shell/index.ts');
  const registry = CommandRegistry.withBuiltins();
  const engine = createEngine({ poolSize: 1, commands: registry, cacheDir: tempDir('membrane-sh-rss-cache-'), ...req.engine });
  try {
    const warm = await runShell(engine, registry, 'echo warm | cat | wc -c > f; cat f; seq 1 3 | tail -n 1', { ...req.options, timeoutMs: 30_000 });
    if (warm.exitCode !== 0) throw new Error(`warm-up failed: ${warm.stderr}`);
    const rssBeforeBytes = process.memoryUsage().rss;
    const t0 = performance.now();
    const result = await runShell(engine, registry, req.script, req.options);
    const wallMs = performance.now() - t0;
    const peakRssBytes = process.resourceUsage().maxRSS * 1024;
    const report: RssReport = { result, rssBeforeBytes, peakRssBytes, growthBytes: peakRssBytes - rssBeforeBytes, wallMs };
    process.stdout.write(`${JSON.stringify(report)}\n`);
  } finally {
    await engine.close();
  }
}

if (process.argv[1] === self && process.env['SHELL_RSS_REQUEST']) {
  await child(JSON.parse(process.env['SHELL_RSS_REQUEST']) as RssRequest);
}
