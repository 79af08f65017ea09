/**
 * Fuzzing the decoders: on any input every entry point either succeeds or throws SandboxError
 * (INVALID_MODULE with an in-range offset, or MEMORY_LIMIT from applyLimits) — never a
 * RangeError, TypeError or hang. V8 is the oracle in one direction: a module V8 validates must
 * parse, decode and rewrite, and the rewrite must validate too.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { SandboxError } from '../../src/errors.ts';
import { applyLimits, decodeInstructions, describeModule, parseModule } from '../../src/wasm/index.ts';
import { HEADER, cModule, hex, watFixture } from './helpers.ts';
import type { Bytes } from './helpers.ts';

const WIDE_OPEN = { maxMemoryPages: 65536, maxTableElements: 0xffffffff, trapOnGrowFailure: true };
const TIGHT = { maxMemoryPages: 1, maxTableElements: 1, trapOnGrowFailure: true };
/** The decoders alone: `validated: true` skips the V8 gate, so the decoders see every mutant. */
const DECODERS_ONLY = { ...WIDE_OPEN, validated: true };

/** Runs every entry point; returns whether the module was accepted. Throws on anything but SandboxError. */
function exercise(bytes: Bytes): boolean {
  const v8 = WebAssembly.validate(bytes);
  try {
    const m = parseModule(bytes);
    for (const c of m.codes) for (const ins of decodeInstructions(bytes, c.codeStart, c.end)) void ins;
    describeModule(bytes);
    const rewritten = applyLimits(bytes, DECODERS_ONLY);
    if (v8) assert.ok(WebAssembly.validate(rewritten.bytes), 'V8 rejects the rewrite of a module it accepts');
  } catch (e) {
    if (!(e instanceof SandboxError)) throw e;
    assert.ok(!v8, `V8 accepts a module we refuse: ${e.message}`);
    assert.equal(e.code, 'INVALID_MODULE', e.message);
    const offset = e.details['offset'];
    assert.ok(typeof offset === 'number' && offset >= 0 && offset <= bytes.length, `offset ${String(offset)} out of range`);
    return false;
  }
  try {
    applyLimits(bytes, { ...TIGHT, validated: true });
  } catch (e) {
    if (!(e instanceof SandboxError) || e.code !== 'MEMORY_LIMIT') throw e;
  }
  // The gate: without `validated`, anything V8 refuses is INVALID_MODULE before any rewrite.
  if (!v8) assert.throws(() => applyLimits(bytes, WIDE_OPEN), (e: unknown) => e instanceof SandboxError && e.code === 'INVALID_MODULE');
  return true;
}

async function seeds(): Promise<Bytes[]> {
  const wats = ['grow.wat', 'features.wat', 'simd.wat', 'atomics.wat', 'eh-legacy.wat', 'exnref.wat', 'extended.wat'];
  return [...(await Promise.all(wats.map((n) => watFixture(n, { names: true })))), cModule('kernels.c')];
}

test('random bytes, with and without a valid header', () => {
  fc.assert(
    fc.property(fc.boolean(), fc.uint8Array({ maxLength: 300 }), (withHeader, tail) => {
      const bytes = withHeader ? new Uint8Array([...hex(HEADER), ...tail]) : tail;
      exercise(bytes);
    }),
    { numRuns: 1500 },
  );
});

type Mutation =
  | { kind: 'set'; at: number; value: number }
  | { kind: 'insert'; at: number; data: Uint8Array }
  | { kind: 'delete'; at: number; length: number }
  | { kind: 'leb'; at: number; length: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), data: fc.uint8Array({ minLength: 1, maxLength: 8 }) }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), length: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ kind: fc.constant('leb' as const), at: fc.nat(), length: fc.integer({ min: 1, max: 11 }) }),
);

function mutate(seed: Bytes, ms: readonly Mutation[]): Bytes {
  let b = [...seed];
  for (const m of ms) {
    const at = b.length === 0 ? 0 : m.at % b.length;
    if (m.kind === 'set') b[at] = m.value;
    else if (m.kind === 'insert') b.splice(at, 0, ...m.data);
    else if (m.kind === 'delete') b.splice(at, m.length);
    else b.splice(at, 0, ...new Array<number>(m.length).fill(0x80)); // an over-long LEB prefix
  }
  return Uint8Array.from(b);
}

test('random mutations of real modules', async () => {
  const all = await seeds();
  for (const s of all) assert.ok(exercise(s), 'every seed parses');
  let accepted = 0;
  fc.assert(
    fc.property(fc.nat({ max: all.length - 1 }), fc.array(mutation, { minLength: 1, maxLength: 4 }), (i, ms) => {
      if (exercise(mutate(all[i]!, ms))) accepted++;
    }),
    { numRuns: 2500 },
  );
  assert.ok(accepted > 0, 'no mutant was accepted: the mutator is too destructive to be useful');
});

test('every truncation of small modules', async () => {
  for (const seed of [await watFixture('grow.wat', { names: true }), cModule('kernels.c')]) {
    for (let n = 0; n < seed.length; n++) exercise(seed.subarray(0, n));
  }
});
