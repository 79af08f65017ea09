/**
 * Fixture loading for the fuel tests: test/fixtures/fuel/*.wat compiled with the wabt package
 * (names included, every feature Node 20 ships), cached per process.
 */

import { readFileSync, readdirSync } from 'node:fs';
import { ALL_FEATURES, wabt, watFixture } from '../helpers.ts';
import type { Bytes } from '../helpers.ts';

/** Node 20's features; without typed function references (wabt then types `ref.func` as a
 *  non-nullable reference that its validator will not store in a funcref table). */
const FEATURES = { ...ALL_FEATURES, function_references: false, extended_const: false, relaxed_simd: false };

/** Compiles WAT text with a name section (V8 validates the result when a test compiles it). */
export async function wat(source: string, name = 'fixture.wat'): Promise<Bytes> {
  const w = await wabt();
  const m = w.parseWat(name, source, FEATURES);
  try {
    m.resolveNames();
    return new Uint8Array(m.toBinary({ write_debug_names: true }).buffer);
  } finally {
    m.destroy();
  }
}

const DIR = new URL('../../fixtures/fuel/', import.meta.url);
const cache = new Map<string, Promise<Bytes>>();

/** `fuelWat('loop')` → test/fixtures/fuel/loop.wat compiled, with a name section. */
export function fuelWat(name: string): Promise<Bytes> {
  let p = cache.get(name);
  if (p === undefined) cache.set(name, (p = wat(readFileSync(new URL(`${name}.wat`, DIR), 'utf8'), `${name}.wat`)));
  return p;
}

export function fuelFixtureNames(): string[] {
  return readdirSync(DIR)
    .filter((f) => f.endsWith('.wat'))
    .map((f) => f.slice(0, -4))
    .sort();
}

export { watFixture };
