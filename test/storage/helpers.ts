/** Shared helpers for the storage tests: a throw-away VFS in a temp directory. */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { Vfs, type VfsOptions } from '../../src/storage/vfs.ts';
import { VfsError, type ErrnoName } from '../../src/storage/errno.ts';

export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'membrane-storage-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A fresh on-disk VFS; `done()` closes it and removes the directory. */
export function tempVfs(options: Omit<VfsOptions, 'file' | 'name'> = {}): { vfs: Vfs; file: string; done: () => void } {
  const { dir, cleanup } = tempDir();
  const file = join(dir, 'vfs.sqlite');
  const vfs = Vfs.open({ ...options, file });
  return { vfs, file, done: () => { vfs.close(); cleanup(); } };
}

/** Assert `fn` throws a VfsError with the given errno name. */
export function throwsErrno(fn: () => unknown, code: ErrnoName): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof VfsError, `expected VfsError ${code}, got ${String(err)}`);
    assert.equal(err.code, code);
    return true;
  });
}

export function text(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('utf8');
}
