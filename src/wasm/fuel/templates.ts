/**
 * The byte sequences the body writer (body.ts) inserts for one counter location, split around the
 * cost immediate (`pre` · sleb(C) · `post`); body.ts's module doc lists what each does.
 *
 * Owns: the encodings only, for the three places the counter can live (the global on the slow
 * path, an appended local on the fast path, the extra last parameter of a threaded twin).
 * Invariant: every sequence is stack-neutral on its own or, for the outlined-loop pieces, once
 * the pieces around one loop are all written; branch depths assume body.ts's wrappers.
 * Does not protect against: a caller that pairs pieces of different loops or counter locations.
 */

const LOCAL_GET = 0x20;
const LOCAL_SET = 0x21;
const LOCAL_TEE = 0x22;
const GLOBAL_GET = 0x23;
const GLOBAL_SET = 0x24;
const I64_CONST = 0x42;
const I64_ADD = 0x7c;
const I64_SUB = 0x7d;
const I64_LT_S = 0x53;
const IF = 0x04;
const BR = 0x0c;
const BR_IF = 0x0d;
const EMPTY = 0x40;
const END = 0x0b;
const CALL = 0x10;

/**
 * The inserted sequences for one counter location, split around the cost immediate:
 * `pre` · sleb(C) · `post`.
 */
export interface Templates {
  readonly entryPre: Uint8Array;
  readonly loopPre: Uint8Array;
  readonly checkPost: Uint8Array;
  readonly chargePre: Uint8Array;
  readonly chargePost: Uint8Array;
  readonly spill: Uint8Array;
  readonly reload: Uint8Array;
  /** Outlined loop header: `loopPre` · C · `outPost`. */
  readonly outPost: Uint8Array;
  /** After an outlined loop's `end`: `closePre` · C · `closePost`. */
  readonly closePre: Uint8Array;
  readonly closePost: Uint8Array;
  /** After a doubled loop's first writing: `closePre` · C · `firstPost`. */
  readonly firstPost: Uint8Array;
}

export function leb(n: number): number[] {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n % 128) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}

const bytes = (...parts: (number | number[])[]): Uint8Array => Uint8Array.from(parts.flat());

/** The templates of one module (its global, refill import and local refill), cached per counter. */
export class TemplateSet {
  private readonly g: number[];
  private readonly r: number[];
  readonly slow: Templates;
  private readonly fastByLocal = new Map<number, Templates>();
  private readonly threadedByParam = new Map<number, Templates>();

  /**
   * `refillFunction` is the import; `localRefill` the module's own `(i64) -> (i64)` function that
   * writes its argument to $fuel, then calls the import and returns its result (twins.ts), which the fast paths
   * call instead, so their cold path needs neither the global's address nor the import's target
   * (V8 hoists both out of loops and keeps them live, spilled, across every other call).
   */
  constructor(fuelGlobal: number, refillFunction: number, localRefill: number) {
    const g = (this.g = leb(fuelGlobal));
    const r = leb(refillFunction);
    this.r = leb(localRefill);
    const get = [GLOBAL_GET, ...g];
    const set = [GLOBAL_SET, ...g];
    this.slow = {
      entryPre: bytes(get, I64_CONST),
      loopPre: bytes(get, I64_CONST),
      chargePre: bytes(get, I64_CONST),
      chargePost: bytes(I64_SUB, set),
      checkPost: bytes(I64_SUB, set, get, I64_CONST, 0, I64_LT_S, IF, EMPTY, get, CALL, r, set, END),
      spill: bytes(),
      reload: bytes(),
      outPost: bytes(),
      closePre: bytes(),
      closePost: bytes(),
      firstPost: bytes(),
    };
  }

  fast(local: number): Templates {
    let t = this.fastByLocal.get(local);
    if (t !== undefined) return t;
    const f = leb(local);
    const g = this.g;
    const spill = [LOCAL_GET, ...f, GLOBAL_SET, ...g];
    t = {
      entryPre: bytes(GLOBAL_GET, g, I64_CONST),
      loopPre: bytes(LOCAL_GET, f, I64_CONST),
      checkPost: bytes(I64_SUB, LOCAL_TEE, f, I64_CONST, 0, I64_LT_S, IF, EMPTY, LOCAL_GET, f, CALL, this.r, LOCAL_SET, f, END),
      chargePre: bytes(LOCAL_GET, f, I64_CONST),
      chargePost: bytes(I64_SUB, LOCAL_SET, f),
      spill: bytes(spill),
      reload: bytes(GLOBAL_GET, g, LOCAL_SET, f),
      outPost: bytes(I64_SUB, LOCAL_TEE, f, I64_CONST, 0, I64_LT_S, BR_IF, 1),
      closePre: bytes(BR, 2, END, LOCAL_GET, f, CALL, this.r, I64_CONST),
      closePost: bytes(I64_ADD, LOCAL_SET, f, BR, 0, END, END),
      firstPost: bytes(I64_ADD, LOCAL_SET, f, END),
    };
    this.fastByLocal.set(local, t);
    return t;
  }

  /** The fast templates with the counter in parameter `param`, which arrives holding it. */
  threaded(param: number): Templates {
    let t = this.threadedByParam.get(param);
    if (t !== undefined) return t;
    const fast = this.fast(param);
    t = { ...fast, entryPre: bytes(LOCAL_GET, leb(param), I64_CONST) };
    this.threadedByParam.set(param, t);
    return t;
  }
}
