/** How databases are opened: pragmas, file modes, no extensions, where named VFSs live. */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { membraneHome, openDatabase } from '../../src/storage/sqlite.ts';
import { Vfs } from '../../src/storage/vfs.ts';
import { SandboxError } from '../../src/errors.ts';
import { tempDir } from './helpers.ts';

test('a database is WAL, synchronous=FULL, foreign keys on, trusted_schema off', () => {
  const { dir, cleanup } = tempDir();
  const db = openDatabase(join(dir, 'x.sqlite'));
  assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
  assert.equal(db.pragma('synchronous', { simple: true }), 2);
  assert.equal(db.pragma('foreign_keys', { simple: true }), 1);
  assert.equal(db.pragma('trusted_schema', { simple: true }), 0);
  db.close();
  cleanup();
});

test('load_extension is refused, through SQL and through the binding', () => {
  const db = openDatabase(':memory:');
  assert.throws(() => db.prepare("SELECT load_extension('/tmp/evil.so')").get());
  const loader = (db as unknown as { loadExtension: (p: string) => void }).loadExtension;
  assert.throws(() => loader.call(db, '/tmp/evil.so'), (e: unknown) => e instanceof SandboxError && e.code === 'NOT_CAPABLE');
  db.close();
});

test('database files are 0600 and a created parent directory is 0700', () => {
  const { dir, cleanup } = tempDir();
  const file = join(dir, 'nested', 'deeper', 'x.sqlite');
  const db = openDatabase(file);
  db.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1);');
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    assert.ok(existsSync(f), f);
    assert.equal(statSync(f).mode & 0o777, 0o600, f);
  }
  assert.equal(statSync(join(dir, 'nested', 'deeper')).mode & 0o777, 0o700);
  db.close();
  cleanup();
});

test('named VFSs live in $MEMBRANE_HOME/vfs (0700); names cannot traverse', () => {
  const { dir, cleanup } = tempDir();
  const saved = process.env['MEMBRANE_HOME'];
  process.env['MEMBRANE_HOME'] = join(dir, 'home');
  mkdirSync(join(dir, 'home'), { mode: 0o755 });
  try {
    assert.equal(membraneHome(), join(dir, 'home'));
    const vfs = Vfs.open({ name: 'proj-1.a' });
    assert.equal(vfs.config.file, join(dir, 'home', 'vfs', 'proj-1.a.sqlite'));
    vfs.close();
    assert.equal(statSync(join(dir, 'home')).mode & 0o777, 0o700);
    assert.equal(statSync(join(dir, 'home', 'vfs')).mode & 0o777, 0o700);
    assert.equal(statSync(join(dir, 'home', 'vfs', 'proj-1.a.sqlite')).mode & 0o777, 0o600);
    for (const bad of ['../x', '..', '.hidden', 'a/b', 'a\0b', '', 'x'.repeat(65)]) {
      assert.throws(() => Vfs.open({ name: bad }), (e: unknown) => e instanceof SandboxError && e.code === 'POLICY_INVALID', bad);
    }
  } finally {
    if (saved === undefined) delete process.env['MEMBRANE_HOME'];
    else process.env['MEMBRANE_HOME'] = saved;
    cleanup();
  }
});
