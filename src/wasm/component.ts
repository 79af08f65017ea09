/**
 * WebAssembly components at the byte level: telling one from a core module, and reading the
 * names and kinds of its top-level imports without compiling or transpiling anything.
 *
 * Owns: the preamble check (`\0asm`, version 0x0d, layer 1) and the walk over a component's
 * top-level sections that collects every import (`import` section, id 10): its name and what it
 * is (an instance, a function, a value, a type, a core module, a component).
 * Invariant: every top-level import is reported — sections may repeat and all are read; nested
 * components and core modules are skipped whole (their imports are satisfied inside the
 * component). Anything this reader does not understand is INVALID_MODULE, never "no imports".
 *
 * Does not protect against: a component that is well formed here but not to a full validator —
 * jco's parser (the lane's transpile step) validates the rest before anything runs.
 */

import { Reader, invalidModule } from './bytes.ts';

const MAGIC = [0x00, 0x61, 0x73, 0x6d] as const;
/** Component binaries: version 0x0d, layer 1 (a core module has version 1, layer 0). */
const COMPONENT_VERSION = [0x0d, 0x00, 0x01, 0x00] as const;
const IMPORT_SECTION = 10;
/** Bounds a hostile component's import list (V8 allows a core module 100 000 imports). */
export const MAX_COMPONENT_IMPORTS = 10_000;

export type ComponentImportKind = 'module' | 'func' | 'value' | 'type' | 'component' | 'instance';

export interface ComponentImport {
  readonly name: string;
  readonly kind: ComponentImportKind;
}

/** Whether `bytes` start like a component (any other wasm is treated as a core module). */
export function isComponent(bytes: Uint8Array): boolean {
  if (bytes.length < 8) return false;
  for (let i = 0; i < 4; i++) if (bytes[i] !== MAGIC[i] || bytes[i + 4] !== COMPONENT_VERSION[i]) return false;
  return true;
}

/** The component's top-level imports, in order. */
export function componentImports(bytes: Uint8Array): ComponentImport[] {
  if (!isComponent(bytes)) throw invalidModule('not a WebAssembly component (expected the version 0x0d layer 1 preamble)', 0);
  const r = new Reader(bytes, 8);
  const out: ComponentImport[] = [];
  while (!r.atEnd()) {
    const id = r.u8();
    const size = r.u32();
    const start = r.pos;
    if (size > r.remaining) r.fail(`section ${id} runs past the end`, start);
    if (id === IMPORT_SECTION) {
      const s = new Reader(bytes, start, start + size, 'component import');
      const n = s.u32();
      if (out.length + n > MAX_COMPONENT_IMPORTS) s.fail(`more than ${MAX_COMPONENT_IMPORTS} imports`);
      for (let i = 0; i < n; i++) out.push(readImport(s));
      if (!s.atEnd()) s.fail('trailing bytes');
    }
    r.skip(size);
  }
  return out;
}

function readImport(s: Reader): ComponentImport {
  const form = s.u8();
  // importname': 0x00 or 0x01 (the legacy form), then `len:u32` and the name's UTF-8 bytes.
  if (form !== 0x00 && form !== 0x01) s.fail(`unknown import name form 0x${form.toString(16)}`);
  const name = s.name();
  const kind = readExternDesc(s);
  return { name, kind };
}

function readExternDesc(s: Reader): ComponentImportKind {
  const tag = s.u8();
  switch (tag) {
    case 0x00:
      if (s.u8() !== 0x11) s.fail('a core import that is not a module');
      s.u32();
      return 'module';
    case 0x01:
      s.u32();
      return 'func';
    case 0x02: {
      const bound = s.u8();
      if (bound === 0x00) s.u32();
      else if (bound === 0x01) s.s33();
      else s.fail('unknown value bound');
      return 'value';
    }
    case 0x03: {
      const bound = s.u8();
      if (bound === 0x00) s.u32();
      else if (bound !== 0x01) s.fail('unknown type bound');
      return 'type';
    }
    case 0x04:
      s.u32();
      return 'component';
    case 0x05:
      s.u32();
      return 'instance';
    default:
      return s.fail(`unknown extern kind 0x${tag.toString(16)}`);
  }
}
