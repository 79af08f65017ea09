/**
 * The type section as the rewriter extends it: existing function types are reused when an
 * identical one exists, new ones are appended after them.
 *
 * Owns: type indices of the refill import and the bulk helpers.
 *
 * Invariant: existing type indices never move; `index(t)` returns the first existing type equal to
 * `t` (same params and results, in order), else the index of an appended one, appending each
 * distinct new type once.
 *
 * Does not protect against: GC type definitions (rec groups, subtyping); parseModule refuses them
 * before we get here.
 */

import { sameFuncType } from '../types.ts';
import type { FuncType } from '../types.ts';

export class TypeTable {
  readonly added: FuncType[] = [];

  constructor(private readonly existing: readonly FuncType[]) {}

  index(t: FuncType): number {
    const at = this.existing.findIndex((x) => sameFuncType(x, t));
    if (at >= 0) return at;
    const added = this.added.findIndex((x) => sameFuncType(x, t));
    if (added >= 0) return this.existing.length + added;
    this.added.push(t);
    return this.existing.length + this.added.length - 1;
  }
}
