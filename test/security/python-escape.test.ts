// The Python lane's escape suite (issue #6, DESIGN §8): every attack a snippet can try against
// hardened Pyodide fails safely — an error or a harmless value — and none creates a file, runs a
// process, reaches a socket on 127.0.0.1, sees a host env var or reads /etc/passwd.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { PythonLane } from '../../src/lanes/python/index.ts';
import type { ExecResult } from '../../src/lanes/types.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tripwire, type Tripwire } from '../helpers/tripwire.ts';

const SECRET = 'sk-membrane-test-secret-should-never-leak';
process.env['ANTHROPIC_API_KEY'] = SECRET;
process.env['OPENAI_API_KEY'] = SECRET;

const dir = mkdtempSync(join(tmpdir(), 'membrane-pyesc-'));
const MARKER = join(dir, 'MARKER');
const lane = new PythonLane({ poolSize: 2, cacheDir: false });
let wire: Tripwire;

before(async () => {
  wire = await tripwire();
  await lane.warm();
});

after(async () => {
  await lane.close();
  await wire.close();
  rmSync(dir, { recursive: true, force: true });
});

function run(code: string, over: { timeoutMs?: number; fuel?: number; memoryBytes?: number } = {}): Promise<ExecResult> {
  return lane.exec({ language: 'python', code, timeoutMs: over.timeoutMs ?? 10_000, fuel: over.fuel ?? 1e10, memoryBytes: over.memoryBytes ?? 128 << 20, caps: [] });
}

/** Nothing escaped: no marker, no secret, no passwd line, no connection. */
function assertContained(r: ExecResult): void {
  const all = JSON.stringify(r);
  assert.equal(existsSync(MARKER), false, 'marker file created');
  assert.ok(!all.includes(SECRET), 'host secret visible');
  assert.ok(!all.includes('root:x:0:0'), '/etc/passwd content visible');
  assert.ok(!/\/work\/|node_modules|\.mjs:\d/.test(r.error?.message ?? ''), `host path in error: ${r.error?.message}`);
  assert.equal(wire.connections(), 0, 'a connection reached the host server');
}

function assertFailsOrHarmless(r: ExecResult, harmless: (v: unknown) => boolean = () => false): void {
  assertContained(r);
  if (r.ok) assert.ok(harmless(r.result), `attack returned ${JSON.stringify(r.result)}`);
  else assert.notEqual(r.error?.code, 'INTERNAL', JSON.stringify(r.error));
}

test('import js fails', async () => {
  const r = await run('import js\njs');
  assertFailsOrHarmless(r);
  assert.match(r.error?.message ?? '', /No module named 'js'/);
});

test('js.process is unreachable', async () => {
  assertFailsOrHarmless(await run('import js\nstr(js.process.env)'));
});

test("to_js({}).constructor.constructor('return process')() is refused (no code generation)", async () => {
  const r = await run("from pyodide.ffi import to_js\nto_js({}).constructor.constructor('return process')().pid");
  assertFailsOrHarmless(r);
  assert.match(r.error?.message ?? '', /Code generation from strings disallowed/);
});

test("import('node:fs') inside generated code is refused", async () => {
  const r = await run("from pyodide.ffi import to_js\nto_js({}).constructor.constructor(\"return import('node:fs')\")()");
  assertFailsOrHarmless(r);
  assert.match(r.error?.message ?? '', /EvalError/);
});

test('os.system runs nothing (returns -1)', async () => {
  assertFailsOrHarmless(await run(`import os\nos.system('touch ${MARKER}')`), (v) => v === -1);
});

test('posix.system runs nothing', async () => {
  assertFailsOrHarmless(await run(`import posix\nposix.system('touch ${MARKER}')`), (v) => v === -1);
});

test('subprocess.run fails', async () => {
  assertFailsOrHarmless(await run(`import subprocess\nsubprocess.run(['touch', '${MARKER}']).returncode`));
});

test('ctypes.CDLL(None).system runs nothing', async () => {
  assertFailsOrHarmless(await run(`import ctypes\nctypes.CDLL(None).system(b'touch ${MARKER}')`), (v) => v === -1);
});

test('pyodide_js (and its mountNodeFS) is gone', async () => {
  assertFailsOrHarmless(await run("import pyodide_js\npyodide_js.mountNodeFS('/host', '/')"));
  const r = await run("import sys, pyodide\n[sys.modules.get('pyodide_js') is None, hasattr(pyodide, 'FS'), hasattr(pyodide, 'mountNodeFS'), [k for k, v in sys.modules.items() if type(v).__name__ == 'JsProxy']]");
  assert.deepEqual(r.result, [true, false, false, []]);
});

test('NODEFS is mounted nowhere and the host root is not visible', async () => {
  const r = await run("import os\nsorted(os.listdir('/'))");
  assertContained(r);
  assert.ok(r.ok && Array.isArray(r.result) && !(r.result as string[]).includes('work'), JSON.stringify(r.result));
});

test("open('/etc/passwd').read() fails", async () => {
  assertFailsOrHarmless(await run("open('/etc/passwd').read()"));
});

test('socket.create_connection to a server on 127.0.0.1 never connects', async () => {
  assertFailsOrHarmless(await run(`import socket\nsocket.create_connection(('127.0.0.1', ${wire.port}), timeout=2)`));
});

test('urllib.request.urlopen to a server on 127.0.0.1 never connects', async () => {
  assertFailsOrHarmless(await run(`import urllib.request\nurllib.request.urlopen('http://127.0.0.1:${wire.port}/', timeout=2).read()`));
});

test('ANTHROPIC_API_KEY / OPENAI_API_KEY from the host environment are not visible', async () => {
  const r = await run("import os\n[os.environ.get('ANTHROPIC_API_KEY'), os.environ.get('OPENAI_API_KEY'), dict(os.environ)]");
  assertContained(r);
  assert.deepEqual(r.result, [null, null, {}]);
});

test('while True: pass with timeoutMs 1000 → TIMEOUT at the deadline (plus a loaded machine\'s slack)', async () => {
  await lane.warm();
  const t = performance.now();
  const r = await run('while True: pass', { timeoutMs: 1000, fuel: 1e15 });
  const ms = performance.now() - t;
  assert.equal(r.error?.code, 'TIMEOUT');
  assert.ok(ms < 1000 + LOAD_SLACK_MS, `took ${ms} ms`);
});

test('while True: pass with fuel 1e7 → FUEL_EXHAUSTED', async () => {
  const r = await run('while True: pass', { timeoutMs: 10_000, fuel: 1e7 });
  assert.equal(r.error?.code, 'FUEL_EXHAUSTED');
  assert.ok(r.fuelUsed >= 1e7 && r.fuelUsed < 1e7 + 2e6, String(r.fuelUsed));
});

test('a memory bomb → MEMORY_LIMIT', async () => {
  const r = await run('l = []\nwhile True: l.append(bytearray(1 << 20))', { memoryBytes: 64 << 20 });
  assert.equal(r.error?.code, 'MEMORY_LIMIT', JSON.stringify(r.error));
  const big = await run('bytearray(512 << 20)', { memoryBytes: 64 << 20 });
  assert.equal(big.error?.code, 'MEMORY_LIMIT');
});

test('10 MB of output is truncated at 1 MiB', async () => {
  const r = await run("import sys\nfor _ in range(10): sys.stdout.write('x' * (1 << 20))");
  assert.ok(r.ok, JSON.stringify(r.error));
  assert.equal(r.stdout.length, 1 << 20);
  assert.ok(r.warnings.some((w) => /stdout truncated/.test(w)), JSON.stringify(r.warnings));
});

test('after every attack the lane still answers and the host is unaffected', async () => {
  const r = await run('print(sum(range(10)))');
  assert.equal(r.stdout, '45\n');
  assert.equal(existsSync(MARKER), false);
  assert.equal(wire.connections(), 0);
  assert.equal(process.env['ANTHROPIC_API_KEY'], SECRET);
});
