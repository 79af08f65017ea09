/**
 * A worker's recycled guest memories (wasm/memory-import.ts): a fresh run of a small module whose
 * memory became an import gets a memory this worker made for an earlier run — zeroed — instead of
 * a new one, whose address-space reservation and guard region cost more than the rest of a small
 * module's instantiation.
 *
 * Owns: at most PER_SHAPE memories per (initial, maximum) pages and at most SHAPES shapes, each
 * no larger than MAX_POOLED_PAGES. Invariant: a memory handed out has exactly the limits asked
 * for, its length is its initial size and every byte is zero — a memory that grew is never taken
 * back (it cannot shrink), and one taken back is zeroed before it is kept; so a guest cannot read
 * anything an earlier guest wrote, nor see a size it did not declare. Only a worker's top-level
 * fresh runs use the pool, and a memory goes back only when its instance is disposed (no guest
 * code of it can run again).
 *
 * Does not protect against: the memory the kept memories hold while idle (≤ SHAPES × PER_SHAPE ×
 * MAX_POOLED_PAGES × 64 KiB per worker, 8 MiB).
 */

const PAGE = 65536;
/** Larger memories cost more to zero than to make. */
export const MAX_POOLED_PAGES = 16;
const PER_SHAPE = 2;
const SHAPES = 4;

export class MemoryPool {
  /** Kept memories by `initial:maximum`; the map's order is least recently used first. */
  private readonly kept = new Map<string, WebAssembly.Memory[]>();

  take(initial: number, maximum: number): WebAssembly.Memory {
    const key = `${initial}:${maximum}`;
    const list = this.kept.get(key);
    const m = list?.pop();
    if (list && list.length === 0) this.kept.delete(key);
    return m ?? new WebAssembly.Memory({ initial, maximum });
  }

  /** Keep `m` (made by `take` with these limits) for a later run, if it never grew and is small. */
  give(m: WebAssembly.Memory, initial: number, maximum: number): void {
    if (initial > MAX_POOLED_PAGES || m.buffer.byteLength !== initial * PAGE) return;
    const key = `${initial}:${maximum}`;
    const list = this.kept.get(key) ?? [];
    if (list.length >= PER_SHAPE) return;
    new Uint8Array(m.buffer).fill(0);
    list.push(m);
    this.kept.delete(key);
    this.kept.set(key, list);
    while (this.kept.size > SHAPES) this.kept.delete(this.kept.keys().next().value as string);
  }
}
