/**
 * Opening SQLite databases the one way Membrane opens them.
 *
 * Owns: the `better-sqlite3` binding and which major of it the running Node gets (through a small
 * typed surface, so nothing else imports the untyped package), the pragmas every database gets, file and directory permissions, where data
 * lives (`$MEMBRANE_HOME`, default `~/.membrane`), and the durability levels.
 *
 * Invariant: a database returned by `openDatabase` is in WAL mode, has foreign keys on and
 * `trusted_schema=OFF`, cannot load extensions, and its file (and the -wal/-shm files SQLite
 * derives from it) is mode 0600 in a 0700 directory when we created that directory. Durability
 * (`DatabaseDurability`, default `'power-loss'`):
 * - `'power-loss'` — `synchronous=FULL`: a transaction is fsynced before `run()` returns, so it
 *   survives `kill -9` of the process and power loss of the host.
 * - `'process-crash'` — `synchronous=NORMAL`: a committed transaction is in the WAL file (in the
 *   OS page cache) before `run()` returns, so it survives `kill -9` or a crash of the process, but
 *   the last transactions before a power loss or kernel crash may roll back (never corrupt: WAL
 *   checkpoints are still fsynced). `syncDatabase()` makes everything committed so far survive
 *   power loss too.
 *
 * Does not protect against: another process of the same OS user opening the file; a disk that
 * lies about fsync; modes on directories that already existed outside `$MEMBRANE_HOME`.
 */

import { chmodSync, closeSync, constants, fsyncSync, mkdirSync, openSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { SandboxError } from '../errors.ts';
import { checkDatabasePaths, ensurePrivateDir, ensurePrivateFile, membraneHome } from './home-files.ts';

export { membraneCacheDir, membraneHome } from './home-files.ts';

/** A prepared statement: the part of better-sqlite3's `Statement` Membrane uses. */
export interface Statement<Row = unknown> {
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint };
  get(...params: unknown[]): Row | undefined;
  all(...params: unknown[]): Row[];
  iterate(...params: unknown[]): IterableIterator<Row>;
  safeIntegers(toggle?: boolean): this;
  /** Rows as arrays of column values instead of objects. */
  raw(toggle?: boolean): this;
}

/** A transaction function: call it (BEGIN), or its `deferred` / `immediate` / `exclusive` forms. */
export type Transaction<F> = F & { readonly deferred: F; readonly immediate: F; readonly exclusive: F };

/** A connection: the part of better-sqlite3's `Database` Membrane uses. */
export interface Database {
  prepare<Row = unknown>(sql: string): Statement<Row>;
  exec(sql: string): this;
  pragma(source: string, options?: { simple?: boolean }): unknown;
  transaction<A extends unknown[], R>(fn: (...args: A) => R): Transaction<(...args: A) => R>;
  close(): this;
  /** The database file's bytes (better-sqlite3 `serialize`). */
  serialize(): Buffer;
  readonly open: boolean;
  readonly inTransaction: boolean;
  readonly name: string;
  readonly memory: boolean;
}

interface DatabaseOptions {
  readonly?: boolean;
  fileMustExist?: boolean;
  timeout?: number;
}

type DatabaseConstructor = new (filename: string, options?: DatabaseOptions) => Database & {
  loadExtension?: unknown;
};

/**
 * The better-sqlite3 package for the running Node (docs/storage.md, "The SQLite binding"): 13.x
 * (Node-API, prebuilt in the package) on Node 22 and later, where 12.x aborts the process when the
 * collector finalizes a closed connection or statement (Node 24's ObjectWrap); 12.x, installed
 * under the alias `better-sqlite3-12`, on Node 20, where 13.x crashes on load. query-child.mjs
 * makes the same choice.
 */
export const SQLITE_PACKAGE = Number(process.versions.node.split('.')[0]) >= 22 ? 'better-sqlite3' : 'better-sqlite3-12';

/** What to install when the binding is missing. */
const INSTALL_HINT =
  SQLITE_PACKAGE === 'better-sqlite3'
    ? 'reinstall membrane (its better-sqlite3 dependency is missing)'
    : 'on Node 20, install better-sqlite3 12 beside membrane: npm install better-sqlite3-12@npm:better-sqlite3@12';

let ctor: DatabaseConstructor | undefined;

function sqliteConstructor(): DatabaseConstructor {
  if (ctor === undefined) {
    const require = createRequire(import.meta.url);
    try {
      ctor = require(SQLITE_PACKAGE) as DatabaseConstructor;
    } catch (err) {
      throw new SandboxError('INTERNAL', `the SQLite binding could not be loaded: ${INSTALL_HINT}`, {}, err);
    }
  }
  return ctor;
}

/** How long a connection waits for another connection's write lock before SQLITE_BUSY. */
export const BUSY_TIMEOUT_MS = 5_000;

/**
 * A directory under `$MEMBRANE_HOME` (or the home itself), created if missing, and forced to
 * 0700 along with the home: everything below it is ours. A component below the home that is a
 * symbolic link or not a directory is refused (home-files.ts).
 */
export function storageDir(...parts: string[]): string {
  const home = resolve(membraneHome());
  mkdirSync(home, { recursive: true, mode: 0o700 });
  chmodSync(home, 0o700);
  let dir = home;
  for (const part of parts) {
    if (part === '' || part === '.' || part === '..' || part.includes('/') || part.includes('\0')) {
      throw new SandboxError('INTERNAL', 'bad storage directory component');
    }
    dir = join(dir, part);
    ensurePrivateDir(dir);
  }
  return dir;
}

/** What a committed transaction survives: see the module header. */
export type DatabaseDurability = 'power-loss' | 'process-crash';

export interface OpenDatabaseOptions {
  /** Open read-only (the file must exist). Default false. */
  readonly readonly?: boolean;
  /** Default `'power-loss'` (`synchronous=FULL`). */
  readonly durability?: DatabaseDurability;
  /**
   * Let the WAL grow to about this many bytes before a commit checkpoints it (SQLite's default
   * is 1000 pages, about 4 MiB); after a checkpoint the WAL file is cut back to
   * `WAL_KEEP_BYTES`. Checkpoints change what survives nothing: they only move committed pages
   * from the WAL into the database file. Default: SQLite's.
   */
  readonly walCheckpointBytes?: number;
  /** SQLite's page cache for this connection, at most this many bytes. Default: SQLite's (16 MB here). */
  readonly cacheBytes?: number;
}

/** What a WAL file is cut back to after a checkpoint (SQLite `journal_size_limit`). */
export const WAL_KEEP_BYTES = 4 * 1024 * 1024;

/**
 * Open (creating if needed) the database at `file` — an absolute or cwd-relative host path chosen
 * by Membrane, never by a guest — or `':memory:'`.
 */
export function openDatabase(file: string, options: OpenDatabaseOptions = {}): Database {
  const Ctor = sqliteConstructor();
  const memory = file === ':memory:';
  if (!memory) {
    if (file.includes('\0')) throw new SandboxError('INTERNAL', 'database path contains NUL');
    const path = resolve(file);
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    // No symbolic link or non-regular file at the path or its -wal/-shm/-journal (home-files.ts);
    // create the file ourselves (O_EXCL|O_NOFOLLOW) so it is born 0600 — SQLite gives the
    // companions the same mode.
    checkDatabasePaths(path);
    if (!options.readonly) ensurePrivateFile(path);
    file = path;
  }
  let db: Database;
  try {
    db = new Ctor(file, { readonly: options.readonly === true, fileMustExist: options.readonly === true, timeout: BUSY_TIMEOUT_MS });
  } catch (err) {
    throw new SandboxError('INTERNAL', 'could not open a database', {}, err);
  }
  try {
    configure(db, memory || options.readonly === true, options.durability ?? 'power-loss');
    if (!memory && options.walCheckpointBytes !== undefined) {
      const page = Number(db.pragma('page_size', { simple: true }));
      db.pragma(`wal_autocheckpoint = ${Math.max(1, Math.ceil(options.walCheckpointBytes / page))}`);
      db.pragma(`journal_size_limit = ${WAL_KEEP_BYTES}`);
    }
    if (options.cacheBytes !== undefined) db.pragma(`cache_size = ${-Math.max(1, Math.floor(options.cacheBytes / 1024))}`);
  } catch (err) {
    db.close();
    throw err instanceof SandboxError ? err : new SandboxError('INTERNAL', 'could not configure a database', {}, err);
  }
  return db;
}

function configure(db: Database & { loadExtension?: unknown }, skipWal: boolean, durability: DatabaseDurability): void {
  // The binding's loadExtension is the only door to native extensions (the SQL function
  // load_extension() is disabled by SQLite's default); remove it from this connection.
  Object.defineProperty(db, 'loadExtension', {
    value: () => {
      throw new SandboxError('NOT_CAPABLE', 'extension loading is disabled');
    },
    writable: false,
    configurable: false,
  });
  db.pragma('trusted_schema = OFF');
  db.pragma('foreign_keys = ON');
  if (!skipWal) {
    const mode = db.pragma('journal_mode = WAL', { simple: true });
    if (String(mode).toLowerCase() !== 'wal') {
      throw new SandboxError('INTERNAL', `could not enable WAL (journal_mode=${String(mode)})`);
    }
  }
  db.pragma(durability === 'power-loss' ? 'synchronous = FULL' : 'synchronous = NORMAL');
  if (db.pragma('foreign_keys', { simple: true }) !== 1) throw new SandboxError('INTERNAL', 'foreign keys are off');
}

/**
 * Make every transaction committed so far survive power loss: fsync the WAL (which holds the
 * transactions not yet checkpointed), then the database file (which holds the rest). Nothing to
 * do for an in-memory database.
 */
export function syncDatabase(db: Database): void {
  if (db.memory) return;
  for (const file of [`${db.name}-wal`, db.name]) {
    let fd: number;
    try {
      fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // no WAL: nothing pending
      throw err;
    }
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }
}

/** Remove a database file and its WAL companions (for temporary VFS databases). */
export function removeDatabase(file: string): void {
  for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
}
