/**
 * The two SQLite bindings the binding benchmark and feature probe compare, loaded side by side in
 * one process: `better-sqlite3` (what src/storage/sqlite.ts wraps today) and Node's built-in
 * `node:sqlite` (22.5+ behind a flag, unflagged from 22.13 / 23.4).
 *
 * Owns: finding better-sqlite3 for the running Node — the package in node_modules or another
 * copy (`--bs3-module=DIR` / `MEMBRANE_BS3_MODULE`, e.g. 13.x installed in a scratch project), with
 * its default addon or the file named by `--bs3-binding=PATH` / `MEMBRANE_BS3_BINDING` (a build for
 * another Node's ABI) — loading `node:sqlite` where it exists without touching it elsewhere, and
 * the slice of node:sqlite's API these scripts call, typed here because @types/node 20 has none.
 *
 * Invariant: every better-sqlite3 object these scripts make is kept reachable until exit
 * (`keep`): better-sqlite3 12.x on Node 24 aborts the process (`Assertion failed: (env) !=
 * nullptr`) when the garbage collector finalizes a connection or statement outside JavaScript —
 * bench/sqlite-features.ts shows it — and a benchmark must not die of it.
 *
 * Does not protect against: an addon file built for another ABI — Node refuses it at load, and the
 * error says which NODE_MODULE_VERSION it wanted.
 */

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { SQLITE_PACKAGE } from '../src/storage/sqlite.ts';

const require = createRequire(import.meta.url);

const kept: object[] = [];
/** Keep `obj` reachable until exit (see the header); returns it. */
export function keep<T extends object>(obj: T): T {
  kept.push(obj);
  return obj;
}

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

function option(flag: string, env: string): string | undefined {
  const arg = process.argv.find((a) => a.startsWith(`--${flag}=`));
  const path = arg !== undefined ? arg.slice(flag.length + 3) : process.env[env];
  return path !== undefined && path !== '' ? resolve(path) : undefined;
}

/** The addon path asked for on the command line or in the environment, if any. */
export const bs3BindingPath = (): string | undefined => option('bs3-binding', 'MEMBRANE_BS3_BINDING');
/** The better-sqlite3 package directory asked for, if any (default: the one Membrane loads on this Node, SQLITE_PACKAGE). */
export const bs3ModulePath = (): string | undefined => option('bs3-module', 'MEMBRANE_BS3_MODULE');

export interface Bs3 {
  readonly Database: Bs3Constructor;
  /** Pass as the constructor's `nativeBinding` (undefined: better-sqlite3's own lookup). */
  readonly nativeBinding: object | undefined;
  /** Which package and addon, for the report's header. */
  readonly source: string;
  /** The package directory (its build/Release holds test_extension.node when built from source). */
  readonly dir: string;
  readonly sqliteVersion: string;
}

/** better-sqlite3's JavaScript from node_modules, with the addon for this Node. Throws a readable error. */
export function loadBetterSqlite3(bindingPath = bs3BindingPath(), modulePath = bs3ModulePath()): Bs3 {
  const dir = modulePath ?? join(require.resolve(`${SQLITE_PACKAGE}/package.json`), '..');
  let nativeBinding: object | undefined;
  try {
    const Database = require(dir) as Bs3Constructor;
    const { version } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string };
    nativeBinding = bindingPath === undefined ? undefined : (require(bindingPath) as object);
    const db = keep(new Database(':memory:', nativeBinding === undefined ? {} : { nativeBinding }));
    const sqlite = String((keep(db.prepare('SELECT sqlite_version()')).raw(true).get() as unknown[])[0]);
    db.close();
    const addon = bindingPath ?? 'its default addon';
    return { Database, nativeBinding, dir, source: `better-sqlite3 ${version} from ${modulePath ?? 'node_modules'}, ${addon}`, sqliteVersion: sqlite };
  } catch (err) {
    const why = err instanceof Error ? err.message.split('\n')[0] : String(err);
    throw new Error(
      `better-sqlite3 does not load on Node ${process.version} (${why}); build it for this Node and pass --bs3-binding=PATH/better_sqlite3.node or MEMBRANE_BS3_BINDING`,
    );
  }
}

type Native = { prepare(...args: unknown[]): object };
const patchedIterate = new WeakSet<object>();

/**
 * Keep a connection, every statement prepared on it (by `prepare`, `pragma` and `transaction`,
 * which reach the native object directly) and every iterator reachable until exit.
 */
export function keepAll(db: Bs3Database): Bs3Database {
  const native = Object.getOwnPropertySymbols(db)
    .map((s) => (db as unknown as Record<symbol, unknown>)[s])
    .find((v): v is Native => typeof v === 'object' && v !== null && typeof (v as Native).prepare === 'function');
  if (native === undefined) throw new Error('better-sqlite3 has no native connection object where expected');
  const prepare = native.prepare;
  native.prepare = function (this: Native, ...args: unknown[]) {
    const stmt = keep(prepare.apply(this, args));
    const proto = Object.getPrototypeOf(stmt) as { iterate: (...a: unknown[]) => object };
    if (!patchedIterate.has(proto)) {
      patchedIterate.add(proto);
      const iterate = proto.iterate;
      proto.iterate = function (this: object, ...a: unknown[]) {
        return keep(iterate.apply(this, a));
      };
    }
    return stmt;
  };
  return keep(db);
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
