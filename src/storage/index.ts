/**
 * Storage's public surface: SQLite opening and the instance VFS.
 *
 * Owns nothing itself; see each module's header for its invariants.
 */

export { membraneCacheDir, membraneHome, openDatabase, removeDatabase, storageDir, BUSY_TIMEOUT_MS, type Database, type Statement, type Transaction } from './sqlite.ts';
export { WASI_ERRNO, VfsError, type ErrnoName } from './errno.ts';
export { MAX_NAME_BYTES, MAX_PATH_BYTES, MAX_SYMLINK_HOPS } from './vfs-path.ts';
export * from './vfs.ts';
export * from './audit.ts';
