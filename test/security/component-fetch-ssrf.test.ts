// Components reach the network only through the brokers: membrane:engine/http-fetch (cap `net`)
// goes through the same guard as the core `http_fetch` — a public name (here: the operator's
// allowed test range on 127.0.0.2) answers; loopback 127.0.0.1 and the metadata address are
// refused (`denied`); without `net` the interface is not even linked.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createEngine, type Engine } from '../../src/index.ts';
import { httpServer, tableResolver, type TestServer } from '../net/servers.ts';
import { component } from '../helpers/components.ts';
import { tempDir } from '../helpers/tmp.ts';

const HOST = '127.0.0.2';
let engine: Engine;
let server: TestServer;
let hits = 0;

before(async () => {
  process.env['MEMBRANE_HOME'] = tempDir('membrane-component-fetch-');
  server = await httpServer((req, res) => {
    hits++;
    res.end(`hello ${req.url}`);
  }, HOST);
  engine = createEngine({ poolSize: 1, brokers: { net: { allowCidrs: [`${HOST}/32`], resolver: tableResolver({ 'api.example.test': [HOST] }) } } });
});
after(async () => {
  await engine.close();
  await server.close();
});

const request = (url: string): string => JSON.stringify({ url });

test('http-fetch to an allowed name answers through the broker', async () => {
  const r = await engine.run(component('fetch'), { profile: 'network', argv: [request(`http://api.example.test:${server.port}/x`)] });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  const answer = JSON.parse(r.stdout) as { status: number; body: string };
  assert.equal(answer.status, 200);
  assert.equal(answer.body, 'hello /x');
});

test('http-fetch to loopback and to the metadata address is denied by the guard', async () => {
  const before = hits;
  for (const url of [`http://127.0.0.1:${server.port}/`, 'http://169.254.169.254/latest/meta-data/', `http://[::ffff:127.0.0.1]:${server.port}/`]) {
    const r = await engine.run(component('fetch'), { profile: 'network', argv: [request(url)] });
    assert.equal(r.stdout, 'error 0\n', `${url}: ${r.stdout}`); // case 0 of error-code: denied
  }
  assert.equal(hits, before);
});

test('without net, http-fetch is not linked: LINK_UNSATISFIED before anything runs', async () => {
  const r = await engine.run(component('fetch'), { profile: 'minimal', argv: [request(`http://api.example.test:${server.port}/`)] });
  assert.equal(r.error?.code, 'LINK_UNSATISFIED');
  assert.match(r.error?.message ?? '', /membrane:engine\/http-fetch@0\.1\.0.*cap "net".*network, posix/);
});
