/** POSIX-like semantics of the VFS path operations: open flags, dirs, links, readdir, rename. */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { O_CREAT, O_DIRECTORY, O_EXCL, O_TRUNC } from '../../src/storage/vfs.ts';
import { WASI_ERRNO, VfsError } from '../../src/storage/errno.ts';
import { tempVfs, text, throwsErrno } from './helpers.ts';

test('the errno table uses WASI preview 1 numbers', () => {
  assert.deepEqual(
    [WASI_ERRNO.ENOENT, WASI_ERRNO.EEXIST, WASI_ERRNO.ENOTDIR, WASI_ERRNO.EISDIR, WASI_ERRNO.ENOTEMPTY, WASI_ERRNO.ELOOP,
      WASI_ERRNO.ENAMETOOLONG, WASI_ERRNO.EINVAL, WASI_ERRNO.EXDEV, WASI_ERRNO.EBADF, WASI_ERRNO.ENOTCAPABLE, WASI_ERRNO.EACCES,
      WASI_ERRNO.ENOSPC, WASI_ERRNO.EDQUOT],
    [44, 20, 54, 31, 55, 32, 37, 28, 75, 8, 76, 2, 51, 19],
  );
  const e = new VfsError('ENOENT');
  assert.equal(e.errno, 44);
});

test('open flags: O_CREAT, O_EXCL, O_TRUNC, O_DIRECTORY', () => {
  const { vfs, done } = tempVfs();
  throwsErrno(() => vfs.open('workspace', '/f', 0), 'ENOENT');
  const f = vfs.open('workspace', '/f', O_CREAT | O_EXCL, { mode: 0o600 });
  assert.equal(f.kind, 'file');
  assert.equal(f.mode, 0o600);
  throwsErrno(() => vfs.open('workspace', '/f', O_CREAT | O_EXCL), 'EEXIST');
  vfs.write(f.ino, 0, Buffer.from('abc'));
  assert.equal(vfs.open('workspace', '/f', O_CREAT).size, 3);
  assert.equal(vfs.open('workspace', '/f', O_TRUNC).size, 0);
  throwsErrno(() => vfs.open('workspace', '/f', O_DIRECTORY), 'ENOTDIR');
  vfs.mkdir('workspace', '/d');
  assert.equal(vfs.open('workspace', '/d', O_DIRECTORY).kind, 'dir');
  throwsErrno(() => vfs.open('workspace', '/d', O_TRUNC), 'EISDIR');
  throwsErrno(() => vfs.open('workspace', '/d', O_CREAT), 'EISDIR');
  throwsErrno(() => vfs.open('workspace', '/new', O_CREAT | O_DIRECTORY), 'EISDIR');
  throwsErrno(() => vfs.open('workspace', '/nodir/f', O_CREAT), 'ENOENT');
  throwsErrno(() => vfs.open('workspace', '/f/g', O_CREAT), 'ENOTDIR');
  done();
});

test('open follows symlinks unless told not to; creating through a dangling link makes the target', () => {
  const { vfs, done } = tempVfs();
  vfs.symlink('target', 'workspace', '/link');
  throwsErrno(() => vfs.open('workspace', '/link', 0), 'ENOENT');
  const made = vfs.open('workspace', '/link', O_CREAT);
  assert.equal(vfs.stat('workspace', '/target').ino, made.ino);
  throwsErrno(() => vfs.open('workspace', '/link', 0, { followFinal: false }), 'ELOOP');
  assert.equal(vfs.stat('workspace', '/link', { followFinal: false }).kind, 'symlink');
  assert.equal(vfs.stat('workspace', '/link', { followFinal: false }).size, 6);
  throwsErrno(() => vfs.readlink('workspace', '/target'), 'EINVAL');
  throwsErrno(() => vfs.symlink('', 'workspace', '/empty'), 'ENOENT');
  throwsErrno(() => vfs.symlink('x', 'workspace', '/link'), 'EEXIST');
  done();
});

test('mkdir and rmdir: EEXIST, ENOTEMPTY, ENOTDIR, nlink', () => {
  const { vfs, done } = tempVfs();
  vfs.mkdir('workspace', '/a');
  vfs.mkdir('workspace', '/a/b/');
  throwsErrno(() => vfs.mkdir('workspace', '/a'), 'EEXIST');
  throwsErrno(() => vfs.mkdir('workspace', '/x/y'), 'ENOENT');
  assert.equal(vfs.stat('workspace', '/a').nlink, 3);
  throwsErrno(() => vfs.rmdir('workspace', '/a'), 'ENOTEMPTY');
  vfs.open('workspace', '/a/f', O_CREAT);
  throwsErrno(() => vfs.rmdir('workspace', '/a/f'), 'ENOTDIR');
  throwsErrno(() => vfs.unlink('workspace', '/a/b'), 'EISDIR');
  vfs.rmdir('workspace', '/a/b');
  vfs.unlink('workspace', '/a/f');
  vfs.rmdir('workspace', '/a/');
  throwsErrno(() => vfs.stat('workspace', '/a'), 'ENOENT');
  throwsErrno(() => vfs.rmdir('workspace', '/a'), 'ENOENT');
  done();
});

test('hard links share an inode; the last unlink frees it', () => {
  const { vfs, done } = tempVfs();
  const f = vfs.open('workspace', '/f', O_CREAT);
  vfs.write(f.ino, 0, Buffer.from('shared'));
  vfs.link('workspace', '/f', 'workspace', '/g');
  assert.equal(vfs.stat('workspace', '/g').ino, f.ino);
  assert.equal(vfs.statIno(f.ino).nlink, 2);
  vfs.unlink('workspace', '/f');
  assert.equal(text(vfs.read(f.ino, 0, 10)), 'shared');
  vfs.unlink('workspace', '/g');
  throwsErrno(() => vfs.read(f.ino, 0, 10), 'EBADF');
  vfs.mkdir('workspace', '/d');
  throwsErrno(() => vfs.link('workspace', '/d', 'workspace', '/d2'), 'EPERM');
  vfs.open('workspace', '/h', O_CREAT);
  throwsErrno(() => vfs.link('workspace', '/h', 'memory', '/h'), 'EXDEV');
  throwsErrno(() => vfs.link('workspace', '/h', 'workspace', '/d'), 'EEXIST');
  done();
});

test('readdir: stable order and resumption by cookie', () => {
  const { vfs, done } = tempVfs();
  vfs.mkdir('workspace', '/d');
  const names = Array.from({ length: 50 }, (_, i) => `f${String(i).padStart(2, '0')}`);
  for (const n of names) vfs.open('workspace', `/d/${n}`, O_CREAT);
  const dir = vfs.stat('workspace', '/d').ino;
  const all = vfs.readdir(dir);
  assert.deepEqual(all.map((e) => e.name), names);
  assert.deepEqual(vfs.readdir(dir).map((e) => e.name), names, 'same order twice');
  const seen: string[] = [];
  let cookie = 0;
  for (;;) {
    const page = vfs.readdir(dir, cookie, 7);
    if (page.length === 0) break;
    seen.push(...page.map((e) => e.name));
    cookie = (page[page.length - 1] as { next: number }).next;
  }
  assert.deepEqual(seen, names);
  // Deleting an entry already returned does not disturb the rest of the listing.
  const first = vfs.readdir(dir, 0, 10);
  vfs.unlink('workspace', '/d/f00');
  const rest = vfs.readdir(dir, (first[9] as { next: number }).next);
  assert.deepEqual(rest.map((e) => e.name), names.slice(10));
  throwsErrno(() => vfs.readdir(vfs.stat('workspace', '/d/f01').ino), 'ENOTDIR');
  done();
});

test('rename: files, replacing, directories, and refusals', () => {
  const { vfs, done } = tempVfs();
  const a = vfs.open('workspace', '/a', O_CREAT);
  vfs.write(a.ino, 0, Buffer.from('A'));
  const b = vfs.open('workspace', '/b', O_CREAT);
  vfs.write(b.ino, 0, Buffer.from('BB'));
  vfs.rename('workspace', '/a', 'workspace', '/b'); // replaces b atomically
  assert.equal(text(vfs.read(vfs.stat('workspace', '/b').ino, 0, 9)), 'A');
  throwsErrno(() => vfs.stat('workspace', '/a'), 'ENOENT');
  throwsErrno(() => vfs.read(b.ino, 0, 1), 'EBADF');
  assert.equal(vfs.getUsage().bytes, 1);

  vfs.mkdir('workspace', '/d1');
  vfs.mkdir('workspace', '/d2');
  vfs.open('workspace', '/d1/x', O_CREAT);
  vfs.rename('workspace', '/d1', 'workspace', '/d2'); // empty dir replaced
  assert.equal(vfs.stat('workspace', '/d2/x').kind, 'file');
  vfs.mkdir('workspace', '/d3');
  vfs.open('workspace', '/d3/y', O_CREAT);
  throwsErrno(() => vfs.rename('workspace', '/d2', 'workspace', '/d3'), 'ENOTEMPTY');
  throwsErrno(() => vfs.rename('workspace', '/d2', 'workspace', '/b'), 'ENOTDIR');
  throwsErrno(() => vfs.rename('workspace', '/b', 'workspace', '/d3'), 'EISDIR');
  throwsErrno(() => vfs.rename('workspace', '/d2', 'workspace', '/d2/sub'), 'EINVAL');
  throwsErrno(() => vfs.rename('workspace', '/b', 'memory', '/b'), 'EXDEV');
  throwsErrno(() => vfs.rename('workspace', '/nope', 'workspace', '/x'), 'ENOENT');
  throwsErrno(() => vfs.rename('workspace', '/b', 'workspace', '/nodir/x'), 'ENOENT');
  throwsErrno(() => vfs.rename('workspace', '/b', 'workspace', '/c/'), 'ENOTDIR');
  throwsErrno(() => vfs.rename('workspace', '/', 'workspace', '/r'), 'EBUSY');

  // Moving a directory between parents fixes link counts.
  const rootLinks = vfs.stat('workspace', '/').nlink;
  vfs.rename('workspace', '/d2', 'workspace', '/d3/d2');
  assert.equal(vfs.stat('workspace', '/d3').nlink, 3);
  assert.equal(vfs.stat('workspace', '/').nlink, rootLinks - 1);
  assert.equal(vfs.stat('workspace', '/d3/d2/x').kind, 'file');

  // Renaming a hard link onto its sibling is a no-op.
  vfs.link('workspace', '/b', 'workspace', '/b2');
  vfs.rename('workspace', '/b', 'workspace', '/b2');
  assert.equal(vfs.stat('workspace', '/b').nlink, 2);

  // A symlink is renamed, not its target.
  vfs.symlink('/b', 'workspace', '/sl');
  vfs.rename('workspace', '/sl', 'workspace', '/sl2');
  assert.equal(vfs.readlink('workspace', '/sl2'), '/b');
  assert.equal(vfs.stat('workspace', '/b').kind, 'file');
  done();
});

test('a failed operation leaves nothing behind (atomicity)', () => {
  const { vfs, done } = tempVfs({ maxBytes: 100 });
  const f = vfs.open('workspace', '/f', O_CREAT);
  const before = vfs.statIno(f.ino);
  throwsErrno(() => vfs.write(f.ino, 0, new Uint8Array(200)), 'ENOSPC');
  assert.equal(vfs.statIno(f.ino).size, 0);
  assert.deepEqual(vfs.statIno(f.ino), before);
  assert.equal(vfs.read(f.ino, 0, 10).length, 0);
  assert.deepEqual(vfs.getUsage().bytes, 0);
  done();
});

test('times: writes move mtime, setTimes sets them', () => {
  const { vfs, done } = tempVfs();
  const f = vfs.open('workspace', '/f', O_CREAT);
  vfs.setTimes(f.ino, 5n, 1_000_000_000_000_000_123n);
  const s = vfs.statIno(f.ino);
  assert.equal(s.atimeNs, 5n);
  assert.equal(s.mtimeNs, 1_000_000_000_000_000_123n);
  vfs.write(f.ino, 0, Buffer.from('x'));
  assert.ok(vfs.statIno(f.ino).mtimeNs > 1_000_000_000_000_000_123n);
  vfs.setMode(f.ino, 0o100640);
  assert.equal(vfs.statIno(f.ino).mode, 0o640);
  done();
});
