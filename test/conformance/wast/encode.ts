/**
 * Module forms of a `.wast` script to bytes: `(module binary "…")` from its string literals,
 * `(module quote "…")` and text modules through wabt's `parseWat` (every feature wabt knows on;
 * no validation, so an `assert_invalid` text still yields its invalid bytes).
 *
 * Does not protect against: wabt's own limits — text it cannot parse (newer proposals, and the
 * malformed texts the suite expects to fail) comes back as an error for the runner to count.
 */

import { isAtom, isName, isString, stringBytes } from './sexpr.ts';
import type { Atom, List } from './sexpr.ts';
import { concat } from '../../helpers/wasm-bytes.ts';

export interface WabtModule {
  toBinary(o: object): { buffer: Uint8Array };
  destroy(): void;
}
export interface Wabt {
  parseWat(filename: string, buffer: string | Uint8Array, features?: Record<string, boolean>): WabtModule;
}

/** Every feature wabt 1.0.39 knows: the text decides what a module uses. */
const FEATURES = {
  exceptions: true, mutable_globals: true, sat_float_to_int: true, sign_extension: true, simd: true, threads: true,
  function_references: true, multi_value: true, tail_call: true, bulk_memory: true, reference_types: true,
  annotations: true, code_metadata: true, gc: true, memory64: true, extended_const: true, relaxed_simd: true,
};

export type Encoded = { readonly bytes: Uint8Array<ArrayBuffer> } | { readonly error: string };

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** One line of an error, without wabt's or V8's API prefix. */
export const firstLine = (e: unknown): string =>
  (e instanceof Error ? e.message : String(e)).replace(/^parseWat failed:\n/, '').split('\n')[0]!.replace(/^WebAssembly\.\w+\(\): /, '');

/** A module form's bytes (wabt for text and quote forms), its `$name`, and whether it is a definition. */
export function encodeModule(wabt: Wabt, form: List, raw: Buffer): { enc: Encoded; name: string | null; definition: boolean } {
  const it = form.items;
  let i = 1;
  const definition = isAtom(it[i]) && (it[i] as { text: string }).text === 'definition';
  if (definition) i++;
  const name = isName(it[i]) ? (it[i++] as { text: string }).text : null;
  const kind = isAtom(it[i]) && !isString(it[i]) ? (it[i] as { text: string }).text : '';
  const strings = (): Uint8Array[] => it.slice(i + 1).map((s) => stringBytes(s as Atom));
  if (kind === 'binary') return { enc: { bytes: concat(strings()) }, name, definition };
  let text: Uint8Array;
  if (kind === 'quote') text = Buffer.concat([Buffer.from('(module '), ...strings(), Buffer.from(')')]);
  else {
    const from = it[i]?.start ?? form.end - 1;
    text = Buffer.concat([Buffer.from('(module '), raw.subarray(from, form.end - 1), Buffer.from(')')]);
  }
  let source: string;
  try {
    source = UTF8.decode(text);
  } catch {
    // wabt.js reads text as a JS string (its byte-array path misreads the end), so raw
    // non-UTF-8 bytes cannot reach it unchanged.
    return { enc: { error: 'module text is not UTF-8' }, name, definition };
  }
  try {
    const m = wabt.parseWat('spec.wat', source, FEATURES);
    try {
      return { enc: { bytes: new Uint8Array(m.toBinary({}).buffer) }, name, definition };
    } finally {
      m.destroy();
    }
  } catch (e) {
    return { enc: { error: firstLine(e) }, name, definition };
  }
}

