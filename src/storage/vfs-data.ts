/**
 * File contents as fixed-size chunks: read, write and truncate at any offset.
 *
 * Owns: the mapping from a byte range of a file to `chunks` rows of `CHUNK_SIZE` bytes.
 *
 * Invariant: a chunk row holds bytes [idx*CHUNK_SIZE, idx*CHUNK_SIZE + data.length) of the file
 * and never a byte at or past the file's size (truncation trims the last chunk), so a missing
 * chunk or the tail past a short chunk reads as zeros — a sparse hole — and growing a file never
 * reveals old bytes. These functions run inside the caller's transaction and do not touch sizes,
 * times or quotas.
 *
 * Does not protect against: huge single reads — the caller bounds `len` (the result is one buffer).
 */

import { CHUNK_SIZE, type Statements } from './vfs-schema.ts';

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Bytes [offset, min(offset+len, size)) of the file; holes read as zeros. */
export function readChunks(st: Statements, ino: number, size: number, offset: number, len: number): Buffer {
  const end = Math.min(size, offset + len);
  if (end <= offset) return Buffer.alloc(0);
  const out = Buffer.alloc(end - offset);
  const first = Math.floor(offset / CHUNK_SIZE);
  const last = Math.floor((end - 1) / CHUNK_SIZE);
  for (const row of st.chunkRange.iterate(ino, first, last)) {
    const base = row.idx * CHUNK_SIZE;
    const from = Math.max(offset, base);
    const to = Math.min(end, base + row.data.length);
    if (to > from) row.data.copy(out, from - offset, from - base, to - base);
  }
  return out;
}

/** Store `bytes` at `offset`; chunks only partly covered are read, patched and rewritten. */
export function writeChunks(st: Statements, ino: number, offset: number, bytes: Uint8Array): void {
  const src = asBuffer(bytes);
  const end = offset + src.length;
  if (src.length === 0) return;
  const first = Math.floor(offset / CHUNK_SIZE);
  const last = Math.floor((end - 1) / CHUNK_SIZE);
  for (let idx = first; idx <= last; idx++) {
    const base = idx * CHUNK_SIZE;
    const from = Math.max(offset, base);
    const to = Math.min(end, base + CHUNK_SIZE);
    const piece = src.subarray(from - offset, to - offset);
    if (from === base && to === base + CHUNK_SIZE) {
      st.putChunk.run(ino, idx, piece);
      continue;
    }
    const old = st.chunk.get(ino, idx)?.data;
    const length = Math.max(old?.length ?? 0, to - base);
    const buf = Buffer.alloc(length);
    if (old !== undefined) old.copy(buf, 0);
    piece.copy(buf, from - base);
    st.putChunk.run(ino, idx, buf);
  }
}

/** Drop every stored byte at or past `size` (growing needs nothing: the gap is a hole). */
export function truncateChunks(st: Statements, ino: number, size: number): void {
  const keep = Math.ceil(size / CHUNK_SIZE);
  st.dropChunksFrom.run(ino, keep);
  const rem = size % CHUNK_SIZE;
  if (rem === 0) return;
  const idx = keep - 1;
  const old = st.chunk.get(ino, idx)?.data;
  if (old !== undefined && old.length > rem) st.putChunk.run(ino, idx, old.subarray(0, rem));
}
