/**
 * bench/sqlite-features.ts's probes of `node:sqlite`, one per row of its table, each returning
 * what it saw; a method this Node lacks is reported missing, never assumed.
 */

import { join } from 'node:path';
import { ROOT } from './lib.ts';
import type { NodeDatabase, NodeSqlite } from './sqlite-bindings.ts';
import { BIG, attempt, busyProbe, freshFile, heapLimitProbe, survivesIdleGc, warningOnLoad, type Probe } from './sqlite-probes.ts';

export function nodeFeatures(sqlite: NodeSqlite): Record<string, Probe> {
  const { DatabaseSync, constants } = sqlite;
  const seeded = (): string => {
    const file = freshFile();
    const db = new DatabaseSync(file);
    db.exec("PRAGMA journal_mode = WAL; CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, b BLOB); INSERT INTO t VALUES (1, 'one', x'0102')");
    db.close();
    return file;
  };
  const has = (db: NodeDatabase, name: string) => typeof (db as unknown as Record<string, unknown>)[name] === 'function';
  return {
    warning: () => warningOnLoad("require('node:sqlite')"),
    gcIdle: () => survivesIdleGc("const { DatabaseSync } = require('node:sqlite'); const open = () => new DatabaseSync(':memory:');"),
    version: () => {
      const db = new DatabaseSync(':memory:');
      const v = (db.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v;
      db.close();
      return v;
    },
    readonlyOpen: () => {
      const db = new DatabaseSync(seeded(), { readOnly: true });
      const r = attempt(() => db.prepare("INSERT INTO t (v) VALUES ('x')").run());
      db.close();
      return r.ok ? 'no: write succeeded' : `yes (\`{ readOnly: true }\`; write → ${r.error.split(':')[0]})`;
    },
    busy: () => busyProbe(
      (file) => new DatabaseSync(file),
      (file) => new DatabaseSync(file, { timeout: 300 }),
      '`{ timeout }`, default 0 ms',
    ),
    pragma: () => {
      const db = new DatabaseSync(freshFile());
      const mode = db.prepare('PRAGMA journal_mode = WAL').get() as Record<string, unknown>;
      const fk = db.prepare('PRAGMA foreign_keys').get() as Record<string, unknown>;
      db.close();
      return `via prepare().get() → ${JSON.stringify({ ...mode })}, foreign_keys default ${String(fk['foreign_keys'])} (no \`pragma()\` helper)`;
    },
    transactions: () => {
      const db = new DatabaseSync(freshFile());
      db.exec('CREATE TABLE t (x)');
      db.exec('BEGIN IMMEDIATE');
      db.prepare('INSERT INTO t VALUES (1)').run();
      const inside = db.isTransaction;
      db.exec('COMMIT; BEGIN EXCLUSIVE; COMMIT');
      const after = db.isTransaction;
      db.close();
      return `SQL only (no \`.transaction()\` helper); BEGIN IMMEDIATE/EXCLUSIVE work; isTransaction: ${inside === undefined ? 'missing' : `${String(inside)} inside, ${String(after)} after`}`;
    },
    safeIntegers: () => {
      const db = new DatabaseSync(':memory:');
      const stmt = db.prepare(`SELECT ${BIG} AS n`);
      const plain = attempt(() => (stmt.get() as { n: unknown }).n);
      stmt.setReadBigInts(true);
      const safe = (stmt.get() as { n: bigint }).n;
      db.close();
      const opt = attempt(() => {
        const d = new DatabaseSync(':memory:', { readBigInts: true });
        const v = (d.prepare(`SELECT ${BIG} AS n`).get() as { n: unknown }).n;
        d.close();
        return v;
      });
      const without = plain.ok ? `${typeof plain.value} ${String(plain.value)}` : `throws ${plain.error.split(':')[0]}`;
      const dflt = opt.ok ? (typeof opt.value === 'bigint' ? 'yes' : 'ignored') : 'no';
      return `yes: \`setReadBigInts()\` → ${typeof safe} ${String(safe === BIG)}; \`{ readBigInts }\` option ${dflt}; without: ${without}`;
    },
    raw: () => {
      const db = new DatabaseSync(':memory:');
      const stmt = db.prepare('SELECT 1 AS a, 2 AS b');
      if (typeof stmt.setReturnArrays !== 'function') {
        db.close();
        return 'no (no setReturnArrays)';
      }
      stmt.setReturnArrays(true);
      const row = stmt.get();
      db.close();
      return `yes: \`setReturnArrays(true)\` → ${JSON.stringify(row)}`;
    },
    columns: () => {
      const db = new DatabaseSync(seeded());
      const stmt = db.prepare('SELECT id, v AS value FROM t');
      if (typeof stmt.columns !== 'function') {
        db.close();
        return 'no';
      }
      const cols = stmt.columns();
      db.close();
      return `yes: ${cols.map((c) => `${c.name}(${c.table}.${c.column} ${c.type})`).join(', ')}`;
    },
    readerReadonly: () => {
      const db = new DatabaseSync(seeded());
      const stmt = db.prepare('SELECT * FROM t') as unknown as Record<string, unknown>;
      db.close();
      const flags = ['reader', 'readonly', 'readOnly', 'isReader'].filter((k) => k in stmt);
      return flags.length === 0 ? 'no (no reader/readonly on StatementSync)' : `yes: ${flags.join(', ')}`;
    },
    authorizer: () => {
      const db = new DatabaseSync(seeded());
      if (!has(db, 'setAuthorizer')) {
        db.close();
        return 'no (no setAuthorizer)';
      }
      const allowed = new Set([constants['SQLITE_SELECT'], constants['SQLITE_READ'], constants['SQLITE_FUNCTION']]);
      db.setAuthorizer!((action) => (allowed.has(action) ? constants['SQLITE_OK']! : constants['SQLITE_DENY']!));
      const verdict = (sql: string) => (attempt(() => db.prepare(sql)).ok ? 'allowed' : 'denied');
      const out = `yes: SELECT ${verdict('SELECT * FROM t')}, INSERT ${verdict("INSERT INTO t (v) VALUES ('x')")}, PRAGMA user_version=1 ${verdict('PRAGMA user_version = 1')}, ATTACH ${verdict("ATTACH 'x' AS y")}`;
      db.close();
      return `${out} (read-only allowlist at prepare time)`;
    },
    multiStatement: () => {
      const db = new DatabaseSync(seeded());
      const r = attempt(() => db.prepare('SELECT 1; DELETE FROM t'));
      let ran = '';
      if (r.ok) {
        (r.value as { all(): unknown[] }).all();
        ran = `; DELETE ran: ${(db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n === 0 ? 'yes' : 'no'}`;
      }
      db.close();
      return r.ok ? `no: accepted, tail ignored${ran}` : `refused: ${r.error}`;
    },
    iterate: () => {
      const db = new DatabaseSync(':memory:');
      let n = 0;
      for (const _ of db.prepare("SELECT value FROM json_each('[1,2,3]')").iterate()) n++;
      db.close();
      return `yes (${n} rows)`;
    },
    blobType: () => {
      const db = new DatabaseSync(seeded());
      const b = (db.prepare('SELECT b FROM t').get() as { b: unknown }).b;
      db.close();
      return Buffer.isBuffer(b) ? 'Buffer' : (b as object).constructor.name;
    },
    serialize: () => {
      const db = new DatabaseSync(seeded());
      if (!has(db, 'serialize')) {
        db.close();
        return 'no';
      }
      const bytes = db.serialize!();
      db.close();
      return `yes: \`serialize()\` → ${bytes.constructor.name} of ${bytes.byteLength} B`;
    },
    deserialize: () => {
      const src = new DatabaseSync(seeded());
      if (!has(src, 'deserialize') || !has(src, 'serialize')) {
        src.close();
        return 'no';
      }
      const bytes = src.serialize!();
      src.close();
      const load = (b: Uint8Array, readOnly: boolean) => {
        const db = new DatabaseSync(':memory:', { readOnly });
        db.deserialize!(b);
        return db;
      };
      const raw = attempt(() => {
        const db = load(Uint8Array.from(bytes), false);
        try {
          return (db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n;
        } finally {
          db.close();
        }
      });
      const patched = Uint8Array.from(bytes);
      patched[18] = patched[19] = 1;
      const ro = attempt(() => load(patched, true));
      const db = ro.ok ? (ro.value as NodeDatabase) : load(patched, false);
      const n = (db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n;
      const write = attempt(() => db.prepare("INSERT INTO t (v) VALUES ('x')").run());
      db.exec('PRAGMA query_only = ON');
      const queryOnly = attempt(() => db.prepare("INSERT INTO t (v) VALUES ('y')").run());
      db.close();
      return `yes: \`new DatabaseSync(':memory:', { readOnly: ${String(ro.ok)} }).deserialize(bytes)\`; rows ${n}; write → ${write.ok ? 'succeeded' : write.error.split(':')[0]} (after query_only=ON: ${queryOnly.ok ? 'succeeded' : 'refused'}); WAL-header copy unpatched: ${raw.ok ? 'reads' : raw.error.split(':')[0]}`;
    },
    loadExtensionApi: () => {
      const extension = join(ROOT, 'node_modules/better-sqlite3/build/Release/test_extension.node');
      const db = new DatabaseSync(':memory:');
      const r = attempt(() => db.loadExtension(extension));
      db.close();
      const opted = attempt(() => {
        const d = new DatabaseSync(':memory:', { allowExtension: true });
        d.enableLoadExtension(true);
        d.loadExtension(extension);
        d.close();
      });
      return r.ok ? 'no: loads by default' : `yes: ${r.error.slice(0, 60)}; with { allowExtension: true } + enableLoadExtension(true): ${opted.ok ? 'loads' : 'refused'}`;
    },
    loadExtensionSql: () => {
      const db = new DatabaseSync(':memory:');
      const r = attempt(() => db.prepare("SELECT load_extension('x')").get());
      db.close();
      return r.ok ? 'no: SQL load_extension() works' : `yes: ${r.error}`;
    },
    errors: () => {
      const db = new DatabaseSync(':memory:');
      const r = attempt(() => db.prepare('SELECT * FROM missing'));
      db.close();
      return `Error with \`code\` ERR_SQLITE_ERROR, \`errcode\`, \`errstr\` (${r.ok ? '?' : r.error.split(':')[0]})`;
    },
    heapLimit: () => heapLimitProbe((sql) => new DatabaseSync(':memory:').prepare(sql).get()),
  };
}
