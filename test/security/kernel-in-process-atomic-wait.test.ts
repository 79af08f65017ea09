// The attack: an in-process kernel (on the host thread, time wall fuel-only) declares a shared
// memory and executes `memory.atomic.wait32` with no timeout. Fuel cannot end a wait: before the
// fix the host process hung forever. Now a shared memory is refused at open for in-process
// kernels (without one the instruction traps), and the same module in a worker ends TIMEOUT.
// The in-process attempt runs in a child process, so a regression fails this test instead of
// hanging the test runner.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { watText } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';

const WAIT_KERNEL = `(module (memory (export "memory") 1 1 shared)
  (func (export "process") (param i32) (result i32)
    (drop (memory.atomic.wait32 (i32.const 0) (i32.const 0) (i64.const -1))) (i32.const 0)))`;

// Unshared memory: the wait traps (the threads proposal) instead of blocking.
const UNSHARED_WAIT = `(module (memory (export "memory") 1 1)
  (func (export "process") (param i32) (result i32)
    (drop (memory.atomic.wait32 (i32.const 0) (i32.const 0) (i64.const -1))) (i32.const 0)))`;

const CHILD = `
import { watText } from ${JSON.stringify(new URL('../helpers/wat.ts', import.meta.url).href)};
import { testEngine } from ${JSON.stringify(new URL('../helpers/engine.ts', import.meta.url).href)};
const e = testEngine();
let out;
try {
  const k = await e.kernel(await watText(${JSON.stringify(WAIT_KERNEL)}), { inProcess: true, timeoutMs: 200 });
  try { await k.call(new Uint8Array(4)); out = 'returned'; } catch (err) { out = 'call:' + err.code; }
} catch (err) { out = 'open:' + err.code; }
console.log('OUTCOME ' + out);
await e.close();
process.exit(0);
`;

test('an in-process kernel with a shared memory is refused at open; the host thread never blocks in an atomic wait', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHILD], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  child.stdout.on('data', (c: Buffer) => { stdout += c.toString(); });
  const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  clearTimeout(killer);
  assert.equal(code, 0, `the child hung or failed (exit ${code}): an atomic wait blocked the host thread? stdout: ${stdout.slice(-500)}`);
  assert.match(stdout, /OUTCOME open:POLICY_INVALID/);
});

test('the same kernel in a worker ends TIMEOUT at its deadline', async () => {
  const engine = testEngine();
  const k = await engine.kernel(await watText(WAIT_KERNEL), { timeoutMs: 300 });
  const t0 = performance.now();
  await assert.rejects(k.call(new Uint8Array(4)), (e: unknown) => e instanceof SandboxError && e.code === 'TIMEOUT');
  assert.ok(performance.now() - t0 < 10_000);
  await k.close();
  await engine.close();
});

test('an atomic wait on an unshared memory traps in process instead of blocking', async () => {
  const engine = testEngine();
  const k = await engine.kernel(await watText(UNSHARED_WAIT), { inProcess: true, timeoutMs: 300 });
  await assert.rejects(k.call(new Uint8Array(4)), (e: unknown) => e instanceof SandboxError && e.code === 'GUEST_TRAP');
  await k.close();
  await engine.close();
});
