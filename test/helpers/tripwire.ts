/**
 * Test helper: a TCP server on 127.0.0.1 that counts every connection and drops it — a tripwire
 * an escape test points a snippet at, then asserts nothing reached (`connections() === 0`).
 */

import { createServer } from 'node:net';

export interface Tripwire {
  readonly port: number;
  connections(): number;
  close(): Promise<void>;
}

export async function tripwire(): Promise<Tripwire> {
  let count = 0;
  const server = createServer((s) => {
    count++;
    s.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const a = server.address();
  const port = typeof a === 'object' && a !== null ? a.port : 0;
  return { port, connections: () => count, close: () => new Promise<void>((r) => server.close(() => r())) };
}
