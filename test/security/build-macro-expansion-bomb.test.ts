// Attack: a 1 KB source whose macros expand to 2^27 (~134 million) tokens — empty statements that
// cost the parser CPU, or a `1+1+…` expression that costs it memory — to make the build lane burn
// the host; and a source that is itself huge (a generated 8 MiB+ file, since `#embed` of a large
// host file is impossible: see build-include-host-file).
// Now: the preprocessor runs inside the toolchain guest under the build's one budget: the CPU bomb
// ends at a wall (FUEL_EXHAUSTED with the default fuel, TIMEOUT at a short deadline), the memory
// bomb ends MEMORY_LIMIT; a source over MAX_SOURCE_BYTES is POLICY_INVALID before any step runs.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createEngine } from '../../src/index.ts';
import { TOOLCHAIN_CACHE } from '../helpers/toolchain.ts';
import { MAX_SOURCE_BYTES } from '../../src/build/build.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-home-');
process.env['MEMBRANE_AUDIT_KEY'] = '6b'.repeat(32);
// The toolchain cache is shared by the test files that build (its one-time costs are not under test here).
const engine = createEngine({ poolSize: 2, cacheDir: TOOLCHAIN_CACHE });
after(() => engine.close());

const WALLS = ['TIMEOUT', 'FUEL_EXHAUSTED', 'MEMORY_LIMIT'];
const HELLO = '#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n';

/** X27 expands to 2^27 copies of X0. */
function bomb(x0: string, use: string): string {
  let s = `#define X0 ${x0}\n`;
  for (let i = 1; i <= 27; i++) s += `#define X${i} X${i - 1} X${i - 1}\n`;
  return `${s}${use}\n`;
}
const CPU_BOMB = bomb(';', 'int main(void) { X27 return 0; }');
const MEMORY_BOMB = bomb('1+', 'int v = X27 0;\nint main(void) { return 0; }');

test('warm: hello.c builds (the image and the module rewrite stay out of the timed attacks)', async () => {
  assert.ok(CPU_BOMB.length < 1024, 'the bomb is a small source');
  const r = await engine.build({ sources: { 'hello.c': HELLO } });
  assert.equal(r.ok, true, JSON.stringify(r.error) + r.stderr);
});

test('2^27 empty statements under a 3 s budget end at a wall within the budget', async () => {
  const t0 = performance.now();
  const r = await engine.build({ sources: { 'bomb.c': CPU_BOMB }, timeoutMs: 3000 });
  const ms = performance.now() - t0;
  assert.equal(r.ok, false);
  assert.ok(WALLS.includes(r.error?.code ?? ''), JSON.stringify(r.error));
  assert.ok(ms < 3000 + LOAD_SLACK_MS, `took ${ms.toFixed(0)} ms`);
});

test('the same bomb under a fuel budget of 2e8 ends FUEL_EXHAUSTED having used exactly that', async () => {
  const r = await engine.build({ sources: { 'bomb.c': CPU_BOMB }, fuel: 2e8 });
  assert.equal(r.error?.code, 'FUEL_EXHAUSTED', JSON.stringify(r.error));
  assert.equal(r.fuelUsed, 2e8);
  assert.equal(r.steps.length, 1, 'the compile was the only step');
});

test('a 2^27-term expression under a 64 MiB memory budget ends MEMORY_LIMIT (or another wall)', async () => {
  const t0 = performance.now();
  const r = await engine.build({ sources: { 'bomb.c': MEMORY_BOMB }, memoryBytes: 64 * 1024 * 1024, timeoutMs: 30_000 });
  const ms = performance.now() - t0;
  assert.ok(WALLS.includes(r.error?.code ?? ''), JSON.stringify(r.error));
  if (r.error?.code === 'MEMORY_LIMIT') assert.match(r.error.message, /past the 67108864-byte limit/);
  assert.ok(ms < 30_000 + 2 * LOAD_SLACK_MS, `took ${ms.toFixed(0)} ms`);
});

test(`a source over MAX_SOURCE_BYTES (${MAX_SOURCE_BYTES}) is POLICY_INVALID before any step runs`, async () => {
  const big = `static const char junk[] = "${'A'.repeat(MAX_SOURCE_BYTES)}";\nint main(void) { return 0; }\n`;
  const r = await engine.build({ sources: { 'big.c': big } });
  assert.equal(r.error?.code, 'POLICY_INVALID', JSON.stringify(r.error));
  assert.match(r.error!.message, /exceed 8388608 bytes/);
  assert.equal(r.steps.length, 0);
  assert.equal(r.fuelUsed, 0);
  // Split across many files, the sum is what counts.
  const half = 'x'.repeat(MAX_SOURCE_BYTES / 2);
  const split = await engine.build({ sources: { 'a.c': half, 'b.c': half, 'c.h': 'x' } });
  assert.equal(split.error?.code, 'POLICY_INVALID', JSON.stringify(split.error));
  assert.equal(split.steps.length, 0);
});

test('the engine builds and runs hello.c after every bomb', async () => {
  const r = await engine.build({ sources: { 'hello.c': HELLO } });
  assert.equal(r.ok, true, JSON.stringify(r.error) + r.stderr);
  assert.equal((await engine.run(r.wasm!, {})).stdout, 'hello\n');
});
