// wasi:sockets for components (cap `net`): test/fixtures/components/tcp-client looks a name up
// through ip-name-lookup (a stand-in address of 198.18.0.0/15 comes back), connects a TCP socket
// to it, writes, and reads until the peer closes — one tcp_request exchange through the network
// guard to a server this test starts on 127.0.0.1 (the operator's allowlist admits it).
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { after, before, test } from 'node:test';
import type { Engine } from '../../src/index.ts';
import { component } from '../helpers/components.ts';
import { testEngine } from '../helpers/engine.ts';
import { tableResolver } from '../net/servers.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-component-sockets-');
const resolver = tableResolver({ 'echo.example.test': ['127.0.0.1'] });
const engine: Engine = testEngine({ poolSize: 1, brokers: { net: { allowCidrs: ['127.0.0.1/32'], resolver } } });
let server: Server;
let port = 0;
let connections = 0;

before(async () => {
  // Echo, upper-cased, once the client has half-closed its side.
  server = createServer({ allowHalfOpen: true }, (s) => {
    connections++;
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('end', () => s.end(`echo: ${Buffer.concat(chunks).toString().toUpperCase()}`));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

test('a name looks up as a stand-in address; a connection to it reaches the allowed server through the broker', async () => {
  const r = await engine.run(component('tcp-client'), { profile: 'network', argv: ['echo.example.test', String(port), 'ping'] });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(r.stdout, 'address 198.18.0.1\necho: PING');
  assert.equal(resolver.calls['echo.example.test'], 1, 'the broker resolved the name once, at connect');
  assert.ok(r.fuelUsed > 0);
});

test('an IPv4 literal looks up as itself and connects as itself', async () => {
  const r = await engine.run(component('tcp-client'), { profile: 'network', argv: ['127.0.0.1', String(port), 'literal'] });
  assert.equal(r.stdout, 'address 127.0.0.1\necho: LITERAL');
});

test('without net, wasi:sockets is not linked: LINK_UNSATISFIED, nothing runs, no connection', async () => {
  const before = connections;
  const r = await engine.run(component('tcp-client'), { profile: 'minimal', argv: ['echo.example.test', String(port), 'x'] });
  assert.equal(r.error?.code, 'LINK_UNSATISFIED');
  assert.match(r.error?.message ?? '', /wasi:sockets\/tcp@0\.2\.0: needs cap "net"/);
  assert.match(r.error?.message ?? '', /wasi:sockets\/ip-name-lookup@0\.2\.0: needs cap "net"/);
  assert.equal(r.fuelUsed, 0);
  assert.equal(connections, before);
});
