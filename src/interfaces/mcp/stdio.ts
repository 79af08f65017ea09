/**
 * MCP over stdio: `membrane mcp` serves one client on stdin/stdout until stdin ends or a signal.
 *
 * Owns: the transport's message bound (MAX_MCP_MESSAGE_BYTES: one line larger than that ends the
 * session instead of growing a buffer without bound), logging of protocol-level junk (a line that
 * is not JSON-RPC is logged on stderr by kind and skipped — the server keeps serving), and the
 * orderly end: stop taking requests, wait until every request already read has had its answer
 * written (each call is bounded by its grant's timeout; the wait by SHUTDOWN_GRACE_MS) — a request
 * the client cancelled is never answered, so it is not waited for — then close.
 * Invariant: stdout carries only protocol messages — this module writes nothing else there, and
 * the engine's guests and lanes never write to the host's stdout (guest output is captured); a
 * request read before shutdown and not cancelled is answered before the process ends.
 *
 * Does not protect against: a client that sends a request and never reads the answer (stdout
 * back-pressure stalls that answer only); the client is the local program that spawned us.
 *
 * The SDK's transport is loaded by a top-level `await import()` (a static import would be hoisted
 * to the top of the CLI bundle), so only a command that reaches this module pays for it.
 */

import type { Readable, Writable } from 'node:stream';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { McpContext } from './context.ts';
import { MAX_MCP_BODY_BYTES } from './http.ts';
import { createMcpServer } from './server.ts';

const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');

/** One JSON-RPC line on stdin: the same envelope bound as /mcp's body. */
export const MAX_MCP_MESSAGE_BYTES = MAX_MCP_BODY_BYTES;
/** Longer than the largest profile's per-call timeout (posix: 60 s) plus a cold interpreter start. */
export const SHUTDOWN_GRACE_MS = 75_000;

export interface StdioHandle {
  /** Resolves when the session is over (stdin ended, the transport closed, or `close()`). */
  readonly done: Promise<void>;
  /** Stop taking requests, answer the ones in flight, close. */
  close(): Promise<void>;
}

type Id = string | number;

function requestId(m: JSONRPCMessage): Id | undefined {
  return 'method' in m && 'id' in m ? m.id : undefined;
}

function cancelledId(m: JSONRPCMessage): Id | undefined {
  if (!('method' in m) || m.method !== 'notifications/cancelled' || 'id' in m) return undefined;
  const id = (m.params as { requestId?: unknown } | undefined)?.requestId;
  return typeof id === 'string' || typeof id === 'number' ? id : undefined;
}

function responseId(m: JSONRPCMessage): Id | undefined {
  return !('method' in m) && 'id' in m && m.id !== null && m.id !== undefined ? m.id : undefined;
}

export async function serveStdio(ctx: McpContext, io: { stdin: Readable; stdout: Writable } = { stdin: process.stdin, stdout: process.stdout }): Promise<StdioHandle> {
  const server = createMcpServer(ctx);
  const transport = new StdioServerTransport(io.stdin, io.stdout, { maxBufferSize: MAX_MCP_MESSAGE_BYTES });
  const pending = new Set<Id>();
  let answered: (() => void) | null = null;
  let closing: Promise<void> | null = null;
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));

  const close = (): Promise<void> => {
    if (closing) return closing;
    let release!: () => void;
    closing = new Promise<void>((resolve) => (release = resolve));
    io.stdin.off('end', onEnd);
    void (async () => {
      if (pending.size > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, SHUTDOWN_GRACE_MS);
          timer.unref();
          answered = () => {
            if (pending.size > 0) return;
            clearTimeout(timer);
            resolve();
          };
        });
      }
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

  // Account for requests at the transport, where "answered" means "written to stdout".
  const deliver = transport.onmessage;
  transport.onmessage = (m: JSONRPCMessage) => {
    const id = requestId(m);
    if (id !== undefined) {
      if (closing) return; // shutting down: no new work
      pending.add(id);
    }
    // A cancelled request is never answered (the protocol says so, and the SDK drops its result):
    // it is no longer one shutdown waits for.
    const cancelled = cancelledId(m);
    if (cancelled !== undefined && pending.delete(cancelled)) answered?.();
    deliver?.(m);
  };
  const send = transport.send.bind(transport);
  transport.send = async (m: JSONRPCMessage) => {
    await send(m);
    const id = responseId(m);
    if (id !== undefined && pending.delete(id)) answered?.();
  };
  return { done, close };
}
