/**
 * The two SQLite bindings the binding benchmark and feature probe compare, loaded side by side in
 * one process: `better-sqlite3` (what src/storage/sqlite.ts wraps today) and Node's built-in
 * `node:sqlite` (22.5+ behind a flag, unflagged from 22.13 / 23.4).
 *
 * Owns: finding the better-sqlite3 native addon for the running Node (its default build, or the
 * file named by `--bs3-binding=PATH` / `MEMBRANE_BS3_BINDING` — a build for another Node's ABI),
 * loading `node:sqlite` where it exists without touching it elsewhere, and the slice of
 * node:sqlite's API these scripts call, typed here because @types/node 20 has no node:sqlite.
 *
 * Does not protect against: an addon file built for another ABI — Node refuses it at load, and the
 * error says which NODE_MODULE_VERSION it wanted.
 */

import { createRequire } from 'node:module';
import { resolve } from 'node:path';

const require = createRequire(import.meta.url);

/** better-sqlite3's statement, as far as these scripts use it. */
export interface Bs3Statement {
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  iterate(...params: unknown[]): IterableIterator<unknown>;
  raw(toggle?: boolean): this;
  safeIntegers(toggle?: boolean): this;
  columns(): { name: string; column: string | null; table: string | null; database: string | null; type: string | null }[];
  readonly reader: boolean;
  readonly readonly: boolean;
}

export interface Bs3Database {
  prepare(sql: string): Bs3Statement;
  exec(sql: string): this;
  pragma(source: string, options?: { simple?: boolean }): unknown;
  transaction<F extends (...args: never[]) => unknown>(fn: F): F & { deferred: F; immediate: F; exclusive: F };
  serialize(): Buffer;
  defaultSafeIntegers(toggle?: boolean): this;
  loadExtension(path: string): this;
  close(): this;
  readonly inTransaction: boolean;
  readonly open: boolean;
}

export interface Bs3Options {
  readonly?: boolean;
  fileMustExist?: boolean;
  timeout?: number;
  nativeBinding?: string | object;
}

export type Bs3Constructor = (new (file: string | Buffer, options?: Bs3Options) => Bs3Database) & {
  SqliteError: new (...args: never[]) => Error & { code: string };
};

/** node:sqlite's `StatementSync`, the part these scripts call (setters probed before use). */
export interface NodeStatement {
  run(...params: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  iterate(...params: unknown[]): IterableIterator<unknown>;
  columns?(): { name: string; column: string | null; table: string | null; database: string | null; type: string | null }[];
  setReadBigInts(enabled: boolean): void;
  setReturnArrays?(enabled: boolean): void;
}

export interface NodeDatabase {
  prepare(sql: string): NodeStatement;
  exec(sql: string): void;
  close(): void;
  serialize?(dbName?: string): Uint8Array;
  deserialize?(bytes: Uint8Array, options?: { dbName?: string }): void;
  setAuthorizer?(cb: ((action: number, ...args: (string | null)[]) => number) | null): void;
  loadExtension(path: string, entryPoint?: string): void;
  enableLoadExtension(allow: boolean): void;
  readonly isOpen?: boolean;
  readonly isTransaction?: boolean;
}

export interface NodeDatabaseOptions {
  open?: boolean;
  readOnly?: boolean;
  timeout?: number;
  allowExtension?: boolean;
  readBigInts?: boolean;
  returnArrays?: boolean;
}

export interface NodeSqlite {
  DatabaseSync: new (path: string, options?: NodeDatabaseOptions) => NodeDatabase;
  constants: Record<string, number>;
}

/** The addon path asked for on the command line or in the environment, if any. */
export function bs3BindingPath(argv: readonly string[] = process.argv): string | undefined {
  const flag = argv.find((a) => a.startsWith('--bs3-binding='));
  const path = flag !== undefined ? flag.slice('--bs3-binding='.length) : process.env['MEMBRANE_BS3_BINDING'];
  return path !== undefined && path !== '' ? resolve(path) : undefined;
}

export interface Bs3 {
  readonly Database: Bs3Constructor;
  /** Pass as the constructor's `nativeBinding` (undefined: better-sqlite3's own lookup). */
  readonly nativeBinding: object | undefined;
  /** Where the addon came from, for the report's header. */
  readonly source: string;
  readonly sqliteVersion: string;
}

/** better-sqlite3's JavaScript from node_modules, with the addon for this Node. Throws a readable error. */
export function loadBetterSqlite3(bindingPath = bs3BindingPath()): Bs3 {
  const Database = require('better-sqlite3') as Bs3Constructor;
  let nativeBinding: object | undefined;
  try {
    nativeBinding = bindingPath === undefined ? undefined : (require(bindingPath) as object);
    const db = new Database(':memory:', nativeBinding === undefined ? {} : { nativeBinding });
    const version = String((db.prepare('SELECT sqlite_version()').raw(true).get() as unknown[])[0]);
    db.close();
    return { Database, nativeBinding, source: bindingPath ?? 'node_modules/better-sqlite3 (default build)', sqliteVersion: version };
  } catch (err) {
    const why = err instanceof Error ? err.message.split('\n')[0] : String(err);
    throw new Error(
      `better-sqlite3 does not load on Node ${process.version} (${why}); build it for this Node and pass --bs3-binding=PATH/better_sqlite3.node or MEMBRANE_BS3_BINDING`,
    );
  }
}

/** Options for a better-sqlite3 constructor call, carrying the chosen addon. */
export function bs3Options(bs3: Bs3, options: Bs3Options = {}): Bs3Options {
  return bs3.nativeBinding === undefined ? options : { ...options, nativeBinding: bs3.nativeBinding };
}

/** `node:sqlite`, or null where this Node has none (20) or hides it behind a flag. */
export async function loadNodeSqlite(): Promise<NodeSqlite | null> {
  try {
    return (await import('node:sqlite' as string)) as NodeSqlite;
  } catch {
    return null;
  }
}
