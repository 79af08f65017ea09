/**
 * WAL flood: a guest writing without pause into a file VFS cannot make its WAL (disk outside the
 * byte quota's accounting) grow past WAL_CHECKPOINT_BYTES plus one commit — the commit that
 * passes the bound checkpoints the WAL, and the next one starts it over, cut back.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CHUNK_SIZE, MAX_HELD_WRITE_BYTES, O_CREAT, O_TRUNC, Vfs, WAL_CHECKPOINT_BYTES } from '../../src/storage/vfs.ts';
import { tempDir } from '../helpers/tmp.ts';

/** One commit of held writes (at most MAX_HELD_WRITE_BYTES): their chunks' pages, leaves, the inode and the counters, with frame headers. */
const ONE_COMMIT_SLACK = 2 * MAX_HELD_WRITE_BYTES;

test('writing 1.5× WAL_CHECKPOINT_BYTES never grows the WAL past the bound plus one commit', { timeout: 60_000 }, () => {
  const dir = tempDir('membrane-wal-flood-');
  const file = join(dir, 'flood.sqlite');
  const vfs = Vfs.open({ file });
  try {
    const chunk = Buffer.alloc(CHUNK_SIZE);
    const total = Math.ceil((1.5 * WAL_CHECKPOINT_BYTES) / CHUNK_SIZE);
    // Rewrite one 32 MiB file over and over: the byte quota never stops the flood.
    const span = (32 * 1024 * 1024) / CHUNK_SIZE;
    const f = vfs.open('workspace', '/flood.bin', O_CREAT | O_TRUNC);
    let largest = 0;
    for (let i = 0; i < total; i++) {
      chunk.fill((i + Math.floor(i / span)) & 0xff); // new bytes at each place every pass (SQLite skips rewriting pages that did not change)
      vfs.write(f.ino, (i % span) * CHUNK_SIZE, chunk, true); // held, as WASI fd_write: a commit per MiB
      if (i % 64 === 0 || i === total - 1) largest = Math.max(largest, existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0);
    }
    assert.ok(largest > WAL_CHECKPOINT_BYTES / 2, `the WAL grew without checkpoints first (${largest} bytes)`);
    assert.ok(largest <= WAL_CHECKPOINT_BYTES + ONE_COMMIT_SLACK, `the WAL stayed within its bound: ${largest} bytes`);
    const now = statSync(`${file}-wal`).size;
    assert.ok(now < largest, `after the checkpoint the WAL was started over and cut back (${now} < ${largest})`);
    assert.equal(vfs.statIno(f.ino).size, 32 * 1024 * 1024);
  } finally {
    vfs.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
