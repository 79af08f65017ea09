/**
 * Guest path syntax for the VFS: splitting and the limits every path and symlink target obeys.
 *
 * Owns: `MAX_PATH_BYTES`, `MAX_NAME_BYTES`, `MAX_SYMLINK_HOPS` and the parse of a path string
 * into components. Parsing is purely lexical; resolution (`vfs-resolve.ts`) gives `..` and
 * symlinks their meaning.
 *
 * Invariant: a parsed path has no empty components, no NUL, no component over 255 UTF-8 bytes and
 * at most 4096 bytes in total. Nothing here ever touches the host filesystem; a name such as
 * `%2e%2e` or `..%2f` is just a name.
 *
 * Does not protect against: Unicode look-alikes — names are compared as exact code-unit strings,
 * with no normalization or case folding.
 */

import { fail } from './errno.ts';

/** Longest path (and symlink target) accepted, in UTF-8 bytes (Linux's PATH_MAX). */
export const MAX_PATH_BYTES = 4096;
/** Longest single name, in UTF-8 bytes (Linux's NAME_MAX). */
export const MAX_NAME_BYTES = 255;
/** Symlinks followed during one resolution before ELOOP (Linux's MAXSYMLINKS). */
export const MAX_SYMLINK_HOPS = 40;

export interface ParsedPath {
  /** Starts with `/`: resolved from the volume root. */
  readonly absolute: boolean;
  /** Components in order; may include `.` and `..`, never an empty string. */
  readonly parts: readonly string[];
  /** Ends with `/` (and is not just `/`): the final entry must be a directory. */
  readonly trailingSlash: boolean;
}

export function byteLength(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/** Split and check a guest path. Empty → ENOENT, NUL → EINVAL, too long → ENAMETOOLONG. */
export function parsePath(path: string): ParsedPath {
  if (typeof path !== 'string') fail('EINVAL', 'path is not a string');
  if (path.includes('\0')) fail('EINVAL', 'path contains NUL');
  if (path.length === 0) fail('ENOENT', 'empty path');
  if (byteLength(path) > MAX_PATH_BYTES) fail('ENAMETOOLONG', 'path too long');
  const parts: string[] = [];
  for (const part of path.split('/')) {
    if (part === '') continue;
    if (byteLength(part) > MAX_NAME_BYTES) fail('ENAMETOOLONG', 'name too long');
    parts.push(part);
  }
  return {
    absolute: path.startsWith('/'),
    parts,
    trailingSlash: path.endsWith('/') && parts.length > 0,
  };
}

/** Check a name used as a directory entry (no `/`, not `.`/`..`, within limits). */
export function checkName(name: string): void {
  if (name.includes('\0')) fail('EINVAL', 'name contains NUL');
  if (name === '' || name === '.' || name === '..' || name.includes('/')) fail('EINVAL', 'bad name');
  if (byteLength(name) > MAX_NAME_BYTES) fail('ENAMETOOLONG', 'name too long');
}

/** Check a symlink target before storing it. */
export function checkSymlinkTarget(target: string): void {
  if (typeof target !== 'string') fail('EINVAL', 'target is not a string');
  if (target.length === 0) fail('ENOENT', 'empty symlink target');
  if (target.includes('\0')) fail('EINVAL', 'target contains NUL');
  if (byteLength(target) > MAX_PATH_BYTES) fail('ENAMETOOLONG', 'target too long');
}
