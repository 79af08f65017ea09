// Embedder host functions (DESIGN §9): `createEngine({ hostFunctions })` declares `vendor:name`
// caps; a grant that names one links `vendor:name.fn` for a core guest (JSON byte ABI) and shows
// the global `vendor_name` to JS and Python snippets. Sync and async functions; the context is
// the job's; the cadence (rate, revocation, audit) applies; the retry rule never runs a function twice.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { HostFunctionError, createEngine, type Engine, type HostFunctionContext, type JsonValue } from '../../src/index.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { hostGuest } from '../helpers/host-functions.ts';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_AUDIT_KEY'] ??= 'd'.repeat(64);
const home = tempDir('membrane-hostfn-');
process.env['MEMBRANE_HOME'] = home;
const databaseFile = join(home, 'engine.sqlite');
const seen: { fn: string; args: JsonValue; tenant: string; instance: string; cap: string }[] = [];
let calls = 0;
const record = (fn: string) => (args: JsonValue, ctx: HostFunctionContext) => {
  calls++;
  seen.push({ fn, args, tenant: ctx.tenant, instance: ctx.instance, cap: ctx.cap });
};

const engine: Engine = testEngine({
    poolSize: 1,
    brokers: { databaseFile },
    hostFunctions: {
      'acme:orders': {
        get: (args, ctx) => {
          record('get')(args, ctx);
          return { order: args, tenant: ctx.tenant };
        },
        slow: async (args, ctx) => {
          record('slow')(args, ctx);
          await new Promise((r) => setTimeout(r, 20));
          return { late: args };
        },
        missing: () => {
          throw new HostFunctionError('NOT_FOUND', 'order 42 is not in /srv/acme/orders.db');
        },
        nothing: () => undefined,
      },
      'acme:limited': { functions: { ping: () => 'pong' }, rate: { limit: 3, windowMs: 60_000 }, description: 'three calls a minute' },
    },
});

test('core guest: a sync and an async host function answer JSON through the out buffer', async () => {
  const args = '{"id":7}';
  for (const fn of ['get', 'slow']) {
    const g = await hostGuest('acme:orders', fn, args);
    const r = await engine.run(g.bytes, { invoke: 'call', args: [g.len, 4096], tenant: 'shop', caps: ['acme:orders'] });
    assert.equal(r.ok, true, r.error?.message);
    const answer = JSON.parse(r.stdout) as Record<string, unknown>;
    assert.equal(r.result, Buffer.byteLength(r.stdout));
    if (fn === 'get') assert.deepEqual(answer, { order: { id: 7 }, tenant: 'shop' });
    else assert.deepEqual(answer, { late: { id: 7 } });
  }
  const last = seen.at(-1)!;
  assert.equal(last.tenant, 'shop');
  assert.match(last.instance, /^run-\d+$/);
  assert.equal(last.cap, 'acme:orders');
});

test('core guest: an answer too big for the buffer returns its size, and the retry gets it without a second call', async () => {
  const g = await hostGuest('acme:orders', 'get', '{"id":8}');
  const before = calls;
  const r = await engine.run(g.bytes, { invoke: 'retry', args: [g.len, 4096], tenant: 'shop', caps: ['acme:orders'] });
  assert.equal(r.ok, true, r.error?.message);
  assert.deepEqual(JSON.parse(r.stdout), { order: { id: 8 }, tenant: 'shop' });
  assert.equal(calls - before, 1, 'the function ran once for the request and its retry');
});

test('core guest: an empty argument is null, an undefined result is null, a HostFunctionError is its code', async () => {
  const none = await hostGuest('acme:orders', 'nothing', '');
  const r = await engine.run(none.bytes, { invoke: 'call', args: [0, 64], caps: ['acme:orders'] });
  assert.equal(r.stdout, 'null');
  const missing = await hostGuest('acme:orders', 'missing', '{}');
  const m = await engine.run(missing.bytes, { invoke: 'call', args: [2, 64], caps: ['acme:orders'] });
  assert.equal(m.result, GUEST_ERR.NOT_FOUND);
  assert.equal(m.stdout, '');
  const bad = await hostGuest('acme:orders', 'get', '{not json');
  const b = await engine.run(bad.bytes, { invoke: 'call', args: [bad.len, 64], caps: ['acme:orders'] });
  assert.equal(b.result, GUEST_ERR.INVALID);
});

test('a persistent instance granted the cap calls it on every call, as its own instance id', async () => {
  const g = await hostGuest('acme:orders', 'get', '{"n":1}');
  const inst = await engine.start('orders-plugin', g.bytes, { tenant: 'shop', caps: ['acme:orders'] });
  try {
    for (let i = 0; i < 3; i++) {
      const r = await inst.call('call', [g.len, 4096]);
      assert.equal(r.ok, true, r.error?.message);
    }
    assert.equal(seen.at(-1)!.instance, 'orders-plugin');
  } finally {
    await inst.stop();
  }
});

test('JS snippet: the granted cap is the global acme_orders; its functions return promises of the answer', async () => {
  const r = await engine.exec({
    language: 'js',
    tenant: 'shop',
    caps: ['acme:orders'],
    code: 'Promise.all([acme_orders.get({ id: 1 }), acme_orders.slow([1, 2]), acme_orders.nothing()])',
  });
  assert.equal(r.ok, true, r.error?.message);
  assert.deepEqual(r.result, [{ order: { id: 1 }, tenant: 'shop' }, { late: [1, 2] }, null]);
  assert.match(seen.at(-1)!.instance, /^exec-\d+$/);
  const refused = await engine.exec({ language: 'js', caps: ['acme:orders'], code: 'acme_orders.missing().catch((e) => [e.name, e.code, e.message])' });
  assert.deepEqual(refused.result, ['MembraneError', 'NOT_FOUND', 'membrane acme:orders.missing: not found (NOT_FOUND)']);
});

test('TS snippet: the same global', async () => {
  const r = await engine.exec({ language: 'ts', caps: ['acme:orders'], code: 'const id: number = 3;\nacme_orders.get({ id })' });
  assert.equal(r.ok, true, r.error?.message);
  assert.deepEqual(r.result, { order: { id: 3 }, tenant: 'default' });
});

test('Python snippet: the granted cap is the global acme_orders (and membrane.acme_orders); calls are synchronous', async () => {
  const r = await engine.exec({
    language: 'python',
    tenant: 'shop',
    caps: ['acme:orders'],
    code: 'import membrane\nassert membrane.acme_orders is acme_orders\n[acme_orders.get({"id": 2}), acme_orders.slow("x"), acme_orders.nothing()]',
  });
  assert.equal(r.ok, true, r.error?.message);
  assert.deepEqual(r.result, [{ order: { id: 2 }, tenant: 'shop' }, { late: 'x' }, null]);
  const refused = await engine.exec({ language: 'python', caps: ['acme:orders'], code: 'import membrane\ntry:\n    acme_orders.missing()\nexcept membrane.MembraneError as e:\n    r = [e.code, str(e)]\nr' });
  assert.deepEqual(refused.result, ['NOT_FOUND', 'membrane acme:orders.missing: not found (NOT_FOUND)']);
});

test('a per-cap rate: the fourth call in the window is RATE_LIMITED, audited once', async () => {
  const g = await hostGuest('acme:limited', 'ping', '');
  const results: unknown[] = [];
  for (let i = 0; i < 5; i++) results.push((await engine.run(g.bytes, { invoke: 'call', args: [0, 64], tenant: 'rate-t', caps: ['acme:limited'] })).result);
  assert.deepEqual(results, [6, 6, 6, GUEST_ERR.RATE_LIMITED, GUEST_ERR.RATE_LIMITED]);
  const log = AuditLog.open(databaseFile);
  try {
    const denied = log.tail({ tenant: 'rate-t', kind: 'denied', limit: 100 }).map((r) => r.detail as Record<string, unknown>);
    assert.deepEqual(denied.map((d) => [d['broker'], d['op'], d['code']]), [['acme:limited', 'ping', 'RATE_LIMITED']]);
  } finally {
    log.close();
  }
});

test('revoking the tenant: the next call is REVOKED (core and JS), restoring it brings the function back', async () => {
  const g = await hostGuest('acme:orders', 'get', '{}');
  engine.revoke({ tenant: 'revoked-t' });
  try {
    const r = await engine.run(g.bytes, { invoke: 'call', args: [2, 64], tenant: 'revoked-t', caps: ['acme:orders'] });
    assert.equal(r.result, GUEST_ERR.REVOKED);
    const js = await engine.exec({ language: 'js', tenant: 'revoked-t', caps: ['acme:orders'], code: 'acme_orders.get({}).catch((e) => e.code)' });
    assert.equal(js.result, 'REVOKED');
  } finally {
    engine.restore({ tenant: 'revoked-t' });
  }
  const again = await engine.run(g.bytes, { invoke: 'call', args: [2, 64], tenant: 'revoked-t', caps: ['acme:orders'] });
  assert.equal(again.ok, true);
  assert.ok((again.result as number) > 0);
});

test('a revocation mid-call ends the waiting call REVOKED and fires ctx.signal', async () => {
  let aborted: unknown = null;
  let entered: () => void = () => {};
  const inside = new Promise<void>((r) => (entered = r));
  const e = createEngine({
    poolSize: 1,
    cacheDir: false,
    brokers: { databaseFile: join(home, 'mid.sqlite') },
    hostFunctions: {
      'acme:wait': {
        forever: (_a, ctx) =>
          new Promise((_resolve, reject) => {
            entered();
            ctx.signal.addEventListener('abort', () => {
              aborted = ctx.signal.reason;
              reject(new Error('stopped'));
            });
          }),
      },
    },
  });
  try {
    const g = await hostGuest('acme:wait', 'forever', '');
    const running = e.run(g.bytes, { invoke: 'call', args: [0, 64], tenant: 'mid', caps: ['acme:wait'], timeoutMs: 20_000 });
    await inside;
    e.revoke({ tenant: 'mid' });
    const r = await running;
    assert.equal(r.result, GUEST_ERR.REVOKED);
    assert.equal((aborted as { code?: string } | null)?.code, 'REVOKED');
  } finally {
    await e.close();
  }
});

test('definitions are checked when the engine is made: names, reserved vendors, clashing globals, empty caps', () => {
  const refused = (hostFunctions: Record<string, unknown>): string => {
    try {
      createEngine({ poolSize: 0, cacheDir: false, hostFunctions: hostFunctions as never }).close();
    } catch (e) {
      return `${(e as { code?: string }).code}: ${(e as Error).message}`;
    }
    return 'accepted';
  };
  const ok = () => 1;
  assert.match(refused({ kv: { get: ok } }), /^POLICY_INVALID: .*vendor:name/);
  assert.match(refused({ 'Acme:orders': { get: ok } }), /^POLICY_INVALID/);
  assert.match(refused({ 'membrane:fuel': { refill: ok } }), /^POLICY_INVALID: .*reserved/);
  assert.match(refused({ 'wasi:io': { read: ok } }), /^POLICY_INVALID: .*reserved/);
  assert.match(refused({ 'a_b:c': { f: ok }, 'a:b_c': { f: ok } }), /^POLICY_INVALID: .*both be the global a_b_c/);
  assert.match(refused({ 'acme:orders': {} }), /^POLICY_INVALID: .*defines no function/);
  assert.match(refused({ 'acme:orders': { __proto__x: ok } }), /^POLICY_INVALID: .*identifiers/);
  assert.match(refused({ 'acme:orders': { 'get.all': ok } }), /^POLICY_INVALID: .*identifiers/);
  assert.match(refused({ 'acme:orders': { get: 'not a function' } }), /^POLICY_INVALID: .*must be a function/);
  assert.match(refused({ 'acme:orders': { functions: { get: ok }, maxArgBytes: 0 } }), /^POLICY_INVALID: .*maxArgBytes/);
  assert.equal(refused({ 'acme:orders': { functions: { get: ok }, maxArgBytes: 10 } }), 'accepted');
});

test('a grant naming a host cap the engine does not define is POLICY_INVALID; profiles never include one', async () => {
  const g = await hostGuest('acme:orders', 'get', '{}');
  const r = await engine.run(g.bytes, { invoke: 'call', args: [2, 64], caps: ['acme:nothing'] });
  assert.equal(r.error?.code, 'POLICY_INVALID');
  assert.match(r.error!.message, /unknown cap word "acme:nothing"/);
  const x = await engine.exec({ language: 'js', caps: ['acme:nothing'], code: '1' });
  assert.equal(x.error?.code, 'POLICY_INVALID');
  for (const profile of ['compute', 'minimal', 'network', 'posix']) {
    const p = await engine.run(g.bytes, { invoke: 'call', args: [2, 64], profile });
    assert.equal(p.error?.code, 'LINK_UNSATISFIED', profile);
  }
});
