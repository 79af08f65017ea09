// Escapes from the JS lane (src/lanes/js): each attack fails safely, and the host is unaffected.
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { JsLane } from '../../src/lanes/js/index.ts';
import type { ExecRequest } from '../../src/lanes/types.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { jsRequest } from '../helpers/js-request.ts';
import { tempDir } from '../helpers/tmp.ts';

const lane = new JsLane({ poolSize: 1, cacheDir: false });
const dir = tempDir('membrane-js-escape-');
const marker = join(dir, 'pwned');
process.env['MEMBRANE_ESCAPE_SECRET'] = 'hunter2';

const req = (code: string, more: Partial<ExecRequest> = {}): ExecRequest => jsRequest(code, { timeoutMs: 3000, fuel: 1e9, memoryBytes: 32 * 1024 * 1024, ...more });

/** The attack ran without reaching the host: no marker file, no secret in anything it returned. */
function harmless(r: Awaited<ReturnType<JsLane['exec']>>): void {
  assert.equal(existsSync(marker), false, 'the marker file was created');
  assert.ok(!JSON.stringify(r).includes('hunter2'), 'a host env var leaked');
}

before(() => lane.warm());
after(async () => {
  await lane.close();
  rmSync(dir, { recursive: true, force: true });
  delete process.env['MEMBRANE_ESCAPE_SECRET'];
});

test('process, require, Buffer and friends are absent', async () => {
  const r = await lane.exec(req('[typeof process, typeof require, typeof module, typeof Buffer, typeof std, typeof os, typeof WebAssembly, typeof setTimeout]'));
  assert.deepEqual(r.result, ['undefined', 'undefined', 'undefined', 'undefined', 'undefined', 'undefined', 'undefined', 'undefined']);
  const p = await lane.exec(req(`process.env.MEMBRANE_ESCAPE_SECRET`));
  assert.equal(p.error?.code, 'GUEST_EXCEPTION');
  assert.equal(p.error?.details?.['name'], 'ReferenceError');
  harmless(p);
  const w = await lane.exec(req(`require('fs').writeFileSync(${JSON.stringify(marker)}, 'x')`));
  assert.equal(w.error?.code, 'GUEST_EXCEPTION');
  harmless(w);
});

test("import('fs') fails: there is no module loader", async () => {
  const r = await lane.exec(req(`import('fs').then((fs) => fs.writeFileSync(${JSON.stringify(marker)}, 'x'))`));
  assert.equal(r.ok, false);
  harmless(r);
  const s = await lane.exec(req(`import fs from 'fs'; 1`));
  assert.equal(s.error?.code, 'GUEST_EXCEPTION');
  assert.equal(s.error?.details?.['name'], 'SyntaxError');
});

test('globalThis walking finds only the language, console and context', async () => {
  const r = await lane.exec(
    req(`
    const HOSTISH = new Set(['process', 'require', 'module', 'exports', 'Buffer', 'env', 'fs', 'child_process', 'spawn', 'execSync',
      '__dirname', '__filename', 'setImmediate', 'std', 'os', 'WebAssembly', 'Deno', 'Bun', 'importScripts', 'postMessage', 'fetch', 'kv']);
    const seen = new Set(), found = [];
    const walk = (o, path, depth) => {
      if (o === null || (typeof o !== 'object' && typeof o !== 'function') || seen.has(o) || depth > 6) return;
      seen.add(o);
      for (const k of Reflect.ownKeys(o)) {
        const name = String(k);
        if (HOSTISH.has(name)) found.push(path + '.' + name);
        let v; try { v = o[k] } catch { continue }
        walk(v, path + '.' + name, depth + 1);
      }
      walk(Object.getPrototypeOf(o), path + '.__proto__', depth + 1);
    };
    walk(globalThis, 'globalThis', 0);
    [Reflect.ownKeys(globalThis).map(String).sort(), found]`),
  );
  assert.equal(r.ok, true, JSON.stringify(r.error));
  const [globals, found] = r.result as [string[], string[]];
  assert.deepEqual(found, []);
  const standard = new Set(['Object', 'Function', 'Array', 'Number', 'parseFloat', 'parseInt', 'Infinity', 'NaN', 'undefined', 'decodeURI', 'decodeURIComponent', 'encodeURI', 'encodeURIComponent', 'escape', 'unescape', 'isFinite', 'isNaN', 'Boolean', 'String', 'Symbol', 'Math', 'Reflect', 'eval', 'globalThis', 'Date', 'RegExp', 'JSON', 'Proxy', 'Map', 'Set', 'WeakMap', 'WeakSet', 'WeakRef', 'FinalizationRegistry', 'ArrayBuffer', 'SharedArrayBuffer', 'DataView', 'Atomics', 'Promise', 'BigInt', 'Iterator', 'AggregateError', 'Error', 'EvalError', 'RangeError', 'ReferenceError', 'SyntaxError', 'TypeError', 'URIError', 'InternalError', 'console', 'context', 'queueMicrotask', 'performance', 'structuredClone', 'Symbol(Symbol.toStringTag)']);
  const extra = globals.filter((g) => !standard.has(g) && !/Array$/.test(g));
  assert.deepEqual(extra, [], `unexpected globals: ${extra.join(', ')}`);
});

test("constructor chains reach the QuickJS global, not the host's", async () => {
  const r = await lane.exec(
    req(`const g = (function(){}).constructor('return this')();
         const g2 = ({}).constructor.constructor('return globalThis')();
         const g3 = (async () => {}).constructor('return this');
         [g === globalThis, g2 === globalThis, typeof g.process, typeof g2.require, typeof g3]`),
  );
  assert.deepEqual(r.result, [true, true, 'undefined', 'undefined', 'function']);
  harmless(r);
});

test("prototype pollution inside stays inside: the host's ({}).polluted is undefined", async () => {
  const r = await lane.exec(req('Object.prototype.polluted = 1; Array.prototype.polluted = 2; Function.prototype.polluted = 3; ({}).polluted'));
  assert.equal(r.result, 1);
  assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
  assert.equal(([] as unknown as Record<string, unknown>)['polluted'], undefined);
  assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted'), false);
});

test('while(true){} ends with TIMEOUT at the timeout (plus a loaded machine\'s slack)', async () => {
  const t = performance.now();
  const r = await lane.exec(req('while(true){}', { timeoutMs: 500, fuel: Number.MAX_SAFE_INTEGER }));
  const took = performance.now() - t;
  assert.equal(r.error?.code, 'TIMEOUT');
  assert.ok(took < 500 + LOAD_SLACK_MS, `took ${took} ms`);
  const c = await lane.exec(req('for(;;){ try { while(true){} } catch (e) {} }', { timeoutMs: 300, fuel: Number.MAX_SAFE_INTEGER }));
  assert.equal(c.error?.code, 'TIMEOUT');
});

test('while(true){} with a small fuel budget ends with FUEL_EXHAUSTED', async () => {
  const r = await lane.exec(req('while(true){}', { fuel: 1e7 }));
  assert.equal(r.error?.code, 'FUEL_EXHAUSTED');
  assert.equal(r.fuelUsed, 1e7);
});

test('a memory bomb ends with MEMORY_LIMIT', async () => {
  const r = await lane.exec(req('let a=[]; for(;;) a.push(new Array(1e6).fill(1))', { memoryBytes: 32 * 1024 * 1024, fuel: Number.MAX_SAFE_INTEGER, timeoutMs: 10_000 }));
  assert.equal(r.error?.code, 'MEMORY_LIMIT', JSON.stringify(r.error));
  const s = await lane.exec(req('let s = "x"; for(;;) s += s', { fuel: Number.MAX_SAFE_INTEGER }));
  assert.ok(['MEMORY_LIMIT', 'GUEST_EXCEPTION'].includes(s.error?.code ?? ''), JSON.stringify(s.error));
});

test('deep recursion ends with STACK_OVERFLOW, or is a catchable error', async () => {
  const r = await lane.exec(req('function f(n) { return f(n + 1) + 1 } f(0)'));
  assert.equal(r.error?.code, 'STACK_OVERFLOW', JSON.stringify(r.error));
  const c = await lane.exec(req('function f(n) { return f(n + 1) + 1 } try { f(0) } catch (e) { e.constructor.name + ": " + e.message }'));
  assert.equal(c.ok, true);
  assert.match(String(c.result), /stack overflow/i);
});

test('10 MB of console.log output is truncated at the cap and marked', async () => {
  const r = await lane.exec(req('const line = "x".repeat(1000); for (let i = 0; i < 10000; i++) console.log(line); "done"'));
  assert.equal(r.result, 'done');
  assert.equal(Buffer.byteLength(r.stdout), 1024 * 1024);
  assert.ok(r.warnings.some((w) => w.startsWith('stdout truncated')));
  const strict = new JsLane({ poolSize: 0, cacheDir: false, failOnOutputLimit: true });
  try {
    const s = await strict.exec(req('console.error("y".repeat(2 * 1024 * 1024))'));
    assert.equal(s.error?.code, 'OUTPUT_LIMIT');
  } finally {
    await strict.close();
  }
});

test('after every attack the lane still answers 1+1 → 2, and the host is untouched', async () => {
  const r = await lane.exec(req('1+1'));
  assert.equal(r.result, 2);
  assert.equal(existsSync(marker), false);
  assert.equal(process.env['MEMBRANE_ESCAPE_SECRET'], 'hunter2');
});
