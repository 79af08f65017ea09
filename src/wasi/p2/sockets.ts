/**
 * WASI preview 2, `wasi:sockets` (network, instance-network, ip-name-lookup, tcp,
 * tcp-create-socket; 0.2.x) for a component CLIENT under the `net` cap — never a raw socket: a
 * connection is one brokered exchange (`exchange`, which the worker routes to the `tcp_request`
 * broker): what the component wrote goes out when it first reads, the write side is then
 * half-closed, and what the peer sends until it closes (≤ 1 MiB, within the broker's deadline) is
 * the input stream.
 *
 * Owns: name lookup by STAND-IN address — `resolve-addresses` never resolves anything; it answers
 * an address of 198.18.0.0/15 (RFC 2544, never routed) that stands for the name in this run, and
 * a connection to it hands the NAME to the broker, whose network guard resolves it once, refuses
 * any non-public answer (unless the operator's allowlist admits it) and connects to the pinned
 * address. An IPv4 literal looks up as itself. The socket states (unbound → connecting →
 * connected → closed), the streams' buffers and the refusal of everything a client does not need
 * (bind, listen, accept: `not-supported`).
 * Invariant: nothing here opens a socket or resolves a name: the one way out is `exchange`, and a
 * connection's destination is a name or literal the guard checks; a guest never learns a real
 * address from a lookup (so DNS rebinding has nothing to rebind).
 *
 * Does not protect against: a protocol where the peer speaks first and waits (the exchange sends
 * first; such a connection ends at the broker's deadline), or what the peer answers.
 */

import { InputStream, OutputStream, Pollable, failed } from './streams.ts';

/** Bytes a component may write on one connection (the broker's request cap). */
export const MAX_TCP_SEND_BYTES = 1 << 20;
/** Distinct names one run may look up (each gets a stand-in address). */
export const MAX_LOOKUP_NAMES = 4096;

/** The broker's answer (the peer's bytes) or a `wasi:sockets` error-code and a message. */
export type TcpAnswer = Uint8Array | { readonly code: string; readonly message: string };
/** One connection's exchange: `target` is `name:port`, `a.b.c.d:port` or `[v6]:port`. */
export type TcpExchange = (target: string, payload: Uint8Array) => TcpAnswer;

type Ipv4 = [number, number, number, number];
type IpAddress = { tag: 'ipv4'; val: Ipv4 } | { tag: 'ipv6'; val: number[] };
type SocketAddress = { tag: 'ipv4'; val: { port: number; address: Ipv4 } } | { tag: 'ipv6'; val: { port: number; flowInfo: number; address: number[]; scopeId: number } };

const NAME = /^[A-Za-z0-9._:-]{1,253}$/;
const V4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

class Network {}

/** The names looked up in this run, each behind its stand-in address. */
class StandIns {
  private readonly names: string[] = [];
  addressOf(name: string): Ipv4 {
    let i = this.names.indexOf(name);
    if (i < 0) {
      if (this.names.length >= MAX_LOOKUP_NAMES) throw 'name-unresolvable';
      i = this.names.push(name) - 1;
    }
    const n = i + 1; // 198.18.0.0 itself is never handed out
    return [198, 18 + (n >> 16), (n >> 8) & 255, n & 255];
  }
  /** The name behind a stand-in address, or null for any other address. */
  nameOf(a: Ipv4): string | null {
    if (a[0] !== 198 || (a[1] !== 18 && a[1] !== 19)) return null;
    return this.names[((a[1] - 18) << 16) + (a[2] << 8) + a[3] - 1] ?? null;
  }
}

class ResolveAddressStream {
  constructor(private next: IpAddress | null) {}
  resolveNextAddress(): IpAddress | undefined {
    const a = this.next;
    this.next = null;
    return a ?? undefined;
  }
  subscribe(): Pollable {
    return new Pollable(null, null);
  }
}

/** The wasi:sockets interfaces a client needs, keyed as jco's glue asks for them. */
export function socketsP2(exchange: TcpExchange): Record<string, Record<string, unknown>> {
  const standIns = new StandIns();
  const network = new Network();

  const hostOf = (remote: SocketAddress): string => {
    if (remote.tag === 'ipv4') {
      const a = remote.val.address;
      const name = standIns.nameOf(a);
      if (name === null) return a.join('.');
      return name.includes(':') ? `[${name}]` : name;
    }
    return `[${remote.val.address.map((g) => (g & 0xffff).toString(16)).join(':')}]`;
  };

  class TcpSocket {
    private state: 'unbound' | 'connecting' | 'connected' | 'closed' = 'unbound';
    private remote: SocketAddress | null = null;
    private target = '';
    private readonly sent: Uint8Array[] = [];
    private sentBytes = 0;
    private answer: TcpAnswer | null = null;
    constructor(private readonly family: 'ipv4' | 'ipv6') {}

    startConnect(_network: Network, remote: SocketAddress): void {
      if (this.state !== 'unbound') throw 'invalid-state';
      if (remote.tag !== this.family) throw 'invalid-argument';
      if (!Number.isInteger(remote.val.port) || remote.val.port < 1 || remote.val.port > 65535) throw 'invalid-argument';
      this.remote = remote;
      this.target = `${hostOf(remote)}:${remote.val.port}`;
      this.state = 'connecting';
    }
    /** The connection is the broker's, made when the component first reads (the exchange). */
    finishConnect(): [InputStream, OutputStream] {
      if (this.state !== 'connecting') throw 'not-in-progress';
      this.state = 'connected';
      const input = new InputStream({ read: (at, len) => this.received().slice(at, at + len), size: () => this.received().length });
      const output = new OutputStream((data) => {
        if (this.answer !== null || this.state === 'closed') throw failed('the connection has exchanged its bytes; it takes no more', 'invalid-state');
        if (this.sentBytes + data.length > MAX_TCP_SEND_BYTES) throw failed(`more than ${MAX_TCP_SEND_BYTES} bytes on one connection`, 'out-of-memory');
        this.sent.push(data.slice());
        this.sentBytes += data.length;
      });
      return [input, output];
    }
    /** The peer's bytes: the exchange runs once, at the first read. */
    private received(): Uint8Array {
      if (this.answer === null) {
        const payload = new Uint8Array(this.sentBytes);
        let at = 0;
        for (const c of this.sent) {
          payload.set(c, at);
          at += c.length;
        }
        this.answer = exchange(this.target, payload);
      }
      if (this.answer instanceof Uint8Array) return this.answer;
      throw failed(`${this.answer.code}: ${this.answer.message}`, this.answer.code);
    }
    shutdown(_how: string): void {
      if (this.state !== 'connected') throw 'invalid-state';
    }
    subscribe(): Pollable {
      return new Pollable(null, null);
    }
    remoteAddress(): SocketAddress {
      if (!this.remote) throw 'invalid-state';
      return this.remote;
    }
    localAddress(): SocketAddress {
      throw 'not-supported';
    }
    isListening(): boolean {
      return false;
    }
    addressFamily(): string {
      return this.family;
    }
    startBind(): void {
      throw 'not-supported';
    }
    finishBind(): void {
      throw 'not-supported';
    }
    startListen(): void {
      throw 'not-supported';
    }
    finishListen(): void {
      throw 'not-supported';
    }
    accept(): never {
      throw 'not-supported';
    }
    setListenBacklogSize(): void {
      throw 'not-supported';
    }
    // Transport options are the broker's; reading them answers its defaults, setting one is refused.
    keepAliveEnabled(): boolean {
      return false;
    }
    keepAliveIdleTime(): bigint {
      return 7_200_000_000_000n;
    }
    keepAliveInterval(): bigint {
      return 75_000_000_000n;
    }
    keepAliveCount(): number {
      return 9;
    }
    hopLimit(): number {
      return 64;
    }
    receiveBufferSize(): bigint {
      return BigInt(MAX_TCP_SEND_BYTES);
    }
    sendBufferSize(): bigint {
      return BigInt(MAX_TCP_SEND_BYTES);
    }
    setKeepAliveEnabled(): void {
      throw 'not-supported';
    }
    setKeepAliveIdleTime(): void {
      throw 'not-supported';
    }
    setKeepAliveInterval(): void {
      throw 'not-supported';
    }
    setKeepAliveCount(): void {
      throw 'not-supported';
    }
    setHopLimit(): void {
      throw 'not-supported';
    }
    setReceiveBufferSize(): void {
      throw 'not-supported';
    }
    setSendBufferSize(): void {
      throw 'not-supported';
    }
  }

  return {
    'wasi:sockets/network': { Network },
    'wasi:sockets/instance-network': { instanceNetwork: () => network },
    'wasi:sockets/ip-name-lookup': {
      ResolveAddressStream,
      resolveAddresses: (_network: Network, name: string): ResolveAddressStream => {
        if (typeof name !== 'string' || !NAME.test(name)) throw 'invalid-argument';
        if (V4.test(name)) return new ResolveAddressStream({ tag: 'ipv4', val: name.split('.').map(Number) as Ipv4 });
        return new ResolveAddressStream({ tag: 'ipv4', val: standIns.addressOf(name.toLowerCase()) });
      },
    },
    'wasi:sockets/tcp': { TcpSocket },
    'wasi:sockets/tcp-create-socket': {
      createTcpSocket: (family: string): TcpSocket => {
        if (family !== 'ipv4' && family !== 'ipv6') throw 'not-supported';
        return new TcpSocket(family);
      },
    },
  };
}
