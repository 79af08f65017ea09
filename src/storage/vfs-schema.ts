/**
 * The VFS database schema and its prepared statements.
 *
 * Owns: the tables (`meta`, `inodes`, `volumes`, `dirents`, `chunks`), their creation, version
 * check and migration, and the one set of prepared statements the VFS runs.
 *
 * Invariant: every inode belongs to exactly one volume; a directory entry (parent, name) is unique;
 * a directory has exactly one entry naming it (volume roots have none); file contents live in
 * `chunks` rows of at most `CHUNK_SIZE` bytes, no byte of which lies at or past the file's size;
 * `meta.used_bytes` / `meta.used_inodes` equal the sum of inode sizes and the inode count after
 * every committed transaction. Foreign keys cascade entry and chunk removal from inode removal.
 *
 * Does not protect against: someone editing the database file by hand; the VFS trusts its rows.
 */

import type { Database, Statement } from './sqlite.ts';
import { SandboxError } from '../errors.ts';

/**
 * 2: `chunks` is a rowid table (version 1 had it `WITHOUT ROWID`, which stores each 64 KiB row in
 * an index b-tree whose interior cells copy whole records — 3–5× slower for large blobs).
 * 3: two fewer b-trees written per created file: no `inodes (volume)` index (only `clearVolume`
 * used it, and a scan serves that rare call) and `dirents.seq` is a plain rowid, not
 * AUTOINCREMENT (which rewrote `sqlite_sequence` on every insert). A `seq` may now be reused
 * once the highest one is deleted; `readdir` cookies stay valid (an entry created during a
 * listing may or may not appear, as POSIX allows).
 */
export const SCHEMA_VERSION = 3;
/** Bytes per `chunks` row: large enough for throughput, small enough that a partial write is cheap. */
export const CHUNK_SIZE = 64 * 1024;

export const VOLUMES = ['workspace', 'memory', 'tmp'] as const;
export type VolumeName = (typeof VOLUMES)[number];
export type InodeKind = 'file' | 'dir' | 'symlink';

const CHUNKS_COLUMNS = `
  ino INTEGER NOT NULL REFERENCES inodes (ino) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY (ino, idx)
`;

const DIRENTS_COLUMNS = `
  seq INTEGER PRIMARY KEY,
  parent INTEGER NOT NULL REFERENCES inodes (ino) ON DELETE CASCADE,
  name TEXT NOT NULL,
  ino INTEGER NOT NULL REFERENCES inodes (ino) ON DELETE CASCADE,
  UNIQUE (parent, name)
`;

const DIRENTS_INDEXES = `
CREATE INDEX IF NOT EXISTS dirents_ino ON dirents (ino);
CREATE INDEX IF NOT EXISTS dirents_parent_seq ON dirents (parent, seq);
`;

const DDL = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS inodes (
  ino INTEGER PRIMARY KEY,
  volume TEXT NOT NULL CHECK (volume IN ('workspace', 'memory', 'tmp')),
  kind TEXT NOT NULL CHECK (kind IN ('file', 'dir', 'symlink')),
  mode INTEGER NOT NULL,
  nlink INTEGER NOT NULL,
  size INTEGER NOT NULL DEFAULT 0 CHECK (size >= 0),
  atime_ns INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL,
  ctime_ns INTEGER NOT NULL,
  target TEXT
) STRICT;
CREATE TABLE IF NOT EXISTS volumes (
  name TEXT PRIMARY KEY,
  root INTEGER NOT NULL UNIQUE REFERENCES inodes (ino)
) STRICT;
CREATE TABLE IF NOT EXISTS dirents (${DIRENTS_COLUMNS}) STRICT;
${DIRENTS_INDEXES}
CREATE TABLE IF NOT EXISTS chunks (${CHUNKS_COLUMNS}) STRICT;
`;

export interface InodeRow {
  ino: number;
  volume: VolumeName;
  kind: InodeKind;
  mode: number;
  nlink: number;
  size: number;
  atime_ns: bigint;
  mtime_ns: bigint;
  ctime_ns: bigint;
  target: string | null;
}

/** `kind` as the `fileSize` / `fileChunk` statements report it: 0 file, 1 directory, 2 symlink. */
export type FileKindCode = 0 | 1 | 2;
const KIND_CODE = "CASE kind WHEN 'file' THEN 0 WHEN 'dir' THEN 1 ELSE 2 END";

export interface EntryRow {
  seq: number;
  name: string;
  ino: number;
  kind: InodeKind;
}

export function nowNs(): bigint {
  return BigInt(Date.now()) * 1_000_000n;
}

/** Create the schema and volume roots if missing; refuse a database from a newer schema. */
export function initSchema(db: Database): void {
  db.transaction(() => {
    db.exec(DDL);
    const row = db.prepare<{ value: number }>("SELECT value FROM meta WHERE key = 'schema_version'").get();
    if (row === undefined) {
      const ins = db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)');
      ins.run('schema_version', SCHEMA_VERSION);
      ins.run('used_bytes', 0);
      ins.run('used_inodes', 0);
    } else if (row.value === 1 || row.value === 2) {
      if (row.value === 1) migrateChunksFrom1(db);
      migrateTo3(db);
    } else if (row.value !== SCHEMA_VERSION) {
      throw new SandboxError('INTERNAL', `VFS schema version ${row.value} is not supported`);
    }
    const t = nowNs();
    for (const volume of VOLUMES) {
      const has = db.prepare('SELECT 1 FROM volumes WHERE name = ?').get(volume);
      if (has !== undefined) continue;
      const res = db
        .prepare("INSERT INTO inodes (volume, kind, mode, nlink, size, atime_ns, mtime_ns, ctime_ns) VALUES (?, 'dir', ?, 2, 0, ?, ?, ?)")
        .run(volume, 0o755, t, t, t);
      db.prepare('INSERT INTO volumes (name, root) VALUES (?, ?)').run(volume, res.lastInsertRowid);
      db.prepare("UPDATE meta SET value = value + 1 WHERE key = 'used_inodes'").run();
    }
  }).immediate();
}

/** A read-only database (an image VFS): its schema must be this version, with every volume root. */
export function checkSchema(db: Database): void {
  const row = db.prepare<{ value: number }>("SELECT value FROM meta WHERE key = 'schema_version'").get();
  if (row?.value !== SCHEMA_VERSION) throw new SandboxError('INTERNAL', 'an image VFS has another schema version');
  const roots = db.prepare<{ n: number }>('SELECT count(*) AS n FROM volumes').get();
  if (roots?.n !== VOLUMES.length) throw new SandboxError('INTERNAL', 'an image VFS lacks a volume root');
}

/** Version 1 → 2: rebuild `chunks` as a rowid table (same columns, same rows). */
function migrateChunksFrom1(db: Database): void {
  db.exec(`
    CREATE TABLE chunks_v2 (${CHUNKS_COLUMNS}) STRICT;
    INSERT INTO chunks_v2 (ino, idx, data) SELECT ino, idx, data FROM chunks;
    DROP TABLE chunks;
    ALTER TABLE chunks_v2 RENAME TO chunks;
  `);
}

/**
 * Version 2 → 3: drop the `inodes (volume)` index; rebuild `dirents` without AUTOINCREMENT (same
 * rows, same `seq` values, so cookies handed out before stay valid). Nothing references
 * `dirents`, so dropping the old table cascades nowhere.
 */
function migrateTo3(db: Database): void {
  db.exec(`
    DROP INDEX IF EXISTS inodes_volume;
    CREATE TABLE dirents_v3 (${DIRENTS_COLUMNS}) STRICT;
    INSERT INTO dirents_v3 (seq, parent, name, ino) SELECT seq, parent, name, ino FROM dirents;
    DROP TABLE dirents;
    ALTER TABLE dirents_v3 RENAME TO dirents;
    ${DIRENTS_INDEXES}
  `);
  db.prepare("UPDATE meta SET value = ? WHERE key = 'schema_version'").run(SCHEMA_VERSION);
}

const INODE_COLS = 'ino, volume, kind, mode, nlink, size, atime_ns, mtime_ns, ctime_ns, target';

/** Prepared statements, created once per open VFS. */
export function prepareStatements(db: Database) {
  // Raw rows (arrays) with every integer as bigint: the cheapest way to get exact 64-bit times.
  const inode = db.prepare<unknown[]>(`SELECT ${INODE_COLS} FROM inodes WHERE ino = ?`);
  inode.safeIntegers(true).raw(true);
  return {
    volumeRoots: db.prepare<{ name: VolumeName; root: number }>('SELECT name, root FROM volumes'),
    inodeRaw: inode,
    /** What a start directory check needs, without the bigint conversions of `inodeRaw`. */
    inodeBrief: db.prepare<{ volume: VolumeName; kind: InodeKind }>('SELECT volume, kind FROM inodes WHERE ino = ?'),
    /** [kind code, size] for inode I/O: a raw row of two integers is the cheapest lookup. */
    fileSize: db.prepare<[FileKindCode, number]>(`SELECT ${KIND_CODE}, size FROM inodes WHERE ino = ?`).raw(true),
    /**
     * (offset, end, chunkEnd, ino, idx, ino): [kind code, size, chunk idx] — a read of the range
     * [offset, end) in one statement; the chunk is fetched only when that range, capped at the
     * size, is not empty and ends within it (at or before `chunkEnd`), else it is null (as it is
     * for a hole). A read at end of file (the last of every sequential read) fetches nothing.
     */
    fileChunk: db.prepare<[FileKindCode, number, Buffer | null]>(
      `SELECT ${KIND_CODE}, size, CASE WHEN ? < size AND min(size, ?) <= ? THEN (SELECT data FROM chunks WHERE ino = ? AND idx = ?) END
       FROM inodes WHERE ino = ?`,
    ).raw(true),
    /** (parent, name): [ino, kind, symlink target] as a raw row (the walk runs it per component). */
    lookup: db.prepare<[number, InodeKind, string | null]>(
      'SELECT d.ino, i.kind, i.target FROM dirents d JOIN inodes i ON i.ino = d.ino WHERE d.parent = ? AND d.name = ?',
    ).raw(true),
    parentOf: db.prepare<{ parent: number }>('SELECT parent FROM dirents WHERE ino = ? LIMIT 1'),
    insertInode: db.prepare(
      'INSERT INTO inodes (volume, kind, mode, nlink, size, atime_ns, mtime_ns, ctime_ns, target) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    deleteInode: db.prepare('DELETE FROM inodes WHERE ino = ?'),
    insertEntry: db.prepare('INSERT INTO dirents (parent, name, ino) VALUES (?, ?, ?)'),
    deleteEntry: db.prepare('DELETE FROM dirents WHERE parent = ? AND name = ?'),
    moveEntry: db.prepare('UPDATE dirents SET parent = ?, name = ? WHERE parent = ? AND name = ?'),
    hasEntries: db.prepare('SELECT 1 FROM dirents WHERE parent = ? LIMIT 1'),
    listEntries: db.prepare<EntryRow>(
      'SELECT d.seq AS seq, d.name AS name, d.ino AS ino, i.kind AS kind FROM dirents d JOIN inodes i ON i.ino = d.ino WHERE d.parent = ? AND d.seq > ? ORDER BY d.seq LIMIT ?',
    ),
    addLinks: db.prepare('UPDATE inodes SET nlink = nlink + ?, ctime_ns = ? WHERE ino = ?'),
    touchDir: db.prepare('UPDATE inodes SET mtime_ns = ?, ctime_ns = ? WHERE ino = ?'),
    setSize: db.prepare('UPDATE inodes SET size = ?, mtime_ns = ?, ctime_ns = ? WHERE ino = ?'),
    setTimes: db.prepare('UPDATE inodes SET atime_ns = ?, mtime_ns = ?, ctime_ns = ? WHERE ino = ?'),
    setMode: db.prepare('UPDATE inodes SET mode = ?, ctime_ns = ? WHERE ino = ?'),
    /** [used_bytes, used_inodes] as one raw row (a staged creation reads it at every open). */
    getUsage: db.prepare<[number, number]>(
      "SELECT (SELECT value FROM meta WHERE key = 'used_bytes'), (SELECT value FROM meta WHERE key = 'used_inodes')",
    ).raw(true),
    addUsage: db.prepare('UPDATE meta SET value = value + ? WHERE key = ?'),
    /** (delta, key, limit - delta): add unless that passes the limit (`changes === 0` → over quota). */
    addUsageWithin: db.prepare('UPDATE meta SET value = value + ? WHERE key = ? AND value <= ?'),
    setUsage: db.prepare('UPDATE meta SET value = ? WHERE key = ?'),
    recount: db.prepare<{ bytes: number; inodes: number }>('SELECT COALESCE(SUM(size), 0) AS bytes, COUNT(*) AS inodes FROM inodes'),
    clearVolume: db.prepare('DELETE FROM inodes WHERE volume = ? AND ino <> ?'),
    resetRoot: db.prepare('UPDATE inodes SET nlink = 2, mtime_ns = ?, ctime_ns = ? WHERE ino = ?'),
    chunkRange: db.prepare<{ idx: number; data: Buffer }>(
      'SELECT idx, data FROM chunks WHERE ino = ? AND idx BETWEEN ? AND ? ORDER BY idx',
    ),
    chunk: db.prepare<{ data: Buffer }>('SELECT data FROM chunks WHERE ino = ? AND idx = ?'),
    /** (start, length, ino, idx): part of a chunk, so a read of a chunk's edge copies only that. */
    chunkPart: db.prepare<{ data: Buffer }>('SELECT substr(data, ?, ?) AS data FROM chunks WHERE ino = ? AND idx = ?'),
    // An upsert, not INSERT OR REPLACE: an update of a same-size blob rewrites its pages in place
    // instead of freeing and reallocating them.
    putChunk: db.prepare('INSERT INTO chunks (ino, idx, data) VALUES (?, ?, ?) ON CONFLICT (ino, idx) DO UPDATE SET data = excluded.data'),
    dropChunksFrom: db.prepare('DELETE FROM chunks WHERE ino = ? AND idx >= ?'),
    /** Changes whenever another connection commits (`ChunkMemo` validity). */
    dataVersion: db.prepare<[number]>('PRAGMA data_version').raw(true),
  } satisfies Record<string, Statement<unknown>>;
}

export type Statements = ReturnType<typeof prepareStatements>;

/** Read an inode row with 64-bit timestamps as bigint and everything else as number. */
export function readInode(st: Statements, ino: number): InodeRow | undefined {
  const raw = st.inodeRaw.get(ino);
  if (raw === undefined) return undefined;
  const [i, volume, kind, mode, nlink, size, atime, mtime, ctime, target] = raw as [bigint, VolumeName, InodeKind, bigint, bigint, bigint, bigint, bigint, bigint, string | null];
  return {
    ino: Number(i), volume, kind, mode: Number(mode), nlink: Number(nlink), size: Number(size),
    atime_ns: atime, mtime_ns: mtime, ctime_ns: ctime, target: target ?? null,
  };
}
