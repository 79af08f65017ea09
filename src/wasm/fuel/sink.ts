/**
 * A growable byte buffer for the rewriter's hot path: span copies from the input, single bytes
 * and LEB128 integers written straight into the buffer.
 *
 * Owns: nothing but bytes. Unlike `Writer` (bytes.ts), the buffer and length are public so the
 * emitters can reserve room once (`room`) and then store several bytes without a bounds check
 * per byte, through the raw writers at the end (`copy`, `put`, `putLeb`, `putSleb`, and
 * `patchLocals`, which increments local indices in place in code just copied).
 *
 * Invariant: after `room(n)` at least `n` bytes can be stored at `buf[len…]`; the LEB writers
 * produce minimal encodings of non-negative safe integers (u32, u64, and s64 for i64.const).
 *
 * Does not protect against: misuse by its callers. Values are not range-checked here (callers
 * pass indices and costs already known to be in range); a negative value is a bug upstream.
 */

const utf8 = new TextEncoder();

export class Sink {
  buf: Uint8Array<ArrayBuffer>;
  len = 0;

  constructor(capacity = 1024) {
    this.buf = new Uint8Array(Math.max(64, capacity));
  }

  /** Ensures room for `n` more bytes. */
  room(n: number): void {
    const need = this.len + n;
    if (need <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < need) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }

  byte(b: number): void {
    if (this.len >= this.buf.length) this.room(1);
    this.buf[this.len++] = b;
  }

  /** Copies `src[start, end)`. */
  span(src: Uint8Array, start: number, end: number): void {
    const n = end - start;
    if (n <= 0) return;
    if (this.len + n > this.buf.length) this.room(n);
    const buf = this.buf;
    if (n < 24) {
      let p = this.len;
      for (let i = start; i < end; i++) buf[p++] = src[i]!;
    } else buf.set(src.subarray(start, end), this.len);
    this.len += n;
  }

  bytes(src: Uint8Array): void {
    this.span(src, 0, src.length);
  }

  /** Unsigned LEB128 of a non-negative safe integer. */
  u32(n: number): void {
    if (this.len + 10 > this.buf.length) this.room(10);
    const buf = this.buf;
    let p = this.len;
    while (n >= 0x80) {
      buf[p++] = (n % 128) | 0x80;
      n = Math.floor(n / 128);
    }
    buf[p++] = n;
    this.len = p;
  }

  /** Signed LEB128 of a non-negative safe integer (the immediate of `i64.const`). */
  s64(n: number): void {
    if (this.len + 10 > this.buf.length) this.room(10);
    const buf = this.buf;
    let p = this.len;
    while (n >= 0x40) {
      buf[p++] = (n % 128) | 0x80;
      n = Math.floor(n / 128);
    }
    buf[p++] = n;
    this.len = p;
  }

  /** A length-prefixed UTF-8 name. */
  name(s: string): void {
    const encoded = utf8.encode(s);
    this.u32(encoded.length);
    this.bytes(encoded);
  }

  /** The bytes written so far, without a copy; valid until the next write. */
  view(): Uint8Array<ArrayBuffer> {
    return this.buf.subarray(0, this.len);
  }

  /** The bytes written so far as an exact-size array (no copy when the buffer is full). */
  take(): Uint8Array<ArrayBuffer> {
    const out = this.len === this.buf.length ? this.buf : this.buf.slice(0, this.len);
    this.buf = new Uint8Array(64);
    this.len = 0;
    return out;
  }
}

/** Bytes in the unsigned LEB128 encoding of `n`. */
export function lebSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

// Raw writers into a buffer the caller has reserved (`Sink.room`): each returns the next position.

/**
 * Increments, in place, the local-index LEBs at `patches[i…]` below `end` (input offsets; the
 * copy is at input offset + `delta`); returns the first index not applied. The scanner listed
 * only LEBs whose incremented value has a minimal encoding of the same length, so the carry
 * never runs past the last byte and the bytes are exactly those a re-encoding would write.
 */
export function patchLocals(buf: Uint8Array, delta: number, patches: Uint32Array, i: number, n: number, end: number): number {
  for (; i < n; i++) {
    const at = patches[i]!;
    if (at >= end) break;
    let a = at + delta;
    let v = buf[a]!;
    while (v === 0xff) {
      buf[a++] = 0x80;
      v = buf[a]!;
    }
    buf[a] = v + 1;
  }
  return i;
}

export function putBytes(buf: Uint8Array, p: number, t: readonly number[]): number {
  for (let i = 0; i < t.length; i++) buf[p++] = t[i]!;
  return p;
}

export function put(buf: Uint8Array, p: number, t: Uint8Array): number {
  for (let i = 0; i < t.length; i++) buf[p++] = t[i]!;
  return p;
}

export function copy(buf: Uint8Array, p: number, src: Uint8Array, start: number, end: number): number {
  const n = end - start;
  if (n < 32) {
    for (let i = start; i < end; i++) buf[p++] = src[i]!;
    return p;
  }
  buf.set(src.subarray(start, end), p);
  return p + n;
}

export function putLeb(buf: Uint8Array, p: number, n: number): number {
  while (n >= 0x80) {
    buf[p++] = (n % 128) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[p++] = n;
  return p;
}

export function putSleb(buf: Uint8Array, p: number, n: number): number {
  while (n >= 0x40) {
    buf[p++] = (n % 128) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[p++] = n;
  return p;
}
