// Ctrl-C on `membrane exec` and `membrane run`: the guest's output is shown as it is written, and
// SIGINT cancels the running guest — the command exits with CANCELLED's exit code (87) soon after,
// not at the guest's deadline, saying so on stderr.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ERROR_TABLE } from '../../src/errors.ts';
import { BIN } from '../helpers/cli.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { watText } from '../helpers/wat.ts';
import { tempDir } from '../helpers/tmp.ts';

const HOME = tempDir('membrane-interrupt-');
const DEADLINE_MS = 20_000;

/** Start the CLI; once its stdout shows `marker`, send SIGINT; report the exit and the times. */
function interruptAfter(args: string[], marker: string): Promise<{ code: number | null; stdout: string; stderr: string; sawAt: number; exitedAfterSignal: number }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, MEMBRANE_HOME: HOME } });
    const t0 = performance.now();
    let stdout = '';
    let stderr = '';
    let sawAt = -1;
    let signalledAt = -1;
    const kill = setTimeout(() => p.kill('SIGKILL'), DEADLINE_MS + 60_000);
    p.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (sawAt < 0 && stdout.includes(marker)) {
        sawAt = performance.now() - t0;
        // Let the guest get into its spin.
        setTimeout(() => {
          signalledAt = performance.now();
          p.kill('SIGINT');
        }, 200);
      }
    });
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.on('error', reject);
    p.on('close', (code) => {
      clearTimeout(kill);
      resolve({ code, stdout, stderr, sawAt, exitedAfterSignal: signalledAt < 0 ? -1 : performance.now() - signalledAt });
    });
  });
}

test('membrane exec: output streams, Ctrl-C cancels a spinning snippet with exit 87', async () => {
  const r = await interruptAfter(['exec', '--lang', 'js', '--timeout', String(DEADLINE_MS), '-c', "console.log('spinning now'); while (true) {}"], 'spinning now');
  assert.ok(r.sawAt >= 0, `the line was never streamed: ${r.stderr}`);
  assert.equal(r.code, ERROR_TABLE.CANCELLED.exitCode, r.stderr);
  assert.match(r.stderr, /CANCELLED/);
  assert.ok(r.exitedAfterSignal < LOAD_SLACK_MS + 1_000, `exited ${r.exitedAfterSignal.toFixed(0)} ms after SIGINT`);
  assert.equal(r.stdout, 'spinning now\n', 'the streamed line is not printed twice');
});

test('membrane run: a WASI guest that writes then spins: its line shows, Ctrl-C → exit 87', async () => {
  const wasm = await watText(`(module
    (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
    (memory (export "memory") 1)
    (data (i32.const 16) "guest started\\n")
    (func (export "_start")
      (i32.store (i32.const 0) (i32.const 16))
      (i32.store (i32.const 4) (i32.const 14))
      (drop (call $w (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))
      (loop (br 0))))`);
  const file = join(HOME, 'write-then-spin.wasm');
  writeFileSync(file, wasm);
  const r = await interruptAfter(['run', file, '--timeout', String(DEADLINE_MS)], 'guest started');
  assert.ok(r.sawAt >= 0, `the line was never streamed: ${r.stderr}`);
  assert.equal(r.code, ERROR_TABLE.CANCELLED.exitCode, r.stderr);
  assert.match(r.stderr, /CANCELLED/);
  assert.ok(r.exitedAfterSignal < LOAD_SLACK_MS + 1_000, `exited ${r.exitedAfterSignal.toFixed(0)} ms after SIGINT`);
  assert.equal(r.stdout, 'guest started\n');
});
