/**
 * WASI preview 2 for the component lane, implemented by us (never preview2-shim's Node host
 * access): the ambient interfaces (streams.ts), the filesystem over the VFS (filesystem.ts) and
 * outgoing HTTP over a brokered `send` (http.ts), TCP client sockets over a brokered `exchange`
 * (sockets.ts).
 * Invariant: this folder's only reach is the run's captured stdio, its clock and random source,
 * the VFS it is handed and the brokered calls it is handed. Does not protect against: anything beyond that — brokered
 * `membrane:engine/*` interfaces are the worker's (src/engine/worker/component-imports.ts).
 */

export { ambientP2, IoError, InputStream, OutputStream, Pollable, ownBytes, type P2Context } from './streams.ts';
export { filesystemP2, type P2FsContext } from './filesystem.ts';
export { httpP2, MAX_REQUEST_BODY_BYTES, type HttpAnswer, type HttpErrorCode, type HttpRequestOut, type HttpSend } from './http.ts';
export { socketsP2, MAX_LOOKUP_NAMES, MAX_TCP_SEND_BYTES, type TcpAnswer, type TcpExchange } from './sockets.ts';
