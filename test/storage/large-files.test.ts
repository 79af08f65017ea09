/** File contents across chunk boundaries: big writes at odd offsets, sparse holes, truncation. */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { CHUNK_SIZE, MAX_FILE_SIZE, O_CREAT, Vfs } from '../../src/storage/vfs.ts';
import { tempVfs, throwsErrno } from './helpers.ts';

test('8 MiB written in odd-sized pieces at odd offsets reads back exactly, also after reopening', () => {
  const { vfs, file, done } = tempVfs();
  const size = 8 * 1024 * 1024 + 13;
  const expected = Buffer.alloc(size);
  const f = vfs.open('workspace', '/big.bin', O_CREAT);
  let at = 7;
  const piece = 100_003; // not a divisor of the chunk size
  while (at < size) {
    const bytes = randomBytes(Math.min(piece, size - at));
    assert.equal(vfs.write(f.ino, at, bytes), bytes.length);
    bytes.copy(expected, at);
    at += bytes.length;
  }
  assert.equal(vfs.statIno(f.ino).size, size);
  assert.ok(Buffer.from(vfs.read(f.ino, 0, size)).equals(expected));
  // Overwrite a range straddling several chunk boundaries.
  const patch = randomBytes(3 * CHUNK_SIZE + 17);
  vfs.write(f.ino, 5 * CHUNK_SIZE - 9, patch);
  patch.copy(expected, 5 * CHUNK_SIZE - 9);
  for (const [off, len] of [[0, 1], [CHUNK_SIZE - 1, 2], [5 * CHUNK_SIZE - 10, patch.length + 2], [size - 5, 100]] as const) {
    assert.ok(Buffer.from(vfs.read(f.ino, off, len)).equals(expected.subarray(off, off + len)), `range ${off}+${len}`);
  }
  vfs.close();
  const again = Vfs.open({ file });
  assert.ok(Buffer.from(again.read(f.ino, 0, size)).equals(expected));
  again.close();
  done();
});

test('sparse holes read as zeros and count toward size', () => {
  const { vfs, done } = tempVfs();
  const f = vfs.open('workspace', '/sparse', O_CREAT);
  const far = 10 * CHUNK_SIZE + 123;
  vfs.write(f.ino, far, Buffer.from('end'));
  assert.equal(vfs.statIno(f.ino).size, far + 3);
  const all = Buffer.from(vfs.read(f.ino, 0, far + 3));
  assert.ok(all.subarray(0, far).every((b) => b === 0));
  assert.equal(all.subarray(far).toString(), 'end');
  assert.equal(vfs.read(f.ino, far + 3, 10).length, 0, 'read at EOF is empty');
  assert.equal(vfs.read(f.ino, far + 100, 10).length, 0, 'read past EOF is empty');
  done();
});

test('truncate shrinks, and growing again shows zeros, not the old bytes', () => {
  const { vfs, done } = tempVfs();
  const f = vfs.open('workspace', '/t', O_CREAT);
  vfs.write(f.ino, 0, Buffer.alloc(3 * CHUNK_SIZE, 0xab));
  vfs.truncate(f.ino, CHUNK_SIZE + 5);
  assert.equal(vfs.statIno(f.ino).size, CHUNK_SIZE + 5);
  vfs.truncate(f.ino, 3 * CHUNK_SIZE);
  const data = Buffer.from(vfs.read(f.ino, 0, 3 * CHUNK_SIZE));
  assert.ok(data.subarray(0, CHUNK_SIZE + 5).every((b) => b === 0xab));
  assert.ok(data.subarray(CHUNK_SIZE + 5).every((b) => b === 0));
  // A write past a shrunk tail: the gap is zeros too.
  vfs.truncate(f.ino, 10);
  vfs.write(f.ino, 20, Buffer.from('z'));
  assert.deepEqual([...vfs.read(f.ino, 8, 13)], [0xab, 0xab, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x7a]);
  vfs.truncate(f.ino, 0);
  assert.equal(vfs.read(f.ino, 0, 100).length, 0);
  assert.equal(vfs.getUsage().bytes, 0);
  done();
});

test('I/O on directories, symlinks and bad offsets fails cleanly', () => {
  const { vfs, done } = tempVfs();
  vfs.mkdir('workspace', '/d');
  vfs.symlink('/d', 'workspace', '/s');
  const d = vfs.stat('workspace', '/d').ino;
  const s = vfs.stat('workspace', '/s', { followFinal: false }).ino;
  const f = vfs.open('workspace', '/f', O_CREAT).ino;
  throwsErrno(() => vfs.read(d, 0, 1), 'EISDIR');
  throwsErrno(() => vfs.write(d, 0, Buffer.from('x')), 'EISDIR');
  throwsErrno(() => vfs.read(s, 0, 1), 'EINVAL');
  throwsErrno(() => vfs.write(f, -1, Buffer.from('x')), 'EINVAL');
  throwsErrno(() => vfs.write(f, 1.5, Buffer.from('x')), 'EINVAL');
  throwsErrno(() => vfs.write(f, MAX_FILE_SIZE, Buffer.from('x')), 'EFBIG');
  throwsErrno(() => vfs.read(999_999, 0, 1), 'EBADF');
  done();
});
