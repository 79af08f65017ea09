// Loopback test servers for the network guard: each counts the TCP connections it accepts, so a
// refused request can be shown to have reached nobody. Also: an observer of every outgoing TCP
// socket the process opens (Node's `net.client.socket` diagnostics channel), scripted resolvers,
// and a throwaway test CA made with node:crypto (no openssl CLI).
import dc from 'node:diagnostics_channel';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { ResolvedAddress, Resolver } from '../../src/net/index.ts';
import { issue } from '../helpers/x509.ts';

export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export interface TestServer {
  readonly host: string;
  readonly port: number;
  /** TCP connections accepted so far. */
  readonly connections: number;
  /** `METHOD path host` of every request seen. */
  readonly requests: string[];
  /** TLS servernames (SNI) seen, for https servers. */
  readonly servernames: (string | false | null)[];
  close(): Promise<void>;
}

async function listen(server: Server, host: string, port: number): Promise<TestServer> {
  let connections = 0;
  const requests: string[] = [];
  const servernames: (string | false | null)[] = [];
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('secureConnection', (s: TLSSocket) => servernames.push(s.servername));
  server.on('request', (req: IncomingMessage) => requests.push(`${req.method} ${req.url} ${req.headers.host}`));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    host,
    port: bound,
    get connections() {
      return connections;
    },
    requests,
    servernames,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

export function httpServer(handler: Handler, host = '127.0.0.1', port = 0): Promise<TestServer> {
  return listen(createHttpServer(handler), host, port);
}

export function httpsServer(tls: { cert: string; key: string }, handler: Handler, host = '127.0.0.1', port = 0): Promise<TestServer> {
  return listen(createHttpsServer({ cert: tls.cert, key: tls.key }, handler), host, port);
}

/** Counts every TCP socket this process opens with `net.connect` while `run` runs. */
export async function outgoingSockets(run: () => Promise<unknown>): Promise<number> {
  let n = 0;
  const onSocket = (): void => {
    n++;
  };
  dc.subscribe('net.client.socket', onSocket);
  try {
    await run();
  } finally {
    dc.unsubscribe('net.client.socket', onSocket);
  }
  return n;
}

/** A resolver answering from a table (name → addresses), counting its calls per name. */
export function tableResolver(table: Record<string, string[]>): Resolver & { calls: Record<string, number> } {
  const calls: Record<string, number> = {};
  const resolver = async (host: string): Promise<ResolvedAddress[]> => {
    calls[host] = (calls[host] ?? 0) + 1;
    const addrs = table[host];
    if (!addrs) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return addrs.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(resolver, { calls });
}

/** A resolver that must never be called. */
export const noResolver: Resolver & { calls: number } = Object.assign(
  async (): Promise<ResolvedAddress[]> => {
    noResolver.calls++;
    throw new Error('the resolver was called');
  },
  { calls: 0 },
);

export interface TestPki {
  /** The CA certificate (PEM) to trust. */
  readonly ca: string;
  /** Leaf certificates signed by the CA, by DNS name. */
  leaf(name: string): { cert: string; key: string };
  dispose(): void;
}

/** A fresh CA (EC P-256, valid 2 days) and leaves it signs, made with node:crypto (test/helpers/x509.ts). */
export function makeTestPki(): TestPki {
  const ca = issue({ commonName: 'Membrane Test CA', serial: 1, ca: true, days: 2 });
  const leaves = new Map<string, { cert: string; key: string }>();
  let serial = 1000;
  return {
    ca: ca.cert,
    leaf(name) {
      const have = leaves.get(name);
      if (have) return have;
      const { cert, key } = issue({ commonName: name, serial: ++serial, dnsName: name, days: 2, issuer: { commonName: 'Membrane Test CA', privateKey: ca.privateKey } });
      const made = { cert, key };
      leaves.set(name, made);
      return made;
    },
    dispose() {},
  };
}
