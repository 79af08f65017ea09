/**
 * Held writes (`write(ino, at, data, true)`, WASI `fd_write` at a descriptor's offset) in a file
 * VFS: writes that continue one another are held in memory, at most `MAX_HELD_WRITE_BYTES`, and
 * commit in one transaction before any other operation of the same VFS — so this connection never
 * sees the difference — with quota refusals at the write that passes the quota and refusals only
 * the commit finds told by the file's next write, sync or release.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { O_CREAT, Vfs } from '../../src/storage/index.ts';
import { tempDir, throwsErrno } from './helpers.ts';

const bytes = (n: number, seed = 1): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + seed) & 0xff));

function pair(options: { maxBytes?: number } = {}): { vfs: Vfs; other: Vfs; done: () => void } {
  const { dir, cleanup } = tempDir();
  const file = join(dir, 'v.sqlite');
  const vfs = Vfs.open({ ...options, file });
  const other = Vfs.open({ ...options, file });
  return { vfs, other, done: () => { other.close(); vfs.close(); cleanup(); } };
}

test('sequential writes are held until another operation; this connection reads them back', () => {
  const { vfs, other, done } = pair();
  try {
    const ino = vfs.open('workspace', '/a', O_CREAT).ino;
    assert.equal(vfs.write(ino, 0, bytes(1000), true), 1000);
    assert.equal(vfs.write(ino, 1000, bytes(24, 9), true), 24);
    assert.equal(other.stat('workspace', '/a').size, 0, 'held, not committed');
    const want = Buffer.concat([bytes(1000), bytes(24, 9)]);
    assert.ok(Buffer.from(vfs.read(ino, 0, 2000)).equals(want), 'a read commits first and sees them');
    assert.equal(other.stat('workspace', '/a').size, 1024);
    assert.equal(other.getUsage().bytes, 1024);
  } finally {
    done();
  }
});

test('the held bytes are a copy, and release commits them', () => {
  const { vfs, other, done } = pair();
  try {
    const ino = vfs.open('workspace', '/b', O_CREAT).ino;
    const buf = bytes(64);
    vfs.write(ino, 0, buf, true);
    buf.fill(0);
    vfs.release(ino);
    assert.ok(Buffer.from(other.read(ino, 0, 64)).equals(bytes(64)));
  } finally {
    done();
  }
});

test('a write that does not continue the span, or another file, commits it first; contents are exact', () => {
  const { vfs, other, done } = pair();
  try {
    const a = vfs.open('workspace', '/a', O_CREAT).ino;
    const b = vfs.open('workspace', '/b', O_CREAT).ino;
    vfs.write(a, 0, bytes(100), true);
    vfs.write(a, 50, bytes(10, 3), true); // an overwrite inside the span: not a continuation
    assert.equal(other.stat('workspace', '/a').size, 100, 'the first span committed');
    vfs.write(b, 0, bytes(5), true);
    assert.equal(other.stat('workspace', '/a').size, 100);
    vfs.write(a, 200, bytes(10, 4), true); // past the end: a hole, then bytes
    assert.equal(other.stat('workspace', '/b').size, 5, 'writing elsewhere committed /b');
    vfs.flush();
    const want = Buffer.concat([bytes(100)]);
    bytes(10, 3).copy(want, 50);
    assert.ok(Buffer.from(other.read(a, 0, 1000)).equals(Buffer.concat([want, Buffer.alloc(100), bytes(10, 4)])));
  } finally {
    done();
  }
});

test('the byte quota answers at the write that passes it, held bytes counted', () => {
  const { vfs, done } = pair({ maxBytes: 1000 });
  try {
    const ino = vfs.open('workspace', '/q', O_CREAT).ino;
    vfs.write(ino, 0, bytes(600), true);
    vfs.write(ino, 600, bytes(300), true);
    throwsErrno(() => vfs.write(ino, 900, bytes(200), true), 'ENOSPC');
    vfs.write(ino, 900, bytes(100), true);
    assert.equal(vfs.getUsage().bytes, 1000);
    assert.equal(vfs.statIno(ino).size, 1000);
  } finally {
    done();
  }
});

test('a refusal only the commit finds (another connection used the quota) is told by release', () => {
  const { vfs, other, done } = pair({ maxBytes: 1000 });
  try {
    const ino = vfs.open('workspace', '/r', O_CREAT).ino;
    vfs.write(ino, 0, bytes(600), true);
    other.write(other.open('workspace', '/s', O_CREAT).ino, 0, bytes(600));
    throwsErrno(() => vfs.release(ino), 'ENOSPC');
    vfs.release(ino); // told once
    assert.equal(vfs.statIno(ino).size, 0, 'the refused span left nothing');
  } finally {
    done();
  }
});

test('a refusal found when a write commits the span is that write’s errno, and nothing of it is held', () => {
  const { vfs, other, done } = pair({ maxBytes: 1000 });
  try {
    const ino = vfs.open('workspace', '/w', O_CREAT).ino;
    vfs.write(ino, 0, bytes(600), true);
    other.write(other.open('workspace', '/s', O_CREAT).ino, 0, bytes(600));
    throwsErrno(() => vfs.write(ino, 0, bytes(10), true), 'ENOSPC');
    vfs.release(ino);
    assert.equal(vfs.statIno(ino).size, 0);
  } finally {
    done();
  }
});
