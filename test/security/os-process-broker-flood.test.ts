// The attack: a hijacked os_process child floods the parent engine with broker requests — many at
// once, one line of endless bytes, requests whose large answers it never reads, or a long stream
// of requests — to grow the parent's memory without bound or starve other tenants of the
// parent's brokers. The parent keeps at most MAX_BROKER_IN_FLIGHT requests of a child in flight
// (counted until each answer has left the parent, so a child that does not read cannot pile
// answers up), bounds each request line (MAX_BROKER_LINE_BYTES), and kills a child past either
// (INTERNAL); a child that stays within them is held to its tenant's rate limit, recorded once per
// window, while another tenant's requests go on being served.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { MAX_BROKER_IN_FLIGHT, MAX_BROKER_LINE_BYTES } from '../../src/engine/os-process/protocol.ts';
import { callerOf, forged, gone, request, testBrokers, type Record_ } from '../helpers/forged-child.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';

const records: Record_[] = [];
const RATE = 200;
const brokers = testBrokers(records, { rate: { perBroker: { kv: { limit: RATE, windowMs: 60_000 } } } });
const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const internal = (e: unknown, why: RegExp): boolean => e instanceof SandboxError && e.code === 'INTERNAL' && why.test(e.message);

test('more requests in flight than the bound: the child is killed, INTERNAL, and is gone', async () => {
  const r = await forged(brokers, callerOf('flood-a', ['kv']), { flood: 10_000, line: request(0, 'kv_get', ['k']).replace('"id":0', '"id":"ID"') });
  assert.ok(internal(r.error, new RegExp(`more than ${MAX_BROKER_IN_FLIGHT} requests in flight`)), String(r.error));
  assert.ok(r.ms < 10_000 + LOAD_SLACK_MS);
  assert.ok(gone(r.pid));
});

test('one endless request line is cut at its bound: the child is killed before the parent holds more', async () => {
  const before = process.memoryUsage().arrayBuffers;
  const r = await forged(brokers, callerOf('flood-b', ['kv']), { huge: 8 * MAX_BROKER_LINE_BYTES });
  assert.ok(internal(r.error, /oversized broker request/), String(r.error));
  assert.ok(gone(r.pid));
  // Held at most one line's bound (plus a pipe chunk), not the 8 lines' worth the child wrote.
  assert.ok(process.memoryUsage().arrayBuffers - before < 3 * MAX_BROKER_LINE_BYTES, 'the parent kept the flood');
});

test('a child that never reads its answers cannot pile them up: they stay in flight, and the next request kills it', async () => {
  const caller = callerOf('flood-c', ['kv']);
  assert.deepEqual(await brokers.call(caller, 'kv_put', [enc('big'), new Uint8Array(1024 * 1024).fill(0x61)], 0), { ok: true, value: 0 });
  const first = Array.from({ length: MAX_BROKER_IN_FLIGHT }, (_, i) => request(i + 1, 'kv_get', ['big']));
  const later = [request(MAX_BROKER_IN_FLIGHT + 1, 'kv_get', ['big'])];
  const deaf = await forged(brokers, caller, { lines: first, later, laterMs: 300, deaf: true, hang: true });
  assert.ok(internal(deaf.error, new RegExp(`more than ${MAX_BROKER_IN_FLIGHT} requests in flight`)), String(deaf.error));
  // The same requests from a child that reads its answers are all served (the bound is on what is unread).
  const reading = await forged(brokers, caller, { lines: first, later, laterMs: 300, await: MAX_BROKER_IN_FLIGHT + 1 });
  assert.equal(reading.error, null, String(reading.error));
  assert.ok(reading.answers!.every((a) => a.ok && a.value === 1024 * 1024));
});

test("a long stream of requests is held to its tenant's rate limit (one record), and another tenant is served meanwhile", async () => {
  records.length = 0;
  const line = request(0, 'kv_get', ['k']).replace('"id":0', '"id":"ID"');
  const hostile = forged(brokers, callerOf('flood-d', ['kv']), { pipeline: 3 * RATE, window: MAX_BROKER_IN_FLIGHT, line }, 30_000);
  const honest = forged(brokers, callerOf('honest', ['kv']), { pipeline: RATE / 2, window: 2, line }, 30_000);
  const [h, o] = await Promise.all([hostile, honest]);
  assert.equal(h.error, null, String(h.error));
  assert.deepEqual(h.answers, [{ [String(GUEST_ERR.NOT_FOUND)]: RATE, [String(GUEST_ERR.RATE_LIMITED)]: 2 * RATE }]);
  assert.equal(o.error, null, String(o.error));
  assert.deepEqual(o.answers, [{ [String(GUEST_ERR.NOT_FOUND)]: RATE / 2 }], 'the honest tenant was refused');
  const limited = records.filter((x) => x.detail['code'] === 'RATE_LIMITED');
  assert.deepEqual(limited.map((x) => [x.tenant, x.detail['tier']]), [['flood-d', 'os_process']]);
});
