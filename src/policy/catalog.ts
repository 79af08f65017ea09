/**
 * The import catalog: every import a guest may name, the cap word that links it, and whether
 * this version of Membrane links it yet. This is the one place that says which cap words link
 * nothing yet (DESIGN §4 "granted means linked").
 *
 * Owns: (module, name) → { grant, status, signature }. `grant` is a cap word, `ambient` (always
 * linked) or `never` (nothing grants it: Membrane has no sockets). `status` is `linked` (a real
 * implementation) or `planned`
 * (the cap word is real but its broker is not built: the import is absent, so a module naming it
 * fails to link even when the cap is granted).
 *
 * Invariant: an import that is not in this catalog with a granted cap and a non-`planned` status
 * is never linked; the linker (engine/linker.ts) builds the import plan from this table alone.
 *
 * Does not protect against: a wrong implementation behind a linked name — that is each
 * implementation's own tests' job.
 */

import type { CapWord } from './profiles.ts';

export type ValType = 'i32' | 'i64' | 'f32' | 'f64' | 'v128' | 'funcref' | 'externref';

export interface Signature {
  readonly params: readonly ValType[];
  readonly results: readonly ValType[];
}

export type Grant = CapWord | 'ambient' | 'never';
export type LinkStatus = 'linked' | 'planned';

export interface CatalogEntry {
  readonly module: string;
  readonly name: string;
  readonly kind: 'function' | 'memory';
  readonly grant: Grant;
  readonly status: LinkStatus;
  /** Required for linked functions; planned entries may not have one yet. */
  readonly signature: Signature | null;
  /** Where the missing piece lands, for `planned` entries. */
  readonly note?: string;
  /**
   * For broker imports served by the main thread: how many `(ptr, len)` strings the call takes
   * and whether it ends with `(out_ptr, out_cap)` (DESIGN §4 conventions).
   */
  readonly abi?: BrokerAbi;
}

export interface BrokerAbi {
  readonly strings: number;
  readonly out: boolean;
}

export const MEMBRANE_MODULE = 'membrane';
export const WASI_MODULE = 'wasi_snapshot_preview1';
/** Where clang's `--import-memory` looks for its memory. */
export const MEMORY_IMPORT = { module: 'env', name: 'memory' } as const;
/** A module's own memory, made an import by the rewriter (wasm/memory-import.ts); the worker fills it. Never a guest's to import. */
export const POOL_MEMORY_IMPORT = { module: 'membrane:pool', name: 'memory' } as const;

/**
 * Engine-internal names the rewriter adds to a module (never in the catalog, so a guest that
 * names them itself fails to link): the fuel meter's refill import `(i64) -> i64` and the
 * exported i64 global holding the fuel left in the current chunk.
 */
export const FUEL_REFILL_IMPORT = { module: 'membrane:fuel', name: 'refill' } as const;
export const FUEL_GLOBAL_EXPORT = '__membrane_fuel';

const I = 'i32' as const;
const J = 'i64' as const;
const sig = (params: readonly ValType[], results: readonly ValType[] = []): Signature => ({ params, results });
const errno = (...params: ValType[]): Signature => sig(params, [I]);

/** Where a planned cap word's broker will land (none pending: every cap word links its imports). */
const PLANNED_NOTES: Partial<Record<CapWord, string>> = {
};

function membrane(name: string, grant: Grant, status: LinkStatus, signature: Signature | null, abi?: BrokerAbi): CatalogEntry {
  const note = status === 'planned' && grant !== 'ambient' && grant !== 'never' ? PLANNED_NOTES[grant] : undefined;
  return { module: MEMBRANE_MODULE, name, kind: 'function', grant, status, signature, ...(note ? { note } : {}), ...(abi ? { abi } : {}) };
}

/** A broker call of `strings` string arguments, returning bytes through `out` or a status. */
function brokered(name: string, grant: Grant, strings: number, out: boolean): CatalogEntry {
  const params: ValType[] = [];
  for (let i = 0; i < strings; i++) params.push(I, I);
  if (out) params.push(I, I);
  return membrane(name, grant, 'linked', errno(...params), { strings, out });
}

function wasi(name: string, grant: Grant, status: LinkStatus, signature: Signature): CatalogEntry {
  return { module: WASI_MODULE, name, kind: 'function', grant, status, signature };
}

/** Ambient WASI: everything a program needs that touches neither files nor sockets. */
const WASI_AMBIENT: ReadonlyArray<[string, Signature]> = [
  ['args_get', errno(I, I)],
  ['args_sizes_get', errno(I, I)],
  ['environ_get', errno(I, I)],
  ['environ_sizes_get', errno(I, I)],
  ['clock_res_get', errno(I, I)],
  ['clock_time_get', errno(I, J, I)],
  ['random_get', errno(I, I)],
  ['fd_write', errno(I, I, I, I)],
  ['fd_read', errno(I, I, I, I)],
  ['fd_close', errno(I)],
  ['fd_seek', errno(I, J, I, I)],
  ['fd_tell', errno(I, I)],
  ['fd_fdstat_get', errno(I, I)],
  ['fd_fdstat_set_flags', errno(I, I)],
  ['fd_sync', errno(I)],
  ['fd_datasync', errno(I)],
  ['proc_exit', sig([I])],
  ['proc_raise', errno(I)],
  ['sched_yield', errno()],
];

/** WASI's filesystem calls: linked with `vfs`, over the instance's own SQLite VFS (src/wasi/fs.ts). */
const WASI_FS: ReadonlyArray<[string, Signature]> = [
  ['fd_advise', errno(I, J, J, I)],
  ['fd_allocate', errno(I, J, J)],
  ['fd_fdstat_set_rights', errno(I, J, J)],
  ['fd_filestat_get', errno(I, I)],
  ['fd_filestat_set_size', errno(I, J)],
  ['fd_filestat_set_times', errno(I, J, J, I)],
  ['fd_pread', errno(I, I, I, J, I)],
  ['fd_prestat_get', errno(I, I)],
  ['fd_prestat_dir_name', errno(I, I, I)],
  ['fd_pwrite', errno(I, I, I, J, I)],
  ['fd_readdir', errno(I, I, I, J, I)],
  ['fd_renumber', errno(I, I)],
  ['path_create_directory', errno(I, I, I)],
  ['path_filestat_get', errno(I, I, I, I, I)],
  ['path_filestat_set_times', errno(I, I, I, I, J, J, I)],
  ['path_link', errno(I, I, I, I, I, I, I)],
  ['path_open', errno(I, I, I, I, I, J, J, I, I)],
  ['path_readlink', errno(I, I, I, I, I, I)],
  ['path_remove_directory', errno(I, I, I)],
  ['path_rename', errno(I, I, I, I, I, I)],
  ['path_symlink', errno(I, I, I, I, I)],
  ['path_unlink_file', errno(I, I, I)],
];

/**
 * Sockets: Membrane never creates a socket descriptor (network reach is brokered: `tcp`, `net`,
 * ...), so these are linked for every WASI guest and answer ENOTSOCK/EBADF — real binaries
 * (CPython for WASI, Rust's std) import them unconditionally and could not load without them.
 */
const WASI_SOCKETS: ReadonlyArray<[string, Signature]> = [
  ['sock_accept', errno(I, I, I)],
  ['sock_recv', errno(I, I, I, I, I, I)],
  ['sock_send', errno(I, I, I, I, I)],
  ['sock_shutdown', errno(I, I)],
];

const OUT = [I, I] as const; // (out_ptr, out_cap)
const STR = [I, I] as const; // (ptr, len)

export const CATALOG: readonly CatalogEntry[] = Object.freeze([
  // membrane: ambient
  membrane('session_info', 'ambient', 'linked', errno(...OUT)),
  membrane('log', 'ambient', 'linked', sig([I, ...STR])),
  membrane('clock_ms', 'ambient', 'linked', sig([], [J])),
  // membrane: brokered powers (the vfs and command lanes are linked; the rest land with issue #5)
  membrane('vfs_read', 'vfs', 'linked', errno(...STR, ...OUT)),
  membrane('vfs_write', 'vfs', 'linked', errno(...STR, ...STR)),
  membrane('vfs_list', 'vfs', 'linked', errno(...STR, ...OUT)),
  membrane('vfs_delete', 'vfs', 'linked', errno(...STR)),
  membrane('vfs_query', 'vfs', 'linked', errno(...STR, ...OUT)),
  membrane('run_command', 'commands', 'linked', errno(...STR, ...OUT)),
  membrane('exec', 'exec', 'linked', errno(...STR, ...OUT)),
  membrane('process_spawn', 'exec', 'linked', errno(...STR)),
  membrane('process_wait', 'exec', 'linked', errno(I, ...OUT)),
  membrane('process_kill', 'exec', 'linked', errno(I)),
  brokered('kv_get', 'kv', 1, true),
  brokered('kv_put', 'kv', 2, false),
  brokered('kv_delete', 'kv', 1, false),
  brokered('kv_list', 'kv', 1, true),
  brokered('secret_sign', 'secrets', 2, true),
  brokered('queue_push', 'queue', 2, false),
  brokered('queue_pop', 'queue', 1, true),
  brokered('queue_len', 'queue', 1, false),
  brokered('tcp_request', 'tcp', 2, true),
  brokered('udp_request', 'udp', 2, true),
  brokered('tls_request', 'tls', 2, true),
  brokered('http_fetch', 'net', 1, true),
  brokered('http_fetch_many', 'net', 1, true),
  // serving inbound HTTP (engine.serve): the request being handled, and the answer to it
  brokered('serve_request', 'net', 0, true),
  brokered('serve_respond', 'net', 1, false),
  brokered('browse_fetch', 'browse', 1, true),
  brokered('llm_complete', 'llm', 1, true),
  brokered('run_command_many', 'parallel', 1, true),
  // WASI preview 1
  ...WASI_AMBIENT.map(([n, s]) => wasi(n, 'ambient', 'linked', s)),
  ...WASI_FS.map(([n, s]) => wasi(n, 'vfs', 'linked', s)),
  // ambient: clock subscriptions sleep within the call's deadline, descriptor ones only on stdio
  wasi('poll_oneoff', 'ambient', 'linked', errno(I, I, I, I)),
  ...WASI_SOCKETS.map(([n, s]) => wasi(n, 'ambient', 'linked', s)),
  // memory
  { module: MEMORY_IMPORT.module, name: MEMORY_IMPORT.name, kind: 'memory', grant: 'ambient', status: 'linked', signature: null },
] satisfies CatalogEntry[]);

const BY_KEY = new Map<string, CatalogEntry>(CATALOG.map((e) => [importKey(e.module, e.name), e]));

export function importKey(module: string, name: string): string {
  return `${module}.${name}`;
}

export function lookupImport(module: string, name: string): CatalogEntry | undefined {
  return BY_KEY.get(importKey(module, name));
}

/** The catalog entries a cap word contributes (what granting it links today). */
export function contributionOf(grant: Grant): CatalogEntry[] {
  return CATALOG.filter((e) => e.grant === grant && e.status !== 'planned');
}
