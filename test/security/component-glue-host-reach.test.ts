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

test("the worker realm's Function is out of reach through the objects the glue is handed (.constructor of an import, WebAssembly, TextEncoder)", () => {
  const tries = evaluateGlue(`[
    TextEncoder.constructor,
    WebAssembly.Module.constructor,
    console.log.constructor,
    Object.getPrototypeOf(TextEncoder).constructor,
  ].map((F) => { try { return F('return typeof process')(); } catch (e) { return 'blocked'; } })`);
  assert.deepEqual(Array.from(tries as ArrayLike<unknown>), ['blocked', 'blocked', 'blocked', 'blocked']);
});

test('a worker that ran a component still runs core modules (its sealed constructors are nothing they need)', async () => {
  const { readFileSync } = await import('node:fs');
  const { testEngine } = await import('../helpers/engine.ts');
  const { watText } = await import('../helpers/wat.ts');
  const engine = testEngine({ poolSize: 1, maxWorkers: 1 });
  try {
    const hello = new Uint8Array(readFileSync(new URL('../fixtures/components/hello.component.wasm', import.meta.url)));
    const c = await engine.run(hello);
    assert.equal(c.ok, true, JSON.stringify(c.error));
    const r = await engine.run(await watText('(module (func (export "f") (result i32) (i32.const 7)))'), { invoke: 'f' });
    assert.equal(r.result, 7);
  } finally {
    await engine.close();
  }
});
