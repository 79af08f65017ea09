// Memory bombs through `membrane serve` cannot take the server's memory: four JS snippets that
// hoard 16 MiB typed arrays, sent at once to /v1/exec under `compute` (64 MiB), then twice more,
// keep the server's RSS under 4 × 64 MiB + its idle RSS + 150 MiB, each ending MEMORY_LIMIT.
// Issue #12, finding 2 (six such requests had taken the server to 2.2 GB).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { BIN, runCli } from '../helpers/cli.ts';
import { call } from '../helpers/http.ts';
import { tempDir } from '../helpers/tmp.ts';

const MiB = 1024 * 1024;
const home = tempDir('membrane-serve-rss-');
const env = { MEMBRANE_HOME: home, MEMBRANE_AUDIT_KEY: 'e'.repeat(64) };
/** Waves of four: later waves show the memories of finished bombs are given back, not piled up. */
const WAVES = 3;
const BOMB = 'const held = []; for (;;) held.push(new Uint8Array(16 * 1024 * 1024).fill(7));';

function rssBytes(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for pid ${pid} (this test needs Linux /proc)`);
  return Number(m[1]) * 1024;
}

test('four memory-bomb snippets at once through membrane serve keep its RSS under 4 × 64 MiB + idle + 150 MiB', async () => {
  const made = await runCli(['token', 'create', '--tenant', 'bombs', '--profile', 'compute', '--json'], env);
  assert.equal(made.code, 0, made.stderr);
  const token = JSON.parse(made.stdout).token as string;
  const p = spawn(process.execPath, [BIN, 'serve', '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  p.stdout.on('data', (d) => (stdout += d));
  p.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<void>((resolve) => p.on('close', () => resolve()));
  const killer = setTimeout(() => p.kill('SIGKILL'), 180_000);
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const check = (): void => {
        const m = /listening on (http:\/\/127\.0\.0\.1:\d+)\n/.exec(stdout);
        if (m) resolve(m[1]!);
      };
      p.stdout.on('data', check);
      void exited.then(() => reject(new Error(`serve exited early: ${stderr}`)));
    });
    const pid = p.pid!;
    const started = rssBytes(pid);
    // Idle: the JS lane up (its workers and pools), after a harmless call.
    const warm = await call(url, '/v1/exec', token, 'POST', { code: '6 * 7', language: 'js' });
    assert.equal(warm.body.result, 42, warm.text);
    await new Promise((r) => setTimeout(r, 1000));
    const idle = rssBytes(pid);
    const bound = 4 * 64 * MiB + idle + 150 * MiB;

    let peak = idle;
    const sampler = setInterval(() => {
      try {
        peak = Math.max(peak, rssBytes(pid));
      } catch {
        // The process is gone; the assertions below say so.
      }
    }, 10);
    const codes: string[] = [];
    try {
      for (let wave = 0; wave < WAVES; wave++) {
        const replies = await Promise.all(Array.from({ length: 4 }, () => call(url, '/v1/exec', token, 'POST', { code: BOMB, language: 'js' })));
        for (const r of replies) codes.push(String(r.body?.error?.code ?? r.status));
      }
    } finally {
      clearInterval(sampler);
    }
    console.log(
      `serve RSS: at start ${(started / MiB).toFixed(0)} MiB, idle (lane up) ${(idle / MiB).toFixed(0)} MiB, ` +
        `peak under ${WAVES} × 4 bombs ${(peak / MiB).toFixed(0)} MiB, bound ${(bound / MiB).toFixed(0)} MiB; outcomes ${codes.join(' ')}`,
    );
    assert.deepEqual(codes, Array(4 * WAVES).fill('MEMORY_LIMIT'));
    assert.ok(peak <= bound, `peak RSS ${(peak / MiB).toFixed(0)} MiB > bound ${(bound / MiB).toFixed(0)} MiB`);
    // The server still answers.
    assert.equal((await call(url, '/v1/exec', token, 'POST', { code: '1 + 1', language: 'js' })).body.result, 2);
  } finally {
    clearTimeout(killer);
    p.kill('SIGTERM');
    await exited;
  }
});
