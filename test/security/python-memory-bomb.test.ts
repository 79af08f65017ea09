// The Python lane's space wall: under `compute` (64 MiB) a snippet hoarding 16 MiB bytearrays,
// catching MemoryError and retrying, or piling up JavaScript copies of its bytes outside the wasm
// heap (pyodide.ffi.to_js, V8 arrays) ends MEMORY_LIMIT before it holds 80 MiB; an oversized
// result is dropped in the child, never shipped to the host. The cap is on Pyodide's whole linear
// memory, its own ~28 MiB in use after boot included. Issue #12, finding 2, Python half.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';

const engine = testEngine({ poolSize: 1 });
const py = (code: string) => engine.exec({ language: 'python', code, profile: 'compute', timeoutMs: 20_000 });
const lastCount = (stdout: string): number => {
  const lines = stdout.trim().split('\n').filter((l) => l !== '');
  return lines.length === 0 ? 0 : Number(lines[lines.length - 1]);
};

test('bytearray(16 MiB) in a loop under compute ends MEMORY_LIMIT before 80 MiB are held', async () => {
  const r = await py('held = []\nwhile True:\n    held.append(bytearray(16 << 20))\n    print(len(held), flush=True)');
  assert.equal(r.error?.code, 'MEMORY_LIMIT', JSON.stringify(r.error));
  const held = lastCount(r.stdout) * 16;
  console.log(`bytearrays held before the stop: ${held} MiB (compute: 64 MiB, heap baseline included)`);
  assert.ok(held < 64, `held ${held} MiB`);
});

test('catching MemoryError and retrying still ends MEMORY_LIMIT', async () => {
  const code = `held, caught = [], 0
while True:
    try:
        held.append(bytearray(16 << 20))
    except MemoryError:
        caught += 1
        print('caught', caught, flush=True)
        held = []`;
  const t = performance.now();
  const r = await py(code);
  assert.equal(r.error?.code, 'MEMORY_LIMIT', JSON.stringify(r.error));
  assert.ok(!r.stdout.includes('caught 2'), r.stdout);
  assert.ok(performance.now() - t < 19_000, 'stopped by the wall, not by the deadline');
});

test('JavaScript copies outside the wasm heap (to_js of 16 MiB, held) end MEMORY_LIMIT before 80 MiB', async () => {
  const code = `from pyodide.ffi import to_js
held = []
while True:
    held.append(to_js(bytearray(16 << 20)))
    print(len(held), flush=True)`;
  const r = await py(code);
  assert.equal(r.error?.code, 'MEMORY_LIMIT', JSON.stringify(r.error));
  const held = lastCount(r.stdout) * 16;
  console.log(`JS-side copies held before the stop: ${held} MiB`);
  assert.ok(held < 80, `held ${held} MiB outside the heap`);
});

test('V8 arrays built from Python lists (to_js of a 1M-element list, held) end MEMORY_LIMIT', async () => {
  const code = `from pyodide.ffi import to_js
held = []
for i in range(1000):
    held.append(to_js(list(range(i, i + 1_000_000))))
    print(len(held), flush=True)`;
  const r = await py(code);
  assert.equal(r.error?.code, 'MEMORY_LIMIT', JSON.stringify(r.error));
  assert.ok(lastCount(r.stdout) < 1000);
});

test("one JavaScript-side allocation past the child's V8 heap (Array(1e7).fill through a JsProxy) is MEMORY_LIMIT, not INTERNAL", async () => {
  const code = `from pyodide.ffi import to_js
A = to_js([]).constructor
held = []
for i in range(100):
    held.append(A(10_000_000).fill(i))`;
  const r = await py(code);
  assert.equal(r.error?.code, 'MEMORY_LIMIT', JSON.stringify(r.error));
});

test('a result larger than 4 Mi characters of JSON is dropped with a warning', async () => {
  const r = await py("'x' * (6 << 20)");
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal('result' in r, false);
  assert.ok(r.warnings.some((w) => /larger than 4194304 characters/.test(w)), JSON.stringify(r.warnings));
});

test("the cap covers Pyodide's own ~28 MiB too: a 32 MiB bytearray under compute is fine, 40 MiB is not", async () => {
  const r = await py('len(bytearray(32 << 20))');
  assert.equal(r.result, 32 << 20, JSON.stringify(r.error));
  const over = await py('len(bytearray(40 << 20))');
  assert.equal(over.error?.code, 'MEMORY_LIMIT', JSON.stringify(over.error));
});
