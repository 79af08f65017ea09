/**
 * MCP over stdio: `membrane mcp` serves one client on stdin/stdout until stdin ends or a signal.
 *
 * Owns: the transport's message bound (MAX_MCP_MESSAGE_BYTES: one line larger than that ends the
 * session instead of growing a buffer without bound), logging of protocol-level junk (a line that
 * is not JSON-RPC is logged on stderr and skipped — the server keeps serving), and the orderly
 * end: stop reading, let in-flight calls finish (each is bounded by its grant's timeout), close.
 * Invariant: stdout carries only protocol messages — this module writes nothing else there, and
 * the engine's guests and lanes never write to the host's stdout (guest output is captured).
 *
 * Does not protect against: a client that sends a message and never reads the answer (stdout
 * back-pressure stalls that answer only); the client is the local program that spawned us.
 */

import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { McpContext } from './context.ts';
import { MAX_MCP_BODY_BYTES } from './http.ts';
import { createMcpServer } from './server.ts';

/** One JSON-RPC line on stdin: the same envelope bound as /mcp's body. */
export const MAX_MCP_MESSAGE_BYTES = MAX_MCP_BODY_BYTES;

export interface StdioHandle {
  /** Resolves when the session is over (stdin ended, the transport closed, or `close()`). */
  readonly done: Promise<void>;
  /** Stop reading, wait for in-flight calls, close. */
  close(): Promise<void>;
}

export async function serveStdio(ctx: McpContext, io: { stdin: Readable; stdout: Writable } = { stdin: process.stdin, stdout: process.stdout }): Promise<StdioHandle> {
  const inflight = new Set<Promise<unknown>>();
  const server = createMcpServer({ ...ctx, track: (p) => {
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
  } });
  const transport = new StdioServerTransport(io.stdin, io.stdout, { maxBufferSize: MAX_MCP_MESSAGE_BYTES });
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  let closing: Promise<void> | null = null;
  const close = (): Promise<void> => {
    if (closing) return closing;
    let release!: () => void;
    closing = new Promise<void>((resolve) => (release = resolve));
    io.stdin.off('end', onEnd);
    void (async () => {
      while (inflight.size > 0) await Promise.allSettled([...inflight]);
      await server.close().catch(() => undefined);
      finish();
      release();
    })();
    return closing;
  };
  const onEnd = (): void => void close();
  server.server.onerror = (e: Error) => {
    // Junk on stdin (not JSON, not JSON-RPC) or an oversized line: log the kind, never the text.
    const problem = e.message.startsWith('ReadBuffer exceeded') ? `a message larger than ${MAX_MCP_MESSAGE_BYTES} bytes` : e instanceof SyntaxError ? 'a line that is not JSON' : 'a message that is not JSON-RPC';
    ctx.log?.warn({ tenant: ctx.tenant, problem }, 'mcp: bad input on stdin');
  };
  server.server.onclose = () => void close();
  io.stdin.on('end', onEnd);
  await server.connect(transport);
  return { done, close };
}
