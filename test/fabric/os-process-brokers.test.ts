// The os_process tier's brokered powers, served by the parent engine (src/engine/os-process/
// broker-proxy.ts): a guest in a child process uses net (against a 127.0.0.1 server this test
// starts, allowed by the operator's allowCidrs) and kv, queue, secrets, with the same results and
// the same audit records as the same call in a worker — each os_process record marked
// `tier: 'os_process'` — and the same per-tenant stores.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { testEngine } from '../helpers/engine.ts';
import { watText } from '../helpers/wat.ts';
import { httpServer, type TestServer } from '../net/servers.ts';

const OS = { tier: 'os_process', bwrapPath: '' } as const;
const dir = mkdtempSync(join(tmpdir(), 'membrane-os-brokers-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const records: { tenant: string; instance: string; kind: string; detail: Record<string, unknown> }[] = [];
const engine = testEngine({
  poolSize: 1,
  brokers: {
    databaseFile: join(dir, 'engine.sqlite'),
    audit: () => ({ append: (e) => void records.push(e) }),
    net: { allowCidrs: ['127.0.0.1/32'] },
    secrets: { signing: 'parent-only-key' },
  },
});
const netfetch = new Uint8Array(readFileSync(new URL('../fixtures/c/netfetch.wasm', import.meta.url)));
const brokersGuest = new Uint8Array(readFileSync(new URL('../fixtures/c/brokers.wasm', import.meta.url)));
let server: TestServer;

before(async () => {
  server = await httpServer((req, res) => {
    res.sendDate = false; // the same bytes for every fetch
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ path: req.url, from: 'the test server' }));
  });
});
after(() => server.close());

/** Records without what differs by design: the instance name, and the os_process mark (checked apart). */
const shape = (rs: typeof records): unknown[] => rs.map(({ tenant, kind, detail }) => ({ tenant, kind, detail: { ...detail, tier: undefined } }));

test('net: a C guest and a JS snippet fetch from 127.0.0.1 on os_process with the results they get in a worker', async () => {
  const url = `http://127.0.0.1:${server.port}/hello`;
  const opts = { profile: 'network', argv: ['fetch', url] };
  const here = await engine.run(netfetch, opts);
  const there = await engine.run(netfetch, { ...OS, ...opts });
  assert.equal(there.ok, true, JSON.stringify(there.error));
  assert.match(here.stdout, /"status":200/);
  assert.equal(there.stdout, here.stdout);
  // A buffer too small first, then the size it asked for: the parent fetched once per ask, as for a worker.
  const small = { profile: 'network', argv: ['small', url] };
  assert.equal((await engine.run(netfetch, { ...OS, ...small })).stdout, (await engine.run(netfetch, small)).stdout);
  const code = `(async () => { const r = await fetch(${JSON.stringify(url)}); return [r.status, r.ok, await r.json()]; })()`;
  const jsHere = await engine.exec({ language: 'js', code, profile: 'network', caps: ['net'] });
  const jsThere = await engine.exec({ language: 'js', code, profile: 'network', caps: ['net'], ...OS });
  assert.equal(jsThere.ok, true, JSON.stringify(jsThere.error));
  assert.deepEqual(jsThere.result, jsHere.result);
  assert.deepEqual(jsThere.result, [200, true, { path: '/hello', from: 'the test server' }]);
});

test("kv, queue and secrets on os_process are the parent's: one store per tenant across tiers, the key never in the child", async () => {
  const caps = ['kv', 'queue', 'secrets'];
  const run = async (tier: 'os' | 'here', tenant: string, ...argv: string[]): Promise<string> => {
    const r = await engine.run(brokersGuest, { profile: 'minimal', caps, tenant, argv, ...(tier === 'os' ? OS : {}) });
    assert.equal(r.ok, true, JSON.stringify(r.error));
    return r.stdout;
  };
  assert.equal(await run('os', 'acme', 'kv', 'put', 'color', 'blue'), 'put 0\n');
  assert.equal(await run('here', 'acme', 'kv', 'get', 'color'), 'get blue\n');
  assert.equal(await run('here', 'acme', 'kv', 'put', 'shape', 'round'), 'put 0\n');
  assert.equal(await run('os', 'acme', 'kv', 'get', 'shape'), 'get round\n');
  assert.equal(await run('os', 'other', 'kv', 'get', 'color'), `get error ${GUEST_ERR.NOT_FOUND}\n`);
  // A pop into a 2-byte buffer consumes nothing (its size comes back), then the retry pops: in the parent's queue.
  assert.equal(await run('os', 'acme', 'q', 'push', 'jobs', 'one'), 'push 0\n');
  const popOs = await run('os', 'acme', 'q', 'popsmall', 'jobs');
  assert.equal(await run('here', 'acme', 'q', 'push', 'jobs', 'one'), 'push 0\n');
  assert.equal(popOs, await run('here', 'acme', 'q', 'popsmall', 'jobs'));
  assert.equal(popOs, 'need 3 len 1\npop one\n');
  assert.equal(await run('os', 'acme', 'sign', 'signing', 'msg'), await run('here', 'acme', 'sign', 'signing', 'msg'));
  const js = 'kv.put("from-js", "yes"); [kv.get("color"), kv.get("from-js"), kv.list("")]';
  const x = await engine.exec({ language: 'js', code: js, profile: 'minimal', caps: ['kv'], tenant: 'acme', ...OS });
  assert.equal(x.ok, true, JSON.stringify(x.error));
  assert.deepEqual(x.result, ['blue', 'yes', ['color', 'from-js', 'shape']]);
});

test('refusals on os_process leave the audit records a worker run leaves, once, marked tier os_process', async () => {
  // kv_put of a value past every broker's cap (the child sends its size only) and a secret that does not exist.
  const big = await watText(`(module
    (import "membrane" "kv_put" (func $kv_put (param i32 i32 i32 i32) (result i32)))
    (memory (export "memory") 100)
    (data (i32.const 0) "big")
    (func (export "put") (param $n i32) (result i32) (call $kv_put (i32.const 0) (i32.const 3) (i32.const 16) (local.get $n))))`);
  const calls = async (tier: object): Promise<{ put: unknown; fetch: string }> => {
    const put = await engine.run(big, { profile: 'minimal', caps: ['kv'], tenant: 'audited', invoke: 'put', args: [5 * 1024 * 1024], ...tier });
    const fetch = await engine.run(netfetch, { profile: 'network', tenant: 'audited', argv: ['fetch', 'http://169.254.169.254/latest/meta-data/'], ...tier });
    return { put: put.result, fetch: fetch.stdout };
  };
  records.length = 0;
  const here = await calls({});
  const hereRecords = records.splice(0);
  const there = await calls(OS);
  const thereRecords = records.splice(0);
  assert.deepEqual(there, here);
  assert.deepEqual(here, { put: GUEST_ERR.TOO_LARGE, fetch: `error ${GUEST_ERR.DENIED}\n` });
  assert.deepEqual(hereRecords.map((r) => [r.detail['op'], r.detail['code']]), [['kv_put', 'TOO_LARGE'], ['http_fetch', 'DENIED']]);
  assert.deepEqual(shape(thereRecords), shape(hereRecords));
  assert.ok(thereRecords.every((r) => r.detail['tier'] === 'os_process'), JSON.stringify(thereRecords));
});

test('the tenant and id the parent serves a child as are checked like a worker run\'s: a malformed one runs nothing', async () => {
  let spawned = false;
  for (const bad of [{ tenant: 'a\u0000kv' }, { tenant: '' }, { id: 'x/../y' }]) {
    const r = await engine.run(brokersGuest, { ...OS, ...bad, profile: 'minimal', argv: ['kv', 'get', 'k'], onChildSpawn: () => (spawned = true) });
    const here = await engine.run(brokersGuest, { ...bad, profile: 'minimal', argv: ['kv', 'get', 'k'] });
    assert.equal(r.error?.code, 'POLICY_INVALID', JSON.stringify(bad));
    assert.equal(here.error?.code, 'POLICY_INVALID', JSON.stringify(bad));
  }
  assert.equal(spawned, false);
});
