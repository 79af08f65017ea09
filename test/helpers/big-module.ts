// Test helper: large wasm modules built byte by byte — `functions` empty functions of type
// () → (), an exported no-op `run`, and a custom section carrying `nonce` so every call yields a
// distinct module (a distinct cache key). ~5 bytes per function: 1 000 000 functions ≈ 5 MB.

import { concat, leb } from './wasm-bytes.ts';

function section(id: number, body: Uint8Array): Uint8Array {
  const head = [id, ...leb(body.length)];
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  return out;
}

function vector(count: number, itemBytes: readonly number[]): Uint8Array {
  const head = leb(count);
  const out = new Uint8Array(head.length + count * itemBytes.length);
  out.set(head);
  for (let i = 0; i < count; i++) out.set(itemBytes, head.length + i * itemBytes.length);
  return out;
}

export interface BigModuleOptions {
  /** Replace every body by one that does not validate (`i32.add` on an empty stack). */
  readonly invalidBodies?: boolean;
}

export function manyFunctions(functions: number, nonce: string, opts: BigModuleOptions = {}): Uint8Array<ArrayBuffer> {
  const body = opts.invalidBodies ? [3, 0, 0x6a, 0x0b] : [3, 0, 0x01, 0x0b]; // size, no locals, i32.add|nop, end
  const name = new TextEncoder().encode(`nonce:${nonce}`);
  return concat([
    new Uint8Array([0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0]),
    section(1, new Uint8Array([1, 0x60, 0, 0])),
    section(3, vector(functions, [0])),
    section(7, new Uint8Array([1, 3, 0x72, 0x75, 0x6e, 0, 0])), // export "run" = func 0
    section(10, vector(functions, body)),
    section(0, concat([new Uint8Array([5]), new TextEncoder().encode('nonce'), name])),
  ]);
}

/** Total bytes of the files under `dir` (recursively); 0 when it does not exist. */
export async function treeBytes(dir: string): Promise<{ bytes: number; files: number }> {
  const { readdir, stat } = await import('node:fs/promises');
  const { join } = await import('node:path');
  let bytes = 0;
  let files = 0;
  const walk = async (d: string): Promise<void> => {
    let names;
    try {
      names = await readdir(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of names) {
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile()) {
        bytes += (await stat(p)).size;
        files++;
      }
    }
  };
  await walk(dir);
  return { bytes, files };
}
