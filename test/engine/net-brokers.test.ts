// The socket brokers (tcp/udp/tls one-shot requests) and revocation of a network call in
// flight, from a C guest (test/fixtures/c/netfetch.c), against servers on 127.0.0.2 only.
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { after, before, test } from 'node:test';
import { createEngine, type Engine } from '../../src/index.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { httpServer, makeTestPki, tableResolver, type TestServer } from '../net/servers.ts';
import { tempDir } from '../helpers/tmp.ts';

const guest = new Uint8Array(readFileSync(new URL('../fixtures/c/netfetch.wasm', import.meta.url)));
const HOST = '127.0.0.2';
const pki = makeTestPki();
let engine: Engine;
let slow: TestServer;
let hits = 0;

before(async () => {
  process.env['MEMBRANE_HOME'] = tempDir('membrane-net-brokers-');
  slow = await httpServer(() => {
    hits++; // never answers: the call stays in flight until it is revoked
  }, HOST);
  const resolver = tableResolver({ 'echo.example.test': [HOST], 'slow.example.test': [HOST] });
  engine = createEngine({ poolSize: 2, brokers: { net: { allowCidrs: [`${HOST}/32`], resolver, ca: pki.ca } } });
});
after(async () => {
  await engine.close();
  await slow.close();
  pki.dispose();
});

test('tcp_request: one request, the whole response; a refused address is DENIED', async () => {
  const server = createServer((c) => c.on('data', (d) => c.end(`echo:${String(d)}`)));
  await new Promise<void>((r) => server.listen(0, HOST, r));
  try {
    const port = (server.address() as AddressInfo).port;
    const r = await engine.run(guest, { profile: 'network', argv: ['tcp', `echo.example.test:${port}`, 'ping'] });
    assert.equal(r.stdout, 'reply echo:ping\n');
    const refused = await engine.run(guest, { profile: 'network', argv: ['tcp', `127.0.0.1:${port}`, 'ping'] });
    assert.equal(refused.stdout, `error ${GUEST_ERR.DENIED}\n`);
  } finally {
    server.close();
  }
});

test('udp_request: one datagram out, one back', async () => {
  const sock = createSocket('udp4');
  sock.on('message', (m, from) => sock.send(`pong:${String(m)}`, from.port, from.address));
  await new Promise<void>((r) => sock.bind(0, HOST, r));
  try {
    const r = await engine.run(guest, { profile: 'network', argv: ['udp', `echo.example.test:${sock.address().port}`, 'ping'] });
    assert.equal(r.stdout, 'reply pong:ping\n');
  } finally {
    sock.close();
  }
});

test('tls_request verifies the peer for the name it asked for', async () => {
  const server = createTlsServer({ ...pki.leaf('echo.example.test'), allowHalfOpen: true }, (c) => c.on('data', (d) => c.end(`tls:${String(d)}`)));
  await new Promise<void>((r) => server.listen(0, HOST, r));
  try {
    const port = (server.address() as AddressInfo).port;
    const r = await engine.run(guest, { profile: 'network', argv: ['tls', `echo.example.test:${port}`, 'hi'] });
    assert.equal(r.stdout, 'reply tls:hi\n');
  } finally {
    server.close();
  }
});

test('revoking the tenant stops its fetch in flight with REVOKED', async () => {
  const before = hits;
  const run = engine.run(guest, { profile: 'network', tenant: 'doomed', argv: ['fetch', `http://slow.example.test:${slow.port}/`] });
  const t = Date.now();
  while (hits === before && Date.now() - t < 5_000) await new Promise((r) => setTimeout(r, 10));
  assert.equal(hits, before + 1, 'the request reached the server');
  engine.revoke({ tenant: 'doomed' });
  const r = await run;
  assert.equal(r.stdout, `error ${GUEST_ERR.REVOKED}\n`);
  assert.ok(Date.now() - t < 5_000);
  const next = await engine.run(guest, { profile: 'network', tenant: 'doomed', argv: ['fetch', `http://slow.example.test:${slow.port}/`] });
  assert.equal(next.stdout, `error ${GUEST_ERR.REVOKED}\n`);
  assert.equal(hits, before + 1, 'the revoked tenant reached nothing more');
});
