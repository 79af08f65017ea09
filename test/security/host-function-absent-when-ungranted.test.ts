// Attack: reach an embedder host function (`acme:orders`) without a grant that names it. A host
// cap is presence-gated like every cap word (DESIGN §1.1, §9): a core module importing
// `acme:orders.get` does not link (LINK_UNSATISFIED naming the import and the cap) and its start
// function never runs; a JS snippet has no `acme_orders` global, a Python snippet gets NameError
// and `membrane` has no such attribute; a power request forged for it is refused by the host
// side's own check; a profile never includes it, and neither does another host cap's grant.
// Through the library, the HTTP API (a token without the cap, and a subset naming it) and MCP.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { HostFunction } from '../../src/index.ts';
import { watText } from '../helpers/wat.ts';
import { hostGuest } from '../helpers/host-functions.ts';
import { testEngine } from '../helpers/engine.ts';
import { call, testServer } from '../helpers/http.ts';
import { structured } from '../interfaces/mcp-contract.ts';
import { lanePowerServer } from '../../src/lanes/power-server.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-hostfn-absent-');
process.env['MEMBRANE_AUDIT_KEY'] ??= 'c'.repeat(64);
let invoked = 0;
const get: HostFunction = () => {
  invoked++;
  return { secret: 'order book' };
};
const engine = testEngine({ poolSize: 1, hostFunctions: { 'acme:orders': { get }, 'acme:billing': { total: () => 0 } } });

test('core: importing acme:orders.get without the grant is LINK_UNSATISFIED naming it; the start function never runs', async () => {
  const before = invoked;
  // A start function that calls the import: it would run at instantiation if the module linked.
  const bytes = await watText(`(module
    (import "acme:orders" "get" (func $get (param i32 i32 i32 i32) (result i32)))
    (memory (export "memory") 1)
    (func $start (drop (call $get (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 0))))
    (start $start)
    (func (export "_start")))`);
  for (const caps of [undefined, ['vfs'], ['acme:billing']]) {
    for (const profile of ['compute', 'posix']) {
      const r = await engine.run(bytes, { profile, ...(caps ? { caps } : {}) });
      assert.equal(r.error?.code, 'LINK_UNSATISFIED', `${profile} ${JSON.stringify(caps)}`);
      assert.match(r.error!.message, /acme:orders\.get: needs host cap "acme:orders"/);
      const missing = (r.error!.details as { missing: { import: string; cap: string }[] }).missing;
      assert.deepEqual(missing.map((m) => [m.import, m.cap]), [['acme:orders.get', 'acme:orders']]);
    }
  }
  // A function the cap does not define is absent even when the cap is granted.
  const other = await hostGuest('acme:orders', 'delete_all', '');
  const r = await engine.run(other.bytes, { invoke: 'call', args: [0, 0], caps: ['acme:orders'] });
  assert.equal(r.error?.code, 'LINK_UNSATISFIED');
  assert.match(r.error!.message, /has no function "delete_all"/);
  assert.equal(invoked, before, 'the host function was never called');
});

test('JS: no acme_orders global, no property of globalThis, not reachable by name', async () => {
  for (const caps of [undefined, ['acme:billing']]) {
    const r = await engine.exec({
      language: 'js',
      ...(caps ? { caps } : {}),
      code: `[typeof acme_orders, 'acme_orders' in globalThis, Object.getOwnPropertyNames(globalThis).filter((n) => /acme|orders/.test(n))]`,
    });
    assert.equal(r.ok, true, r.error?.message);
    assert.deepEqual(r.result, ['undefined', false, caps ? ['acme_billing'] : []]);
  }
});

test('Python: NameError, and the membrane module has no acme_orders', async () => {
  const r = await engine.exec({ language: 'python', caps: ['acme:billing'], code: 'import membrane\n[hasattr(membrane, "acme_orders"), "acme_orders" in globals(), "acme_billing" in globals()]' });
  assert.equal(r.ok, true, r.error?.message);
  assert.deepEqual(r.result, [false, false, true]);
  const n = await engine.exec({ language: 'python', code: 'acme_orders.get({})' });
  assert.equal(n.ok, false);
  assert.match(n.error!.message, /NameError: name 'acme_orders' is not defined/);
});

test('a forged power request for an ungranted host cap is refused by the host side and never calls the function', async () => {
  const before = invoked;
  let hostCalls = 0;
  const server = lanePowerServer({
    call: () => ({ ok: false, errno: GUEST_ERR.DENIED }),
    net: async () => GUEST_ERR.DENIED,
    admit: () => GUEST_ERR.DENIED,
    hostFunctions: { 'acme:billing': ['total'] },
    hostCall: async () => {
      hostCalls++;
      return new Uint8Array(0);
    },
  });
  for (const power of ['acme:orders.get', 'acme:billing.get', 'acme:orders', 'acme:orders.get.x']) {
    const a = await server.serve({ power, args: [{}] }, Date.now() + 5_000);
    assert.deepEqual(a, { ok: false, code: 'INVALID' }, power);
  }
  assert.equal(hostCalls, 0);
  assert.equal(invoked, before);
  await server.end();
});

test('HTTP and MCP: a token without the host cap sees no acme_orders; naming it in a subset is NOT_CAPABLE', async () => {
  const t = await testServer({ engine });
  const plain = t.token('http-plain', 'compute');
  const granted = t.server.api.tokens.create('http-granted', 'compute', ['acme:orders']).token;
  const probe = { language: 'js', code: 'typeof acme_orders' };
  const without = await call(t.url, '/v1/exec', plain, 'POST', probe);
  assert.equal(without.status, 200, without.text);
  assert.equal(without.body.result, 'undefined');
  const withIt = await call(t.url, '/v1/exec', granted, 'POST', probe);
  assert.equal(withIt.body.result, 'object');
  const subset = await call(t.url, '/v1/exec', plain, 'POST', { ...probe, capability_subset: ['acme:orders'] });
  assert.equal(subset.status, 403);
  assert.equal(subset.body.error.code, 'NOT_CAPABLE');
  assert.match(subset.body.error.message, /"acme:orders"/);
  // A granted token may narrow the cap away.
  const narrowed = await call(t.url, '/v1/exec', granted, 'POST', { ...probe, capability_subset: ['vfs'] });
  assert.equal(narrowed.body.result, 'undefined');
  // A cap this engine does not define is an unknown word.
  const unknown = await call(t.url, '/v1/exec', granted, 'POST', { ...probe, capability_subset: ['acme:nothing'] });
  assert.equal(unknown.status, 400);
  assert.equal(unknown.body.error.code, 'POLICY_INVALID');

  const mcp = async (bearer: string, args: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const c = new Client({ name: 'host-fn-test', version: '1.0.0' });
    await c.connect(new StreamableHTTPClientTransport(new URL('/mcp', t.url), { requestInit: { headers: { authorization: `Bearer ${bearer}` } } }));
    try {
      return structured(await c.callTool({ name: 'sandbox_execute', arguments: { language: 'js', code: 'typeof acme_orders', ...args } })) as Record<string, unknown>;
    } finally {
      await c.close();
    }
  };
  assert.equal((await mcp(plain, {}))['result'], 'undefined');
  assert.equal((await mcp(granted, {}))['result'], 'object');
  const refused = await mcp(plain, { capability_subset: ['acme:orders'] });
  assert.equal((refused['error'] as { code: string }).code, 'NOT_CAPABLE');
});
