// The SQLite binding must let the garbage collector finalize a closed connection, its statements
// and an iterator while the process idles. better-sqlite3 12.x on Node 24 aborts the process there
// (SIGABRT, "Assertion failed: (env) != nullptr" in ~Database/~Statement) — a long-running
// `membrane serve` would die of it. Runs a fresh Node (the one running this test) so the idle
// collection happens in a process with nothing else keeping the objects alive.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { tempDir } from '../helpers/tmp.ts';

const SQLITE_TS = pathToFileURL(join(dirname(fileURLToPath(import.meta.url)), '../../src/storage/sqlite.ts')).href;
/** How long the child idles after dropping its objects; the collector's idle pass comes well within it. */
const IDLE_MS = 1500;

test('connections, statements and iterators dropped after close are collected while idle without killing the process', () => {
  const dir = tempDir('membrane-sqlite-gc-');
  try {
    const script = `
      import { openDatabase } from ${JSON.stringify(SQLITE_TS)};
      (() => {
        for (const file of [':memory:', ${JSON.stringify(join(dir, 'gc.sqlite'))}]) {
          const db = openDatabase(file);
          db.exec('CREATE TABLE t (x INTEGER)');
          db.transaction(() => db.prepare('INSERT INTO t VALUES (1), (2)').run())();
          for (const row of db.prepare('SELECT x FROM t').iterate()) void row;
          db.prepare('SELECT x FROM t').raw(true).get();
          db.close();
        }
      })();
      let junk = [];
      for (let i = 0; i < 2e5; i++) junk.push({ i, s: 'x'.repeat(50) });
      junk = null;
      setTimeout(() => console.log('idle over'), ${IDLE_MS});
    `;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, MEMBRANE_HOME: dir },
    });
    const why = /Assertion failed[^\n]*/.exec(r.stderr)?.[0] ?? r.stderr.trim().split('\n').slice(-3).join(' | ');
    assert.equal(r.signal, null, `the child was killed by ${String(r.signal)} on Node ${process.version}: ${why}`);
    assert.equal(r.status, 0, `the child exited ${String(r.status)} on Node ${process.version}: ${why}`);
    assert.equal(r.stdout.trim(), 'idle over');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
