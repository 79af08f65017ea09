/**
 * Bounds-checked access to a guest's linear memory from host imports.
 *
 * Owns: reading and writing guest memory by (ptr, len) with every range checked against the
 * memory's current size (which changes when the guest grows it, so views are re-made per access).
 * Invariant: an import never reads or writes outside the guest's memory; an out-of-range pointer
 * is reported to the guest as an error value (`FaultError` → WASI EFAULT / DESIGN's INVALID).
 *
 * Does not protect against: a guest racing its own shared memory from another thread while an
 * import reads it (the guest only corrupts itself).
 */

export class FaultError extends Error {
  constructor() {
    super('guest pointer out of range');
  }
}

export class GuestMemory {
  private memory: WebAssembly.Memory | null = null;

  attach(memory: WebAssembly.Memory | null): void {
    this.memory = memory;
  }

  get attached(): boolean {
    return this.memory !== null;
  }

  get byteLength(): number {
    return this.memory ? this.memory.buffer.byteLength : 0;
  }

  private buffer(): ArrayBuffer | SharedArrayBuffer {
    if (!this.memory) throw new FaultError();
    return this.memory.buffer;
  }

  check(ptr: number, len: number): void {
    const p = ptr >>> 0;
    const l = len >>> 0;
    if (p + l > this.byteLength) throw new FaultError();
  }

  bytes(ptr: number, len: number): Uint8Array {
    this.check(ptr, len);
    return new Uint8Array(this.buffer(), ptr >>> 0, len >>> 0);
  }

  /** A copy, safe to keep after the guest runs again. */
  copy(ptr: number, len: number): Uint8Array {
    return this.bytes(ptr, len).slice();
  }

  view(): DataView {
    return new DataView(this.buffer());
  }

  u32(ptr: number): number {
    this.check(ptr, 4);
    return this.view().getUint32(ptr >>> 0, true);
  }

  setU32(ptr: number, value: number): void {
    this.check(ptr, 4);
    this.view().setUint32(ptr >>> 0, value >>> 0, true);
  }

  setU64(ptr: number, value: bigint): void {
    this.check(ptr, 8);
    this.view().setBigUint64(ptr >>> 0, BigInt.asUintN(64, value), true);
  }

  setU16(ptr: number, value: number): void {
    this.check(ptr, 2);
    this.view().setUint16(ptr >>> 0, value, true);
  }

  setU8(ptr: number, value: number): void {
    this.check(ptr, 1);
    this.view().setUint8(ptr >>> 0, value);
  }

  write(ptr: number, data: Uint8Array): void {
    this.bytes(ptr, data.length).set(data);
  }

  /** The (ptr, len) pairs of a WASI iovec array. */
  iovecs(iovs: number, count: number): Array<[number, number]> {
    if (count >>> 0 > 1024) throw new FaultError();
    this.check(iovs, (count >>> 0) * 8);
    const v = this.view();
    const out: Array<[number, number]> = [];
    for (let i = 0; i < count >>> 0; i++) {
      const base = (iovs >>> 0) + i * 8;
      const p = v.getUint32(base, true);
      const l = v.getUint32(base + 4, true);
      this.check(p, l);
      out.push([p, l]);
    }
    return out;
  }
}
