// The attack: a guest in an os_process child reaches the cloud metadata service or a loopback
// service through the brokered network — by address, by an obfuscated literal, by name — or a
// hijacked child forges the fetch itself. The network guard runs in the parent (the child has no
// network of its own under bwrap, and no broker), so the same floor refuses the same targets as
// for a worker: DENIED, one audit record each (marked tier os_process), and nothing reaches the
// loopback server this test starts.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { testEngine } from '../helpers/engine.ts';
import { callerOf, forged, request, testBrokers, type Record_ } from '../helpers/forged-child.ts';
import { httpServer, type TestServer } from '../net/servers.ts';

const OS = { tier: 'os_process', bwrapPath: '' } as const;
const dir = mkdtempSync(join(tmpdir(), 'membrane-os-ssrf-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const records: Record_[] = [];
// The operator allows no private range (the default): loopback is below the floor.
const engine = testEngine({ poolSize: 1, brokers: { databaseFile: join(dir, 'engine.sqlite'), audit: () => ({ append: (e) => void records.push(e) }) } });
const netfetch = new Uint8Array(readFileSync(new URL('../fixtures/c/netfetch.wasm', import.meta.url)));
let server: TestServer;

before(async () => {
  server = await httpServer((_req, res) => res.end('internal secret'));
});
after(() => server.close());

const shape = (rs: Record_[]): unknown[] => rs.map(({ tenant, kind, detail }) => ({ tenant, kind, detail: { ...detail, tier: undefined } }));

test('metadata and loopback targets are refused from the child exactly as from a worker, and nothing reaches the server', async () => {
  const p = server.port;
  const targets = [
    'http://169.254.169.254/latest/meta-data/',
    `http://127.0.0.1:${p}/`,
    `http://2130706433:${p}/`,
    `http://0177.0.0.1:${p}/`,
    `http://[::ffff:127.0.0.1]:${p}/`,
    `http://localhost:${p}/`,
    'http://metadata.google.internal/computeMetadata/v1/',
  ];
  for (const url of targets) {
    records.length = 0;
    const here = await engine.run(netfetch, { profile: 'network', tenant: 'ssrf', argv: ['fetch', url] });
    const hereRecords = records.splice(0);
    const there = await engine.run(netfetch, { ...OS, profile: 'network', tenant: 'ssrf', argv: ['fetch', url] });
    const thereRecords = records.splice(0);
    assert.equal(there.ok, true, JSON.stringify(there.error));
    assert.equal(there.stdout, `error ${GUEST_ERR.DENIED}\n`, url);
    assert.equal(there.stdout, here.stdout, url);
    assert.equal(thereRecords.length, 1, `${url}: ${JSON.stringify(thereRecords)}`);
    assert.deepEqual(shape(thereRecords), shape(hereRecords), url);
    assert.equal(thereRecords[0]!.detail['tier'], 'os_process');
  }
  const js = await engine.exec({ language: 'js', code: `(async () => { try { await fetch("http://127.0.0.1:${p}/"); return 'reached'; } catch (e) { return e.message; } })()`, profile: 'network', ...OS });
  assert.equal(js.ok, true, JSON.stringify(js.error));
  assert.match(String(js.result), /denied by policy/);
  assert.deepEqual(server.requests, [], 'a request reached the loopback server');
  assert.equal(server.connections, 0);
});

test('a hijacked child forging the fetch, a socket request or a batch gets the same refusals', async () => {
  const brokers = testBrokers([]);
  const p = server.port;
  const r = await forged(brokers, callerOf('ssrf', ['net', 'tcp']), {
    lines: [
      request(1, 'http_fetch', [JSON.stringify({ url: `http://127.0.0.1:${p}/`, headers: { host: 'example.com' } })]),
      request(2, 'http_fetch', [JSON.stringify({ url: 'http://169.254.169.254/latest/meta-data/' })]),
      request(3, 'tcp_request', [`127.0.0.1:${p}`, 'GET / HTTP/1.0\r\n\r\n']),
      request(4, 'http_fetch_many', [JSON.stringify([{ url: `http://127.0.0.1:${p}/` }])]),
    ],
    await: 4,
  });
  assert.equal(r.error, null, String(r.error));
  const answers = [...r.answers!].sort((a, b) => a.id - b.id); // served concurrently: answered in any order
  assert.deepEqual(answers.slice(0, 3).map((a) => [a.id, a.errno]), [[1, GUEST_ERR.DENIED], [2, GUEST_ERR.DENIED], [3, GUEST_ERR.DENIED]]);
  // A batch answers per URL: its one entry is the guard's refusal.
  assert.equal(answers[3]!.ok, true);
  assert.deepEqual(JSON.parse(Buffer.from(answers[3]!.payload ?? '', 'base64').toString()), [{ error: 'DENIED', errno: GUEST_ERR.DENIED }]);
  assert.equal(server.connections, 0, 'a connection reached the loopback server');
});
