// The JS lane's space wall: a snippet that hoards typed arrays, ArrayBuffers or flat strings is
// stopped MEMORY_LIMIT at the call's memory (the interpreter's linear-memory maximum), not at a
// lane-wide ceiling; catching QuickJS's "out of memory" and retrying does not get past it; a
// pooled worker that just ran a larger call does not lend its larger memory to the next; the
// TypeScript interpreter is bounded the same way. Issue #12, finding 2.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { parseModule } from '../../src/wasm/module.ts';
import { decodeInstructions } from '../../src/wasm/code.ts';

const MiB = 1024 * 1024;
const engine = testEngine({ poolSize: 1 });

/** Allocates 16 MiB blocks with `make` forever, logging how many it holds after each. */
const hoard = (make: string): string => `const held = []; for (;;) { held.push(${make}); console.log(held.length); }`;
const heldMiB = (stdout: string, each: number): number => {
  const lines = stdout.trim().split('\n').filter((l) => l !== '');
  return lines.length === 0 ? 0 : Number(lines[lines.length - 1]) * each;
};

test('16 MiB typed arrays in a loop under compute end MEMORY_LIMIT before 80 MiB are held', async () => {
  const r = await engine.exec({ language: 'js', code: hoard('new Uint8Array(16 * 1024 * 1024)'), profile: 'compute' });
  assert.equal(r.error?.code, 'MEMORY_LIMIT', JSON.stringify(r.error));
  const held = heldMiB(r.stdout, 16);
  console.log(`typed arrays held before the stop: ${held} MiB (compute: 64 MiB)`);
  assert.ok(held < 64, `held ${held} MiB`);
});

test('16 MiB ArrayBuffers in a loop end MEMORY_LIMIT before 80 MiB are held', async () => {
  const r = await engine.exec({ language: 'js', code: hoard('new ArrayBuffer(16 * 1024 * 1024)'), profile: 'compute' });
  assert.equal(r.error?.code, 'MEMORY_LIMIT', JSON.stringify(r.error));
  assert.ok(heldMiB(r.stdout, 16) < 64, r.stdout);
});

test("a string doubled with 'x'.repeat ends MEMORY_LIMIT", async () => {
  const code = "let s = 'x'.repeat(1024 * 1024); const keep = []; for (;;) { s = s.repeat(2); keep.push(s); console.log(s.length / 1048576); }";
  const r = await engine.exec({ language: 'js', code, profile: 'compute' });
  assert.equal(r.error?.code, 'MEMORY_LIMIT', JSON.stringify(r.error));
  assert.ok(heldMiB(r.stdout, 1) <= 32, r.stdout);
});

test('a snippet that catches the out-of-memory error and retries still ends MEMORY_LIMIT, at once', async () => {
  const code = `let held = [], caught = 0;
    for (;;) { try { held.push(new Uint8Array(16 * 1024 * 1024)); } catch (e) { caught++; console.log('caught ' + caught); held = []; } }`;
  const t = performance.now();
  const r = await engine.exec({ language: 'js', code, profile: 'compute' });
  assert.equal(r.error?.code, 'MEMORY_LIMIT', JSON.stringify(r.error));
  // Stopped at the first refused growth, long before the 5 s deadline could end it.
  assert.ok(performance.now() - t < 4000, `took ${performance.now() - t} ms`);
  assert.ok(!r.stdout.includes('caught 2'), r.stdout);
});

test('one allocation past the limit, caught, still ends the call MEMORY_LIMIT', async () => {
  const r = await engine.exec({ language: 'js', code: "try { new ArrayBuffer(512 * 1024 * 1024); } catch (e) {} 'survived'", profile: 'compute' });
  assert.equal(r.error?.code, 'MEMORY_LIMIT', JSON.stringify(r));
});

test('a lowered per-call memory is the wall: 32 MiB holds less than 32 MiB of arrays', async () => {
  const r = await engine.exec({ language: 'js', code: hoard('new Uint8Array(4 * 1024 * 1024)'), profile: 'compute', memoryBytes: 32 * MiB });
  assert.equal(r.error?.code, 'MEMORY_LIMIT');
  assert.ok(heldMiB(r.stdout, 4) < 32, r.stdout);
});

test('a pooled worker that ran a 128 MiB call gives the next compute call only 64 MiB', async () => {
  const big = await engine.exec({ language: 'js', code: 'const a = []; for (let i = 0; i < 6; i++) a.push(new Uint8Array(16 * 1024 * 1024)); a.length', profile: 'network' });
  assert.equal(big.result, 6, JSON.stringify(big.error));
  for (let i = 0; i < 2; i++) {
    const r = await engine.exec({ language: 'js', code: hoard('new Uint8Array(16 * 1024 * 1024)'), profile: 'compute' });
    assert.equal(r.error?.code, 'MEMORY_LIMIT');
    assert.ok(heldMiB(r.stdout, 16) < 64, r.stdout);
  }
});

test('a TypeScript snippet hoarding typed arrays ends MEMORY_LIMIT too', async () => {
  const code = 'const held: Uint8Array[] = []; for (;;) { held.push(new Uint8Array(16 * 1024 * 1024)); console.log(held.length); }';
  const r = await engine.exec({ language: 'ts', code, profile: 'compute' });
  assert.equal(r.error?.code, 'MEMORY_LIMIT', JSON.stringify(r.error));
  assert.ok(heldMiB(r.stdout, 16) < 64, r.stdout);
});

test('a memory too small for the interpreter itself is MEMORY_LIMIT before anything runs', async () => {
  const r = await engine.exec({ language: 'js', code: '1', profile: 'compute', memoryBytes: 8 * MiB });
  assert.equal(r.error?.code, 'MEMORY_LIMIT');
  assert.match(r.error!.message, /does not fit/);
});

test('the QuickJS module has no memory.grow of its own: every growth passes the guarded import', () => {
  const file = createRequire(import.meta.url).resolve('@jitl/quickjs-wasmfile-release-sync/wasm');
  const bytes = new Uint8Array(readFileSync(file));
  const m = parseModule(bytes);
  let grows = 0;
  for (const body of m.codes) for (const ins of decodeInstructions(bytes, body.codeStart, body.end)) if (ins.name === 'memory.grow') grows++;
  assert.equal(grows, 0);
  assert.equal(m.memories.length, 0, 'the memory is imported (ours, with the call limit as its maximum)');
});
