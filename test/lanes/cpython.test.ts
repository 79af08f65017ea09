// The CPython lane's contract (CPython 3.12 on WASI in the engine's own
// workers), through engine.exec — the same contract as the Pyodide lane (docs/lanes.md): stdout,
// the last expression as `result`, a read-only `context`, GUEST_EXCEPTION reports holding only
// `<snippet>` frames, SystemExit as GUEST_TRAP, top-level await of the snippet's own coroutines,
// non-JSON results, the `membrane` module's powers (present only when granted; a refusal is
// MembraneError with .code), files through WASI over the call's VFS (and a named VFS across
// calls), streaming, cancellation — and no child process and no "weaker tier" warning.
import assert from 'node:assert/strict';
import childProcess, { ChildProcess, execFileSync } from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { before, test } from 'node:test';
import type { ExecOptions } from '../../src/index.ts';
import { testEngine } from '../helpers/engine.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';

// Every way Node starts a process, counted from before the engine exists: `spawn`, `fork`,
// `exec`, `execFile` all go through ChildProcess.prototype.spawn; the synchronous ones are
// patched on the module and re-exported to ESM importers by syncBuiltinESMExports.
let spawned = 0;
const proto = ChildProcess.prototype as unknown as { spawn: (this: ChildProcess, ...a: unknown[]) => unknown };
const protoSpawn = proto.spawn;
proto.spawn = function (this: ChildProcess, ...args: unknown[]) {
  spawned++;
  return protoSpawn.apply(this, args);
};
const cp = childProcess as unknown as Record<string, (...a: unknown[]) => unknown>;
for (const name of ['spawnSync', 'execSync', 'execFileSync']) {
  const orig = cp[name]!;
  cp[name] = (...a: unknown[]) => (spawned++, orig(...a));
}
syncBuiltinESMExports();

process.env['MEMBRANE_HOME'] = tempDir('membrane-cpython-lane-');
// minimal's time is raised so its calls check the lane, not a loaded machine's boot.
const engine = testEngine({ poolSize: 1, operatorLimits: { minimal: { timeoutMs: 30_000 } } });

/** One memory cap for every call (one prepared interpreter), and a deadline no boot on a loaded machine reaches. */
const BASE = { profile: 'network', memoryBytes: 64 << 20, timeoutMs: 30_000 } as const;
const py = (code: string, extra: Partial<ExecOptions> = {}) => engine.exec({ language: 'python', code, ...BASE, ...extra });
type Details = { name: string; message: string; stack: { file: string; line: number; column?: number; function: string }[]; traceback: string };

before(async () => {
  // The first call prepares (instruments and compiles) the interpreter: seconds, once.
  const r = await py('1');
  assert.equal(r.ok, true, JSON.stringify(r.error));
  // A source checkout rebuilds stale bundles (dist/) with esbuild, which starts its own process,
  // on the engine's first use: counted from here, only what the calls themselves start.
  spawned = 0;
});

test('print(sum(range(10))) → stdout 45; fuel is counted', async () => {
  const r = await py('print(sum(range(10)))');
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(r.stdout, '45\n');
  assert.equal(r.stderr, '');
  assert.equal('result' in r, false);
  assert.ok(r.fuelUsed > 0);
  assert.equal(typeof r.poolHit, 'boolean');
});

test('the last expression is the result; a trailing `;` or a statement gives none', async () => {
  assert.equal((await py('x = 6\nx * 7')).result, 42);
  const quiet = await py('x = 6\nx * 7;');
  assert.equal(quiet.ok, true, JSON.stringify(quiet.error));
  assert.equal('result' in quiet, false);
  const stmt = await py('x = 1');
  assert.equal(stmt.ok, true);
  assert.equal('result' in stmt, false);
  // An indented snippet is dedented, as in the Pyodide lane.
  assert.deepEqual((await py('    a = [1, 2]\n    a + [3]')).result, [1, 2, 3]);
});

test('context is readable and read-only', async () => {
  const r = await py("[context['a'], context['b'][1], type(context).__name__, type(context['b']).__name__]", { context: { a: 5, b: [1, 2] } });
  assert.deepEqual(r.result, [5, 2, 'mappingproxy', 'tuple']);
  const w = await py("context['a'] = 1", { context: { a: 5 } });
  assert.equal(w.error?.code, 'GUEST_EXCEPTION');
  assert.match(w.error?.message ?? '', /^TypeError: 'mappingproxy' object does not support item assignment/);
  // Returned as it is, it is plain JSON again.
  assert.deepEqual((await py('context', { context: { a: { b: [1] } } })).result, { a: { b: [1] } });
});

test('an uncaught exception → GUEST_EXCEPTION with name, message, stack and traceback of <snippet> frames only', async () => {
  const r = await py("x = 1\ndef f():\n    raise TypeError('bad')\nf()");
  assert.equal(r.ok, false);
  assert.equal(r.error?.code, 'GUEST_EXCEPTION');
  assert.equal(r.error?.message, 'TypeError: bad');
  const d = r.error?.details as Details;
  assert.equal(d.name, 'TypeError');
  assert.equal(d.message, 'bad');
  assert.deepEqual(d.stack, [
    { file: '<snippet>', line: 3, column: 5, function: 'f' },
    { file: '<snippet>', line: 4, column: 1, function: '<module>' },
  ]);
  assert.equal(d.traceback, `Traceback (most recent call last):\n  File "<snippet>", line 4, in <module>\n    f()\n  File "<snippet>", line 3, in f\n    raise TypeError('bad')\nTypeError: bad\n`);
  // From inside the standard library: its frames (and the driver's) are dropped.
  const lib = await py("import json\n\njson.loads('{')");
  const l = lib.error?.details as Details;
  assert.equal(l.name, 'json.decoder.JSONDecodeError');
  assert.deepEqual(l.stack.map((f) => [f.file, f.line]), [['<snippet>', 3]]);
  assert.doesNotMatch(l.traceback, /\.py"|<string>|python3\.12/);
});

test('a SyntaxError → GUEST_EXCEPTION naming its line and column, with a caret', async () => {
  const r = await py('a = 1\nb = 2\nc = = 3\n');
  assert.equal(r.error?.code, 'GUEST_EXCEPTION');
  assert.equal(r.error?.message, 'SyntaxError: invalid syntax');
  const d = r.error?.details as Details;
  assert.equal(d.name, 'SyntaxError');
  assert.deepEqual(d.stack, [{ file: '<snippet>', line: 3, column: 5, function: '<module>' }]);
  assert.match(d.traceback, /line 3\n {4}c = = 3\n {8}\^\n/);
});

test('sys.exit(3) → GUEST_TRAP with its status', async () => {
  const r = await py("import sys\nprint('before')\nsys.exit(3)");
  assert.equal(r.ok, false);
  assert.equal(r.error?.code, 'GUEST_TRAP');
  assert.equal(r.error?.message, 'SystemExit: 3');
  assert.equal(r.stdout, 'before\n');
});

test("top-level await of the snippet's own async def → its value, and the last expression stays the result", async () => {
  const r = await py('async def f(n):\n    return n * 2\nx = await f(21)\nx');
  assert.equal(r.result, 42, JSON.stringify(r.error));
  const sleep0 = await py('import asyncio\nawait asyncio.sleep(0)\n6*7');
  assert.equal(sleep0.result, 42, JSON.stringify(sleep0.error));
});

test('top-level await runs on an asyncio loop: sleeps, gather, asyncio.run; a future never resolved ends TIMEOUT', async () => {
  // asyncio's own loop needs a socket pair (WASI has none); the driver's loop has a selector that
  // only sleeps, through WASI's clock — bounded by the call's deadline.
  const r = await py('import asyncio\nawait asyncio.sleep(0.01)\nx = await asyncio.gather(asyncio.sleep(0, 2), asyncio.sleep(0.01, 4))\n[6 * 7, x]');
  assert.deepEqual(r.result, [42, [2, 4]], JSON.stringify(r.error));
  const run = await py('import asyncio\nasync def main():\n    await asyncio.sleep(0.01)\n    return 7\nasyncio.run(main())');
  assert.equal(run.result, 7, JSON.stringify(run.error));
  const t0 = performance.now();
  // 4 s: on a loaded machine booting an interpreter eats into the call's budget, and the print
  // must have happened before the deadline for the output-kept half of this check to mean anything.
  const never = await py("print('waiting')\nimport asyncio\nawait asyncio.Future()", { timeoutMs: 4_000 });
  assert.equal(never.error?.code, 'TIMEOUT', JSON.stringify(never.error));
  assert.equal(never.stdout, 'waiting\n');
  assert.ok(performance.now() - t0 < 4_000 + LOAD_SLACK_MS);
});

test('a non-JSON result → its repr; one json.dumps cannot encode at all → repr and a warning', async () => {
  // The repr replaces only the value json cannot encode (json.dumps(default=repr)), silently —
  // as in the Pyodide lane (the code is shared, common-py.mjs).
  const set = await py('{3}');
  assert.equal(set.result, '{3}');
  const obj = await py('[1, object()]');
  assert.match((obj.result as [number, string])[1], /^<object object at 0x[0-9a-f]+>$/);
  // A cycle makes json.dumps itself fail: the whole value's repr, with a warning.
  const cycle = await py('l = []\nl.append(l)\nl');
  assert.equal(cycle.ok, true, JSON.stringify(cycle.error));
  assert.equal(cycle.result, '[[...]]');
  assert.ok(cycle.warnings.some((w) => /not JSON-serializable; its repr was returned/.test(w)), JSON.stringify(cycle.warnings));
});

test("membrane.kv put/get round trip under profile 'minimal'; net and fetch absent when net is not granted", async () => {
  const r = await py("import membrane\nmembrane.kv.put('cpy:greeting', 'hello')\n[membrane.kv.get('cpy:greeting'), membrane.kv.get('cpy:none'), hasattr(membrane, 'kv'), hasattr(membrane, 'net')]", { profile: 'minimal', timeoutMs: 30_000 });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.deepEqual(r.result, ['hello', null, true, false]);
  // Durable in the tenant's store: a later call (a fresh interpreter) reads it.
  assert.equal((await py("import membrane\nmembrane.kv.get('cpy:greeting')", { profile: 'minimal', timeoutMs: 30_000 })).result, 'hello');
  const net = await py('import membrane\nmembrane.net', { profile: 'minimal', timeoutMs: 30_000 });
  assert.equal(net.error?.code, 'GUEST_EXCEPTION');
  assert.equal(net.error?.message, "AttributeError: module 'membrane' has no attribute 'net'");
  const fetch = await py('fetch', { profile: 'minimal', timeoutMs: 30_000 });
  assert.equal(fetch.error?.message, "NameError: name 'fetch' is not defined");
  // Narrowed away with caps, kv is gone too.
  assert.deepEqual((await py("import membrane\n[hasattr(membrane, 'kv'), hasattr(membrane, 'vfs')]", { caps: ['vfs'] })).result, [false, true]);
});

test('a refused power raises membrane.MembraneError with .code and a fixed message', async () => {
  const code = [
    'import membrane',
    'try:',
    "    membrane.vfs.read('relative/path')",
    'except membrane.MembraneError as e:',
    '    r = [type(e).__name__, e.code, str(e), isinstance(e, Exception)]',
    'r',
  ].join('\n');
  const r = await py(code);
  assert.deepEqual(r.result, ['MembraneError', 'INVALID', 'membrane vfs.read: invalid request (INVALID)', true], JSON.stringify(r.error));
  // Uncaught, it is the snippet's exception like any other.
  const uncaught = await py("import membrane\nmembrane.vfs.read('relative/path')");
  assert.equal(uncaught.error?.code, 'GUEST_EXCEPTION');
  // Its reported name is the class's qualified name, which says where common-py.mjs defines it
  // (the same in the Pyodide lane, which shares that code); `type(e).__name__` is 'MembraneError'.
  assert.equal((uncaught.error?.details as Details).name, '_membrane_module.<locals>.MembraneError');
  assert.match(uncaught.error?.message ?? '', /^_membrane_module\.<locals>\.MembraneError: membrane vfs\.read: invalid request \(INVALID\)$/);
});

test('files: open() writes the call VFS, seen by membrane.vfs.read; a named vfs keeps it for a later call', async () => {
  const vfs = 'cpython-lane-files';
  const w = await py("with open('/data.txt', 'w') as f:\n    f.write('hello from open()\\n')\nimport membrane\n[open('/data.txt').read(), membrane.vfs.read('/data.txt')]", { vfs });
  assert.deepEqual(w.result, ['hello from open()\n', 'hello from open()\n'], JSON.stringify(w.error));
  const later = await py("import os, membrane\n[open('/data.txt').read(), membrane.vfs.read('/data.txt'), 'data.txt' in os.listdir('/')]", { vfs });
  assert.deepEqual(later.result, ['hello from open()\n', 'hello from open()\n', true], JSON.stringify(later.error));
  // And the other way round: membrane.vfs.write is a file to open().
  const back = await py("import membrane\nmembrane.vfs.write('/dir/w.txt', 'written by the power')\nopen('/dir/w.txt').read()", { vfs });
  assert.equal(back.result, 'written by the power', JSON.stringify(back.error));
  // Without `vfs: NAME` the call's VFS is private: the file is not there.
  const priv = await py("import os\nos.path.exists('/data.txt')");
  assert.equal(priv.result, false);
});

test('sqlite3 works: in memory, and on a file of the call VFS that a later call reads back', async () => {
  const mem = await py("import sqlite3\nc = sqlite3.connect(':memory:')\nc.execute('create table t(x)')\nc.execute('insert into t values (41)')\nc.execute('select x + 1 from t').fetchone()[0]");
  assert.equal(mem.result, 42, JSON.stringify(mem.error));
  const vfs = 'cpython-lane-sqlite';
  const w = await py("import sqlite3\nc = sqlite3.connect('/app.db')\nc.execute('create table t(x)')\nc.execute(\"insert into t values ('kept')\")\nc.commit()\nc.close()", { vfs });
  assert.equal(w.ok, true, JSON.stringify(w.error));
  const r = await py("import sqlite3\nsqlite3.connect('/app.db').execute('select x from t').fetchone()[0]", { vfs });
  assert.equal(r.result, 'kept', JSON.stringify(r.error));
});

test('caps without vfs: the call runs, membrane.vfs is absent, and no file exists — nothing to read, nowhere to write', async () => {
  const vfs = 'cpython-lane-no-vfs';
  const seed = await py("open('/kept.txt', 'w').write('kept')", { vfs });
  assert.equal(seed.ok, true, JSON.stringify(seed.error));
  const code = [
    'import membrane, os',
    'def attempt(f):',
    '    try: return f()',
    '    except OSError as e: return type(e).__name__',
    "membrane.kv.put('cpy:no-vfs', 'kv works')",
    "[membrane.kv.get('cpy:no-vfs'), hasattr(membrane, 'vfs'), attempt(lambda: open('/scratch.txt', 'w')), attempt(lambda: open('/kept.txt').read()), attempt(lambda: os.listdir('/'))]",
  ].join('\n');
  const r = await py(code, { caps: ['kv'], vfs });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  const [kv, hasVfs, write, read, list] = r.result as unknown[];
  assert.deepEqual([kv, hasVfs], ['kv works', false]);
  // No preopen: every path is outside the guest's world (WASI answers ENOTCAPABLE/ENOENT).
  for (const outcome of [write, read, list]) assert.match(String(outcome), /Error$/, JSON.stringify(r.result));
  // The named VFS has only what was written with vfs granted.
  assert.deepEqual((await py("import os\nsorted(os.listdir('/'))", { vfs })).result, ['kept.txt']);
});

test('streaming: onStdout and onStderr receive the text, which adds up to the streams', async () => {
  const out: string[] = [];
  const err: string[] = [];
  const r = await py("import sys\nprint('first')\nsys.stderr.write('partial ')\nfor i in range(50): print('row', i)\nsys.stderr.write('line\\n')\n'done'", {
    onStdout: (c) => out.push(c),
    onStderr: (c) => err.push(c),
  });
  assert.equal(r.result, 'done', JSON.stringify(r.error));
  assert.ok(out.length > 0);
  assert.equal(out.join(''), r.stdout);
  assert.ok(r.stdout.startsWith('first\nrow 0\n') && r.stdout.endsWith('row 49\n'), r.stdout);
  assert.equal(err.join(''), 'partial line\n');
  assert.equal(r.stderr, 'partial line\n');
});

test('a streaming call takes a parked interpreter too, and its first chunk arrives while it still runs', async () => {
  await (await (engine as unknown as { lanes: { get(l: 'python'): Promise<{ warm(): Promise<void> }> } }).lanes.get('python')).warm();
  let firstAt = 0;
  const chunks: string[] = [];
  const t0 = performance.now();
  const r = await py("import time\nprint('early', flush=True)\nt = time.time()\nwhile time.time() - t < 0.3: pass\nprint('late')\n1", {
    onStdout: (c) => {
      if (firstAt === 0) firstAt = performance.now();
      chunks.push(c);
    },
  });
  const total = performance.now() - t0;
  assert.equal(r.result, 1, JSON.stringify(r.error));
  assert.equal(r.poolHit, true, 'the streaming call booted its own interpreter');
  assert.equal(chunks.join(''), 'early\nlate\n');
  assert.ok(chunks[0]!.startsWith('early'), JSON.stringify(chunks));
  // The first chunk came before the 0.3 s of work was over.
  assert.ok(firstAt - t0 < total - 150, `first chunk after ${(firstAt - t0).toFixed(0)} ms of ${total.toFixed(0)} ms`);
});

test('streaming past the output cap: the callbacks get exactly the kept bytes, which are the result\'s stdout (the cap is a warning)', async () => {
  const chunks: string[] = [];
  const r = await py("import sys\nfor i in range(20_000): sys.stdout.write('x' * 99 + '\\n')\n'done'", { onStdout: (c) => chunks.push(c) });
  assert.equal(r.result, 'done', JSON.stringify(r.error));
  assert.equal(Buffer.byteLength(r.stdout), 1024 * 1024);
  assert.equal(chunks.join(''), r.stdout);
  assert.ok(r.warnings.some((w) => /stdout truncated/.test(w)), JSON.stringify(r.warnings));
});

test('a snippet that prints text like the engine\'s truncation note keeps it: only a real cap removes the note', async () => {
  const r = await py("print('x')\nprint('[membrane: stdout truncated at 5 bytes]')");
  assert.equal(r.stdout, 'x\n[membrane: stdout truncated at 5 bytes]\n');
  assert.ok(!r.warnings.some((w) => /truncated/.test(w)), JSON.stringify(r.warnings));
});

test('an AbortSignal ends a spinning snippet CANCELLED soon after the abort; the reason does not travel', async () => {
  const ac = new AbortController();
  let abortedAt = 0;
  const r = await py("print('go')\nwhile True: pass", {
    signal: ac.signal,
    onStdout: (c) => {
      if (c.includes('go') && abortedAt === 0) {
        abortedAt = performance.now();
        ac.abort(new Error('a reason that must not travel'));
      }
    },
  });
  const afterAbortMs = performance.now() - abortedAt;
  assert.ok(abortedAt > 0, 'the snippet printed go');
  assert.equal(r.error?.code, 'CANCELLED', JSON.stringify(r.error));
  assert.doesNotMatch(JSON.stringify(r), /must not travel/);
  assert.ok(afterAbortMs < 1_000 + LOAD_SLACK_MS, `settled ${afterAbortMs.toFixed(0)} ms after the abort`);
  assert.equal(r.stdout, 'go\n');
  // Already aborted: nothing runs.
  const gone = new AbortController();
  gone.abort();
  const none = await py("print('ran')", { signal: gone.signal });
  assert.equal(none.error?.code, 'CANCELLED');
  assert.equal(none.stdout, '');
  // The engine still answers.
  assert.equal((await py('2 + 2')).result, 4);
});

test('no child process is spawned and no "weaker tier" warning is given (the spy itself works)', async () => {
  const r = await py("import membrane\nmembrane.kv.put('cpy:k', 'v')\nprint('x')\nmembrane.kv.get('cpy:k')", { profile: 'minimal', timeoutMs: 30_000 });
  assert.equal(r.result, 'v', JSON.stringify(r.error));
  // Under minimal nothing in this lane has a reason to warn: no tier, no bubblewrap, no missing power.
  assert.deepEqual(r.warnings, []);
  const all = await py('1', { profile: 'posix', memoryBytes: 64 << 20 });
  assert.ok(!all.warnings.some((w) => /tier|bubblewrap|os_process|weaker/i.test(w)), JSON.stringify(all.warnings));
  // Every call of this file ran without starting a process ...
  assert.equal(spawned, 0, 'a child process was started');
  // ... and the spy sees one when one is started.
  execFileSync(process.execPath, ['-e', '0']);
  await new Promise<void>((resolve, reject) => childProcess.spawn(process.execPath, ['-e', '0']).on('exit', () => resolve()).on('error', reject));
  assert.equal(spawned, 2);
});
