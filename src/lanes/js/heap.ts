/**
 * The JS lane's space wall (DESIGN §3): one QuickJS instance's linear memory, created by us with
 * the call's memory limit as its maximum, and the only door through which it grows.
 *
 * Owns: the `WebAssembly.Memory` handed to emscripten (initial `MIN_PAGES`, maximum the limit
 * in whole 64 KiB pages, never more) and the wrapper around emscripten's heap-resize import.
 * The QuickJS module has no `memory.grow` instruction of its own (checked by
 * test/security/js-typed-array-memory-bomb.test.ts), so every growth passes the wrapper; the
 * wrapper reports each refused growth (`onRefused`), which the lane turns into a MEMORY_LIMIT
 * stop the snippet cannot catch. Emscripten over-asks (up to 20% more than needed) and refuses
 * when that passes the maximum; the wrapper then grows to exactly what was needed, so the whole
 * limit is usable.
 * Invariant: the instance's linear memory never exceeds the limit it was created with, and a
 * refused growth is never silent.
 *
 * Does not protect against: host-side copies of what the snippet hands out (results, output,
 * power requests); interpreter.ts and guest.ts bound those before they are copied.
 */

export const PAGE = 65536;
/** Emscripten's QuickJS build declares 256 pages (16 MiB) of initial memory. */
export const MIN_PAGES = 256;

type Resize = (requested: number) => number | boolean;

/** The linear memory for one interpreter whose limit is `limitBytes` (≥ MIN_PAGES pages). */
export function createLinearMemory(limitBytes: number): { memory: WebAssembly.Memory; maxPages: number } {
  const maxPages = Math.floor(limitBytes / PAGE);
  if (maxPages < MIN_PAGES) throw new RangeError(`a QuickJS memory needs at least ${MIN_PAGES * PAGE} bytes`);
  return { memory: new WebAssembly.Memory({ initial: MIN_PAGES, maximum: maxPages }), maxPages };
}

/**
 * Replace emscripten's heap-resize import in `imports` (the one function that calls
 * `.grow(`; the names are minified) with a guard. Throws when there is not exactly one such
 * import — a QuickJS build whose growth we cannot see is refused, not run unguarded.
 */
export function guardHeapGrowth(imports: WebAssembly.Imports, memory: WebAssembly.Memory, maxPages: number, onRefused: () => void): void {
  const found: { ns: Record<string, unknown>; name: string; fn: Resize }[] = [];
  for (const ns of Object.values(imports)) {
    for (const [name, fn] of Object.entries(ns)) {
      if (typeof fn === 'function' && /\.grow\(/.test(Function.prototype.toString.call(fn))) found.push({ ns: ns as Record<string, unknown>, name, fn: fn as Resize });
    }
  }
  if (found.length !== 1) throw new Error(`expected one heap-resize import in the QuickJS glue, found ${found.length}`);
  const { ns, name, fn: resize } = found[0]!;
  ns[name] = (requested: number): number | boolean => {
    if (resize(requested)) return true;
    const need = Math.ceil((requested >>> 0) / PAGE);
    const current = memory.buffer.byteLength / PAGE;
    if (need > current && need <= maxPages) {
      try {
        memory.grow(need - current);
        // Emscripten refreshes its views when it sees the (now large enough) heap.
        if (resize(requested)) return true;
      } catch {
        // Refused below.
      }
    }
    onRefused();
    return false;
  };
}
