export * from './net-error.ts';
export * from './address.ts';
export * from './normalize.ts';
export * from './guard.ts';
export * from './headers.ts';
export { openPinnedSocket, pinnedConnector, type PinnedSocketOptions } from './connect.ts';
export * from './fetch.ts';
export * from './socket.ts';
