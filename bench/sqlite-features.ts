/**
 * What each SQLite binding can do on the running Node, found by running it: every feature
 * Membrane's storage uses today through better-sqlite3 (src/storage/sqlite.ts, query-child.mjs,
 * vfs-*.ts, kv.ts, queue.ts, audit.ts), checked on better-sqlite3 and on `node:sqlite` where it
 * exists. Prints one markdown table for this Node; docs/storage.md merges the tables of 20, 22
 * and 24.
 *
 *   node --import tsx bench/sqlite-features.ts [--bs3-binding=PATH/better_sqlite3.node]
 *
 * Every cell is the outcome of code run just now ("yes"/"no" plus what was seen); a probe that
 * throws prints what it threw. Files live in a private temp directory removed at the end.
 */

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ROOT } from './lib.ts';
import {
  bs3BindingPath,
  bs3Options,
  keepAll,
  loadBetterSqlite3,
  loadNodeSqlite,
  type Bs3,
  type Bs3Database,
  type NodeDatabase,
  type NodeSqlite,
} from './sqlite-bindings.ts';

type Probe = () => string;

const BIG = 2n ** 53n + 1n;
/** How long the idle-GC probe waits; the collector's idle pass comes well within it. */
const IDLE_MS = 1500;
const dir = mkdtempSync(join(tmpdir(), 'membrane-sqlite-features-'));
let files = 0;
const freshFile = () => join(dir, `db${files++}.sqlite`);

function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const e = err as Error & { code?: unknown; errcode?: unknown; errstr?: unknown };
  const code = e.code !== undefined ? ` ${String(e.code)}` : '';
  const errcode = e.errcode !== undefined ? `/errcode ${String(e.errcode)}` : '';
  return `${e.constructor.name}${code}${errcode}: ${e.message.split('\n')[0]!.slice(0, 70)}`;
}

function attempt(fn: () => unknown): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: fn() };
  } catch (err) {
    return { ok: false, error: errorText(err) };
  }
}

/** Does loading this module print an ExperimentalWarning? Runs a fresh Node so nothing is cached. */
function warningOnLoad(script: string): string {
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', cwd: ROOT, timeout: 30_000 });
  if (r.status !== 0) return `load failed: ${(r.stderr ?? '').trim().split('\n').slice(-1)[0]}`;
  const warn = (r.stderr ?? '').split('\n').find((l) => /Warning/.test(l));
  return warn !== undefined ? `yes: "${warn.replace(/^\(node:\d+\) /, '').slice(0, 60)}"` : 'no';
}

function bs3Features(bs3: Bs3): Record<string, Probe> {
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

function nodeFeatures(sqlite: NodeSqlite): Record<string, Probe> {
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

/**
 * Drop a closed connection and its statement, make garbage, idle: the collector then finalizes
 * them from a task outside JavaScript. Runs in a fresh Node; the exit says whether it survived.
 */
function survivesIdleGc(setup: string): string {
  const script = `${setup}
(function () { const db = open(); db.prepare('SELECT 1').get(); db.close(); })();
let junk = []; for (let i = 0; i < 2e5; i++) junk.push({ i, s: 'x'.repeat(50) }); junk = null;
setTimeout(() => {}, ${IDLE_MS});`;
  const r = spawnSync(process.execPath, ['--no-warnings', '-e', script], { encoding: 'utf8', timeout: 30_000 });
  if (r.status === 0) return `yes (exit 0 after ${IDLE_MS} ms idle)`;
  const assertion = /Assertion failed[^\n]*/.exec(r.stderr ?? '')?.[0];
  const frame = /(\w+::~\w+)\(\)/.exec(r.stderr ?? '')?.[1];
  return `**no: killed by ${r.signal ?? `exit ${String(r.status)}`}**${assertion !== undefined ? ` (${assertion.trim()}` : ''}${frame !== undefined ? ` in ${frame})` : assertion !== undefined ? ')' : ''}`;
}

/** Hold a write lock on one connection; time how long a second one waits for it. */
function busyProbe(
  holder: (file: string) => { exec(sql: string): unknown; close(): unknown },
  waiter: (file: string) => { exec(sql: string): unknown; close(): unknown },
  how: string,
): string {
  const file = freshFile();
  const a = holder(file);
  a.exec('PRAGMA journal_mode = WAL; CREATE TABLE t (x); BEGIN IMMEDIATE; INSERT INTO t VALUES (1)');
  const b = waiter(file);
  const t = performance.now();
  const r = attempt(() => b.exec('BEGIN IMMEDIATE'));
  const waited = performance.now() - t;
  a.exec('ROLLBACK');
  a.close();
  b.close();
  if (r.ok) return 'no: got the lock while another connection held it';
  return waited >= 250 ? `yes: ${how}; waited ${waited.toFixed(0)} ms of 300, then ${r.error.split(':')[0]}` : `no: gave up after ${waited.toFixed(0)} ms (${r.error.split(':')[0]})`;
}

/** Whether `PRAGMA hard_heap_limit` is enforced (it is not under SQLITE_DEFAULT_MEMSTATUS=0). */
function heapLimitProbe(get: (sql: string) => unknown): string {
  get('PRAGMA hard_heap_limit = 33554432');
  const r = attempt(() => get('SELECT length(randomblob(67108864)) AS n'));
  get('PRAGMA hard_heap_limit = 0');
  return r.ok ? 'no: 64 MiB blob allocated under a 32 MiB hard_heap_limit' : `yes: ${r.error.split(':')[0]}`;
}

const ROWS: readonly [key: string, label: string][] = [
  ['version', 'SQLite version'],
  ['warning', 'ExperimentalWarning printed on load'],
  ['gcIdle', 'survives GC of a closed connection while idle'],
  ['readonlyOpen', 'open read-only (O_RDONLY)'],
  ['busy', 'busy timeout'],
  ['pragma', 'pragma results'],
  ['transactions', 'transactions'],
  ['safeIntegers', 'safe integers / BigInt (2^53+1)'],
  ['raw', 'raw (array) rows'],
  ['columns', 'columns()'],
  ['iterate', 'iterate()'],
  ['readerReadonly', 'statement reader / readonly flags'],
  ['authorizer', 'setAuthorizer (substitute for the flags)'],
  ['multiStatement', 'prepare() of two statements'],
  ['blobType', 'BLOB read as'],
  ['serialize', 'serialize'],
  ['deserialize', 'deserialize from bytes, read-only'],
  ['loadExtensionApi', 'loadExtension disabled by default (JS API)'],
  ['loadExtensionSql', 'SQL load_extension() disabled'],
  ['errors', 'error shape'],
  ['heapLimit', 'hard_heap_limit enforced'],
];

function cell(probes: Record<string, Probe> | string, key: string): string {
  if (typeof probes === 'string') return probes;
  const probe = probes[key];
  if (probe === undefined) return '?';
  const r = attempt(probe);
  return (r.ok ? String(r.value) : `probe threw ${r.error}`).replaceAll('|', '\\|');
}

let bs3: Record<string, Probe> | string;
let bs3Source = 'better-sqlite3';
try {
  const loaded = loadBetterSqlite3();
  bs3Source = loaded.source;
  bs3 = bs3Features(loaded);
} catch (err) {
  bs3 = `does not load: ${errorText(err)}`;
}
const sqlite = await loadNodeSqlite();
const node: Record<string, Probe> | string = sqlite === null ? 'absent (no node:sqlite module)' : nodeFeatures(sqlite);

console.log(`# SQLite binding features — node ${process.version}; ${bs3Source}\n`);
console.log('| feature | better-sqlite3 | node:sqlite |');
console.log('|---|---|---|');
try {
  for (const [key, label] of ROWS) console.log(`| ${label} | ${cell(bs3, key)} | ${cell(node, key)} |`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
