/**
 * File contents as fixed-size chunks: read, write and truncate at any offset.
 *
 * Owns: the mapping from a byte range of a file to `chunks` rows of `CHUNK_SIZE` bytes, and the
 * one-chunk read memo (`ChunkMemo`) that spares sequential reads fetching a chunk twice.
 *
 * Invariant: a chunk row holds bytes [idx*CHUNK_SIZE, idx*CHUNK_SIZE + data.length) of the file
 * and never a byte at or past the file's size (truncation trims the last chunk), so a missing
 * chunk or the tail past a short chunk reads as zeros — a sparse hole — and growing a file never
 * reveals old bytes. These functions run inside the caller's transaction and do not touch sizes,
 * times or quotas.
 *
 * Does not protect against: huge single reads — the caller bounds the targets' total length.
 */

import { CHUNK_SIZE, type Statements } from './vfs-schema.ts';

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Reads spanning at most this many chunks past the first use point lookups, longer ones a range scan. */
const POINT_READS = 3;

/**
 * The last chunk a read ended in, whole, so that the next sequential read (which usually starts
 * in that chunk: wasi-libc asks for 64 KiB + 1 KiB, so its reads straddle chunks) need not fetch
 * it again. The owner clears it before any write of its own; `get` drops it when another
 * connection has committed since it was filled (`dataVersion`, i.e. `PRAGMA data_version`), so
 * it never serves bytes the database no longer holds. Used only inside a read transaction.
 */
export class ChunkMemo {
  private ino = -1;
  private idx = -1;
  private data: Buffer | null = null;
  private version = 0;

  constructor(private readonly dataVersion: () => number) {}

  /** Whether a chunk of `ino` is remembered (no validity check: a hint for the caller). */
  holds(ino: number): boolean {
    return this.data !== null && this.ino === ino;
  }

  /** The remembered bytes of chunk (ino, idx), if that is the chunk remembered and still current. */
  get(ino: number, idx: number): Buffer | null {
    if (this.data === null || this.ino !== ino || this.idx !== idx) return null;
    if (this.dataVersion() !== this.version) this.clear();
    return this.data;
  }

  remember(ino: number, idx: number, data: Buffer): void {
    this.ino = ino;
    this.idx = idx;
    this.data = data;
    this.version = this.dataVersion();
  }

  clear(): void {
    this.ino = -1;
    this.idx = -1;
    this.data = null;
  }
}

/** Fills a list of targets front to back (a read's iovecs), so no intermediate buffer is needed. */
class Scatter {
  private i = 0;
  private at = 0;

  constructor(private readonly targets: readonly Uint8Array[]) {}

  /** Append `n` bytes of `src` from `from`, or `n` zeros when `src` is null. */
  put(src: Uint8Array | null, from: number, n: number): void {
    while (n > 0) {
      const t = this.targets[this.i] as Uint8Array;
      const k = Math.min(n, t.length - this.at);
      if (k > 0) {
        if (src === null) t.fill(0, this.at, this.at + k);
        else t.set(src.subarray(from, from + k), this.at);
        this.at += k;
        from += k;
        n -= k;
      }
      if (this.at === t.length) {
        this.i++;
        this.at = 0;
      }
    }
  }
}

/**
 * Copy bytes [offset, min(offset + total target length, size)) of the file into `targets` in
 * order (holes read as zeros); returns the number of bytes copied. One statement for the range.
 */
export function readChunksInto(
  st: Statements, ino: number, size: number, offset: number, targets: readonly Uint8Array[], memo?: ChunkMemo,
): number {
  let total = 0;
  for (const t of targets) total += t.length;
  const end = Math.min(size, offset + total);
  if (end <= offset) return 0;
  const out = new Scatter(targets);
  const first = Math.floor(offset / CHUNK_SIZE);
  const last = Math.floor((end - 1) / CHUNK_SIZE);
  let pos = offset; // next file byte to deliver
  const deliver = (base: number, data: Buffer | null | undefined, dataStart: number): void => {
    if (data == null) return;
    if (base + dataStart > pos) {
      out.put(null, 0, base + dataStart - pos);
      pos = base + dataStart;
    }
    const to = Math.min(end, base + dataStart + data.length);
    if (to > pos) {
      out.put(data, pos - base - dataStart, to - pos);
      pos = to;
    }
  };
  if (last - first <= POINT_READS) {
    for (let idx = first; idx <= last; idx++) {
      const base = idx * CHUNK_SIZE;
      const from = Math.max(offset, base) - base;
      const to = Math.min(end, base + CHUNK_SIZE) - base;
      const remembered = memo?.get(ino, idx) ?? null;
      if (remembered !== null) {
        deliver(base, remembered, 0);
      } else if (memo !== undefined && idx === last && to < CHUNK_SIZE && end === offset + total) {
        // A read that stops inside this chunk before the end of the file: fetch the chunk whole
        // for the next read.
        const data = st.chunk.get(ino, idx)?.data ?? null;
        if (data !== null) memo.remember(ino, idx, data);
        deliver(base, data, 0);
      } else if (to - from < CHUNK_SIZE / 2) {
        // Little of it is wanted: ask SQLite for just that part (one more copy of the part, one
        // less copy of the chunk).
        deliver(base, st.chunkPart.get(from + 1, to - from, ino, idx)?.data, from);
      } else {
        deliver(base, st.chunk.get(ino, idx)?.data, 0);
      }
    }
  } else {
    for (const row of st.chunkRange.iterate(ino, first, last)) deliver(row.idx * CHUNK_SIZE, row.data, 0);
  }
  if (pos < end) out.put(null, 0, end - pos);
  return end - offset;
}

/**
 * A read that needs at most the chunk holding `offset`, in one statement: `row` is the file's
 * [kind, size, that chunk] (`fileChunk`). Returns the byte count, or null when the read (capped
 * at the file's size) goes past that chunk and must take `readChunksInto`.
 */
export function readWithinChunk(size: number, chunk: Buffer | null, offset: number, targets: readonly Uint8Array[]): number | null {
  let total = 0;
  for (const t of targets) total += t.length;
  const end = Math.min(size, offset + total);
  if (end <= offset) return 0;
  const base = Math.floor(offset / CHUNK_SIZE) * CHUNK_SIZE;
  if (end > base + CHUNK_SIZE) return null;
  const out = new Scatter(targets);
  const have = Math.max(0, Math.min(end, base + (chunk?.length ?? 0)) - offset);
  if (have > 0) out.put(chunk, offset - base, have);
  if (offset + have < end) out.put(null, 0, end - offset - have);
  return end - offset;
}

/** Bytes [offset, min(offset+len, size)) of the file; holes read as zeros. */
export function readChunks(st: Statements, ino: number, size: number, offset: number, len: number): Buffer {
  const out = Buffer.allocUnsafe(Math.max(0, Math.min(size, offset + len) - offset));
  readChunksInto(st, ino, size, offset, [out]);
  return out;
}

/**
 * Store `bytes` at `offset` of a file now `size` bytes long. A chunk the write covers wholly, or
 * whose stored bytes (those below `size`) it covers, is written as is; only a chunk partly covered
 * with stored bytes outside the write is read, patched and rewritten.
 */
export function writeChunks(st: Statements, ino: number, size: number, offset: number, bytes: Uint8Array): void {
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
    const stored = Math.min(Math.max(size - base, 0), CHUNK_SIZE); // bytes this chunk may hold now
    if (from === base && to - base >= stored) {
      st.putChunk.run(ino, idx, piece);
      continue;
    }
    const old = stored > 0 ? st.chunk.get(ino, idx)?.data : undefined;
    const buf = Buffer.alloc(Math.max(old?.length ?? 0, to - base));
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
