// The child process that runs `vfs_query` statements (plain JavaScript so it starts without a
// TypeScript loader; scripts/bundle.mjs copies it to dist/ beside the bundles).
//
// Owns: opening the VFS database read-only for one query, the per-connection pragmas, the
// reader/read-only test of the prepared statement, and the JSON encoding of the result with its
// byte cap. Speaks the versioned protocol of query-process.ts over the IPC channel: one
// `{ v: 1, kind: 'query', id, ... }` in, one `{ v: 1, kind: 'result' | 'error', id, ... }` out.
//
// Invariant: every connection is opened `readonly` (the file descriptor is O_RDONLY) with
// `query_only`, `trusted_schema=OFF`, in-memory temp storage and no mmap, and is closed before
// the answer is sent; a statement runs only if SQLite reports it as a read-only reader; the JSON
// sent back is never longer than the cap. Errors carry SQLite's message text, never a stack.
//
// Does not protect against: a statement that never returns or allocates without bound — native
// code cannot be stopped from here; the parent kills this process (deadline, memory watchdog).

import { createRequire } from 'node:module';

// The binding for the running Node, as src/storage/sqlite.ts chooses it (SQLITE_PACKAGE).
const Database = createRequire(import.meta.url)(Number(process.versions.node.split('.')[0]) >= 22 ? 'better-sqlite3' : 'better-sqlite3-12');

const SQLITE_CODES = {
  TOO_LARGE: ['SQLITE_TOOBIG', 'SQLITE_NOMEM', 'SQLITE_FULL'],
  DENIED: ['SQLITE_READONLY', 'SQLITE_AUTH', 'SQLITE_PERM'],
  UNAVAILABLE: ['SQLITE_CORRUPT', 'SQLITE_NOTADB', 'SQLITE_CANTOPEN', 'SQLITE_IOERR', 'SQLITE_BUSY', 'SQLITE_LOCKED'],
};

class Refusal extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

function codeOf(err) {
  if (err instanceof Refusal) return err.code;
  if (err instanceof Database.SqliteError) {
    // SQLite's answer to load_extension() and other refused operations.
    if (/not authorized/i.test(err.message)) return 'DENIED';
    for (const [code, prefixes] of Object.entries(SQLITE_CODES)) {
      if (prefixes.some((p) => err.code === p || String(err.code).startsWith(`${p}_`))) return code;
    }
    return 'INVALID';
  }
  // V8 giving up on a string or buffer: the result was too big to hold.
  if (err instanceof RangeError && /length|allocation|memory/i.test(err.message)) return 'TOO_LARGE';
  // better-sqlite3's own TypeErrors/RangeErrors (e.g. "more than one statement").
  if (err instanceof TypeError || err instanceof RangeError) return 'INVALID';
  return 'UNAVAILABLE';
}

function open(source, heapBytes, timeoutMs) {
  const bytes = source.kind === 'bytes' ? Buffer.from(source.bytes.buffer, source.bytes.byteOffset, source.bytes.byteLength) : null;
  // A database serialized from a WAL-mode file says so in its header (bytes 18-19 = 2); an
  // in-memory copy has no WAL, so mark it a rollback-journal database (1) — its pages are complete.
  if (bytes && bytes.byteLength >= 100 && bytes[18] === 2 && bytes[19] === 2) bytes[18] = bytes[19] = 1;
  // SQLite's own heap caps (process-wide). better-sqlite3 is built with SQLITE_DEFAULT_MEMSTATUS=0,
  // under which SQLite accepts but does not enforce them: the parent's RSS watchdog is the real cap.
  const limit = heapBytes + (bytes ? bytes.byteLength : 0);
  control.pragma(`hard_heap_limit = ${Math.floor(limit)}`, { simple: true });
  control.pragma(`soft_heap_limit = ${Math.floor(limit / 2)}`, { simple: true });
  let db;
  try {
    db = bytes
      ? new Database(bytes, { readonly: true })
      : new Database(source.file, { readonly: true, fileMustExist: true, timeout: Math.max(1, Math.floor(timeoutMs)) });
  } catch {
    throw new Refusal('UNAVAILABLE', 'the VFS database could not be opened');
  }
  try {
    db.pragma('query_only = ON', { simple: true });
    db.pragma('trusted_schema = OFF', { simple: true });
    db.pragma('temp_store = MEMORY', { simple: true });
    db.pragma('mmap_size = 0', { simple: true });
    db.pragma('cache_size = -16000', { simple: true });
    db.defaultSafeIntegers(true);
  } catch {
    db.close();
    throw new Refusal('UNAVAILABLE', 'the VFS database could not be opened');
  }
  return db;
}

/** JSON for one SQLite value, or null when it alone would pass `room` bytes. */
function encodeValue(v, room) {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'bigint') {
    return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? v.toString() : `"${v.toString()}"`;
  }
  if (typeof v === 'number') return Number.isFinite(v) ? JSON.stringify(v) : `"${String(v)}"`;
  if (typeof v === 'string') return v.length > room ? null : JSON.stringify(v);
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) {
    if (Math.ceil(v.byteLength / 3) * 4 + 13 > room) return null;
    return `{"$base64":"${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64')}"}`;
  }
  return JSON.stringify(String(v));
}

function run(msg) {
  const db = open(msg.source, msg.heapBytes, msg.timeoutMs);
  try {
    let stmt;
    try {
      stmt = db.prepare(msg.sql);
    } catch (err) {
      throw err instanceof Database.SqliteError || err instanceof TypeError || err instanceof RangeError ? err : new Refusal('INVALID', 'the query could not be prepared');
    }
    if (!stmt.reader || !stmt.readonly) throw new Refusal('DENIED', 'only read-only queries that return rows are allowed');
    stmt.raw(true);
    const columns = stmt.columns().map((c) => c.name);
    const max = msg.maxResultBytes;
    const head = `{"columns":${JSON.stringify(columns)},"rows":[`;
    const parts = [head];
    let size = Buffer.byteLength(head) + 2;
    let rows = 0;
    const tooLarge = () => new Refusal('TOO_LARGE', `the result is larger than ${max} bytes`);
    if (size > max) throw tooLarge();
    for (const row of stmt.iterate()) {
      let piece = rows === 0 ? '[' : ',[';
      for (let i = 0; i < row.length; i++) {
        const v = encodeValue(row[i], max - size - piece.length);
        if (v === null) throw tooLarge();
        piece += (i === 0 ? '' : ',') + v;
        if (piece.length > max) throw tooLarge();
      }
      piece += ']';
      size += Buffer.byteLength(piece);
      if (size > max) throw tooLarge();
      parts.push(piece);
      rows++;
    }
    parts.push(']}');
    return { json: parts.join(''), rows };
  } finally {
    db.close();
  }
}

// A connection of our own, never given to a guest, to set SQLite's process-wide heap limits.
const control = new Database(':memory:');

process.on('message', (msg) => {
  if (msg === null || typeof msg !== 'object' || msg.v !== 1 || msg.kind !== 'query') return;
  let reply;
  try {
    reply = { v: 1, kind: 'result', id: msg.id, ...run(msg) };
  } catch (err) {
    const message = err instanceof Error ? String(err.message).slice(0, 500) : 'the query failed';
    reply = { v: 1, kind: 'error', id: msg.id, code: codeOf(err), message };
  }
  process.send(reply);
});
// The parent is gone (closed, or killed): nothing is left to answer.
process.on('disconnect', () => process.exit(0));
process.send({ v: 1, kind: 'ready' });
