/**
 * bench/sqlite-features.ts's probes of better-sqlite3 (any copy: `--bs3-module`, `--bs3-binding`),
 * one per row of its table, each returning what it saw. Every connection and statement is kept
 * reachable (`keepAll`): 12.x on Node 24 aborts when the collector finalizes one.
 */

import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ROOT } from './lib.ts';
import { bs3BindingPath, bs3Options, keepAll, type Bs3, type Bs3Database } from './sqlite-bindings.ts';
import { BIG, attempt, busyProbe, freshFile, heapLimitProbe, survivesIdleGc, warningOnLoad, type Probe } from './sqlite-probes.ts';

export function bs3Features(bs3: Bs3): Record<string, Probe> {
  const open = (file: string, o = {}): Bs3Database => keepAll(new bs3.Database(file, bs3Options(bs3, o)));
  const seeded = (): string => {
    const file = freshFile();
    const db = open(file);
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, b BLOB); INSERT INTO t VALUES (1, \'one\', x\'0102\')');
    db.close();
    return file;
  };
  const binding = bs3BindingPath();
  // A SQLite extension, not a Node addon: any build of it loads into any SQLite.
  const extension = [binding === undefined ? '' : join(dirname(binding), 'test_extension.node'), join(bs3.dir, 'build/Release/test_extension.node'), join(ROOT, 'node_modules/better-sqlite3/build/Release/test_extension.node')].find(
    (f) => f !== '' && existsSync(f),
  ) ?? 'test_extension.node';
  const setup = `const D = require(${JSON.stringify(bs3.dir)}); const nb = ${binding === undefined ? 'undefined' : `require(${JSON.stringify(binding)})`}; const open = () => new D(':memory:', nb ? { nativeBinding: nb } : {});`;
  return {
    warning: () => warningOnLoad(`${setup} open().close();`),
    gcIdle: () => survivesIdleGc(setup),
    version: () => bs3.sqliteVersion,
    readonlyOpen: () => {
      const db = open(seeded(), { readonly: true, fileMustExist: true });
      const r = attempt(() => db.prepare("INSERT INTO t (v) VALUES ('x')").run());
      db.close();
      return r.ok ? 'no: write succeeded' : `yes (\`{ readonly: true }\`; write → ${r.error.split(':')[0]})`;
    },
    busy: () => busyProbe(
      (file) => open(file, { timeout: 0 }),
      (file) => open(file, { timeout: 300 }),
      '`{ timeout }`, default 5000 ms',
    ),
    pragma: () => {
      const db = open(freshFile());
      const mode = db.pragma('journal_mode = WAL', { simple: true });
      const fk = db.pragma('foreign_keys', { simple: true });
      db.close();
      return `yes: \`db.pragma()\` → journal_mode=${String(mode)}, foreign_keys default ${String(fk)}`;
    },
    transactions: () => {
      const db = open(freshFile());
      db.exec('CREATE TABLE t (x)');
      const tx = db.transaction((x: number) => {
        db.prepare('INSERT INTO t VALUES (?)').run(x);
        return db.inTransaction;
      });
      const inside = tx.immediate(1);
      const nested = db.transaction(() => attempt(() => tx(2)).ok)();
      db.exec('BEGIN EXCLUSIVE; COMMIT');
      db.close();
      return `yes: \`.transaction()\` (+.immediate/.exclusive), nests as SAVEPOINT: ${nested ? 'yes' : 'no'}; inTransaction inside: ${String(inside)}`;
    },
    safeIntegers: () => {
      const db = open(':memory:');
      const stmt = db.prepare(`SELECT ${BIG} AS n`);
      const plain = stmt.get() as { n: number };
      const safe = stmt.safeIntegers(true).get() as { n: bigint };
      db.defaultSafeIntegers(true);
      const dflt = db.prepare(`SELECT ${BIG} AS n`).get() as { n: bigint };
      db.close();
      return `yes: \`safeIntegers()\`/\`defaultSafeIntegers()\` → ${typeof safe.n} ${String(safe.n === BIG && dflt.n === BIG)}; without: ${typeof plain.n} ${String(plain.n)} (silently rounded)`;
    },
    raw: () => {
      const db = open(':memory:');
      const row = db.prepare('SELECT 1 AS a, 2 AS b').raw(true).get();
      db.close();
      return `yes: \`raw(true)\` → ${JSON.stringify(row)}`;
    },
    columns: () => {
      const db = open(seeded());
      const cols = db.prepare('SELECT id, v AS value FROM t').columns();
      db.close();
      return `yes: ${cols.map((c) => `${c.name}(${c.table}.${c.column} ${c.type})`).join(', ')}`;
    },
    readerReadonly: () => {
      const db = open(seeded());
      const flags = (sql: string) => {
        const s = db.prepare(sql);
        return `${s.reader ? 'R' : '-'}${s.readonly ? 'O' : '-'}`;
      };
      const out = `yes: SELECT ${flags('SELECT * FROM t')}, INSERT…RETURNING ${flags("INSERT INTO t (v) VALUES ('x') RETURNING id")}, PRAGMA user_version=1 ${flags('PRAGMA user_version = 1')}, PRAGMA user_version ${flags('PRAGMA user_version')}`;
      db.close();
      return out + ' (R reader, O readonly)';
    },
    authorizer: () => 'no (no setAuthorizer in the JS API)',
    multiStatement: () => {
      const db = open(seeded());
      const r = attempt(() => db.prepare('SELECT 1; DELETE FROM t'));
      db.close();
      return r.ok ? 'no: accepted (tail ignored)' : `refused: ${r.error}`;
    },
    iterate: () => {
      const db = open(':memory:');
      let n = 0;
      for (const _ of db.prepare('SELECT value FROM json_each(\'[1,2,3]\')').iterate()) n++;
      db.close();
      return `yes (${n} rows)`;
    },
    blobType: () => {
      const db = open(seeded());
      const b = (db.prepare('SELECT b FROM t').get() as { b: unknown }).b;
      db.close();
      return Buffer.isBuffer(b) ? 'Buffer' : (b as object).constructor.name;
    },
    serialize: () => {
      const db = open(seeded());
      const bytes = db.serialize();
      db.close();
      return `yes: \`serialize()\` → Buffer of ${bytes.byteLength} B`;
    },
    deserialize: () => {
      const src = open(seeded());
      const bytes = src.serialize();
      src.close();
      const raw = attempt(() => {
        const db = open(Buffer.from(bytes) as unknown as string, { readonly: true });
        try {
          return (db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n;
        } finally {
          db.close();
        }
      });
      const patched = Buffer.from(bytes);
      patched[18] = patched[19] = 1;
      const db = open(patched as unknown as string, { readonly: true });
      const n = (db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n;
      const write = attempt(() => db.prepare("INSERT INTO t (v) VALUES ('x')").run());
      db.close();
      return `yes: \`new Database(buffer, { readonly: true })\`; rows ${n}; write → ${write.ok ? 'succeeded' : write.error.split(':')[0]}; WAL-header copy unpatched: ${raw.ok ? 'reads' : raw.error.split(':')[0]}`;
    },
    loadExtensionApi: () => {
      if (!existsSync(extension)) return `untested: ${extension} missing`;
      const db = open(':memory:');
      const r = attempt(() => db.loadExtension(extension));
      db.close();
      return r.ok ? 'no: `db.loadExtension()` loads native code by default (src/storage/sqlite.ts removes the method)' : `yes: ${r.error}`;
    },
    loadExtensionSql: () => {
      const db = open(':memory:');
      const r = attempt(() => db.prepare(`SELECT load_extension('${extension}')`).get());
      db.close();
      return r.ok ? 'no: SQL load_extension() works' : `yes: ${r.error}`;
    },
    errors: () => {
      const db = open(':memory:');
      const r = attempt(() => db.prepare('SELECT * FROM missing'));
      db.close();
      return `SqliteError with \`code\` (${r.ok ? '?' : r.error.split(':')[0]})`;
    },
    heapLimit: () => heapLimitProbe((sql) => open(':memory:').prepare(sql).get()),
  };
}
