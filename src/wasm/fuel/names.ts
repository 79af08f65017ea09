/**
 * The `name` custom section after renumbering: function names (subsection 1), local names (2)
 * and label names (3) move with their functions; every other subsection (module, types, tables,
 * memories, globals, element and data segments, fields, tags) is kept byte for byte.
 *
 * Owns: the names of the functions the rewriter adds. When the section has function names, the
 * refill import and each bulk helper get one (`extra`), merged in index order so the map stays
 * sorted.
 *
 * Invariant: the output is a well-formed name section whose maps are in the same order as the
 * input's. A name section that cannot be decoded yields null: the caller drops it (V8 ignores a
 * malformed name section, so the module compiled before; keeping it would keep stale indices).
 *
 * Does not protect against: names in other custom sections (e.g. DWARF's, or a producers
 * section), which are not rewritten.
 */

import { Reader } from '../bytes.ts';
import { SandboxError } from '../../errors.ts';
import { Sink } from './sink.ts';

const FUNCTION_NAMES = 1;
const LOCAL_NAMES = 2;
const LABEL_NAMES = 3;

/**
 * Rewrites a name section payload `[start, end)` (after the section's own name). `extra` holds
 * `[new function index, name]` pairs in increasing index order.
 */
export function rewriteNames(
  bytes: Uint8Array,
  start: number,
  end: number,
  map: (index: number) => number,
  extra: readonly (readonly [number, string])[],
): Uint8Array | null {
  const out = new Sink(end - start + 64 + extra.length * 32);
  const sub = new Sink(256);
  const r = new Reader(bytes, start, end, 'custom');
  try {
    while (!r.atEnd()) {
      const at = r.pos;
      const id = r.u8();
      const size = r.u32();
      const body = r.sub(size);
      if (id !== FUNCTION_NAMES && id !== LOCAL_NAMES && id !== LABEL_NAMES) {
        out.span(bytes, at, body.end);
        continue;
      }
      sub.len = 0;
      if (id === FUNCTION_NAMES) functionNames(body, sub, map, extra);
      else indirectNames(body, sub, map);
      if (!body.atEnd()) return null;
      out.byte(id);
      out.u32(sub.len);
      out.span(sub.buf, 0, sub.len);
    }
  } catch (e) {
    if (e instanceof SandboxError) return null;
    throw e;
  }
  return out.take();
}

function functionNames(r: Reader, out: Sink, map: (i: number) => number, extra: readonly (readonly [number, string])[]): void {
  const count = r.vecCount();
  out.u32(count + extra.length);
  let next = 0;
  for (let i = 0; i < count; i++) {
    const index = map(r.u32());
    while (next < extra.length && extra[next]![0] < index) writeName(out, extra[next++]!);
    const from = r.pos;
    r.skip(r.u32());
    out.u32(index);
    out.span(r.bytes, from, r.pos);
  }
  while (next < extra.length) writeName(out, extra[next++]!);
}

function writeName(out: Sink, [index, name]: readonly [number, string]): void {
  out.u32(index);
  out.name(name);
}

/** An indirect name map (locals, labels): the outer function index moves, the rest is kept. */
function indirectNames(r: Reader, out: Sink, map: (i: number) => number): void {
  const count = r.vecCount();
  out.u32(count);
  for (let i = 0; i < count; i++) {
    out.u32(map(r.u32()));
    const from = r.pos;
    const inner = r.vecCount();
    for (let k = 0; k < inner; k++) {
      r.u32();
      r.skip(r.u32());
    }
    out.span(r.bytes, from, r.pos);
  }
}
