/**
 * One-shot socket brokers: `tcpRequest`, `tlsRequest`, `udpRequest` (DESIGN §4 `tcp` `tls` `udp`).
 *
 * Owns: send some bytes to host:port through the guard, read one answer, close.
 *
 * Invariant: the host is normalized, resolved once and checked (guard.ts) and the socket goes to
 * the pinned address only; TLS verifies the peer against the host with SNI (connect.ts). TCP and
 * TLS send the request, half-close the write side, and read until the peer closes; UDP sends one
 * datagram and takes the first datagram that comes back from the pinned address and port. The
 * answer is capped (1 MiB, `TOO_LARGE`) and one deadline (10 s, `TIMEOUT`; a broker passes less —
 * what is left of its caller's call) covers resolution, connection, sending and reading; an abort
 * of the caller's signal destroys the socket. Request bytes are capped at 1 MiB (UDP: 65 507).
 *
 * Does not protect against: a peer that never closes (the call ends at the deadline, with
 * `TIMEOUT`, discarding what arrived), or the content of the answer.
 */

import { createSocket } from 'node:dgram';
import type { Resolver } from './guard.ts';
import { resolveAndCheck } from './guard.ts';
import { openPinnedSocket } from './connect.ts';
import { parseIp } from './address.ts';
import { NetError, positive, startDeadline, toNetError } from './net-error.ts';

export const DEFAULT_SOCKET_RESPONSE_BYTES = 1024 * 1024;
export const MAX_SOCKET_REQUEST_BYTES = 1024 * 1024;
export const MAX_UDP_PAYLOAD_BYTES = 65_507;
export const DEFAULT_SOCKET_TIMEOUT_MS = 10_000;

export interface SocketRequestOptions {
  resolver?: Resolver;
  allowCidrs?: readonly string[];
  maxResponseBytes?: number;
  timeoutMs?: number;
  /** PEM trust anchors replacing the system roots (TLS; tests only). */
  ca?: string | Buffer;
  signal?: AbortSignal;
}

function checkPort(port: number): number {
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new NetError('INVALID', 'the port must be an integer in 1..65535');
  return port;
}

function checkBytes(bytes: Uint8Array, max: number): Uint8Array {
  if (!(bytes instanceof Uint8Array)) throw new NetError('INVALID', 'the request must be bytes');
  if (bytes.byteLength > max) throw new NetError('TOO_LARGE', `the request is over ${max} bytes`);
  return bytes;
}

async function streamRequest(tls: boolean, host: string, port: number, bytes: Uint8Array, options: SocketRequestOptions): Promise<Uint8Array> {
  const deadline = startDeadline(positive(options.timeoutMs, DEFAULT_SOCKET_TIMEOUT_MS, 'timeoutMs'), options.signal);
  const { signal } = deadline;
  try {
    const max = positive(options.maxResponseBytes, DEFAULT_SOCKET_RESPONSE_BYTES, 'maxResponseBytes');
    checkPort(port);
    checkBytes(bytes, MAX_SOCKET_REQUEST_BYTES);
    const pin = await resolveAndCheck(host, { allowCidrs: options.allowCidrs ?? [], signal, ...(options.resolver ? { resolver: options.resolver } : {}) });
    const socket = await openPinnedSocket(pin, { port, tls, ca: options.ca, signal });
    return await new Promise<Uint8Array>((resolve, reject) => {
      const chunks: Buffer[] = [];
      let total = 0;
      const fail = (err: unknown): void => {
        socket.destroy();
        reject(toNetError(err, signal));
      };
      signal.addEventListener('abort', () => fail(signal.reason), { once: true });
      socket.on('error', fail);
      socket.on('data', (chunk: Buffer) => {
        total += chunk.byteLength;
        if (total > max) return fail(new NetError('TOO_LARGE', `the answer is over ${max} bytes`));
        chunks.push(chunk);
      });
      socket.on('end', () => {
        socket.destroy();
        resolve(new Uint8Array(Buffer.concat(chunks, total)));
      });
      socket.end(bytes);
    });
  } catch (err) {
    throw toNetError(err, signal);
  } finally {
    deadline.dispose();
  }
}

/** Send `bytes` to host:port over TCP, half-close, and return everything read until the peer closes. */
export function tcpRequest(host: string, port: number, bytes: Uint8Array, options: SocketRequestOptions = {}): Promise<Uint8Array> {
  return streamRequest(false, host, port, bytes, options);
}

/** As `tcpRequest`, over TLS verified against `host` (SNI = host for names). */
export function tlsRequest(host: string, port: number, bytes: Uint8Array, options: SocketRequestOptions = {}): Promise<Uint8Array> {
  return streamRequest(true, host, port, bytes, options);
}

/** Send one datagram to host:port and return the first datagram that comes back from there. */
export async function udpRequest(host: string, port: number, bytes: Uint8Array, options: SocketRequestOptions = {}): Promise<Uint8Array> {
  const deadline = startDeadline(positive(options.timeoutMs, DEFAULT_SOCKET_TIMEOUT_MS, 'timeoutMs'), options.signal);
  const { signal } = deadline;
  try {
    const max = positive(options.maxResponseBytes, DEFAULT_SOCKET_RESPONSE_BYTES, 'maxResponseBytes');
    checkPort(port);
    checkBytes(bytes, MAX_UDP_PAYLOAD_BYTES);
    const pin = await resolveAndCheck(host, { allowCidrs: options.allowCidrs ?? [], signal, ...(options.resolver ? { resolver: options.resolver } : {}) });
    const pinned = parseIp(pin.address)!.bytes.join('.');
    const socket = createSocket(pin.family === 6 ? 'udp6' : 'udp4');
    try {
      return await new Promise<Uint8Array>((resolve, reject) => {
        signal.addEventListener('abort', () => reject(toNetError(signal.reason, signal)), { once: true });
        socket.on('error', (err) => reject(toNetError(err, signal)));
        socket.on('message', (msg, rinfo) => {
          if (parseIp(rinfo.address)?.bytes.join('.') !== pinned || rinfo.port !== port) return;
          if (msg.byteLength > max) reject(new NetError('TOO_LARGE', `the answer is over ${max} bytes`));
          else resolve(new Uint8Array(msg));
        });
        socket.send(bytes, port, pin.address, (err) => {
          if (err) reject(toNetError(err, signal));
        });
      });
    } finally {
      socket.close();
    }
  } catch (err) {
    throw toNetError(err, signal);
  } finally {
    deadline.dispose();
  }
}
