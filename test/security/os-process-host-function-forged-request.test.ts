// The attack: a hijacked os_process child forges host function requests to the parent engine —
// a host cap its call was not granted, a function the cap does not define, names that are no
// host cap or function (`__proto__`, `membrane:fuel`), another tenant (fields of its own),
// arguments past the cap's maxArgBytes (carried, or claimed small as `oversized`), malformed
// host lines, a flood. The parent serves each request as the call it gave the child — its
// tenant, its instance, its host caps — through its own host-function broker: an ungranted cap
// is DENIED and recorded (marked tier os_process) and its function never runs, a function the
// cap does not define is NOT_FOUND (the broker's answer for any caller), a name that is no host
// function INVALID, too large TOO_LARGE; a malformed line or a flood kills the child (the call
// fails INTERNAL). What a function throws never reaches the child beyond its code. A cancel that
// crosses its answer in the pipes is taken once (an honest child's call ends at the same deadline
// as the function's), a second one kills the child.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { HostFunctionError, type HostFailure, type JsonValue } from '../../src/brokers/index.ts';
import { MAX_BROKER_IN_FLIGHT } from '../../src/engine/os-process/protocol.ts';
import { brokerProxy } from '../../src/engine/os-process/broker-proxy.ts';
import { b64, callerOf, forged, hostRequest, testBrokers, waitGone, type Record_ } from '../helpers/forged-child.ts';

const records: Record_[] = [];
const failures: HostFailure[] = [];
const called: { fn: string; tenant: string; instance: string; args: JsonValue }[] = [];
const brokers = testBrokers(
  records,
  {},
  {
    'acme:orders': {
      functions: {
        get: (args, ctx) => {
          called.push({ fn: 'get', tenant: ctx.tenant, instance: ctx.instance, args });
          return { tenant: ctx.tenant };
        },
        refuse: () => {
          throw new HostFunctionError('QUOTA', 'tenant mallory is over its /srv/acme quota');
        },
        crash: () => {
          throw new Error('ECONNREFUSED /var/run/acme.sock');
        },
      },
      maxArgBytes: 32,
    },
    'acme:admin': {
      dropAll: () => {
        called.push({ fn: 'dropAll', tenant: '', instance: '', args: null });
        return 'dropped';
      },
    },
  },
  (f) => void failures.push(f),
);
const mallory = callerOf('mallory', [], ['acme:orders']);
const sorted = <T extends { id: number }>(xs: readonly T[]): T[] => [...xs].sort((a, b) => a.id - b.id);

test('a host cap the call was not granted is DENIED and recorded; its function never runs', async () => {
  records.length = 0;
  called.length = 0;
  const r = await forged(brokers, mallory, { lines: [hostRequest(1, 'acme:admin', 'dropAll', '{}'), hostRequest(2, 'acme:unknown', 'x', '{}')], await: 2 });
  assert.equal(r.error, null, String(r.error));
  assert.deepEqual(sorted(r.answers!).map((a) => [a.id, a.ok, a.errno]), [[1, false, GUEST_ERR.DENIED], [2, false, GUEST_ERR.DENIED]]);
  assert.deepEqual(called, []);
  assert.deepEqual(
    records.map((x) => [x.tenant, x.instance, x.kind, x.detail['broker'], x.detail['op'], x.detail['code'], x.detail['why'], x.detail['tier']]).sort(),
    [
      ['mallory', 'os-run', 'denied', 'acme:admin', 'dropAll', 'DENIED', 'not granted', 'os_process'],
      ['mallory', 'os-run', 'denied', 'acme:unknown', 'x', 'DENIED', 'not granted', 'os_process'],
    ],
  );
});

test("a request naming another tenant, instance or grant is served as the call's own", async () => {
  called.length = 0;
  const r = await forged(brokers, mallory, {
    lines: [hostRequest(1, 'acme:orders', 'get', '{"id":1}', { tenant: 'victim', instance: 'victim-run', hostCaps: ['acme:admin'], caps: ['acme:admin'] }), hostRequest(2, 'acme:admin', 'dropAll', '{}', { tenant: 'victim', hostCaps: ['acme:admin'] })],
    await: 2,
  });
  const [get, drop] = sorted(r.answers!);
  assert.equal(Buffer.from(get!.payload ?? '', 'base64').toString(), '{"tenant":"mallory"}');
  assert.deepEqual([drop!.ok, drop!.errno], [false, GUEST_ERR.DENIED]);
  assert.deepEqual(called.map((c) => [c.fn, c.tenant, c.instance]), [['get', 'mallory', 'os-run']]);
});

test('a function the cap does not define is NOT_FOUND (recorded); names that are no host function are INVALID', async () => {
  records.length = 0;
  const r = await forged(brokers, mallory, { lines: [hostRequest(1, 'acme:orders', 'dropAll', '{}'), hostRequest(2, 'acme:orders', 'constructor', '{}')], await: 2 });
  assert.deepEqual(sorted(r.answers!).map((a) => a.errno), [GUEST_ERR.NOT_FOUND, GUEST_ERR.NOT_FOUND]);
  assert.deepEqual(records.map((x) => [x.detail['op'], x.detail['code'], x.detail['tier']]).sort(), [['constructor', 'NOT_FOUND', 'os_process'], ['dropAll', 'NOT_FOUND', 'os_process']]);
  const names: [string, string][] = [['acme:orders', '__proto__'], ['membrane:fuel', 'get'], ['wasi:x', 'get'], ['ACME:orders', 'get'], ['acme', 'get'], ['acme:orders', 'get.x']];
  const bad = await forged(brokers, mallory, { lines: names.map(([c, f], i) => hostRequest(i + 1, c, f, '{}')), await: names.length });
  assert.equal(bad.error, null, String(bad.error));
  assert.deepEqual(bad.answers!.map((a) => [a.ok, a.errno]), names.map(() => [false, GUEST_ERR.INVALID]));
});

test('arguments past the cap are TOO_LARGE and recorded, carried or claimed small as oversized', async () => {
  records.length = 0;
  called.length = 0;
  const r = await forged(brokers, mallory, {
    lines: [
      hostRequest(1, 'acme:orders', 'get', JSON.stringify('x'.repeat(100))),
      JSON.stringify({ kind: 'host', id: 2, cap: 'acme:orders', fn: 'get', oversized: 3, leftMs: 5_000 }),
      JSON.stringify({ kind: 'host', id: 3, cap: 'acme:admin', fn: 'dropAll', oversized: 1e12, leftMs: 5_000 }),
    ],
    await: 3,
  });
  assert.deepEqual(sorted(r.answers!).map((a) => a.errno), [GUEST_ERR.TOO_LARGE, GUEST_ERR.TOO_LARGE, GUEST_ERR.DENIED]);
  assert.deepEqual(called, []);
  assert.deepEqual(records.map((x) => [x.detail['op'], x.detail['code'], x.detail['tier']]).sort(), [['dropAll', 'DENIED', 'os_process'], ['get', 'TOO_LARGE', 'os_process'], ['get', 'TOO_LARGE', 'os_process']]);
});

test("what the embedder's function throws reaches the child as its code alone; the hook fires in the parent", async () => {
  failures.length = 0;
  const r = await forged(brokers, mallory, { lines: [hostRequest(1, 'acme:orders', 'refuse', '{}'), hostRequest(2, 'acme:orders', 'crash', '{}')], await: 2 });
  assert.deepEqual(sorted(r.answers!), [{ id: 1, ok: false, errno: GUEST_ERR.QUOTA }, { id: 2, ok: false, errno: GUEST_ERR.UNAVAILABLE }]);
  assert.doesNotMatch(JSON.stringify(r.answers), /srv|sock|ECONN|quota/);
  assert.deepEqual(failures.map((f) => [f.tenant, f.function, (f.error as Error).message]), [['mallory', 'crash', 'ECONNREFUSED /var/run/acme.sock']]);
});

test('a malformed host line kills the child: INTERNAL, no host path', async () => {
  const scripts: string[] = [
    JSON.stringify({ kind: 'host', id: 1, cap: 'acme:orders', fn: 'get', args: 123, leftMs: 1 }),
    JSON.stringify({ kind: 'host', id: 1, cap: 'acme:orders', fn: 'get', args: [b64('{}')], leftMs: 1 }),
    JSON.stringify({ kind: 'host', id: 1, cap: 'acme:orders', fn: 'get', args: b64('{}'), leftMs: 'soon' }),
    JSON.stringify({ kind: 'host', id: 1, cap: 'a'.repeat(100), fn: 'get', args: b64('{}'), leftMs: 1 }),
    JSON.stringify({ kind: 'host', id: 1, cap: 'acme:orders', fn: 7, args: b64('{}'), leftMs: 1 }),
    JSON.stringify({ kind: 'host', id: 1, cap: 'acme:orders', fn: 'get', args: b64('{}'), oversized: 9, leftMs: 1 }),
    JSON.stringify({ kind: 'host', id: 1, cap: 'acme:orders', fn: 'get', oversized: -1, leftMs: 1 }),
  ];
  const pids: number[] = [];
  for (const line of scripts) {
    const r = await forged(brokers, mallory, { lines: [line], hang: true });
    pids.push(r.pid);
    assert.ok(r.error instanceof SandboxError && r.error.code === 'INTERNAL', `${line}: ${String(r.error)}`);
    assert.match(r.error.message, /broke the broker protocol/);
    assert.doesNotMatch(r.error.message, /\//);
  }
  assert.deepEqual(await waitGone(pids), []);
});

test(`a flood of host requests past ${MAX_BROKER_IN_FLIGHT} in flight kills the child; the parent serves the next call`, async () => {
  const slow = testBrokers([], {}, { 'acme:slow': { wait: () => new Promise((r) => setTimeout(() => r('late'), 2_000)) } });
  const line = JSON.stringify({ kind: 'host', id: 'ID', cap: 'acme:slow', fn: 'wait', args: b64('{}'), leftMs: 5_000 });
  const r = await forged(slow, callerOf('mallory', [], ['acme:slow']), { flood: 1_000, line });
  assert.ok(r.error instanceof SandboxError && r.error.code === 'INTERNAL', String(r.error));
  assert.match(r.error.message, new RegExp(`more than ${MAX_BROKER_IN_FLIGHT} requests in flight`));
  assert.deepEqual(await waitGone([r.pid]), []);
  const ok = await forged(brokers, mallory, { lines: [hostRequest(1, 'acme:orders', 'get', '{}')], await: 1 });
  assert.equal(ok.answers![0]!.ok, true);
});

test("a cancel that crosses its request's answer (both at the deadline) is taken once; a second one kills the child", async () => {
  const sent: string[] = [];
  const failed: unknown[] = [];
  const child = { send: (line: string, flushed?: () => void) => (sent.push(line), flushed?.(), true), fail: (e: unknown) => void failed.push(e) };
  const proxy = brokerProxy(child as unknown as Parameters<typeof brokerProxy>[0], brokers, mallory, performance.now() + 10_000);
  proxy.side.onLine(hostRequest(1, 'acme:orders', 'get', '{}'));
  for (let i = 0; i < 50 && sent.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(sent.length, 1, 'answered');
  proxy.side.onLine(JSON.stringify({ kind: 'cancel', id: 1 })); // crossed the answer: ignored
  assert.deepEqual(failed, []);
  proxy.side.onLine(JSON.stringify({ kind: 'cancel', id: 1 }));
  assert.equal(failed.length, 1);
  assert.match(String((failed as unknown[])[0]), /a cancel of no request in flight/);
  proxy.end();
});
