/**
 * Test helper: compile the `.wat` fixtures with the wabt npm package (at test time, so fixtures
 * stay readable source), cached per process.
 */

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import initWabt from 'wabt';

const here = dirname(fileURLToPath(import.meta.url));
export const FIXTURES = join(here, '..', 'fixtures');
const cache = new Map<string, Uint8Array>();
let wabtP: ReturnType<typeof initWabt> | null = null;

export async function watText(source: string, name = 'inline.wat'): Promise<Uint8Array> {
  const wabt = await (wabtP ??= initWabt());
  const m = wabt.parseWat(name, source, {
    exceptions: true,
    threads: true,
    multi_value: true,
    simd: true,
    tail_call: true,
    bulk_memory: true,
    reference_types: true,
  });
  try {
    return new Uint8Array(m.toBinary({}).buffer);
  } finally {
    m.destroy();
  }
}

/** `wat('spin')` → the bytes of test/fixtures/wat/spin.wat. */
export async function wat(name: string): Promise<Uint8Array> {
  const hit = cache.get(name);
  if (hit) return hit;
  const bytes = await watText(readFileSync(join(FIXTURES, 'wat', `${name}.wat`), 'utf8'), `${name}.wat`);
  cache.set(name, bytes);
  return bytes;
}

/** A committed C guest: test/fixtures/c/NAME.wasm (rebuilt by scripts/build-c.ts). */
export function cGuest(name: string): Uint8Array {
  return new Uint8Array(readFileSync(join(FIXTURES, 'c', `${name}.wasm`)));
}
