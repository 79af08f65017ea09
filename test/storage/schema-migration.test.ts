/** A schema 2 VFS database (AUTOINCREMENT dirents, an inodes (volume) index) is migrated to 3 on open. */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openDatabase } from '../../src/storage/sqlite.ts';
import { O_CREAT, Vfs } from '../../src/storage/vfs.ts';
import { SCHEMA_VERSION } from '../../src/storage/vfs-schema.ts';
import { tempDir } from './helpers.ts';

test('schema 2 → 3 keeps every entry and its readdir cookie, drops the extra b-trees', () => {
  const { dir, cleanup } = tempDir();
  const file = join(dir, 'v2.sqlite');
  try {
    const vfs = Vfs.open({ file });
    vfs.mkdir('workspace', '/d');
    for (const name of ['a', 'b', 'c', 'd']) vfs.write(vfs.open('workspace', `/d/${name}`, O_CREAT).ino, 0, Buffer.from(name));
    vfs.unlink('workspace', '/d/b');
    const d = vfs.stat('workspace', '/d').ino;
    const before = vfs.readdir(d);
    vfs.close();

    // Turn it back into what schema 2 wrote.
    const db = openDatabase(file);
    db.exec(`
      CREATE TABLE dirents_v2 (seq INTEGER PRIMARY KEY AUTOINCREMENT,
        parent INTEGER NOT NULL REFERENCES inodes (ino) ON DELETE CASCADE, name TEXT NOT NULL,
        ino INTEGER NOT NULL REFERENCES inodes (ino) ON DELETE CASCADE, UNIQUE (parent, name)) STRICT;
      INSERT INTO dirents_v2 SELECT seq, parent, name, ino FROM dirents;
      DROP TABLE dirents;
      ALTER TABLE dirents_v2 RENAME TO dirents;
      CREATE INDEX dirents_ino ON dirents (ino);
      CREATE INDEX dirents_parent_seq ON dirents (parent, seq);
      CREATE INDEX inodes_volume ON inodes (volume);
      UPDATE meta SET value = 2 WHERE key = 'schema_version';`);
    db.close();

    const again = Vfs.open({ file });
    try {
      assert.deepEqual(again.readdir(d), before, 'same entries, same cookies');
      const afterFirst = again.readdir(d, (before[0] as { next: number }).next);
      assert.deepEqual(afterFirst.map((e) => e.name), ['c', 'd'], 'an old cookie resumes where it did');
      assert.equal(Buffer.from(again.read(again.stat('workspace', '/d/c').ino, 0, 1)).toString(), 'c');
      again.write(again.open('workspace', '/d/e', O_CREAT).ino, 0, Buffer.from('e'));
      assert.deepEqual(again.readdir(d).map((e) => e.name), ['a', 'c', 'd', 'e']);
      again.clearVolume('workspace');
      assert.deepEqual(again.readdir(again.rootIno('workspace')), []);
      assert.equal(again.getUsage().inodes, 3, 'only the three roots are left');
    } finally {
      again.close();
    }
    const check = openDatabase(file, { readonly: true });
    try {
      const sql = (check.prepare("SELECT sql FROM sqlite_schema WHERE name = 'dirents'").get() as { sql: string }).sql;
      assert.doesNotMatch(sql, /AUTOINCREMENT/);
      assert.equal(check.prepare("SELECT 1 FROM sqlite_schema WHERE name = 'inodes_volume'").get(), undefined);
      assert.equal((check.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: number }).value, SCHEMA_VERSION);
      assert.equal(SCHEMA_VERSION, 3);
    } finally {
      check.close();
    }
  } finally {
    cleanup();
  }
});
