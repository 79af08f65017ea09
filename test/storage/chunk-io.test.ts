/**
 * Chunked file I/O: scatter reads into several targets, writes that skip or do the
 * read-modify-write of a chunk, appends, the schema 1 → 2 migration, durability levels.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { openDatabase, type Database } from '../../src/storage/sqlite.ts';
import { CHUNK_SIZE, O_CREAT, Vfs } from '../../src/storage/vfs.ts';
import { tempDir, tempVfs, throwsErrno } from './helpers.ts';

test('readInto fills several targets in order, across chunks and holes, short at end of file', () => {
  const { vfs, done } = tempVfs();
  try {
    const f = vfs.open('workspace', '/f', O_CREAT);
    const expected = Buffer.alloc(3 * CHUNK_SIZE + 100);
    const a = randomBytes(CHUNK_SIZE + 10);
    vfs.write(f.ino, 5, a);
    a.copy(expected, 5);
    const b = randomBytes(50); // after a hole of more than a chunk
    vfs.write(f.ino, expected.length - 50, b);
    b.copy(expected, expected.length - 50);
    for (const [offset, sizes] of [
      [0, [1, 0, CHUNK_SIZE, 7]],
      [CHUNK_SIZE - 3, [4, 2 * CHUNK_SIZE, 0]],
      [3, [expected.length]],
      [expected.length - 60, [30, 30, 30]],
    ] as const) {
      const targets = sizes.map((n) => Buffer.alloc(n, 0xee));
      const n = vfs.readInto(f.ino, offset, targets);
      const want = expected.subarray(offset, Math.min(expected.length, offset + sizes.reduce((x, y) => x + y, 0)));
      assert.equal(n, want.length, `count at ${offset}`);
      assert.ok(Buffer.concat(targets).subarray(0, n).equals(want), `bytes at ${offset}`);
    }
    assert.equal(vfs.readInto(f.ino, expected.length + 10, [Buffer.alloc(10)]), 0);
    const hole = vfs.open('workspace', '/hole', O_CREAT).ino; // grown by truncate: no chunk at all
    vfs.truncate(hole, 500);
    const into = [Buffer.alloc(300, 0xee), Buffer.alloc(300, 0xee)];
    assert.equal(vfs.readInto(hole, 10, into), 490);
    assert.ok(Buffer.concat(into).subarray(0, 490).every((b) => b === 0));
    assert.ok(Buffer.concat(into).subarray(490).every((b) => b === 0xee));
  } finally {
    done();
  }
});

test('partial chunk writes keep the bytes around them, whole ones replace, gaps read as zeros', () => {
  const { vfs, done } = tempVfs();
  try {
    const f = vfs.open('workspace', '/f', O_CREAT);
    const model = Buffer.alloc(3 * CHUNK_SIZE);
    let size = 0;
    const write = (at: number, bytes: Buffer): void => {
      vfs.write(f.ino, at, bytes);
      bytes.copy(model, at);
      size = Math.max(size, at + bytes.length);
    };
    write(0, randomBytes(100)); // a short first chunk
    write(0, randomBytes(40)); // starts at the chunk, covers only part of what is stored
    write(200, randomBytes(10)); // past the end, same chunk: a gap of zeros
    write(CHUNK_SIZE - 5, randomBytes(CHUNK_SIZE + 10)); // two edges, one whole chunk
    write(CHUNK_SIZE, randomBytes(CHUNK_SIZE)); // exactly one whole chunk
    write(2 * CHUNK_SIZE + 7, randomBytes(3)); // mid-chunk where nothing was stored
    write(2 * CHUNK_SIZE, randomBytes(5)); // starts at the chunk, stored bytes after it remain
    assert.equal(vfs.statIno(f.ino).size, size);
    assert.ok(Buffer.from(vfs.read(f.ino, 0, size)).equals(model.subarray(0, size)));
  } finally {
    done();
  }
});

test('append writes at the end in one operation; over quota it changes nothing', () => {
  const { vfs, done } = tempVfs({ maxBytes: 1000 });
  try {
    const f = vfs.open('workspace', '/log', O_CREAT);
    assert.equal(vfs.append(f.ino, Buffer.from('one\n')), 0);
    assert.equal(vfs.append(f.ino, Buffer.from('two\n')), 4);
    throwsErrno(() => vfs.append(f.ino, Buffer.alloc(1000)), 'ENOSPC');
    assert.equal(Buffer.from(vfs.read(f.ino, 0, 100)).toString(), 'one\ntwo\n');
    assert.equal(vfs.getUsage().bytes, 8);
  } finally {
    done();
  }
});

test('a schema 1 database (WITHOUT ROWID chunks) is migrated on open with its contents', () => {
  const { dir, cleanup } = tempDir();
  const file = join(dir, 'old.sqlite');
  const data = randomBytes(2 * CHUNK_SIZE + 3);
  try {
    const vfs = Vfs.open({ file });
    vfs.write(vfs.open('workspace', '/f', O_CREAT).ino, 0, data);
    vfs.close();
    const db = openDatabase(file);
    db.exec(`
      CREATE TABLE chunks_v1 (ino INTEGER NOT NULL REFERENCES inodes (ino) ON DELETE CASCADE, idx INTEGER NOT NULL,
        data BLOB NOT NULL, PRIMARY KEY (ino, idx)) STRICT, WITHOUT ROWID;
      INSERT INTO chunks_v1 SELECT ino, idx, data FROM chunks;
      DROP TABLE chunks;
      ALTER TABLE chunks_v1 RENAME TO chunks;
      UPDATE meta SET value = 1 WHERE key = 'schema_version';`);
    db.close();

    const again = Vfs.open({ file });
    const s = again.stat('workspace', '/f');
    assert.ok(Buffer.from(again.read(s.ino, 0, s.size)).equals(data));
    again.write(s.ino, 1, Buffer.from('x'));
    again.close();
    const check = openDatabase(file, { readonly: true });
    const sql = (check.prepare("SELECT sql FROM sqlite_schema WHERE name = 'chunks'").get() as { sql: string }).sql;
    assert.doesNotMatch(sql, /WITHOUT ROWID/);
    assert.equal((check.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: number }).value, 3);
    check.close();
  } finally {
    cleanup();
  }
});

test('a VFS database survives a process crash per write (synchronous=NORMAL) and syncs on demand', () => {
  const { dir, cleanup } = tempDir();
  try {
    const db = openDatabase(join(dir, 'plain.sqlite'));
    assert.equal(db.pragma('synchronous', { simple: true }), 2, 'FULL unless asked otherwise');
    db.close();
    for (const [durability, level] of [[undefined, 1], ['power-loss', 2]] as const) {
      const file = join(dir, `${durability ?? 'default'}.sqlite`);
      const vfs = Vfs.open(durability === undefined ? { file } : { file, durability });
      assert.equal(vfs.config.durability, durability ?? 'process-crash');
      // The VFS's own connection (synchronous is per connection, so only it can tell).
      const own = (vfs as unknown as { db: Database }).db;
      assert.equal(own.pragma('synchronous', { simple: true }), level);
      vfs.write(vfs.open('workspace', '/f', O_CREAT).ino, 0, Buffer.from('kept'));
      vfs.sync();
      vfs.close();
      throwsErrno(() => vfs.sync(), 'EBADF');
    }
    const mem = Vfs.open({ file: ':memory:' });
    mem.sync();
    mem.close();
  } finally {
    cleanup();
  }
});

test('a sequential reader never sees stale bytes after its own or another connection’s writes', () => {
  const { vfs, file, done } = tempVfs();
  const other = Vfs.open({ file });
  try {
    const ino = vfs.open('workspace', '/f', O_CREAT).ino;
    vfs.write(ino, 0, Buffer.alloc(2 * CHUNK_SIZE, 1));
    const readAt = (v: Vfs, at: number): number => {
      const b = Buffer.alloc(100);
      v.readInto(ino, at, [b]);
      return b[0] as number;
    };
    assert.equal(readAt(vfs, CHUNK_SIZE - 50), 1); // ends inside chunk 1: remembered
    other.write(ino, CHUNK_SIZE, Buffer.alloc(CHUNK_SIZE, 2)); // another connection rewrites it
    assert.equal(readAt(vfs, CHUNK_SIZE + 10), 2);
    vfs.write(ino, CHUNK_SIZE, Buffer.alloc(10, 3)); // this connection patches it
    assert.equal(readAt(vfs, CHUNK_SIZE + 5), 3);
    other.truncate(ino, CHUNK_SIZE + 1);
    assert.equal(vfs.readInto(ino, CHUNK_SIZE, [Buffer.alloc(100)]), 1);
  } finally {
    other.close();
    done();
  }
});
