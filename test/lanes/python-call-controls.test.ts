// The Python lane's call controls and reports (issue #15), through engine.exec: an AbortSignal
// ends a spinning or awaiting snippet CANCELLED at once; onStdout/onStderr see output while the
// snippet runs, and their chunks add up to the result's streams; top-level `await` works and the
// last expression is still the result; an uncaught exception is GUEST_EXCEPTION with the
// snippet's frames only.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, test } from 'node:test';
import type { ExecOptions } from '../../src/index.ts';
import { testEngine } from '../helpers/engine.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-py-controls-');
const engine = testEngine({ poolSize: 1 });
/** Far longer than any bound below: a call that ends before it was not ended by its deadline. */
const LONG_MS = 60_000;

/** Wait until the lane's pool of pre-booted interpreters is full, so no timing includes a boot. */
async function poolFull(): Promise<void> {
  const lanes = (engine as unknown as { lanes: { get(language: 'python'): Promise<{ warm(): Promise<void> }> } }).lanes;
  await (await lanes.get('python')).warm();
}
const py = (code: string, extra: Partial<ExecOptions> = {}) => engine.exec({ language: 'python', code, profile: 'network', ...extra });

before(async () => {
  assert.equal((await py('1')).ok, true);
});

/** Run `code`, abort as soon as its stdout shows `go`; the settle time after the abort. */
async function cancelOnGo(code: string): Promise<{ r: Awaited<ReturnType<typeof py>>; afterAbortMs: number; chunks: string[] }> {
  await poolFull();
  const ac = new AbortController();
  const chunks: string[] = [];
  let abortedAt = 0;
  const r = await py(code, {
    timeoutMs: LONG_MS,
    signal: ac.signal,
    onStdout: (c) => {
      chunks.push(c);
      if (c.includes('go') && abortedAt === 0) {
        abortedAt = performance.now();
        ac.abort(new Error('a reason that must not travel'));
      }
    },
  });
  return { r, afterAbortMs: performance.now() - abortedAt, chunks };
}

test('abort during a spin: CANCELLED (not TIMEOUT) right after the abort; what was streamed is the stdout', async () => {
  const { r, afterAbortMs, chunks } = await cancelOnGo("print('go')\nwhile True: pass");
  console.log(`# spin cancelled: settled ${afterAbortMs.toFixed(1)} ms after the abort`);
  assert.equal(r.ok, false);
  assert.equal(r.error?.code, 'CANCELLED', JSON.stringify(r.error));
  assert.doesNotMatch(JSON.stringify(r.error), /must not travel/);
  assert.ok(afterAbortMs < 50 + LOAD_SLACK_MS, `settled ${afterAbortMs.toFixed(0)} ms after the abort`);
  assert.ok(r.durationMs < LONG_MS / 2);
  assert.equal(r.stdout, chunks.join(''));
  assert.equal(r.stdout, 'go\n');
});

test('abort during a sleeping top-level await: CANCELLED right after the abort', async () => {
  const { r, afterAbortMs } = await cancelOnGo("import asyncio\nprint('go')\nawait asyncio.sleep(3600)\n'never'");
  console.log(`# await cancelled: settled ${afterAbortMs.toFixed(1)} ms after the abort`);
  assert.equal(r.error?.code, 'CANCELLED', JSON.stringify(r.error));
  assert.ok(afterAbortMs < 50 + LOAD_SLACK_MS, `settled ${afterAbortMs.toFixed(0)} ms after the abort`);
  assert.equal('result' in r, false);
});

test('an already-aborted signal: CANCELLED, and nothing runs', async () => {
  const ac = new AbortController();
  ac.abort();
  let called = 0;
  const r = await py("print('ran')", { signal: ac.signal, onStdout: () => void called++ });
  assert.equal(r.error?.code, 'CANCELLED');
  assert.equal(r.stdout, '');
  assert.equal(called, 0);
});

test('streaming: print then ~300 ms of work is seen before the call ends; chunks add up to stdout and stderr, in order', async () => {
  await poolFull();
  const t0 = performance.now();
  const out: { at: number; c: string }[] = [];
  const err: string[] = [];
  const code = [
    'import sys, time',
    "print('first')",
    "sys.stderr.write('partial ')",
    't = time.time()',
    'while time.time() - t < 0.3: pass',
    "sys.stderr.write('line\\n')",
    "for i in range(200): print('row', i)",
    "'done'",
  ].join('\n');
  const r = await py(code, { onStdout: (c) => out.push({ at: performance.now() - t0, c }), onStderr: (c) => err.push(c) });
  const end = performance.now() - t0;
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(r.result, 'done');
  assert.equal(out.map((o) => o.c).join(''), r.stdout);
  assert.equal(err.join(''), r.stderr);
  assert.equal(r.stderr, 'partial line\n');
  assert.ok(r.stdout.startsWith('first\nrow 0\n') && r.stdout.endsWith('row 199\n'));
  const first = out[0]!;
  console.log(`# first chunk at ${first.at.toFixed(0)} ms, result at ${end.toFixed(0)} ms`);
  assert.ok(first.c.startsWith('first'), JSON.stringify(first));
  assert.ok(first.at < end - 200, `first chunk at ${first.at.toFixed(0)} ms, the call ended at ${end.toFixed(0)} ms`);
});

test('streaming only what is asked: without callbacks the result is the same and nothing is relayed', async () => {
  const plain = await py("print('x' * 10)\n1");
  assert.equal(plain.stdout, 'xxxxxxxxxx\n');
  const onlyErr: string[] = [];
  const r = await py("import sys\nprint('out')\nsys.stderr.write('err\\n')", { onStderr: (c) => onlyErr.push(c) });
  assert.equal(r.stdout, 'out\n');
  assert.deepEqual(onlyErr.join(''), 'err\n');
});

test('top-level await: the last expression is still the result', async () => {
  assert.equal((await py('import asyncio\nawait asyncio.sleep(0)\n6*7')).result, 42);
  const r = await py('import asyncio\nasync def f(n):\n    await asyncio.sleep(0.01)\n    return n * 2\nx = await f(21)\ny = await asyncio.gather(f(1), f(2))\n[x, y]');
  assert.deepEqual(r.result, [42, [2, 4]], JSON.stringify(r.error));
});

test('top-level await that never finishes, or spins after an await, ends TIMEOUT at the deadline', async () => {
  for (const code of ['import asyncio\nawait asyncio.Future()', 'import asyncio\nawait asyncio.sleep(0)\nwhile True: pass']) {
    await poolFull();
    const t0 = performance.now();
    const r = await py(code, { timeoutMs: 1000 });
    const ms = performance.now() - t0;
    assert.equal(r.error?.code, 'TIMEOUT', `${code}: ${JSON.stringify(r.error)}`);
    assert.ok(ms >= 900 && ms < 1000 + LOAD_SLACK_MS, `${code}: ended after ${ms.toFixed(0)} ms`);
  }
});

test("tracebacks: raise on line 3 → TypeError at the deepest snippet frame's line 3; only snippet frames", async () => {
  const r = await py("x = 1\ndef f():\n    raise TypeError('bad')\nf()");
  assert.equal(r.error?.code, 'GUEST_EXCEPTION');
  assert.equal(r.error?.message, 'TypeError: bad');
  const d = r.error?.details as { name: string; message: string; stack: { file: string; line: number; column?: number; function: string }[]; traceback: string };
  assert.equal(d.name, 'TypeError');
  assert.equal(d.message, 'bad');
  assert.deepEqual(d.stack, [
    { file: '<snippet>', line: 3, column: 5, function: 'f' },
    { file: '<snippet>', line: 4, column: 1, function: '<module>' },
  ]);
  assert.equal(d.traceback, `Traceback (most recent call last):\n  File "<snippet>", line 4, in <module>\n    f()\n  File "<snippet>", line 3, in f\n    raise TypeError('bad')\nTypeError: bad\n`);
});

test('tracebacks: an exception from the standard library keeps only the snippet frames; a SyntaxError names its line', async () => {
  const lib = await py("import json\n\njson.loads('{')");
  const d = lib.error?.details as { name: string; stack: { file: string; line: number }[]; traceback: string };
  assert.equal(d.name, 'json.decoder.JSONDecodeError');
  assert.deepEqual(d.stack.map((f) => [f.file, f.line]), [['<snippet>', 3]]);
  assert.doesNotMatch(d.traceback, /json\/decoder|\.py"/);
  const syntax = await py('a = 1\nb = 2\nc = = 3\n');
  assert.equal(syntax.error?.code, 'GUEST_EXCEPTION');
  const s = syntax.error?.details as { name: string; stack: { line: number }[]; traceback: string };
  assert.equal(s.name, 'SyntaxError');
  assert.equal(s.stack[0]?.line, 3);
  assert.match(s.traceback, /line 3\n {4}c = = 3\n/);
});

test('tracebacks: an exception after a top-level await, and a chained one, read like Python', async () => {
  const r = await py("import asyncio\nawait asyncio.sleep(0)\ntry:\n    1 / 0\nexcept ZeroDivisionError as e:\n    raise ValueError('wrapped') from e");
  const d = r.error?.details as { name: string; stack: { line: number }[]; traceback: string };
  assert.equal(d.name, 'ValueError');
  assert.equal(d.stack[0]?.line, 6);
  assert.match(d.traceback, /ZeroDivisionError: division by zero\n\nThe above exception was the direct cause of the following exception:\n\nTraceback \(most recent call last\):\n {2}File "<snippet>", line 6, in <module>\n/);
});

test('an abort while its interpreter still boots (a memory cap no parked interpreter has) answers CANCELLED without waiting for the boot', async () => {
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 50);
  const t0 = performance.now();
  const r = await py("print('ran')", { timeoutMs: LONG_MS, signal: ac.signal, memoryBytes: 96 << 20 });
  const ms = performance.now() - t0;
  assert.equal(r.error?.code, 'CANCELLED', JSON.stringify(r.error));
  assert.equal(r.stdout, '');
  assert.equal(r.poolHit, false);
  // A boot takes ~0.3 s (more on a loaded machine); the answer came with the abort.
  assert.ok(ms < 50 + LOAD_SLACK_MS, `answered after ${ms.toFixed(0)} ms`);
});
