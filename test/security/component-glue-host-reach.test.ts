// jco's generated glue runs in the guest's worker, but in a context of its own: it sees
// WebAssembly, TextEncoder/TextDecoder and a silent console — not the worker's `process`,
// `require`, `fetch` or timers, and it cannot turn strings into code (eval, Function).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { evaluateGlue } from '../../src/engine/worker/component-guest.ts';

test('the glue context has no host globals and no string eval', () => {
  const seen = evaluateGlue(`[
    typeof process, typeof require, typeof fetch, typeof setTimeout, typeof Buffer, typeof module,
    (() => { try { return eval('1 + 1'); } catch (e) { return 'no eval'; } })(),
    (() => { try { return Function('return this')(); } catch (e) { return 'no Function'; } })(),
    (() => { try { return (function () {}).constructor('return 1')(); } catch (e) { return 'no constructor'; } })(),
    typeof WebAssembly, typeof TextEncoder,
  ]`);
  // The array comes from the glue's realm: copy it into ours to compare.
  assert.deepEqual(Array.from(seen as ArrayLike<unknown>), ['undefined', 'undefined', 'undefined', 'undefined', 'undefined', 'undefined', 'no eval', 'no Function', 'no constructor', 'object', 'function']);
});

test('console output of the glue goes nowhere', () => {
  assert.equal(evaluateGlue(`console.error('ERROR: noisy glue'); console.log('x'); 'quiet'`), 'quiet');
});
