// Embedder host functions on the os_process tier (issue #20): the child holds no operator code —
// its engine links the call's granted host caps as stand-ins whose every call is a request line
// to the parent, served by the parent's own host-function broker as the call (its tenant, its
// instance, its grant, the cap's per-tenant rate and size caps, its deadline), each audit record
// once in the parent's chain marked `tier: 'os_process'`. The same guest gets the same results
// and error codes as on the instance tier: a WAT guest and a JS snippet, compared here.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { HostFunctionError, type HostFailure, type HostFunctionContext, type JsonValue } from '../../src/index.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { hostGuest } from '../helpers/host-functions.ts';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';

const OS = { tier: 'os_process', bwrapPath: '' } as const;
const dir = tempDir('membrane-os-hostfn-');
const records: { tenant: string; instance: string; kind: string; detail: Record<string, unknown> }[] = [];
const seen: { fn: string; tenant: string; instance: string; cap: string; deadlineIn: number }[] = [];
const failures: HostFailure[] = [];
const note = (fn: string, ctx: HostFunctionContext): void => void seen.push({ fn, tenant: ctx.tenant, instance: ctx.instance, cap: ctx.cap, deadlineIn: ctx.deadline - Date.now() });
const engine = testEngine({
  poolSize: 1,
  brokers: { databaseFile: join(dir, 'engine.sqlite'), audit: () => ({ append: (e) => void records.push(e) }) },
  onHostFunctionError: (f) => void failures.push(f),
  hostFunctions: {
    'acme:orders': {
      functions: {
        get: (args: JsonValue, ctx) => {
          note('get', ctx);
          return { order: args, tenant: ctx.tenant };
        },
        slow: async (args: JsonValue, ctx) => {
          note('slow', ctx);
          await new Promise((r) => setTimeout(r, 20));
          return { late: args };
        },
        missing: () => {
          throw new HostFunctionError('NOT_FOUND', 'order 42 is not in /srv/acme/orders.db');
        },
        broken: () => {
          throw new Error('database at /srv/acme/orders.db is down');
        },
        big: () => 'x'.repeat(100),
      },
      maxArgBytes: 64,
      maxResultBytes: 64,
    },
    'acme:limited': { functions: { ping: () => 'pong' }, rate: { limit: 3, windowMs: 60_000 } },
    'acme:secret': { functions: { leak: () => 'never called' } },
  },
});

/** Audit records without what differs by design: the instance name, and the os_process mark (checked apart). */
const shape = (rs: typeof records): unknown[] => rs.map(({ tenant, kind, detail }) => ({ tenant, kind, detail: { ...detail, tier: undefined } }));

test('a WAT guest calls a host function on os_process with the result, ctx and records it gets in a worker', async () => {
  for (const [fn, args] of [['get', '{"id":7}'], ['slow', '[1,2]'], ['missing', '{}'], ['broken', '{}'], ['big', 'null'], ['get', '{not json'], ['get', JSON.stringify('y'.repeat(80))]] as const) {
    const g = await hostGuest('acme:orders', fn, args);
    const o = { invoke: 'call', args: [g.len, 4096], tenant: 'shop', caps: ['acme:orders'], timeoutMs: 10_000 };
    records.length = 0;
    const here = await engine.run(g.bytes, o);
    const hereRecords = [...records];
    records.length = 0;
    const there = await engine.run(g.bytes, { ...o, ...OS });
    assert.equal(there.ok, true, JSON.stringify(there.error));
    assert.equal(there.stdout, here.stdout, fn);
    assert.equal(there.result, here.result, `${fn} ${args}`);
    assert.deepEqual(shape(records), shape(hereRecords), fn);
    assert.ok(records.every((r) => r.detail['tier'] === 'os_process' && r.instance === 'os-run'));
  }
  // The codes the instance tier gives: an own code, UNAVAILABLE for a throw, TOO_LARGE both ways, INVALID JSON.
  const codes = async (fn: string, args: string): Promise<unknown> => {
    const g = await hostGuest('acme:orders', fn, args);
    return (await engine.run(g.bytes, { invoke: 'call', args: [g.len, 4096], caps: ['acme:orders'], ...OS })).result;
  };
  assert.equal(await codes('missing', '{}'), GUEST_ERR.NOT_FOUND);
  assert.equal(await codes('broken', '{}'), GUEST_ERR.UNAVAILABLE);
  assert.equal(await codes('big', ''), GUEST_ERR.TOO_LARGE);
  assert.equal(await codes('get', JSON.stringify('y'.repeat(80))), GUEST_ERR.TOO_LARGE);
  assert.equal(await codes('get', '{not json'), GUEST_ERR.INVALID);
  // ctx is the parent's resolution of the call: its tenant, its instance, a deadline within its budget.
  const g = await hostGuest('acme:orders', 'get', '{"id":1}');
  await engine.run(g.bytes, { invoke: 'call', args: [g.len, 4096], tenant: 'shop', id: 'order-job', caps: ['acme:orders'], timeoutMs: 4_000, ...OS });
  const last = seen.at(-1)!;
  assert.deepEqual([last.tenant, last.instance, last.cap], ['shop', 'order-job', 'acme:orders']);
  assert.ok(last.deadlineIn > 0 && last.deadlineIn <= 4_000, String(last.deadlineIn));
});

test("what the embedder's function threw stays in the parent: the onHostFunctionError hook, the code alone in the child", async () => {
  failures.length = 0;
  const g = await hostGuest('acme:orders', 'broken', '{}');
  const r = await engine.run(g.bytes, { invoke: 'call', args: [g.len, 4096], tenant: 'shop', caps: ['acme:orders'], ...OS });
  assert.equal(r.result, GUEST_ERR.UNAVAILABLE);
  assert.deepEqual(failures.map((f) => [f.tenant, f.instance, f.cap, f.function, (f.error as Error).message]), [['shop', 'os-run', 'acme:orders', 'broken', 'database at /srv/acme/orders.db is down']]);
  const js = await engine.exec({ language: 'js', caps: ['acme:orders'], code: 'acme_orders.broken().catch((e) => [e.code, e.message, String(e.stack).includes("/srv")])', ...OS });
  assert.deepEqual(js.result, ['UNAVAILABLE', 'membrane acme:orders.broken: unavailable (UNAVAILABLE)', false]);
  assert.equal(failures.length, 2);
});

test('a JS and a TS snippet on os_process see the granted cap as its global, with the results of a worker', async () => {
  const code = 'Promise.all([acme_orders.get({ id: 1 }), acme_orders.slow([1, 2]), acme_orders.missing().catch((e) => [e.name, e.code, e.message]), acme_orders.big().catch((e) => e.code), typeof acme_secret, typeof acme_limited])';
  const o = { language: 'js', tenant: 'shop', caps: ['acme:orders'], code } as const;
  records.length = 0;
  const here = await engine.exec(o);
  const hereRecords = [...records];
  records.length = 0;
  const there = await engine.exec({ ...o, ...OS });
  assert.equal(there.ok, true, JSON.stringify(there.error));
  assert.deepEqual(there.result, here.result);
  assert.deepEqual(there.result, [{ order: { id: 1 }, tenant: 'shop' }, { late: [1, 2] }, ['MembraneError', 'NOT_FOUND', 'membrane acme:orders.missing: not found (NOT_FOUND)'], 'TOO_LARGE', 'undefined', 'undefined']);
  assert.deepEqual(shape(records), shape(hereRecords));
  assert.ok(records.length > 0 && records.every((r) => r.detail['tier'] === 'os_process'));
  assert.equal(seen.at(-1)!.instance, 'os-exec');
  const ts = await engine.exec({ language: 'ts', caps: ['acme:orders'], code: 'const id: number = 3;\nacme_orders.get({ id })', ...OS });
  assert.deepEqual(ts.result, { order: { id: 3 }, tenant: 'default' });
  // An argument past the cap's maxArgBytes: TOO_LARGE, as in a worker.
  const big = await engine.exec({ language: 'js', caps: ['acme:orders'], code: 'acme_orders.get("z".repeat(100)).catch((e) => e.code)', ...OS });
  assert.equal(big.result, 'TOO_LARGE');
});

test('a cap the call was not granted is absent in the child as in a worker: LINK_UNSATISFIED, no global, the function never called', async () => {
  const g = await hostGuest('acme:secret', 'leak', '');
  const here = await engine.run(g.bytes, { invoke: 'call', args: [0, 64], caps: ['acme:orders'] });
  const there = await engine.run(g.bytes, { invoke: 'call', args: [0, 64], caps: ['acme:orders'], ...OS });
  assert.equal(here.error?.code, 'LINK_UNSATISFIED');
  assert.equal(there.error?.code, 'LINK_UNSATISFIED');
  const none = await engine.run(g.bytes, { invoke: 'call', args: [0, 64], ...OS });
  assert.equal(none.error?.code, 'LINK_UNSATISFIED');
  const js = await engine.exec({ language: 'js', caps: ['kv'], code: '[typeof acme_orders, typeof acme_secret, Object.getOwnPropertyNames(globalThis).filter((k) => k.startsWith("acme"))]', ...OS });
  assert.deepEqual(js.result, ['undefined', 'undefined', []]);
});

test("a cap's rate is per tenant across the tiers: worker and child calls count in the parent's one window", async () => {
  const g = await hostGuest('acme:limited', 'ping', '');
  const o = { invoke: 'call', args: [0, 64], tenant: 'rate-t', caps: ['acme:limited'] };
  records.length = 0;
  const results = [
    (await engine.run(g.bytes, o)).result,
    (await engine.run(g.bytes, { ...o, ...OS })).result,
    (await engine.run(g.bytes, o)).result,
    (await engine.run(g.bytes, { ...o, ...OS })).result,
    (await engine.exec({ language: 'js', tenant: 'rate-t', caps: ['acme:limited'], code: 'acme_limited.ping().catch((e) => e.code)', ...OS })).result,
  ];
  assert.deepEqual(results, [6, 6, 6, GUEST_ERR.RATE_LIMITED, 'RATE_LIMITED']);
  const denied = records.filter((r) => r.kind === 'denied');
  assert.deepEqual(denied.map((r) => [r.tenant, r.detail['broker'], r.detail['code'], r.detail['tier']]), [['rate-t', 'acme:limited', 'RATE_LIMITED', 'os_process']]);
});

test('revoking the tenant in the parent: the child\'s next host call is REVOKED', async () => {
  const g = await hostGuest('acme:orders', 'get', '{}');
  engine.revoke({ tenant: 'revoked-t' });
  try {
    const r = await engine.run(g.bytes, { invoke: 'call', args: [2, 64], tenant: 'revoked-t', caps: ['acme:orders'], ...OS });
    assert.equal(r.result, GUEST_ERR.REVOKED);
  } finally {
    engine.restore({ tenant: 'revoked-t' });
  }
});

test('a Python snippet on os_process: the granted cap is its global, calls synchronous, the results of a worker', async () => {
  const code = 'import membrane\ntry:\n    acme_orders.missing()\nexcept membrane.MembraneError as e:\n    m = e.code\n[acme_orders.get({"id": 2}), acme_orders.slow("x"), m, "acme_secret" in globals()]';
  const o = { language: 'python', tenant: 'shop', caps: ['acme:orders'], code, timeoutMs: 20_000 } as const;
  const here = await engine.exec(o);
  const there = await engine.exec({ ...o, ...OS });
  assert.equal(there.ok, true, JSON.stringify(there.error));
  assert.deepEqual(there.result, here.result);
  assert.deepEqual(there.result, [{ order: { id: 2 }, tenant: 'shop' }, { late: 'x' }, 'NOT_FOUND', false]);
});
