/**
 * The request headers that belong to the host's connection, never to a guest: one list for the
 * network broker (src/net/headers.ts: `DENIED`) and for wasi:http's fields (src/wasi/p2/http.ts:
 * `forbidden`).
 * Invariant: the connection, framing and routing of a request are the host's — `Host`,
 * `Connection`, `Content-Length`, `Transfer-Encoding`, `TE`, `Trailer`, `Upgrade`, `Keep-Alive`,
 * `Expect`, `HTTP2-Settings` and every `Proxy-*` header.
 * Does not protect against: anything by itself — it is a list; its users refuse.
 */

const HOST_OWNED = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'keep-alive', 'expect', 'http2-settings']);

/** Whether a lowercase header name is the host's to set. */
export function hostOwnedHeader(name: string): boolean {
  return HOST_OWNED.has(name) || name.startsWith('proxy-');
}
