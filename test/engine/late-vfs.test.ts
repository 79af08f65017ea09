// The lane interpreter's late VFS (src/engine/worker/late-vfs.ts): a parked interpreter is told
// its call's VFS file at the snippet's start and opens it only on the snippet's first file access.
// A snippet that never touches a file opens nothing and, for a private VFS, creates no file; the
// first access creates or opens it and serves from it; a database whose roots differ from the
// placeholder's is never served (EIO, then and after), and the placeholder is not either.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Vfs, VfsError } from '../../src/storage/index.ts';
import { lateVfs } from '../../src/engine/worker/late-vfs.ts';
import { tempDir } from '../helpers/tmp.ts';

const dir = tempDir('membrane-late-vfs-');
const VOLUMES = ['workspace', 'memory', 'tmp'] as const;

test('bound but never used: flush and close open nothing, and no file is created', () => {
  const file = join(dir, 'unused.sqlite');
  const late = lateVfs(Vfs.open({ file: ':memory:' }));
  late.bind(file, {}, VOLUMES);
  late.vfs.flush();
  late.vfs.close();
  assert.equal(existsSync(file), false);
});

test('the first access opens (creates) the bound file and every use is served from it', () => {
  const file = join(dir, 'used.sqlite');
  const late = lateVfs(Vfs.open({ file: ':memory:' }));
  late.bind(file, {}, VOLUMES);
  assert.equal(existsSync(file), false);
  late.vfs.mkdir('workspace', 'made-late');
  assert.equal(existsSync(file), true);
  late.vfs.close();
  const again = Vfs.open({ file });
  assert.equal(again.stat('workspace', 'made-late').kind, 'dir');
  again.close();
});

test('a database whose roots differ is refused with EIO, and nothing is served from the placeholder after', () => {
  const file = join(dir, 'other.sqlite');
  Vfs.open({ file }).close();
  const placeholder = Vfs.open({ file: ':memory:' });
  const late = lateVfs(placeholder);
  const volumes = ['workspace'] as const;
  // Make the placeholder's root differ by naming a root inode the file cannot have.
  const real = placeholder.rootIno.bind(placeholder);
  (placeholder as unknown as { rootIno(v: string): number }).rootIno = (v: string) => real(v as never) + 1000;
  late.bind(file, {}, volumes);
  assert.throws(() => late.vfs.stat('workspace', ''), (e: unknown) => e instanceof VfsError && e.code === 'EIO');
  assert.throws(() => late.vfs.stat('workspace', ''), (e: unknown) => e instanceof VfsError && e.code === 'EIO');
});
