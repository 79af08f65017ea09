/**
 * Held-write flood: a guest streaming sequential writes into a file VFS cannot make the engine
 * hold more than MAX_HELD_WRITE_BYTES of them uncommitted (the bytes a `kill -9` of the engine may
 * take from it, and the host memory they take): past it the held span commits and a new one
 * begins, and what another connection reads is never further behind than that.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { MAX_HELD_WRITE_BYTES, O_CREAT, Vfs } from '../../src/storage/index.ts';
import { tempDir } from '../storage/helpers.ts';

const bytes = (n: number, seed = 1): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + seed) & 0xff));

test('at most MAX_HELD_WRITE_BYTES are ever held; a longer stream reads back exactly', () => {
  const { dir, cleanup } = tempDir();
  const file = join(dir, 'v.sqlite');
  const vfs = Vfs.open({ file });
  const other = Vfs.open({ file });
  try {
    const ino = vfs.open('workspace', '/big', O_CREAT).ino;
    const piece = 64 * 1024;
    const total = 3 * MAX_HELD_WRITE_BYTES + 5 * piece;
    let most = 0;
    for (let at = 0; at < total; at += piece) {
      vfs.write(ino, at, bytes(piece, at / piece), true);
      const held = at + piece - other.stat('workspace', '/big').size;
      assert.ok(held <= MAX_HELD_WRITE_BYTES, `held ${held} bytes`);
      most = Math.max(most, held);
    }
    assert.equal(most, MAX_HELD_WRITE_BYTES, 'the writes were held up to the bound');
    vfs.release(ino);
    const got = Buffer.from(other.read(ino, 0, total));
    for (let at = 0; at < total; at += piece) assert.ok(got.subarray(at, at + piece).equals(bytes(piece, at / piece)), `piece at ${at}`);
  } finally {
    other.close();
    vfs.close();
    cleanup();
  }
});
