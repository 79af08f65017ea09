// Attack: tie up the build lane (and the host thread under it) with a C++ template bomb — a linear
// recursion 100 000 deep with clang's depth limit lifted (-ftemplate-depth=100000), and an
// exponential one (2^40 instantiations) — or exhaust memory with it.
// Now: the toolchain is a guest under the build's one budget. The deep recursion ends at clang's
// own limit (BUILD_FAILED) or at the guest's stack wall (STACK_OVERFLOW); the exponential one ends
// at the deadline (TIMEOUT), or MEMORY_LIMIT under a small memory budget; each returns within its
// budget plus slack, and the engine builds hello.c right after.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createEngine } from '../../src/index.ts';
import { TOOLCHAIN_CACHE } from '../helpers/toolchain.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-home-');
process.env['MEMBRANE_AUDIT_KEY'] = '6b'.repeat(32);
// The toolchain cache is shared by the test files that build (its one-time costs are not under test here).
const engine = createEngine({ poolSize: 2, cacheDir: TOOLCHAIN_CACHE });
after(() => engine.close());

const WALLS = ['TIMEOUT', 'FUEL_EXHAUSTED', 'MEMORY_LIMIT', 'STACK_OVERFLOW'];
const LINEAR = 'template<int N> struct R { static const int v = R<N - 1>::v + 1; };\ntemplate<> struct R<0> { static const int v = 0; };\nint main() { return R<100000>::v; }\n';
const EXPONENTIAL = 'template<int N, int M> struct E { static const int v = E<N - 1, 2 * M>::v + E<N - 1, 2 * M + 1>::v; };\ntemplate<int M> struct E<0, M> { static const int v = 1; };\nint main() { return E<40, 0>::v; }\n';
const HELLO = '#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n';

async function timed<T>(p: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const r = await p();
  return [r, performance.now() - t0];
}

test('warm: hello.c builds (the image and the module rewrite stay out of the timed attacks)', async () => {
  const r = await engine.build({ sources: { 'hello.c': HELLO } });
  assert.equal(r.ok, true, JSON.stringify(r.error) + r.stderr);
});

test('a 100 000-deep recursion under clang\'s default depth is BUILD_FAILED at its 1024 limit', async () => {
  const [r, ms] = await timed(() => engine.build({ sources: { 'bomb.cpp': LINEAR }, timeoutMs: 3000 }));
  assert.equal(r.error?.code, 'BUILD_FAILED', JSON.stringify(r.error));
  assert.match(r.diagnostics.find((d) => d.severity === 'error')?.message ?? '', /recursive template instantiation exceeded maximum depth of 1024/);
  assert.ok(ms < 3000 + LOAD_SLACK_MS, `took ${ms.toFixed(0)} ms`);
});

test('-ftemplate-depth=100000 lifts clang\'s limit: the recursion ends at a wall, within its 3 s budget', async () => {
  const [r, ms] = await timed(() => engine.build({ sources: { 'bomb.cpp': LINEAR }, args: ['-ftemplate-depth=100000'], timeoutMs: 3000 }));
  assert.equal(r.ok, false);
  assert.equal(r.wasm, undefined);
  assert.ok([...WALLS, 'BUILD_FAILED'].includes(r.error?.code ?? ''), JSON.stringify(r.error));
  assert.ok(ms < 3000 + LOAD_SLACK_MS, `took ${ms.toFixed(0)} ms`);
});

test('an exponential instantiation (2^40) ends TIMEOUT (or another wall) at its 3 s budget', async () => {
  const [r, ms] = await timed(() => engine.build({ sources: { 'bomb.cpp': EXPONENTIAL }, timeoutMs: 3000 }));
  assert.equal(r.ok, false);
  assert.ok(WALLS.includes(r.error?.code ?? ''), JSON.stringify(r.error));
  assert.ok(r.durationMs < 3000 + LOAD_SLACK_MS, `the build reported ${r.durationMs.toFixed(0)} ms`);
  assert.ok(ms < 3000 + LOAD_SLACK_MS, `took ${ms.toFixed(0)} ms`);
  assert.ok(r.fuelUsed > 0, 'the compile ran and was metered');
});

test('the exponential bomb under a 64 MiB memory budget ends MEMORY_LIMIT (or the deadline first)', async () => {
  const [r, ms] = await timed(() => engine.build({ sources: { 'bomb.cpp': EXPONENTIAL }, timeoutMs: 30_000, memoryBytes: 64 * 1024 * 1024 }));
  assert.ok(['MEMORY_LIMIT', 'TIMEOUT'].includes(r.error?.code ?? ''), JSON.stringify(r.error));
  if (r.error?.code === 'MEMORY_LIMIT') assert.match(r.error.message, /past the 67108864-byte limit/);
  assert.ok(ms < 30_000 + 2 * LOAD_SLACK_MS, `took ${ms.toFixed(0)} ms`);
});

test('the exponential bomb under a fuel budget of 1e9 ends FUEL_EXHAUSTED having used exactly that', async () => {
  const r = await engine.build({ sources: { 'bomb.cpp': EXPONENTIAL }, fuel: 1e9, timeoutMs: 30_000 });
  assert.equal(r.error?.code, 'FUEL_EXHAUSTED', JSON.stringify(r.error));
  assert.equal(r.fuelUsed, 1e9);
});

test('the engine builds and runs hello.c after every bomb', async () => {
  const r = await engine.build({ sources: { 'hello.c': HELLO } });
  assert.equal(r.ok, true, JSON.stringify(r.error) + r.stderr);
  assert.equal((await engine.run(r.wasm!, {})).stdout, 'hello\n');
});
