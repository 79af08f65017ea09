// Attack: a component granted `net` aims wasi:http/outgoing-handler at what the network guard
// exists to keep it from — the cloud metadata address, a private 10/8 host, `localhost`, loopback
// without the operator's allowlist, a name that rebinds between requests, a name whose answer
// mixes a public and a private address — or asks for a response body past the broker's cap.
// wasi:http rides the same http_fetch broker as every guest: each is refused with the error-code
// `destination-IP-prohibited` (case 4) and an audit record naming the target, the refused address
// never sees a connection, an oversized body ends `HTTP-response-body-size` (case 28) and a
// server that never answers ends `connection-timeout` (case 8) at the broker's timeout.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Engine } from '../../src/index.ts';
import type { Resolver } from '../../src/net/index.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { component } from '../helpers/components.ts';
import { testEngine } from '../helpers/engine.ts';
import { httpServer, tableResolver, type TestServer } from '../net/servers.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-component-http-ssrf-');
const ALLOWED = '127.0.0.2';
const BODY_CAP = 64 * 1024;
let flips = 0;
const table = tableResolver({ 'api.example.test': [ALLOWED], 'mixed.example.test': [ALLOWED, '10.0.0.7'] });
// A name that answers the allowed address, then loopback, then the allowed address again, …
const resolver: Resolver = async (host) =>
  host === 'rebind.example.test' ? [{ address: flips++ % 2 === 0 ? ALLOWED : '127.0.0.1', family: 4 }] : table(host);
const engine: Engine = testEngine({ poolSize: 1, brokers: { net: { allowCidrs: [`${ALLOWED}/32`], resolver, maxBodyBytes: BODY_CAP, timeoutMs: 500 } } });
let good: TestServer;
let twin: TestServer;

before(async () => {
  good = await httpServer((req, res) => {
    if (req.url === '/big') res.end(Buffer.alloc(4 * BODY_CAP, 0x61));
    else if (req.url !== '/hang') res.end(`allowed ${req.url}`); // /hang: never answered
  }, ALLOWED);
  // Loopback, on the same port: what a rebinding name or a loopback literal would reach.
  twin = await httpServer((_req, res) => res.end('loopback reached'), '127.0.0.1', good.port);
});
after(async () => {
  await twin.close();
  await good.close();
});

const get = (authority: string, path = '/'): Promise<{ stdout: string; ok: boolean }> => engine.run(component('http-get'), { profile: 'network', tenant: 'mallory', argv: [authority, path] });

test('the metadata address, a 10/8 host, localhost and loopback are refused: destination-IP-prohibited, audited, never connected', async () => {
  const targets = ['169.254.169.254', '10.1.2.3:8080', `localhost:${twin.port}`, `127.0.0.1:${twin.port}`, `[::ffff:127.0.0.1]:${twin.port}`, `metadata.google.internal`];
  for (const target of targets) {
    const r = await get(target, '/latest/meta-data/');
    assert.equal(r.ok, true);
    assert.equal(r.stdout, 'error 04\n', target);
  }
  assert.equal(twin.connections, 0);
  const log = AuditLog.open();
  try {
    const denied = log.tail({ kind: 'denied', limit: 50 }).filter((e) => e.tenant === 'mallory' && e.detail['op'] === 'http_fetch');
    for (const target of targets) assert.ok(denied.some((e) => String(e.detail['target']).startsWith(`http://${target}/`)), `no audit record for ${target}`);
    assert.ok(denied.every((e) => e.detail['why'] === 'network guard'));
  } finally {
    log.close();
  }
});

test('an allowed name answers; a name that rebinds to loopback on the next request is refused and loopback is never reached', async () => {
  const ok = await get(`api.example.test:${good.port}`, '/a');
  assert.equal(ok.stdout, 'status 200\nallowed /a');
  flips = 0;
  const first = await get(`rebind.example.test:${good.port}`, '/first');
  assert.equal(first.stdout, 'status 200\nallowed /first');
  const second = await get(`rebind.example.test:${good.port}`, '/second');
  assert.equal(second.stdout, 'error 04\n');
  assert.equal(flips, 2, 'one resolution per request');
  const mixed = await get(`mixed.example.test:${good.port}`, '/mixed');
  assert.equal(mixed.stdout, 'error 04\n', 'an answer with any refused address is refused whole');
  assert.equal(twin.connections, 0);
});

test('a response body past the broker cap ends HTTP-response-body-size; nothing of it reaches the component', async () => {
  const r = await get(`api.example.test:${good.port}`, '/big');
  assert.equal(r.ok, true);
  assert.equal(r.stdout, 'error 28\n');
});

test('a server that never answers: the broker\'s timeout ends the request with connection-timeout, and the run goes on', async () => {
  const t0 = performance.now();
  const r = await get(`api.example.test:${good.port}`, '/hang');
  assert.equal(r.ok, true);
  assert.equal(r.stdout, 'error 08\n'); // case 8 of error-code: connection-timeout
  assert.ok(performance.now() - t0 < 5_000);
});
