/**
 * The two sides of bench/sqlite-binding.ts: a connection to SQLite through better-sqlite3 or
 * through `node:sqlite`, opened and configured the way src/storage/sqlite.ts opens ours (busy
 * timeout 5 s, trusted_schema=OFF, foreign_keys=ON, WAL checked, synchronous as asked), behind
 * the few calls the workloads make.
 *
 * Transactions: better-sqlite3 through `db.transaction()` made once per connection (as
 * vfs-core.ts does), node:sqlite through prepared BEGIN/COMMIT/ROLLBACK — what an adapter would
 * do. Read-only copies: from serialized bytes (after the WAL-header patch query-child.mjs makes)
 * with `query_only=ON`, or from a file opened read-only with the vfs_query child's pragmas.
 *
 * Does not protect against: anything; it is measuring code, not a storage layer.
 */

import { bs3Options, keepAll, type Bs3, type NodeSqlite } from './sqlite-bindings.ts';

export type Sync = 'FULL' | 'NORMAL';

export interface Stmt {
  run(...params: unknown[]): unknown;
  get(...params: unknown[]): unknown;
  iterate(...params: unknown[]): IterableIterator<unknown>;
}

export interface Conn {
  exec(sql: string): void;
  prepare(sql: string): Stmt;
  /** `fn` in one BEGIN … COMMIT (ROLLBACK if it throws). */
  tx<T>(fn: () => T): T;
  /** The database's bytes, or null where the binding cannot serialize. */
  serialize(): Uint8Array | null;
  close(): void;
}

export interface Side {
  readonly name: 'better-sqlite3' | 'node:sqlite';
  /** Open and configure as src/storage/sqlite.ts does. */
  open(file: string, sync: Sync): Conn;
  /** A read-only connection over a serialized database, or null where the binding cannot. */
  fromBytes(bytes: Uint8Array): Conn | null;
  /** A read-only connection on a file, configured as the vfs_query child configures its own. */
  openReadOnly(file: string): Conn;
}

export function bs3Side(bs3: Bs3): Side {
  const wrap = (db: InstanceType<Bs3['Database']>): Conn => {
    const t = db.transaction((f: () => unknown) => f());
    return {
      exec: (sql) => void db.exec(sql),
      prepare: (sql) => db.prepare(sql),
      tx: <T>(fn: () => T) => t(fn) as T,
      serialize: () => db.serialize(),
      close: () => void db.close(),
    };
  };
  return {
    name: 'better-sqlite3',
    open(file, sync) {
      const db = keepAll(new bs3.Database(file, bs3Options(bs3, { timeout: 5_000 })));
      Object.defineProperty(db, 'loadExtension', { value: () => { throw new Error('extension loading is disabled'); } });
      db.pragma('trusted_schema = OFF');
      db.pragma('foreign_keys = ON');
      if (String(db.pragma('journal_mode = WAL', { simple: true })) !== 'wal') throw new Error('WAL refused');
      db.pragma(`synchronous = ${sync}`);
      if (db.pragma('foreign_keys', { simple: true }) !== 1) throw new Error('foreign keys off');
      return wrap(db);
    },
    openReadOnly(file) {
      const db = keepAll(new bs3.Database(file, bs3Options(bs3, { readonly: true, fileMustExist: true, timeout: 5_000 })));
      db.exec('PRAGMA query_only = ON; PRAGMA trusted_schema = OFF; PRAGMA temp_store = MEMORY; PRAGMA mmap_size = 0');
      return wrap(db);
    },
    fromBytes(bytes) {
      const copy = Buffer.from(bytes);
      if (copy[18] === 2 && copy[19] === 2) copy[18] = copy[19] = 1;
      const db = keepAll(new bs3.Database(copy as unknown as string, bs3Options(bs3, { readonly: true })));
      db.pragma('query_only = ON');
      return wrap(db);
    },
  };
}

export function nodeSide(sqlite: NodeSqlite): Side {
  const { DatabaseSync } = sqlite;
  const wrap = (db: InstanceType<NodeSqlite['DatabaseSync']>): Conn => {
    const begin = db.prepare('BEGIN');
    const commit = db.prepare('COMMIT');
    const rollback = db.prepare('ROLLBACK');
    return {
      exec: (sql) => db.exec(sql),
      prepare: (sql) => db.prepare(sql),
      tx<T>(fn: () => T): T {
        begin.run();
        try {
          const r = fn();
          commit.run();
          return r;
        } catch (err) {
          if (db.isTransaction !== false) rollback.run();
          throw err;
        }
      },
      serialize: () => (db.serialize === undefined ? null : db.serialize()),
      close: () => db.close(),
    };
  };
  const probe = new DatabaseSync(':memory:');
  const canDeserialize = typeof probe.deserialize === 'function';
  probe.close();
  return {
    name: 'node:sqlite',
    open(file, sync) {
      const db = new DatabaseSync(file, { timeout: 5_000 });
      db.exec('PRAGMA trusted_schema = OFF; PRAGMA foreign_keys = ON');
      const mode = db.prepare('PRAGMA journal_mode = WAL').get() as { journal_mode: string };
      if (mode.journal_mode !== 'wal') throw new Error('WAL refused');
      db.exec(`PRAGMA synchronous = ${sync}`);
      if ((db.prepare('PRAGMA foreign_keys').get() as { foreign_keys: number }).foreign_keys !== 1) throw new Error('foreign keys off');
      return wrap(db);
    },
    openReadOnly(file) {
      const db = new DatabaseSync(file, { readOnly: true, timeout: 5_000 });
      db.exec('PRAGMA query_only = ON; PRAGMA trusted_schema = OFF; PRAGMA temp_store = MEMORY; PRAGMA mmap_size = 0');
      return wrap(db);
    },
    fromBytes(bytes) {
      if (!canDeserialize) return null;
      const copy = Uint8Array.from(bytes);
      if (copy[18] === 2 && copy[19] === 2) copy[18] = copy[19] = 1;
      const db = new DatabaseSync(':memory:', { readOnly: true });
      db.deserialize!(copy);
      db.exec('PRAGMA query_only = ON');
      return wrap(db);
    },
  };
}
