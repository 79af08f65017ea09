// Attack: TypeScript source built to make the type stripper spin, recurse or eat memory —
// deeply nested generics, brackets and templates, a huge type, a giant union. The stripper is
// swc as a wasm guest in the lane's worker (src/lanes/js/stripper.ts): its memory is capped at the
// call's, its fuel is the call's and so is its deadline. Each bomb must end its own call with a
// wall's code (MEMORY_LIMIT, FUEL_EXHAUSTED, TIMEOUT, STACK_OVERFLOW, or a trap/SyntaxError for
// what it cannot parse) within its budget — never the host, never the worker, never the next call.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { JsLane } from '../../src/lanes/js/index.ts';
import type { ExecRequest, ExecResult } from '../../src/lanes/types.ts';

const MiB = 1024 * 1024;
const lane = new JsLane({ poolSize: 1, cacheDir: false });
const ts = (code: string, more: Partial<ExecRequest> = {}): Promise<ExecResult> =>
  lane.exec({ language: 'ts', code, timeoutMs: 10_000, fuel: 1e12, memoryBytes: 64 * MiB, caps: [], ...more });

before(() => lane.warm());
after(() => lane.close());

/** After a bomb, the same worker still strips and runs the next call. */
async function nextCallWorks(): Promise<void> {
  const r = await ts('const ok: number = 41; ok + 1');
  assert.equal(r.result, 42, JSON.stringify(r.error));
  assert.equal(lane.stats().workers, 1);
}

const nested = (open: string, middle: string, close: string, n: number): string => open.repeat(n) + middle + close.repeat(n);
// ~1.5 MiB of object type: the stripper needs tens of MiB and ~1e9 raw fuel units for it.
const HUGE_TYPE = `type T = {${Array.from({ length: 100_000 }, (_, i) => ` a${i}: string;`).join('')} };\n1`;

test('nested generics, brackets and templates 100 000 deep end the call, not the worker', async () => {
  const bombs = [
    `type T = ${nested('A<', 'x', '>', 100_000)};\n1`,
    `let x: ${nested('[', 'number', ']', 100_000)} = 1`,
    `let y: number = ${nested('(', '1', ')', 100_000)}`,
    '`${'.repeat(100_000),
  ];
  for (const code of bombs) {
    const r = await ts(code);
    assert.equal(r.ok, false);
    assert.ok(['STACK_OVERFLOW', 'GUEST_TRAP', 'GUEST_EXCEPTION'].includes(r.error!.code), JSON.stringify(r.error));
    assert.doesNotMatch(r.error!.message, /\/work\/|node_modules|\.ts:\d/);
    await nextCallWorks();
  }
});

test('a huge type under a small memory limit ends MEMORY_LIMIT (the stripper\'s memory is capped at the call\'s)', async () => {
  const r = await ts(HUGE_TYPE, { memoryBytes: 16 * MiB });
  assert.equal(r.error?.code, 'MEMORY_LIMIT', JSON.stringify(r.error));
  await nextCallWorks();
});

test('a huge type under a small fuel budget ends FUEL_EXHAUSTED, with the budget counted', async () => {
  const r = await ts(HUGE_TYPE, { fuel: 2e7 });
  assert.equal(r.error?.code, 'FUEL_EXHAUSTED', JSON.stringify(r.error));
  assert.ok(r.fuelUsed <= 2e7 + 1e6, String(r.fuelUsed));
  await nextCallWorks();
});

test('a huge type under a short deadline ends TIMEOUT near the deadline, and the worker is kept', async () => {
  const t = performance.now();
  const r = await ts(HUGE_TYPE, { timeoutMs: 25 }); // 100 ms was enough to strip it all on an idle machine (CI 22:10Z, Node 24)
  assert.equal(r.error?.code, 'TIMEOUT', JSON.stringify(r.error));
  assert.deepEqual(r.warnings, []);
  assert.ok(performance.now() - t < 2_000, `took ${performance.now() - t} ms`);
  await nextCallWorks();
});

test('an unterminated template and a giant union are a SyntaxError or stripped within the budget', async () => {
  const unterminated = await ts('const s: string = `abc ${ 1 + ');
  assert.equal(unterminated.error?.code, 'GUEST_EXCEPTION');
  assert.equal(unterminated.error?.details?.['name'], 'SyntaxError');
  const union = await ts(`type U = ${Array.from({ length: 200_000 }, (_, i) => `'v${i}'`).join(' | ')};\n1`, { fuel: 1e8 });
  assert.equal(union.error?.code, 'FUEL_EXHAUSTED', JSON.stringify(union.error));
  await nextCallWorks();
});
