// The CPython lane's escape suite (DESIGN §8's CPython-on-WASI): every
// attack a snippet can try from inside CPython 3.12 on WASI fails safely — an error or a harmless
// value — and none runs a process, creates a host file, reaches a socket on 127.0.0.1, sees a host
// env var, reads a file outside the call's VFS, loads native code, or forges through the lane port
// (its stdin) a result that hides a wall or a power beyond its grant. After each, the engine answers.
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { ExecOptions, ExecOutcome } from '../../src/index.ts';
import { testEngine } from '../helpers/engine.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tripwire, type Tripwire } from '../helpers/tripwire.ts';
import { tempDir } from '../helpers/tmp.ts';

const SECRET = 'sk-membrane-test-secret-should-never-leak';
process.env['ANTHROPIC_API_KEY'] = SECRET;
process.env['OPENAI_API_KEY'] = SECRET;
const home = tempDir('membrane-cpython-escape-');
process.env['MEMBRANE_HOME'] = home;
const MARKER = join(home, 'MARKER');
const engine = testEngine({ poolSize: 1 });
let wire: Tripwire;

/** One memory cap (one prepared interpreter), a deadline no boot reaches, and only the VFS granted. */
const BASE = { profile: 'network', memoryBytes: 64 << 20, timeoutMs: 30_000, caps: ['vfs'] } as const;
const py = (code: string, extra: Partial<ExecOptions> = {}) => engine.exec({ language: 'python', code, ...BASE, ...extra });

before(async () => {
  wire = await tripwire();
  assert.equal((await py('1')).ok, true); // prepares the interpreter (seconds, once)
});

after(async () => {
  await wire.close();
  rmSync(home, { recursive: true, force: true });
});

/** Nothing escaped: no marker, no secret, no passwd line, no connection, no host path. */
function assertContained(r: ExecOutcome): void {
  const all = JSON.stringify(r);
  assert.equal(existsSync(MARKER), false, 'marker file created');
  assert.ok(!all.includes(SECRET), 'host secret visible');
  assert.ok(!all.includes('root:x:0:'), '/etc/passwd content visible');
  assert.ok(!/\/work\/|node_modules|wt-cpython|\.ts:\d/.test(all), `host path in the result: ${all.slice(0, 500)}`);
  assert.equal(wire.connections(), 0, 'a connection reached the host server');
}

/** The snippet's exception, by Python name, and contained. */
function assertRaised(r: ExecOutcome, name: string, message?: RegExp): void {
  assertContained(r);
  assert.equal(r.error?.code, 'GUEST_EXCEPTION', JSON.stringify(r.error));
  assert.equal((r.error?.details as { name: string }).name, name, r.error?.message);
  if (message) assert.match(r.error?.message ?? '', message);
}

test('import js / import pyodide / import pyodide_js: no such modules (ModuleNotFoundError)', async () => {
  for (const mod of ['js', 'pyodide', 'pyodide_js', '_pyodide']) {
    assertRaised(await py(`import ${mod}`), 'ModuleNotFoundError', new RegExp(`No module named '${mod}'`));
  }
  const r = await py("import sys\n[m for m in sys.modules if 'pyodide' in m or m == 'js']");
  assert.deepEqual(r.result, []);
});

test('os.system / posix.system are absent; fork, exec*, spawn*, kill do not exist and os.popen raises', async () => {
  assertRaised(await py(`import os\nos.system('touch ${MARKER}')`), 'AttributeError', /no attribute 'system'/);
  assertRaised(await py(`import posix\nposix.system('touch ${MARKER}')`), 'AttributeError', /no attribute 'system'/);
  const r = await py("import os\nsorted(n for n in ('fork', 'forkpty', 'execv', 'execve', 'spawnv', 'posix_spawn', 'popen', 'kill', 'system') if hasattr(os, n))");
  assertContained(r);
  // Only os.popen is defined (pure Python over subprocess), and it cannot start anything.
  assert.deepEqual(r.result, ['popen']);
  assertRaised(await py(`import os\nos.popen('touch ${MARKER}').read()`), 'OSError', /wasi does not support processes/);
});

test('subprocess.run → OSError: wasi does not support processes', async () => {
  assertRaised(await py(`import subprocess\nsubprocess.run(['touch', '${MARKER}']).returncode`), 'OSError', /wasi does not support processes/);
});

test('ctypes (and so ctypes.CDLL(None).system) does not exist', async () => {
  assertRaised(await py(`import ctypes\nctypes.CDLL(None).system(b'touch ${MARKER}')`), 'ModuleNotFoundError', /No module named 'ctypes'/);
});

test('socket.create_connection / a raw socket / urllib to a server on 127.0.0.1 never connect', async () => {
  const attempts = [
    `import socket\nsocket.create_connection(('127.0.0.1', ${wire.port}), timeout=2)`,
    `import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\ns.connect(('127.0.0.1', ${wire.port}))`,
    `import urllib.request\nurllib.request.urlopen('http://127.0.0.1:${wire.port}/', timeout=2).read()`,
  ];
  for (const code of attempts) {
    const r = await py(code);
    assertContained(r);
    assert.equal(r.error?.code, 'GUEST_EXCEPTION', `${code}: ${JSON.stringify(r.result ?? r.error)}`);
  }
});

test("open('/etc/passwd') and /proc/self/environ → FileNotFoundError (no file outside the VFS)", async () => {
  assertRaised(await py("open('/etc/passwd').read()"), 'FileNotFoundError');
  assertRaised(await py("open('/proc/self/environ').read()"), 'FileNotFoundError');
  // Above the preopen WASI answers ENOTCAPABLE: PermissionError, and nothing read.
  assertRaised(await py("open('/../../../../etc/hostname').read()"), 'PermissionError', /Capabilities insufficient/);
  const r = await py("import os\n[os.path.exists(p) for p in ('/etc', '/proc', '/home', '/root', '/work', '/dev', '/usr/bin', '/bin/sh', " + JSON.stringify(process.cwd()) + ')]');
  assertContained(r);
  assert.deepEqual(r.result, [false, false, false, false, false, false, false, false, false]);
});

test('ANTHROPIC_API_KEY / OPENAI_API_KEY from the host environment are not visible: os.environ is empty', async () => {
  const r = await py("import os\n[os.environ.get('ANTHROPIC_API_KEY'), os.environ.get('OPENAI_API_KEY'), dict(os.environ), os.getenv('HOME')]");
  assertContained(r);
  assert.deepEqual(r.result, [null, null, {}, null]);
});

test("os.listdir('/') shows only what the call's VFS holds", async () => {
  const fresh = await py("import os\nsorted(os.listdir('/'))");
  assertContained(fresh);
  assert.deepEqual(fresh.result, []);
  const vfs = 'cpython-escape-listing';
  const seeded = await engine.exec({ language: 'js', code: "vfs.write('/only/here.txt', 'x'); 1", profile: 'minimal', vfs });
  assert.equal(seeded.ok, true, JSON.stringify(seeded.error));
  const r = await py("import os\n[sorted(os.listdir('/')), os.listdir('/only'), os.getcwd()]", { vfs });
  assertContained(r);
  assert.deepEqual(r.result, [['only'], ['here.txt'], '/']);
});

test('importing a .so written into the VFS fails: no extension loader, no dynamic loading', async () => {
  const code = [
    'import sys, importlib.machinery',
    "wasm = b'\\x00asm\\x01\\x00\\x00\\x00'",
    "for name in ['evil.so', 'evil.cpython-312-wasm32-wasi.so', 'evil.abi3.so']:",
    "    open('/' + name, 'wb').write(wasm)",
    "sys.path.insert(0, '/')",
    'r = [importlib.machinery.EXTENSION_SUFFIXES]',
    'try:',
    '    import evil',
    '    r.append("imported")',
    'except ImportError as e:',
    '    r.append(type(e).__name__)',
    'try:',
    "    importlib.machinery.ExtensionFileLoader('evil', '/evil.so').create_module(importlib.machinery.ModuleSpec('evil', None, origin='/evil.so'))",
    '    r.append("loaded")',
    'except Exception as e:',
    '    r.append(type(e).__name__)',
    'r',
  ].join('\n');
  const r = await py(code);
  assertContained(r);
  // No suffix is an extension module's; the loader has nothing to call (_imp.create_dynamic is absent).
  assert.deepEqual(r.result, [[], 'ModuleNotFoundError', 'AttributeError'], JSON.stringify(r.error));
});

test('sys.setrecursionlimit(10**9) and a deep recursion end at a wall; the host survives and the next call works', async () => {
  const r = await py('import sys\nsys.setrecursionlimit(10**9)\ndef f(n): return f(n + 1)\nf(0)', { timeoutMs: 20_000 });
  assertContained(r);
  assert.equal(r.ok, false);
  assert.ok(['GUEST_TRAP', 'GUEST_EXCEPTION', 'MEMORY_LIMIT', 'STACK_OVERFLOW', 'TIMEOUT'].includes(r.error?.code ?? ''), JSON.stringify(r.error));
  assert.equal((await py('print(sum(range(10)))')).stdout, '45\n');
});

test('a __del__ or atexit hook that spins after the result neither delays nor changes it', async () => {
  const del = await py("class A:\n    def __del__(self):\n        while True: pass\na = A()\n'result'", { timeoutMs: 20_000 });
  assert.equal(del.ok, true, JSON.stringify(del.error));
  assert.equal(del.result, 'result');
  assert.ok(del.durationMs < 20_000, `took ${del.durationMs.toFixed(0)} ms`);
  const hook = await py("import atexit\natexit.register(lambda: print('late') or [0 for _ in iter(int, 1)])\n'first'", { timeoutMs: 20_000 });
  assert.equal(hook.ok, true, JSON.stringify(hook.error));
  assert.equal(hook.result, 'first');
  assert.equal(hook.stdout, '');
});

test('10 MB of output is capped at the 1 MiB output limit, and the call is still answered', async () => {
  const r = await py("import sys\nfor _ in range(10): sys.stdout.write('x' * (1 << 20))\n'done'");
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(r.result, 'done');
  // The kept bytes, and only them (a lane's stream is what streaming would deliver); the cap is a warning.
  assert.equal(r.stdout.length, 1 << 20);
  assert.ok(/^x+$/.test(r.stdout));
  assert.ok(r.warnings.some((w) => /stdout truncated at 1048576 bytes/.test(w)), JSON.stringify(r.warnings));
});

test('junk written to stdin (the lane port) gets an I/O error; the snippet reads an empty sys.stdin', async () => {
  const r = await py("import os, sys\nos.write(0, b'garbage')\ntry:\n    got = os.read(0, 100)\nexcept OSError as e:\n    got = [e.errno, e.strerror]\n[got, sys.stdin.read()]");
  assertContained(r);
  assert.deepEqual(r.result, [[29, 'I/O error'], ''], JSON.stringify(r.error));
});

test('a forged outcome frame on the port cannot hide a wall: it then spins → TIMEOUT, allocates → MEMORY_LIMIT', async () => {
  const forge = "import os\nos.write(0, b'D{\"ok\": true, \"result\": \"forged\"}')\nos.read(0, 100)\n";
  const t0 = performance.now();
  const spin = await py(forge + 'while True: pass', { timeoutMs: 2_000 });
  assert.equal(spin.ok, false, JSON.stringify(spin.result));
  assert.equal(spin.error?.code, 'TIMEOUT', JSON.stringify(spin.error));
  assert.ok(performance.now() - t0 < 2_000 + LOAD_SLACK_MS);
  const bomb = await py(forge + 'bytearray(10**9)');
  assert.equal(bomb.ok, false, JSON.stringify(bomb.result));
  assert.equal(bomb.error?.code, 'MEMORY_LIMIT', JSON.stringify(bomb.error));
  // Ending normally, the driver's own report is then refused (out of turn): the call is a trap, not the forgery.
  const plain = await py(forge + "'real'");
  assert.equal(plain.ok, false, JSON.stringify(plain.result));
  assert.equal(plain.error?.code, 'GUEST_TRAP');
});

test('a forged power frame on the port gets nothing beyond the grant: kv.put without kv → DENIED, nothing stored', async () => {
  const code = "import os, json\nos.write(0, b'P' + json.dumps({'power': 'kv.put', 'args': ['cpy-forged', 'x']}).encode())\nraw = os.read(0, 4096)\njson.loads(raw[4:])";
  const r = await py(code);
  assertContained(r);
  assert.deepEqual(r.result, { ok: false, code: 'DENIED' }, JSON.stringify(r.error));
  // Through the driver's own transport, the same.
  const direct = await py("import sys, json\njson.loads(sys.modules['__main__']._exchange(b'P', json.dumps({'power': 'kv.put', 'args': ['cpy-forged', 'y']}).encode()))");
  assert.deepEqual(direct.result, { ok: false, code: 'DENIED' }, JSON.stringify(direct.error));
  const check = await py("import membrane\nmembrane.kv.get('cpy-forged')", { caps: ['kv'] });
  assert.equal(check.ok, true, JSON.stringify(check.error));
  assert.equal('result' in check, false, 'kv.get found a value the forged put stored');
});

test('after every attack the engine still answers and the host is unaffected', async () => {
  const r = await py('print(sum(range(10)))');
  assert.equal(r.stdout, '45\n');
  assert.equal(existsSync(MARKER), false);
  assert.equal(wire.connections(), 0);
  assert.equal(process.env['ANTHROPIC_API_KEY'], SECRET);
});
