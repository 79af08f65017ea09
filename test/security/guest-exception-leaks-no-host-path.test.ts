// Attack: make the lane's error report carry host detail. A snippet fails in every way that passes
// through our own code — a refused power, a failing host function, a hostile value handed to
// console, a throw from a callback run by the prelude, a syntax error in JS and TS, a forged
// `stack` naming host files, an Error.prepareStackTrace hook — and the GUEST_EXCEPTION report must
// name only `<snippet>` frames (the prelude's and native ones dropped), never a host path, a
// node_modules file, an internal file name or a host stack.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';

const engine = testEngine({ poolSize: 1 });
const HOST = /\/work\/|\/home\/|\/tmp\/|\/usr\/|node_modules|file:\/\/|\.[cm]?[jt]s\b|wasm-function|worker_threads|node:|membrane:prelude|membrane:transpiler|quickjs|sucrase|native/i;

type Report = { name: string; message: string; stack: { file: string; line: number; column: number; function: string }[] };

async function failing(code: string, language: 'js' | 'ts' = 'js', profile = 'minimal'): Promise<Report> {
  const r = await engine.exec({ language, code, profile });
  assert.equal(r.error?.code, 'GUEST_EXCEPTION', `${code}: ${JSON.stringify(r.error)}`);
  const d = r.error!.details as unknown as Report;
  for (const f of d.stack) {
    assert.equal(f.file, '<snippet>', JSON.stringify(d.stack));
    assert.ok(Number.isInteger(f.line) && f.line >= 1 && Number.isInteger(f.column), JSON.stringify(f));
  }
  const frames = JSON.stringify(d.stack);
  assert.ok(!HOST.test(frames), `host detail in the frames of ${code}: ${frames}`);
  assert.ok(!HOST.test(JSON.stringify({ message: r.error!.message, name: d.name })), `host detail in ${JSON.stringify(r.error)}`);
  return d;
}

test('an uncaught refused power reports the snippet line, not the prelude that threw it', async () => {
  const d = await failing("const x = 1;\nkv.put('', 'v');");
  assert.equal(d.name, 'MembraneError');
  assert.deepEqual(d.stack.map((f) => f.line), [2]);
});

test('a throw inside a callback the prelude runs (console, JSON) keeps only snippet frames', async () => {
  const d = await failing("const v = { toJSON() { throw new TypeError('mine') } };\nconsole.log(v);\nJSON.stringify(v);");
  assert.equal(d.name, 'TypeError');
  assert.deepEqual(d.stack.map((f) => [f.line, f.function]), [[1, 'toJSON'], [3, '<top-level>']]);
  const m = await failing('[1, 2].map((x) => {\n  throw new RangeError(String(x));\n});');
  assert.deepEqual(m.stack.map((f) => f.line), [2, 1], 'the native map frame is dropped');
});

test('syntax errors in JS and TypeScript name the snippet position only', async () => {
  const js = await failing('const a = 1;\nconst = 2;');
  assert.equal(js.name, 'SyntaxError');
  assert.equal(js.stack[0]?.line, 2);
  const ts = await failing('const a: number = 1;\nconst b: = 2;', 'ts');
  assert.equal(ts.name, 'SyntaxError');
  assert.equal(ts.stack[0]?.line, 2);
});

test('a forged stack naming host files and a prepareStackTrace hook contribute no foreign frame', async () => {
  const forged = await failing(
    "const e = new Error('forged');\ne.stack = '    at x (/etc/passwd:1:1)\\n    at y (node:internal/fs:2:2)\\n    at z (membrane:prelude:3:3)\\n    at w (<snippet>:9:9)';\nthrow e;",
  );
  assert.deepEqual(forged.stack, [{ file: '<snippet>', line: 9, column: 9, function: 'w' }]);
  const hooked = await failing("Error.prepareStackTrace = (e, frames) => '    at q (/work/secret.ts:1:1)';\nthrow new Error('hooked');");
  // Whether QuickJS runs the hook or not, only the snippet's own line can appear.
  assert.ok(hooked.stack.every((f) => f.line === 2), JSON.stringify(hooked.stack));
});

test('an exception thrown from a stack-overflow-deep recursion reports at most 32 snippet frames', async () => {
  const d = await failing('function r(n) { if (n === 0) throw new Error("deep"); return r(n - 1) }\nr(200)');
  assert.ok(d.stack.length > 0 && d.stack.length <= 32, String(d.stack.length));
});
