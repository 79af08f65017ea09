// Attack: make an embedder host function act for another tenant. The guest controls only the
// function's JSON argument; `ctx.tenant` and `ctx.instance` are captured by the engine when the
// job starts (DESIGN §1.2) — a `tenant`, `instance` or `ctx` field in the argument is just data,
// and a guest of tenant A cannot get tenant B's answer by naming B, in a core module, a JS or a
// Python snippet, or through an HTTP token of another tenant.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { HostFunctionContext, JsonValue } from '../../src/index.ts';
import { hostGuest } from '../helpers/host-functions.ts';
import { testEngine } from '../helpers/engine.ts';
import { call, testServer } from '../helpers/http.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-hostfn-spoof-');
process.env['MEMBRANE_AUDIT_KEY'] ??= 'c'.repeat(64);

/** Each tenant's private orders: the function answers from the captured tenant only. */
const ORDERS: Record<string, string[]> = { alice: ['alice-1'], bob: ['bob-secret'] };
const contexts: { args: JsonValue; ctx: HostFunctionContext }[] = [];
const engine = testEngine({
  poolSize: 1,
  hostFunctions: {
    'acme:orders': {
      mine: (args, ctx) => {
        contexts.push({ args, ctx });
        return { tenant: ctx.tenant, orders: ORDERS[ctx.tenant] ?? [] };
      },
    },
  },
});
const SPOOF = { tenant: 'bob', instance: 'bob-instance', ctx: { tenant: 'bob' }, __proto__: { tenant: 'bob' } };

test('core guest of alice naming bob in every field it controls gets alice', async () => {
  const g = await hostGuest('acme:orders', 'mine', JSON.stringify(SPOOF));
  const r = await engine.run(g.bytes, { invoke: 'call', args: [g.len, 4096], tenant: 'alice', id: 'alice-run', caps: ['acme:orders'] });
  assert.equal(r.ok, true, r.error?.message);
  assert.deepEqual(JSON.parse(r.stdout), { tenant: 'alice', orders: ['alice-1'] });
  const last = contexts.at(-1)!;
  assert.equal(last.ctx.tenant, 'alice');
  assert.equal(last.ctx.instance, 'alice-run');
  assert.equal((last.args as Record<string, unknown>)['tenant'], 'bob', 'the spoof arrived as data only');
});

test('JS and Python snippets of alice cannot name bob either', async () => {
  const js = await engine.exec({ language: 'js', tenant: 'alice', caps: ['acme:orders'], code: `acme_orders.mine(${JSON.stringify(SPOOF)})` });
  assert.deepEqual(js.result, { tenant: 'alice', orders: ['alice-1'] });
  const py = await engine.exec({ language: 'python', tenant: 'alice', caps: ['acme:orders'], code: 'acme_orders.mine({"tenant": "bob", "instance": "x"})' });
  assert.deepEqual(py.result, { tenant: 'alice', orders: ['alice-1'] });
  assert.match(contexts.at(-1)!.ctx.instance, /^exec-\d+$/);
});

test('a snippet cannot reach the context object, the engine or another tenant through the global', async () => {
  const r = await engine.exec({
    language: 'js',
    tenant: 'alice',
    caps: ['acme:orders'],
    code: `[Object.isFrozen(acme_orders), Object.keys(acme_orders), (() => { try { acme_orders.mine = () => 1; } catch { } return typeof acme_orders.mine(); })(), Object.getOwnPropertyNames(acme_orders.mine).sort()]`,
  });
  assert.equal(r.ok, true, r.error?.message);
  assert.deepEqual(r.result, [true, ['mine'], 'object', ['length', 'name']]);
});

test('HTTP: the tenant is the token’s, whatever the body says', async () => {
  const t = await testServer({ engine });
  const alice = t.server.api.tokens.create('alice', 'compute', ['acme:orders']).token;
  const r = await call(t.url, '/v1/exec', alice, 'POST', { language: 'js', code: `acme_orders.mine({ tenant: 'bob' })`, tenant: 'bob' });
  // `tenant` is not a request field at all: a body naming one is refused before anything runs.
  assert.equal(r.status, 400);
  assert.equal(r.body.error.code, 'BAD_REQUEST');
  const before = contexts.length;
  const plain = await call(t.url, '/v1/exec', alice, 'POST', { language: 'js', code: `acme_orders.mine({ tenant: 'bob' })` });
  assert.equal(plain.status, 200, plain.text);
  assert.deepEqual(plain.body.result, { tenant: 'alice', orders: ['alice-1'] });
  assert.equal(contexts.length, before + 1);
  assert.equal(contexts.at(-1)!.ctx.tenant, 'alice');
});
