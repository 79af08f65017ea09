// Attack (issue #5 must-show 1): a guest under `network` aims http_fetch at the cloud metadata
// service, loopback in disguise (IPv4-mapped, decimal, hex), and a public-looking name that
// redirects to a private address. Each gets DENIED (-1) and an audit record; nothing connects.
// The test's own server is reachable only because the operator allowed its address.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createEngine, type Engine } from '../../src/index.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { openDatabase } from '../../src/storage/sqlite.ts';
import { httpServer, outgoingSockets, tableResolver, type TestServer } from '../net/servers.ts';
import { tempDir } from '../helpers/tmp.ts';

const guest = new Uint8Array(readFileSync(new URL('../fixtures/c/netfetch.wasm', import.meta.url)));
let engine: Engine;
let home: string;
let allowed: TestServer;
let decoy: TestServer;
const big = Buffer.alloc(10 * 1024 * 1024, 'x');

before(async () => {
  home = tempDir('membrane-guest-ssrf-');
  process.env['MEMBRANE_HOME'] = home;
  // The operator allows exactly 127.0.0.2 (the test's API server); the decoy holds the usual
  // loopback address every disguised literal below points at.
  allowed = await httpServer((req, res) => {
    if (req.url === '/hop') {
      res.writeHead(302, { location: `http://127.0.0.1:${decoy.port}/private` });
      res.end();
    } else if (req.url === '/big') res.end(big);
    else res.end(`hello ${req.url}`);
  }, '127.0.0.2');
  decoy = await httpServer((_req, res) => res.end('private data'), '127.0.0.1');
  const resolver = tableResolver({ 'api.example.test': ['127.0.0.2'], 'sneaky.example.test': ['127.0.0.2'] });
  engine = createEngine({ poolSize: 1, brokers: { net: { allowCidrs: ['127.0.0.2/32'], resolver } } });
});
after(async () => {
  await engine.close();
  await allowed.close();
  await decoy.close();
});

const fetch = async (url: string): Promise<string> => {
  const r = await engine.run(guest, { profile: 'network', tenant: 'prober', argv: ['fetch', url] });
  assert.equal(r.ok, true, r.error?.message);
  return r.stdout;
};

test('metadata, disguised loopback and private addresses are DENIED with an audit record each, and nothing connects', async () => {
  const targets = [
    'http://169.254.169.254/latest/meta-data/',
    `http://[::ffff:127.0.0.1]:${decoy.port}/`,
    `http://2130706433:${decoy.port}/`,
    `http://0x7f.1:${decoy.port}/`,
    `http://0177.0.0.1:${decoy.port}/`,
    `http://127.1:${decoy.port}/`,
    'http://metadata.google.internal/computeMetadata/v1/',
    `http://localhost:${decoy.port}/`,
  ];
  for (const url of targets) {
    const sockets = await outgoingSockets(async () => assert.equal(await fetch(url), `error ${GUEST_ERR.DENIED}\n`, url));
    assert.equal(sockets, 0, `${url} opened a socket`);
  }
  assert.equal(decoy.connections, 0);
  const log = new AuditLog(openDatabase(join(home, 'engine.sqlite')));
  const denied = log.tail({ tenant: 'prober', kind: 'denied', limit: 100 }).filter((r) => r.detail['op'] === 'http_fetch');
  log.close();
  assert.equal(denied.length, targets.length);
  assert.deepEqual(denied.map((r) => r.detail['code']), targets.map(() => 'DENIED'));
  assert.deepEqual(denied.map((r) => r.detail['target']), targets);
});

test('a public-looking name that redirects to a private address is DENIED at the hop', async () => {
  assert.equal(await fetch(`http://sneaky.example.test:${allowed.port}/hop`), `error ${GUEST_ERR.DENIED}\n`);
  assert.equal(decoy.connections, 0);
});

test('the operator-allowed server answers; a 10 MB body is cut at the cap with TOO_LARGE', async () => {
  const ok = await fetch(`http://api.example.test:${allowed.port}/greet`);
  assert.match(ok, /^answer \d+ bytes: \{"status":200,"headers":\{.*"body":"hello \/greet"\}\n$/);
  assert.equal(await fetch(`http://api.example.test:${allowed.port}/big`), `error ${GUEST_ERR.TOO_LARGE}\n`);
});

test('an answer larger than the buffer is fetched once and kept for the retry', async () => {
  const before = allowed.requests.length;
  const r = await engine.run(guest, { profile: 'network', argv: ['small', `http://api.example.test:${allowed.port}/once`] });
  assert.match(r.stdout, /^need (\d+)\nanswer \1 bytes: \{"status":200/);
  assert.equal(allowed.requests.length - before, 1);
});

test('http_fetch_many: per-request answers in order, refusals in place; browse_fetch returns page text', async () => {
  const r = await engine.run(guest, { profile: 'network', argv: ['many', `http://api.example.test:${allowed.port}/a`, 'http://169.254.169.254/', `http://api.example.test:${allowed.port}/b`] });
  const answers = JSON.parse(r.stdout) as Array<{ status?: number; body?: string; error?: string; errno?: number }>;
  assert.deepEqual(answers.map((a) => a.body ?? a.error), ['hello /a', 'DENIED', 'hello /b']);
  assert.equal(answers[1]!.errno, GUEST_ERR.DENIED);
  const page = await engine.run(guest, { profile: 'network', argv: ['browse', `http://api.example.test:${allowed.port}/page`] });
  assert.equal(page.stdout, `URL: http://api.example.test:${allowed.port}/page\nStatus: 200\n\nhello /page\n`);
});

test('under minimal (no net cap) http_fetch is absent', async () => {
  const r = await engine.run(guest, { profile: 'minimal', argv: ['fetch', 'http://api.example.test/'] });
  assert.equal(r.error?.code, 'LINK_UNSATISFIED');
});
