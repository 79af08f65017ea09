// Attack: a Python child taken over by its snippet forges what it tells the host. The child runs
// guest code, so its exception report and its streamed output are claims: an exception report
// with a 1 MiB name and message, 10 000 frames, frames in host files, a 1 MiB traceback and host
// paths; output messages past the cap, or for a stream the call never asked for. The host cuts
// every field to its bound, keeps only `<snippet>` frames, replaces the paths it knows, and
// treats too much output as a broken child (the lane kills it) — without ever handing more than
// the cap to a callback.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_EXCEPTION_MESSAGE_BYTES, MAX_FRAMES, MAX_NAME_CHARS, MAX_TRACEBACK_CHARS, guestExceptionError, parseGuestException, pathScrubber } from '../../src/lanes/python/exception.ts';
import { parseChildMessage } from '../../src/lanes/python/protocol.ts';
import { OutputRelay } from '../../src/lanes/python/relay.ts';

const HOST_DIR = '/work/main/node_modules/pyodide';

test('a forged exception report is cut to its bounds, keeps only snippet frames, and loses the host paths', () => {
  const big = 'é'.repeat(1 << 20);
  const frames = Array.from({ length: 10_000 }, (_, i) => (i % 2 === 0 ? { file: '<snippet>', line: i, column: 3, function: 'f'.repeat(1000) } : { file: `${HOST_DIR}/pyodide.asm.mjs`, line: i, function: 'g' }));
  const msg = parseChildMessage(
    {
      v: 1,
      kind: 'result',
      id: 1,
      outcome: { ok: false, kind: 'exception', exception: { name: `N${big}`, message: `${HOST_DIR}/x ${big}`, stack: frames, traceback: `${HOST_DIR}\n${big}` } },
      stdout: '',
      stderr: '',
      stdoutDropped: 0,
      stderrDropped: 0,
      fuelUsed: 1,
      metered: true,
    },
    4096,
  );
  assert.ok(msg !== null && msg.kind === 'result' && !msg.outcome.ok && msg.outcome.kind === 'exception');
  const e = msg.outcome.exception;
  assert.ok(e.name.length <= MAX_NAME_CHARS);
  assert.ok(Buffer.byteLength(e.message) <= MAX_EXCEPTION_MESSAGE_BYTES);
  assert.ok(e.stack.length <= MAX_FRAMES && e.stack.length > 0);
  assert.ok(e.stack.every((f) => f.file === '<snippet>' && f.function.length <= 128));
  assert.ok(e.traceback.length <= MAX_TRACEBACK_CHARS);
  const error = guestExceptionError(e, pathScrubber([HOST_DIR]));
  assert.equal(error.code, 'GUEST_EXCEPTION');
  assert.ok(Buffer.byteLength(error.message) <= MAX_EXCEPTION_MESSAGE_BYTES);
  assert.doesNotMatch(JSON.stringify(error), /\/work\/|node_modules/);
  assert.match(error.details['message'] as string, /^<host>\/x é/);
});

test('a report of the wrong shape is not believed (the lane treats the child as dead)', () => {
  for (const exception of [null, 'TypeError', { name: 1, message: '', stack: [], traceback: '' }, { name: 'E', message: '', stack: {}, traceback: '' }]) {
    const m = parseChildMessage({ v: 1, kind: 'result', id: 1, outcome: { ok: false, kind: 'exception', exception }, stdout: '', stderr: '', stdoutDropped: 0, stderrDropped: 0, fuelUsed: 0, metered: true }, 4096);
    assert.equal(m, null, JSON.stringify(exception));
  }
  assert.equal(parseChildMessage({ v: 1, kind: 'output', id: 1, stdout: 'x'.repeat(5000) }, 4096), null);
  assert.equal(parseChildMessage({ v: 1, kind: 'output', id: 1, stderr: 7 }, 4096), null);
});

test('streamed output past the cap, or on a stream nobody asked for, is refused; the callback never gets more than the cap', () => {
  const got: string[] = [];
  const relay = new OutputRelay({ onStdout: (c) => got.push(c) }, 100);
  assert.equal(relay.wants('stdout'), true);
  assert.equal(relay.wants('stderr'), false);
  assert.equal(relay.push('stderr', 'unasked'), false);
  assert.equal(relay.push('stdout', 'a'.repeat(60)), true);
  assert.equal(relay.push('stdout', 'b'.repeat(60)), false);
  relay.end();
  assert.ok(got.join('').length <= 100);
  assert.equal(relay.text('stdout'), 'a'.repeat(60));
});

test('at the end the rest of the result is delivered once, so the chunks add up to the result; a throwing callback stops quietly', () => {
  const got: string[] = [];
  const relay = new OutputRelay({ onStdout: (c) => got.push(c), onStderr: () => { throw new Error('consumer bug'); } }, 1000);
  assert.equal(relay.push('stdout', 'hello '), true);
  assert.equal(relay.push('stderr', 'x'), true);
  assert.equal(relay.push('stderr', 'y'), true, 'a throwing callback does not make the child look broken');
  relay.finish({ stdout: 'hello world\n', stderr: 'xyz' });
  assert.equal(got.join(''), 'hello world\n');
  relay.finish({ stdout: 'hello world\nmore', stderr: '' });
  assert.equal(got.join(''), 'hello world\n');
});
