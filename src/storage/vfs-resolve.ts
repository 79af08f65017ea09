/**
 * Confined path resolution: a guest path → an inode of one volume, or the directory and name
 * where it would be created.
 *
 * Owns: the walk over components, `..`, and symlink expansion.
 *
 * Invariant: resolution only ever reads `dirents`/`inodes` rows of the VFS database, so no path
 * reaches the host filesystem, and the result is always an inode of the volume. Two modes:
 * - from the volume root (no `from`: the host's and the `vfs_*` imports' absolute paths): `..` at
 *   the root stays at the root, absolute symlink targets restart at the root;
 * - beneath a directory (`from` given: WASI's paths relative to a directory descriptor): the walk
 *   never leaves `from` — `..` past it, an absolute path and an absolute symlink target are all
 *   ENOTCAPABLE, as WASI requires, never silently rebased onto the volume root.
 * Symlink targets are expanded in place; more than `MAX_SYMLINK_HOPS` expansions → ELOOP.
 *
 * Does not protect against: time-of-check races between two connections — callers run a walk
 * and the operation that uses it in one transaction.
 */

import { fail } from './errno.ts';
import { MAX_SYMLINK_HOPS, parsePath } from './vfs-path.ts';
import type { InodeKind, Statements } from './vfs-schema.ts';

export interface WalkOptions {
  /** Follow a symlink in the final component. */
  readonly followFinal: boolean;
  /**
   * Directory inode relative paths start from, and the walk stays beneath it (ENOTCAPABLE
   * otherwise); absent: the volume root, with `..` stopping there.
   */
  readonly from?: number;
}

export interface Found {
  readonly ino: number;
  readonly kind: InodeKind;
}

export interface WalkResult {
  /** Directory holding the final entry, or where it would be created. */
  readonly parent: number;
  /** The final component; null when the path ends in `.` or `..` or names the root. */
  readonly name: string | null;
  /** The final entry, or null when it does not exist (its parent does). */
  readonly node: Found | null;
  /** The path (after symlink expansion) ended in `/`. */
  readonly trailingSlash: boolean;
}

export function walk(st: Statements, root: number, path: string, opts: WalkOptions): WalkResult {
  const first = parsePath(path);
  const beneath = opts.from !== undefined;
  if (beneath && first.absolute) fail('ENOTCAPABLE', 'an absolute path relative to a directory');
  const start = first.absolute ? root : (opts.from ?? root);
  let stack: number[] = [start];
  const queue: string[] = [...first.parts].reverse();
  let trailingSlash = first.trailingSlash;
  let hops = 0;

  while (queue.length > 0) {
    const part = queue.pop() as string;
    const top = stack[stack.length - 1] as number;
    const isLast = queue.length === 0;
    if (part === '.') continue;
    if (part === '..') {
      if (stack.length > 1) stack.pop();
      else if (beneath) fail('ENOTCAPABLE', '".." above the directory the path is relative to');
      continue; // `..` at the volume root is the root
    }
    const row = st.lookup.get(top, part);
    if (row === undefined) {
      if (isLast) return { parent: top, name: part, node: null, trailingSlash };
      fail('ENOENT', 'no such file or directory');
    }
    const entry = { ino: row[0], kind: row[1] };
    if (entry.kind === 'symlink' && (!isLast || opts.followFinal || trailingSlash)) {
      if (++hops > MAX_SYMLINK_HOPS) fail('ELOOP', 'too many levels of symbolic links');
      const target = parsePath(row[2] ?? '');
      if (target.absolute && beneath) fail('ENOTCAPABLE', 'an absolute symlink target relative to a directory');
      if (target.absolute) stack = [root];
      for (let i = target.parts.length - 1; i >= 0; i--) queue.push(target.parts[i] as string);
      if (isLast && target.trailingSlash) trailingSlash = true;
      continue;
    }
    if (!isLast) {
      if (entry.kind !== 'dir') fail('ENOTDIR', 'not a directory');
      stack.push(entry.ino);
      continue;
    }
    if (trailingSlash && entry.kind !== 'dir') fail('ENOTDIR', 'not a directory');
    return { parent: top, name: part, node: { ino: entry.ino, kind: entry.kind }, trailingSlash };
  }
  // The path ended on a directory already on the stack (the root, `.`, `..`, or a link to one
  // of those): it has no final name of its own.
  const dir = stack[stack.length - 1] as number;
  const parent = stack.length > 1 ? (stack[stack.length - 2] as number) : dir;
  return { parent, name: null, node: { ino: dir, kind: 'dir' }, trailingSlash };
}
