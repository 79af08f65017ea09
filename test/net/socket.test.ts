// The one-shot socket brokers: same guard and pin as fetch, answer capped, one deadline.
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { createServer, type AddressInfo } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { after, test } from 'node:test';
import { NetError, tcpRequest, tlsRequest, udpRequest } from '../../src/net/index.ts';
import { makeTestPki, outgoingSockets, tableResolver } from './servers.ts';

const allow = { allowCidrs: ['127.0.0.1/32'], resolver: tableResolver({ 'echo.example.test': ['127.0.0.1'], 'tls.example.test': ['127.0.0.1'], 'other.example.test': ['127.0.0.1'] }) };
const isCode = (code: NetError['code']) => (e: unknown) => e instanceof NetError && e.code === code;

async function tcpServer(onData: (data: Buffer, reply: (b: Buffer | string) => void) => void): Promise<{ port: number; connections: () => number; close: () => void }> {
  let connections = 0;
  const s = createServer({ allowHalfOpen: true }, (c) => {
    connections++;
    const chunks: Buffer[] = [];
    c.on('data', (d: Buffer) => chunks.push(d));
    c.on('end', () => onData(Buffer.concat(chunks), (b) => c.end(b)));
    c.on('error', () => {});
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return { port: (s.address() as AddressInfo).port, connections: () => connections, close: () => s.close() };
}

test('tcpRequest sends, half-closes and returns the whole answer from the pinned address', async () => {
  const s = await tcpServer((d, reply) => reply(`echo:${d.toString()}`));
  try {
    const out = await tcpRequest('echo.example.test', s.port, Buffer.from('ping'), allow);
    assert.equal(Buffer.from(out).toString(), 'echo:ping');
  } finally {
    s.close();
  }
});

test('tcpRequest to loopback, metadata or an obfuscated literal is refused without a socket', async () => {
  const s = await tcpServer((_d, reply) => reply('no'));
  try {
    for (const host of ['127.0.0.1', '2130706433', '0x7f.1', '::ffff:127.0.0.1', '169.254.169.254', 'localhost', 'metadata.google.internal']) {
      const sockets = await outgoingSockets(() => assert.rejects(tcpRequest(host, s.port, Buffer.from('x'), { resolver: tableResolver({}) }), isCode('DENIED'), host));
      assert.equal(sockets, 0, host);
    }
    assert.equal(s.connections(), 0);
  } finally {
    s.close();
  }
});

test('tcpRequest caps the answer (TOO_LARGE) and the time (TIMEOUT); bad ports are INVALID', async () => {
  const big = await tcpServer((_d, reply) => reply(Buffer.alloc(2 * 1024 * 1024)));
  const silent = await tcpServer(() => {});
  try {
    await assert.rejects(tcpRequest('echo.example.test', big.port, Buffer.from('x'), allow), isCode('TOO_LARGE'));
    await assert.rejects(tcpRequest('echo.example.test', silent.port, Buffer.from('x'), { ...allow, timeoutMs: 100 }), isCode('TIMEOUT'));
    for (const port of [0, 65536, 1.5, -1]) await assert.rejects(tcpRequest('echo.example.test', port, Buffer.from('x'), allow), isCode('INVALID'));
  } finally {
    big.close();
    silent.close();
  }
});

test('udpRequest sends one datagram and takes the reply from the pinned address', async () => {
  const s = createSocket('udp4');
  s.on('message', (msg, rinfo) => s.send(Buffer.from(`udp:${msg.toString()}`), rinfo.port, rinfo.address));
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', r));
  try {
    const { port } = s.address();
    assert.equal(Buffer.from(await udpRequest('echo.example.test', port, Buffer.from('hi'), allow)).toString(), 'udp:hi');
    await assert.rejects(udpRequest('127.1', port, Buffer.from('hi')), isCode('DENIED'));
    await assert.rejects(udpRequest('echo.example.test', port, new Uint8Array(70_000), allow), isCode('TOO_LARGE'));
  } finally {
    s.close();
  }
});

const pki = makeTestPki();
after(() => pki.dispose());

test('tlsRequest verifies the peer against the host with SNI; another name is refused', async () => {
  const names: (string | false | null)[] = [];
  const server = createTlsServer({ ...pki.leaf('tls.example.test'), allowHalfOpen: true }, (c) => {
    names.push(c.servername);
    const chunks: Buffer[] = [];
    c.on('data', (d: Buffer) => chunks.push(d));
    c.on('end', () => c.end(`tls:${Buffer.concat(chunks).toString()}`));
    c.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const { port } = server.address() as AddressInfo;
    const out = await tlsRequest('tls.example.test', port, Buffer.from('hello'), { ...allow, ca: pki.ca });
    assert.equal(Buffer.from(out).toString(), 'tls:hello');
    assert.deepEqual(names, ['tls.example.test']);
    await assert.rejects(tlsRequest('other.example.test', port, Buffer.from('x'), { ...allow, ca: pki.ca }), isCode('UNAVAILABLE'));
    await assert.rejects(tlsRequest('tls.example.test', port, Buffer.from('x'), allow), isCode('UNAVAILABLE'));
  } finally {
    server.close();
  }
});
