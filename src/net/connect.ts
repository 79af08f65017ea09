/**
 * Opening a socket to a pinned address: plain TCP, or TLS verified against the original host.
 *
 * Owns: the only `net.connect` / `tls.connect` calls of the network brokers, and the undici
 * connector built on them.
 *
 * Invariant: the socket goes to `pin.address` — an IP, so no name lookup happens here or in
 * Node — and nowhere else. TLS always verifies: the chain against the system roots (or the
 * `ca` given, which replaces them), and the certificate against `pin.host` (SNI is `pin.host`
 * for names, none for IP literals, whose certificate must carry the IP). There is no switch that
 * turns verification off. The undici connector refuses any origin other than the pinned one.
 *
 * Does not protect against: revocation (no OCSP/CRL checks, as Node's defaults), or a CA the
 * operator chose to trust.
 */

import { connect as netConnect, type Socket } from 'node:net';
import { checkServerIdentity, connect as tlsConnect, type PeerCertificate, type TLSSocket } from 'node:tls';
import type { buildConnector } from 'undici';
import type { PinnedAddress } from './guard.ts';
import { NetError, toNetError } from './net-error.ts';

export interface PinnedSocketOptions {
  readonly port: number;
  readonly tls: boolean;
  /** PEM trust anchors replacing the system roots (tests: a test CA). */
  readonly ca?: string | Buffer | undefined;
  /** ALPN protocols offered over TLS. */
  readonly alpn?: readonly string[];
  readonly signal: AbortSignal;
}

/** Settle with `socket` once `event` fires, or reject on error or abort (destroying it). */
function settle<S extends Socket>(socket: S, event: string, signal: AbortSignal): Promise<S> {
  return new Promise((resolve, reject) => {
    const cleanup = (): void => {
      signal.removeEventListener('abort', onAbort);
      socket.removeListener('error', onError);
    };
    const onAbort = (): void => {
      cleanup();
      socket.destroy();
      reject(toNetError(signal.reason, signal));
    };
    const onError = (err: Error): void => {
      cleanup();
      socket.destroy();
      reject(toNetError(err, signal));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    socket.once('error', onError);
    socket.once(event, () => {
      cleanup();
      resolve(socket);
    });
  });
}

/**
 * Connect to exactly `pin.address`:`port`; resolves once connected (and, for TLS, verified).
 * The TCP socket always comes from `net.connect` (so it is published on the `net.client.socket`
 * diagnostics channel) and TLS is layered on it; an abort after connecting still destroys it.
 */
export async function openPinnedSocket(pin: PinnedAddress, options: PinnedSocketOptions): Promise<Socket | TLSSocket> {
  const { signal } = options;
  if (signal.aborted) throw toNetError(signal.reason, signal);
  const tcp = await settle(netConnect({ host: pin.address, port: options.port, family: pin.family }), 'connect', signal);
  let socket: Socket | TLSSocket = tcp;
  if (options.tls) {
    const identity = pin.literal ? pin.address : pin.host;
    socket = await settle(
      tlsConnect({
        socket: tcp,
        ...(pin.literal ? {} : { servername: pin.host }),
        ...(options.ca !== undefined ? { ca: options.ca } : {}),
        ALPNProtocols: options.alpn ? [...options.alpn] : [],
        minVersion: 'TLSv1.2',
        rejectUnauthorized: true,
        checkServerIdentity: (_host: string, cert: PeerCertificate) => checkServerIdentity(identity, cert),
      }),
      'secureConnect',
      signal,
    ).catch((err: unknown) => {
      tcp.destroy();
      throw err;
    });
  }
  const connected = socket;
  signal.addEventListener('abort', () => connected.destroy(), { once: true });
  return connected;
}

const unbracket = (host: string): string => host.replace(/^\[(.*)\]$/, '$1');

/** An undici `connect` function that only ever reaches `pin` for `origin`. */
export function pinnedConnector(pin: PinnedAddress, origin: URL, options: Omit<PinnedSocketOptions, 'port' | 'tls' | 'alpn'>): buildConnector.connector {
  return (opts, callback) => {
    const secure = opts.protocol === 'https:';
    const port = opts.port === '' ? (secure ? 443 : 80) : Number(opts.port);
    const expectedPort = origin.port === '' ? (origin.protocol === 'https:' ? 443 : 80) : Number(origin.port);
    if (opts.protocol !== origin.protocol || unbracket(opts.hostname) !== unbracket(origin.hostname) || port !== expectedPort) {
      callback(new NetError('DENIED', 'the connection does not match the checked origin'), null);
      return;
    }
    openPinnedSocket(pin, { ...options, port, tls: secure, alpn: ['http/1.1'] }).then(
      (socket) => callback(null, socket),
      (err: unknown) => callback(toNetError(err, options.signal), null),
    );
  };
}
