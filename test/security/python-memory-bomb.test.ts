// The Python lane's space wall: under `compute` (64 MiB) a snippet hoarding 16 MiB bytearrays, or
// catching MemoryError and retrying, ends MEMORY_LIMIT before it holds 80 MiB; an oversized result
// is dropped inside the interpreter, never shipped to the host. The cap is on the interpreter's
// whole linear memory, its own heap after boot included (there is no JavaScript side to pile
// copies on: the lane has no JS bridge). Issue #12, finding 2, Python half.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';

// compute's own 5 s would clamp the calls' 20 s budgets: a loaded machine needs the room.
const engine = testEngine({ poolSize: 1, operatorLimits: { compute: { timeoutMs: 30_000 } } });
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

test('a result larger than 4 Mi characters of JSON is dropped with a warning', async () => {
  const r = await py("'x' * (6 << 20)");
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal('result' in r, false);
  assert.ok(r.warnings.some((w) => /larger than 4194304 characters/.test(w)), JSON.stringify(r.warnings));
});

test("the cap covers the interpreter's own heap too: a 40 MiB bytearray under compute is fine, 60 MiB is not", async () => {
  const r = await py('len(bytearray(40 << 20))');
  assert.equal(r.result, 40 << 20, JSON.stringify(r.error));
  const over = await py('len(bytearray(60 << 20))');
  assert.equal(over.error?.code, 'MEMORY_LIMIT', JSON.stringify(over.error));
});
