/**
 * The open blocks of a function body while it is scanned, and how branch labels move when loops
 * are outlined.
 *
 * Owns: label renumbering. An outlined loop (body.ts) is wrapped in three new blocks
 * (`block $done`, `loop $retry`, `block $cold`), so a branch from inside such a loop to a label
 * outside it must count three more labels per outlined loop it leaves; a branch to the loop
 * itself or to a block inside it is unchanged. Also whether the function's entry must check the
 * counter (`entryCheck`): not when every call-like instruction sits inside a loop — control
 * enters a loop only through its header, which checks, so each frame checks before it calls —
 * nor when the body has neither a call nor a loop (a leaf: bounded straight-line work). And which
 * outlined loops body.ts writes twice (`doubles`): innermost ones inside another loop, in a body
 * without calls (where V8 has spilled around calls anyway, the `$retry` back edge costs little). A body
 * with loops and no call keeps its check: one per call beside the loops' one per iteration buys
 * nothing, and dropping it only shifted V8's code layout (measured: the vm kernel 1.2× → 1.7×).
 *
 * Invariant: levels follow the decoder's depth — the function body is level 0, and a block
 * opened when the cursor's depth became d is level d. `shift(depth, label)` is
 * 3 × (outlined loops at levels in (depth − label, depth]).
 *
 * Does not protect against: labels past the function level (invalid code): they are left as they
 * are, and V8 refuses the output as it would have refused the input.
 */

/** Blocks added around an outlined loop. */
export const WRAPPERS = 3;
/** Loops longer than this (input bytes, `loop` to `end`) are never written twice. */
export const MAX_DOUBLED_LOOP = 2048;

export class Nesting {
  /** Per level: number of outlined loops at levels 1..level. */
  private outlinedUpTo = new Int32Array(64);
  /** Per level: record position of an outlined loop's header charge, or -1. */
  private header = new Int32Array(64);
  /** Per level: number of loops (outlined or not) at levels 1..level. */
  private loopsUpTo = new Int32Array(64);
  /** Per level: the level of the innermost loop open at or above it (0: none). */
  private nearestLoop = new Int32Array(64);
  /** Per level (a loop's): 1 while it holds neither a loop nor a call-like instruction. */
  private plain = new Uint8Array(64);
  private calls = false;
  private callOutsideLoops = false;

  reset(): void {
    this.outlinedUpTo[0] = 0;
    this.loopsUpTo[0] = 0;
    this.nearestLoop[0] = 0;
    this.calls = false;
    this.callOutsideLoops = false;
  }

  /** A block, if, try or loop opened at `level`; `header` ≥ 0 marks an outlined loop. */
  open(level: number, header: number, loop = false): void {
    if (level >= this.header.length) this.grow(level);
    this.header[level] = header;
    this.outlinedUpTo[level] = this.outlinedUpTo[level - 1]! + (header >= 0 ? 1 : 0);
    this.loopsUpTo[level] = this.loopsUpTo[level - 1]! + (loop ? 1 : 0);
    const outer = this.nearestLoop[level - 1]!;
    if (loop) {
      this.plain[outer] = 0;
      this.plain[level] = 1;
      this.nearestLoop[level] = level;
    } else this.nearestLoop[level] = outer;
  }

  /** A call-like instruction at `depth` (the innermost open level). */
  call(depth: number): void {
    this.calls = true;
    if (depth >= this.loopsUpTo.length || this.loopsUpTo[depth] === 0) this.callOutsideLoops = true;
    else this.plain[this.nearestLoop[depth]!] = 0;
  }

  /**
   * Whether the outlined loop at `level`, closing after `bytes` of input, is written twice
   * (body.ts): it held neither a loop nor a call-like instruction, sits inside another loop (so it
   * is entered once per iteration of that one, not once per call), and is at most MAX_DOUBLED_LOOP.
   */
  doubles(level: number, bytes: number): boolean {
    return level > 1 && level < this.plain.length && this.plain[level] === 1 && this.loopsUpTo[level - 1]! > 0 && bytes <= MAX_DOUBLED_LOOP;
  }

  /** Whether the body has a call-like instruction (then no loop of it is written twice). */
  get hasCalls(): boolean {
    return this.calls;
  }

  /** After the scan: whether the entry must check (see the module doc); `loops`: the body has one. */
  entryCheck(loops: boolean): boolean {
    return this.callOutsideLoops || (loops && !this.calls);
  }

  /** The block at `level` closes; returns its header record if it was an outlined loop, else -1. */
  close(level: number): number {
    return level > 0 && level < this.header.length ? this.header[level]! : -1;
  }

  /** How much a branch at `depth` with relative `label` must grow. */
  shift(depth: number, label: number): number {
    const target = depth - label;
    if (target < 0 || depth >= this.header.length) return 0;
    return WRAPPERS * (this.outlinedUpTo[depth]! - this.outlinedUpTo[target]!);
  }

  private grow(level: number): void {
    let size = this.header.length * 2;
    while (size <= level) size *= 2;
    const upTo = new Int32Array(size);
    upTo.set(this.outlinedUpTo);
    const header = new Int32Array(size);
    header.set(this.header);
    const loops = new Int32Array(size);
    loops.set(this.loopsUpTo);
    const nearest = new Int32Array(size);
    nearest.set(this.nearestLoop);
    const plain = new Uint8Array(size);
    plain.set(this.plain);
    this.nearestLoop = nearest;
    this.plain = plain;
    this.outlinedUpTo = upTo;
    this.header = header;
    this.loopsUpTo = loops;
  }
}
