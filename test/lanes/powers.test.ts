// Host powers in the source lanes, through engine.exec: a granted cap is a usable power in a JS
// snippet (globals) and in a Python snippet (the membrane module), served by the same brokers a
// core guest reaches — kv round trip, queue FIFO, secrets.sign (HMAC-SHA256) and fetch against a
// server this test starts on 127.0.0.1 (allowed by the operator's allowCidrs).
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createEngine, type Engine } from '../../src/index.ts';
import { httpServer, type TestServer } from '../net/servers.ts';

const SECRET = 'lane-powers-signing-secret';
let engine: Engine;
let server: TestServer;

before(async () => {
  const home = mkdtempSync(join(tmpdir(), 'membrane-lane-powers-'));
  process.env['MEMBRANE_HOME'] = home;
  process.env['MEMBRANE_AUDIT_KEY'] = 'ab'.repeat(32);
  server = await httpServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ hello: 'from the host', path: req.url, method: req.method }));
  }, '127.0.0.1');
  engine = createEngine({
    poolSize: 1,
    brokers: { databaseFile: join(home, 'engine.sqlite'), secrets: { signer: SECRET }, net: { allowCidrs: ['127.0.0.1/32'] } },
  });
});
after(async () => {
  await engine.close();
  await server.close();
});

const js = async (code: string, profile = 'minimal', tenant = 'lanes') => {
  const r = await engine.exec({ language: 'js', code, profile, tenant });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  return r;
};
const py = async (code: string, profile = 'minimal', tenant = 'lanes') => {
  const r = await engine.exec({ language: 'python', code, profile, tenant, timeoutMs: 60_000 });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  return r;
};

test('JS: kv.put then kv.get round trip under minimal; list, delete, a missing key is null', async () => {
  const r = await js("kv.put('js:greeting', 'hello'); kv.put('js:other', 'x'); [kv.get('js:greeting'), kv.list('js:'), kv.delete('js:other'), kv.delete('js:other'), kv.get('js:other')]");
  assert.deepEqual(r.result, ['hello', ['js:greeting', 'js:other'], true, false, null]);
  // Durable: a later call (a fresh interpreter) reads what this one wrote.
  assert.equal((await js("kv.get('js:greeting')")).result, 'hello');
});

test('JS: queue push/pop is FIFO; len counts; an empty pop is null', async () => {
  const r = await js("queue.push('jobs', 'a'); queue.push('jobs', 'b'); [queue.len('jobs'), queue.pop('jobs'), queue.pop('jobs'), queue.pop('jobs')]");
  assert.deepEqual(r.result, [2, 'a', 'b', null]);
});

test('JS: secrets.sign equals HMAC-SHA256 under the named secret; the secret itself never appears', async () => {
  const r = await js("secrets.sign('signer', 'message to sign')");
  assert.equal(r.result, createHmac('sha256', SECRET).update('message to sign').digest('hex'));
});

test('JS: await fetch(url) against a 127.0.0.1 server (network profile) returns its body', async () => {
  const url = `http://127.0.0.1:${server.port}/js-path`;
  const r = await js(`(async () => { const res = await fetch(${JSON.stringify(url)}, { method: 'POST', body: 'x', headers: { 'x-test': '1' } }); return [res.status, res.ok, res.headers['content-type'], await res.json()]; })()`, 'network');
  assert.deepEqual(r.result, [200, true, 'application/json', { hello: 'from the host', path: '/js-path', method: 'POST' }]);
});

test('Python: kv round trip, queue FIFO and secrets.sign through the membrane module under minimal', async () => {
  const r = await py(
    [
      'import membrane',
      "membrane.kv.put('py:greeting', 'hello')",
      "membrane.queue.push('pyjobs', 'first')",
      "membrane.queue.push('pyjobs', 'second')",
      "[membrane.kv.get('py:greeting'), membrane.kv.get('py:missing'), membrane.kv.list('py:'), membrane.queue.len('pyjobs'),",
      " membrane.queue.pop('pyjobs'), membrane.queue.pop('pyjobs'), membrane.queue.pop('pyjobs'), membrane.secrets.sign('signer', 'message to sign')]",
    ].join('\n'),
  );
  assert.deepEqual(r.result, ['hello', null, ['py:greeting'], 2, 'first', 'second', null, createHmac('sha256', SECRET).update('message to sign').digest('hex')]);
  // The JS lane and a core guest share the tenant's store: the JS lane reads Python's key.
  assert.equal((await js("kv.get('py:greeting')")).result, 'hello');
});

test('Python: membrane.net.fetch against a 127.0.0.1 server (network profile) returns its body', async () => {
  const url = `http://127.0.0.1:${server.port}/py-path`;
  const r = await py(`import membrane\nres = membrane.net.fetch(${JSON.stringify(url)})\n[res.status, res.ok, res.json()]`, 'network');
  assert.deepEqual(r.result, [200, true, { hello: 'from the host', path: '/py-path', method: 'GET' }]);
});
