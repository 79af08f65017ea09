/**
 * Staged creation (`openInode({ stage: true })`, WASI path_open with O_CREAT): a new file and its
 * first bytes commit in one transaction — at `release()` (fd_close) at the latest, and before any
 * other operation of the same VFS — without changing what anyone can observe through that VFS.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { O_CREAT, O_EXCL, O_TRUNC, MAX_HELD_WRITE_BYTES, Vfs } from '../../src/storage/index.ts';
import { VfsError } from '../../src/storage/errno.ts';
import { tempDir } from './helpers.ts';

const bytes = (n: number, seed = 1): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + seed) & 0xff));

function errno(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof VfsError) return err.code;
    throw err;
  }
  return 'none';
}

test('create + write + release commit once, and another connection sees the file only then', () => {
  const { dir, cleanup } = tempDir();
  const file = join(dir, 'v.sqlite');
  const vfs = Vfs.open({ file });
  const other = Vfs.open({ file });
  try {
    const h = vfs.openInode('workspace', '/a', O_CREAT | O_TRUNC, { stage: true });
    assert.ok(h.ino < 0, 'a handle, not yet an inode');
    assert.equal(vfs.write(h.ino, 0, bytes(1000)), 1000);
    assert.equal(vfs.write(h.ino, 1000, bytes(24, 9)), 24);
    assert.equal(errno(() => other.stat('workspace', '/a')), 'ENOENT', 'not committed before release');
    vfs.release(h.ino);
    const s = other.stat('workspace', '/a');
    assert.equal(s.size, 1024);
    assert.ok(Buffer.from(other.read(s.ino, 0, 1024)).equals(Buffer.concat([bytes(1000), bytes(24, 9)])));
    assert.equal(other.getUsage().bytes, 1024);
    assert.equal(errno(() => vfs.statIno(h.ino)), 'EBADF', 'a released handle is gone');
  } finally {
    other.close();
    vfs.close();
    cleanup();
  }
});

test('any other operation of the same VFS commits first, so it sees the file; the handle keeps working', () => {
  const vfs = Vfs.open({ file: ':memory:' });
  try {
    const h = vfs.openInode('workspace', '/b', O_CREAT, { stage: true });
    vfs.write(h.ino, 0, bytes(10));
    const s = vfs.stat('workspace', '/b');
    assert.equal(s.size, 10);
    assert.equal(vfs.statIno(h.ino).ino, s.ino, 'the handle now stands for the inode');
    vfs.write(h.ino, 10, bytes(5));
    assert.equal(vfs.statIno(h.ino).size, 15);
    assert.deepEqual(vfs.readdir(vfs.rootIno('workspace')).map((e) => e.name), ['b']);
    vfs.release(h.ino);
    assert.equal(vfs.stat('workspace', '/b').size, 15);
  } finally {
    vfs.close();
  }
});

test('writes past the staged prefix, or over MAX_HELD_WRITE_BYTES, go through and read back exactly', () => {
  const vfs = Vfs.open({ file: ':memory:' });
  try {
    const big = bytes(MAX_HELD_WRITE_BYTES + 100);
    const h = vfs.openInode('workspace', '/c', O_CREAT, { stage: true });
    vfs.write(h.ino, 0, big.subarray(0, 100));
    vfs.write(h.ino, 100, big.subarray(100));
    const g = vfs.openInode('workspace', '/d', O_CREAT, { stage: true });
    vfs.write(g.ino, 50, bytes(10)); // not at the staged end: a hole, then bytes
    vfs.release(h.ino);
    vfs.release(g.ino);
    const c = vfs.stat('workspace', '/c');
    assert.ok(Buffer.from(vfs.read(c.ino, 0, c.size)).equals(big));
    const d = vfs.stat('workspace', '/d');
    assert.ok(Buffer.from(vfs.read(d.ino, 0, d.size)).equals(Buffer.concat([Buffer.alloc(50), bytes(10)])));
  } finally {
    vfs.close();
  }
});

test('the staged bytes are a copy: changing the written buffer afterwards changes nothing', () => {
  const vfs = Vfs.open({ file: ':memory:' });
  try {
    const buf = bytes(64);
    const h = vfs.openInode('workspace', '/e', O_CREAT, { stage: true });
    vfs.write(h.ino, 0, buf);
    buf.fill(0);
    vfs.release(h.ino);
    const s = vfs.stat('workspace', '/e');
    assert.ok(Buffer.from(vfs.read(s.ino, 0, 64)).equals(bytes(64)));
  } finally {
    vfs.close();
  }
});

test('quotas answer where they would without staging: inodes at open, bytes at the write that passes them', () => {
  const vfs = Vfs.open({ file: ':memory:', maxInodes: 4, maxBytes: 1000 }); // 3 roots + 1
  try {
    const h = vfs.openInode('workspace', '/f', O_CREAT, { stage: true });
    assert.equal(errno(() => vfs.openInode('workspace', '/g', O_CREAT, { stage: true })), 'ENOSPC', 'inode quota at open');
    vfs.write(h.ino, 0, bytes(900));
    assert.equal(errno(() => vfs.write(h.ino, 900, bytes(200))), 'ENOSPC', 'byte quota at the write');
    vfs.release(h.ino);
    assert.equal(vfs.stat('workspace', '/f').size, 900);
    assert.deepEqual(vfs.getUsage().bytes, 900);
  } finally {
    vfs.close();
  }
});

test('a name another connection took meanwhile: the commit is refused and release reports it', () => {
  const { dir, cleanup } = tempDir();
  const file = join(dir, 'v.sqlite');
  const vfs = Vfs.open({ file });
  const other = Vfs.open({ file });
  try {
    const h = vfs.openInode('workspace', '/x', O_CREAT | O_EXCL, { stage: true });
    vfs.write(h.ino, 0, bytes(3));
    other.write(other.open('workspace', '/x', O_CREAT).ino, 0, bytes(7, 5));
    assert.equal(errno(() => vfs.release(h.ino)), 'EEXIST');
    assert.equal(vfs.stat('workspace', '/x').size, 7, "the other connection's file is untouched");
    assert.equal(errno(() => vfs.release(h.ino)), 'EBADF', 'the handle is forgotten once reported');
  } finally {
    other.close();
    vfs.close();
    cleanup();
  }
});

test('close and sync commit a staged creation', () => {
  const { dir, cleanup } = tempDir();
  const file = join(dir, 'v.sqlite');
  try {
    const vfs = Vfs.open({ file });
    vfs.write(vfs.openInode('workspace', '/s', O_CREAT, { stage: true }).ino, 0, bytes(4));
    vfs.sync();
    const other = Vfs.open({ file });
    assert.equal(other.stat('workspace', '/s').size, 4, 'after sync');
    vfs.write(vfs.openInode('workspace', '/t', O_CREAT, { stage: true }).ino, 0, bytes(6));
    vfs.close();
    assert.equal(other.stat('workspace', '/t').size, 6, 'after close');
    other.close();
  } finally {
    cleanup();
  }
});
