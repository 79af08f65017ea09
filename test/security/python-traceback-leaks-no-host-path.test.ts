// Attack: make the Python lane's error report show where the host keeps things. An uncaught
// exception's report (issue #15) holds frames and a traceback; exceptions raised inside the
// standard library (the interpreter's embedded /usr/local/lib/python3.12), the driver's compile
// step, and a deep recursion all have frames in files that are not the snippet's. None of it may
// appear: every frame is `<snippet>`, and no host or interpreter path is anywhere in the error.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-py-tb-paths-');
const engine = testEngine({ poolSize: 1 });

const HOST = /\/work\/|\/tmp\/|\/home\/|node_modules|pyodide\/|\/lib\/python|site-packages|\.py"|\.py\b|\.m?js\b|file:\/\/|wasm-function/;

async function errorOf(code: string): Promise<{ code: string; text: string; details: { name: string; stack: { file: string }[]; traceback: string } }> {
  const r = await engine.exec({ language: 'python', code });
  assert.equal(r.ok, false, JSON.stringify(r.result));
  const text = JSON.stringify(r.error);
  return { code: r.error!.code, text, details: r.error!.details as never };
}

function assertClean(e: { code: string; text: string; details: { stack: { file: string }[]; traceback: string } }, what: string): void {
  assert.equal(e.code, 'GUEST_EXCEPTION', `${what}: ${e.text}`);
  assert.ok(!HOST.test(e.text), `${what}: a path in the error: ${e.text.slice(0, 3000)}`);
  assert.ok(e.details.stack.length > 0, `${what}: no snippet frame`);
  assert.ok(e.details.stack.every((f) => f.file === '<snippet>'), `${what}: ${JSON.stringify(e.details.stack)}`);
}

test('an exception deep in the standard library (json, re, importlib) shows only the snippet frames', async () => {
  const e = await errorOf("import json, re\ndef go():\n    json.loads('[1, 2')\ngo()");
  assertClean(e, 'json');
  assert.equal(e.details.name, 'json.decoder.JSONDecodeError');
  const imp = await errorOf("import importlib\nimportlib.import_module('no_such_module_anywhere')");
  assertClean(imp, 'import');
});

test('a deep recursion keeps at most 32 snippet frames and no path; a runtime compile() error names no file of ours', async () => {
  const deep = await errorOf('def f(n):\n    return f(n + 1)\nf(0)');
  assertClean(deep, 'recursion');
  assert.equal(deep.details.name, 'RecursionError');
  assert.ok(deep.details.stack.length <= 32, String(deep.details.stack.length));
  assert.ok(deep.details.traceback.length <= 16 * 1024);
  const compiled = await errorOf("exec(compile('x = (', 'inner', 'exec'))");
  assertClean(compiled, 'compile');
  assert.equal(compiled.details.name, 'SyntaxError');
});
