/**
 * A reader for the ustar archives toolchain packages ship their resources in (the WASI sysroot of
 * `@yowasp/clang`): regular files and directories, names from the `prefix` and `name` fields.
 *
 * Why hand-written: the archive is read once, whole, from memory, into an image VFS; the npm tar
 * libraries are streaming extractors to a host directory, which is exactly what must not happen
 * here (a hostile or damaged archive would write host paths). ~60 lines do what we need.
 *
 * Owns: parsing 512-byte headers, checksums and entry bounds. Invariant: every entry returned has a
 * relative path of plain components (no `..`, no empty or `.` part, no leading `/`), lies wholly
 * inside the archive, and is a file or a directory; anything else (links, devices, pax or GNU
 * extension headers, a bad checksum) is an error, never skipped silently.
 *
 * Does not protect against: a huge archive — the caller reads package files it trusts the size of.
 */

export interface TarEntry {
  readonly path: string;
  readonly kind: 'file' | 'dir';
  /** A view into the archive (files only). */
  readonly data: Uint8Array;
}

const BLOCK = 512;
const decoder = new TextDecoder('utf-8', { fatal: true });

function field(h: Uint8Array, at: number, len: number): string {
  const raw = h.subarray(at, at + len);
  const end = raw.indexOf(0);
  return decoder.decode(end < 0 ? raw : raw.subarray(0, end));
}

function octal(h: Uint8Array, at: number, len: number): number {
  const text = field(h, at, len).trim();
  if (!/^[0-7]+$/.test(text)) throw new Error(`tar: bad number field at ${at}`);
  return parseInt(text, 8);
}

export function readTar(archive: Uint8Array): TarEntry[] {
  const out: TarEntry[] = [];
  for (let at = 0; at + BLOCK <= archive.length; ) {
    const h = archive.subarray(at, at + BLOCK);
    if (h.every((b) => b === 0)) break; // end of archive
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : h[i]!;
    if (sum !== octal(h, 148, 8)) throw new Error(`tar: bad header checksum at offset ${at}`);
    const size = octal(h, 124, 12);
    const type = String.fromCharCode(h[156]!);
    const prefix = field(h, 345, 155);
    const name = field(h, 0, 100);
    const path = (prefix ? `${prefix}/${name}` : name).replace(/\/+$/, '');
    const parts = path.split('/');
    if (path === '' || parts.some((p) => p === '' || p === '.' || p === '..')) throw new Error(`tar: unsafe entry name ${JSON.stringify(path.slice(0, 200))}`);
    const start = at + BLOCK;
    if (start + size > archive.length) throw new Error(`tar: entry ${path} runs past the end`);
    if (type === '0' || type === '\0') out.push({ path, kind: 'file', data: archive.subarray(start, start + size) });
    else if (type === '5') out.push({ path, kind: 'dir', data: new Uint8Array(0) });
    else throw new Error(`tar: entry ${path} has unsupported type ${JSON.stringify(type)}`);
    at = start + Math.ceil(size / BLOCK) * BLOCK;
  }
  return out;
}
