/**
 * WASI preview 2 for the component lane, implemented by us (never preview2-shim's Node host
 * access): the ambient interfaces (streams.ts) and the filesystem over the VFS (filesystem.ts).
 * Invariant: this folder's only reach is the run's captured stdio, its clock and random source,
 * and the VFS it is handed. Does not protect against: anything beyond that — brokered
 * `membrane:engine/*` interfaces are the worker's (src/engine/worker/component-imports.ts).
 */

export { ambientP2, IoError, InputStream, OutputStream, Pollable, ownBytes, type P2Context } from './streams.ts';
export { filesystemP2, type P2FsContext } from './filesystem.ts';
