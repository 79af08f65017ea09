// The attack: a hijacked os_process child forges broker requests to the parent engine — a power
// its call was not granted (secrets, net), another tenant's data (a `tenant` field of its own),
// names that are no broker import (`run_command_many`, `serve_request`, `__proto__`), the wrong
// number of arguments, malformed lines, a reused request id, a cancel of nothing. The parent
// serves each request as the call it gave the child — its tenant, its grant — so an ungranted
// power is DENIED and recorded exactly as a worker's broker would (marked tier os_process), a
// name that is no broker import is INVALID, and a line that breaks the protocol kills the child
// (the call fails INTERNAL). The parent never falls over.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { b64, callerOf, forged, request, testBrokers, waitGone, type Record_ } from '../helpers/forged-child.ts';

const records: Record_[] = [];
const brokers = testBrokers(records);
const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

test('a power the call was not granted is DENIED and recorded, as the broker refuses it for a worker', async () => {
  records.length = 0;
  const r = await forged(brokers, callerOf('mallory', ['kv']), {
    lines: [request(1, 'secret_sign', ['operator-key', 'msg']), request(2, 'http_fetch', [JSON.stringify({ url: 'http://127.0.0.1/' })]), request(3, 'queue_push', ['q', 'm'])],
    await: 3,
  });
  assert.equal(r.error, null, String(r.error));
  assert.deepEqual(r.answers!.map((a) => [a.id, a.ok, a.errno]).sort(), [1, 2, 3].map((id) => [id, false, GUEST_ERR.DENIED]));
  // What the same requests leave when a worker's guest is refused by the cadence: one record each, here marked.
  const denied = records.filter((x) => x.kind === 'denied');
  assert.deepEqual(
    denied.map((x) => [x.tenant, x.instance, x.detail['broker'], x.detail['op'], x.detail['code'], x.detail['why'], x.detail['tier']]),
    [
      ['mallory', 'os-run', 'secrets', 'secret_sign', 'DENIED', 'not granted', 'os_process'],
      ['mallory', 'os-run', 'net', 'http_fetch', 'DENIED', 'not granted', 'os_process'],
      ['mallory', 'os-run', 'queue', 'queue_push', 'DENIED', 'not granted', 'os_process'],
    ],
  );
});

test("a request naming another tenant is served as the call's own tenant: the victim's key is not there", async () => {
  assert.deepEqual(await brokers.call({ tenant: 'victim', instance: 'i', policy: { caps: ['kv'] } }, 'kv_put', [enc('k'), enc('victim secret')], 0), { ok: true, value: 0 });
  const r = await forged(brokers, callerOf('mallory', ['kv']), {
    lines: [request(1, 'kv_get', ['k'], { tenant: 'victim', instance: 'victim-run', caps: ['kv', 'secrets'] }), request(2, 'kv_list', [''], { tenant: 'victim' })],
    await: 2,
  });
  assert.equal(r.error, null, String(r.error));
  const [get, list] = [...r.answers!].sort((a, b) => a.id - b.id);
  assert.deepEqual([get!.ok, get!.errno], [false, GUEST_ERR.NOT_FOUND]);
  assert.equal(Buffer.from(list!.payload ?? '', 'base64').toString(), '[]');
});

test('names that are no broker import, and the wrong arity, are INVALID; the parent serves the next call', async () => {
  const names = ['run_command_many', 'serve_request', 'serve_respond', '__proto__', 'constructor', 'toString', 'hasOwnProperty', 'fd_write', 'session_info'];
  const lines = names.map((n, i) => request(i + 1, n, ['x']));
  lines.push(request(names.length + 1, 'kv_put', ['only-a-key'])); // kv_put takes two strings
  lines.push(request(names.length + 2, 'kv_get', ['a', 'b', 'c']));
  // In two calls: a child may have at most MAX_BROKER_IN_FLIGHT (8) requests in flight.
  for (const part of [lines.slice(0, 6), lines.slice(6)]) {
    const r = await forged(brokers, callerOf('mallory', ['kv', 'net', 'secrets', 'queue', 'parallel']), { lines: part, await: part.length });
    assert.equal(r.error, null, String(r.error));
    assert.deepEqual(
      r.answers!.map((a) => [a.ok, a.errno]),
      part.map(() => [false, GUEST_ERR.INVALID]),
    );
  }
  const ok = await forged(brokers, callerOf('mallory', ['kv']), { lines: [request(1, 'kv_put', ['fine', 'v'])], await: 1 });
  assert.deepEqual(ok.answers, [{ id: 1, ok: true, value: 0 }]);
});

test('a malformed line, an unknown kind, a reused id or a cancel of nothing kills the child: INTERNAL', async () => {
  const scripts: string[][] = [
    ['{not json'],
    [JSON.stringify({ kind: 'exec', id: 1, name: 'kv_get', args: [] })],
    [JSON.stringify({ kind: 'broker', id: 1, name: 'kv_get', args: [123], cap: 0, leftMs: 1 })],
    [JSON.stringify({ kind: 'broker', id: -1, name: 'kv_get', args: [b64('k')], cap: 0, leftMs: 1 })],
    [JSON.stringify({ kind: 'broker', id: 1, name: 'kv_get', args: [b64('k')], cap: 0, leftMs: 'soon' })],
    [JSON.stringify({ kind: 'broker', id: 1, name: 'x'.repeat(100), args: [], cap: 0, leftMs: 1 })],
    [JSON.stringify({ kind: 'broker', id: 1, name: 'kv_get', args: [b64('k')], oversized: 9, cap: 0, leftMs: 1 })],
    [JSON.stringify([1, 2, 3])],
    [request(2, 'kv_get', ['k']), request(1, 'kv_get', ['k'])],
    [JSON.stringify({ kind: 'cancel', id: 7 })],
  ];
  const pids: number[] = [];
  for (const lines of scripts) {
    const r = await forged(brokers, callerOf('mallory', ['kv']), { lines, hang: true });
    pids.push(r.pid);
    assert.ok(r.error instanceof SandboxError && r.error.code === 'INTERNAL', `${lines.join(' ')}: ${String(r.error)}`);
    assert.match(r.error.message, /broke the broker protocol/);
    assert.doesNotMatch(r.error.message, /\//); // no host path
  }
  assert.deepEqual(await waitGone(pids), []);
});

test('a forged oversized request is refused by the cadence (TOO_LARGE, recorded), whatever size it claims', async () => {
  records.length = 0;
  const r = await forged(brokers, callerOf('mallory', ['kv']), {
    lines: [JSON.stringify({ kind: 'broker', id: 1, name: 'kv_put', oversized: 3, cap: 0, leftMs: 1 }), JSON.stringify({ kind: 'broker', id: 2, name: 'secret_sign', oversized: 1e12, cap: 0, leftMs: 1 })],
    await: 2,
  });
  assert.deepEqual([...r.answers!].sort((a, b) => a.id - b.id).map((a) => a.errno), [GUEST_ERR.TOO_LARGE, GUEST_ERR.DENIED]);
  assert.deepEqual(records.map((x) => [x.detail['op'], x.detail['code'], x.detail['tier']]), [['kv_put', 'TOO_LARGE', 'os_process'], ['secret_sign', 'DENIED', 'os_process']]);
});
