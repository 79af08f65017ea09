// Test helper: the two byte-level pieces test code uses to build wasm modules by hand (the
// engine's own writer lives in src/wasm/bytes.ts; tests build deliberately odd modules).

/** Unsigned LEB128 of `n` (a u32). */
export function leb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

/** The parts, one after another, in a fresh buffer. */
export function concat(parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
