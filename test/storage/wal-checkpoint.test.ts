/**
 * A file VFS lets its WAL grow to WAL_CHECKPOINT_BYTES before a commit checkpoints it, so a run
 * that writes less never pays the checkpoint in its calls; closing the (last) connection does it.
 * Neither changes what a reader sees or what survives: the WAL is part of the database.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import { CHUNK_SIZE, O_CREAT, Vfs } from '../../src/storage/vfs.ts';
import { tempVfs } from './helpers.ts';

const pattern = (i: number): Buffer => Buffer.alloc(CHUNK_SIZE, i & 0xff);
const walSize = (file: string): number => (existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0);

test('16 MiB written in 64 KiB commits stay in the WAL (no checkpoint); close checkpoints, and the bytes read back', () => {
  const { vfs, file, done } = tempVfs();
  try {
    const n = 256; // 16 MiB
    const f = vfs.open('workspace', '/big.bin', O_CREAT);
    for (let i = 0; i < n; i++) vfs.write(f.ino, i * CHUNK_SIZE, pattern(i));
    // SQLite's default (1000 pages, ~4 MiB) would have checkpointed and restarted the WAL by now.
    assert.ok(walSize(file) >= n * CHUNK_SIZE, `the WAL holds every commit: ${walSize(file)} bytes`);
    assert.ok(statSync(file).size < CHUNK_SIZE * 4, 'nothing was copied into the database file yet');
    // A second connection (another run, the host) sees every commit while the WAL holds them.
    const other = Vfs.open({ file });
    try {
      const s = other.stat('workspace', '/big.bin');
      assert.equal(s.size, n * CHUNK_SIZE);
      assert.ok(Buffer.from(other.read(s.ino, 200 * CHUNK_SIZE, CHUNK_SIZE)).equals(pattern(200)));
    } finally {
      other.close(); // not the last connection: no checkpoint here
    }
    vfs.close();
    assert.equal(existsSync(`${file}-wal`), false, 'the last close checkpoints and removes the WAL');
    assert.ok(statSync(file).size >= n * CHUNK_SIZE, 'the database file holds the bytes now');
    const again = Vfs.open({ file });
    try {
      const s = again.stat('workspace', '/big.bin');
      for (const i of [0, 1, 127, 255]) assert.ok(Buffer.from(again.read(s.ino, i * CHUNK_SIZE, CHUNK_SIZE)).equals(pattern(i)), `chunk ${i}`);
    } finally {
      again.close();
    }
  } finally {
    done();
  }
});
