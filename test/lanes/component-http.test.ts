// wasi:http for components (cap `net`): test/fixtures/components/http-get (a core module in WAT
// with its WIT world, made a component by scripts/build-components.ts) makes one request through
// wasi:http/outgoing-handler; it goes out through the http_fetch broker to a server this test
// starts on 127.0.0.1, which the operator's allowlist admits.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { component } from '../helpers/components.ts';
import { httpServer, type TestServer } from '../net/servers.ts';
import type { Engine } from '../../src/index.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-component-http-');
let server: TestServer;
const engine: Engine = testEngine({ poolSize: 1, brokers: { net: { allowCidrs: ['127.0.0.1/32'] } } });
const bodies: string[] = [];

before(async () => {
  server = await httpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(Buffer.concat(chunks).toString());
      res.writeHead(req.url === '/missing' ? 404 : 200, { 'content-type': 'text/plain' });
      res.end(`${req.method} ${req.url} ${Buffer.concat(chunks).toString()}`.trimEnd());
    });
  });
});
after(() => server.close());

test('a GET through wasi:http/outgoing-handler reaches the allowed server: status and body', async () => {
  const r = await engine.run(component('http-get'), { profile: 'network', argv: [`127.0.0.1:${server.port}`, '/hello?x=1'] });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(r.stdout, 'status 200\nGET /hello?x=1');
  assert.ok(r.fuelUsed > 0);
  assert.ok(server.requests.includes(`GET /hello?x=1 127.0.0.1:${server.port}`), server.requests.join('; '));
});

test('a POST whose body is written after handle sends that body; a 404 is a response, not an error', async () => {
  const r = await engine.run(component('http-get'), { profile: 'network', argv: [`127.0.0.1:${server.port}`, '/echo', 'the body'] });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(r.stdout, 'status 200\nPOST /echo the body');
  assert.equal(bodies.at(-1), 'the body');
  const missing = await engine.run(component('http-get'), { profile: 'network', argv: [`127.0.0.1:${server.port}`, '/missing'] });
  assert.equal(missing.stdout, 'status 404\nGET /missing');
});

test('without net, wasi:http is not linked: LINK_UNSATISFIED, nothing runs, no request', async () => {
  const before = server.requests.length;
  for (const profile of ['minimal', 'compute']) {
    const r = await engine.run(component('http-get'), { profile, argv: [`127.0.0.1:${server.port}`, '/'] });
    assert.equal(r.error?.code, 'LINK_UNSATISFIED', profile);
    assert.match(r.error?.message ?? '', /wasi:http\/outgoing-handler@0\.2\.0: needs cap "net"/);
    assert.match(r.error?.message ?? '', /wasi:http\/types@0\.2\.0: needs cap "net"/);
    assert.equal(r.stdout, '');
    assert.equal(r.fuelUsed, 0);
  }
  assert.equal(server.requests.length, before);
});
