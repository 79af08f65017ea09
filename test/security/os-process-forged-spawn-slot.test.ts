// Attack: on the os_process tier the tenant's exec and live-process slots, and the cadence of the
// spawning caps, are the parent engine's; a child asks for them on its broker link (`slot`,
// `release`, `admit` lines). A hijacked child (test/fixtures/os-process/forger.mjs) forges those
// lines: more slots than the tenant may hold, a release of a slot it never got (to push the
// tenant's counter below what its other calls hold), a release twice, a slot of a kind that does
// not exist, an `admit` for a cap the call was not granted. The parent answers as the call:
// past the cap QUOTA; an ungranted cap DENIED and recorded in the parent; a release of no slot
// held or a malformed line kills the child (INTERNAL) and touches no counter; every slot the
// call still holds comes back when the call ends.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { HostServices, MAX_CONCURRENT_EXECS, MAX_LIVE_PROCESSES, type HostServicesDeps } from '../../src/engine/bridge/host-services.ts';
import { callerOf, forged, testBrokers, type Record_ } from '../helpers/forged-child.ts';
import type { SlotDesk } from '../../src/engine/os-process/broker-proxy.ts';

const records: Record_[] = [];
const brokers = testBrokers(records);
// The parent's per-tenant counters (HostServices.takeSlot is all the proxy uses of them).
const services = new HostServices({} as HostServicesDeps);
const slotsOf = (tenant: string): SlotDesk => ({ slot: (kind) => services.takeSlot(kind, tenant), admit: () => null });
/** A slot request line for the forger's pipeline (it numbers "ID"). */
const slotLine = (kind: string): string => JSON.stringify({ kind: 'slot', id: 'ID', slot: kind });
const isCode = (code: string) => (e: unknown) => e instanceof SandboxError && e.code === code;

test(`a child asking for ${MAX_LIVE_PROCESSES + 8} live processes gets ${MAX_LIVE_PROCESSES}, then QUOTA; all come back when its call ends`, async () => {
  const r = await forged(brokers, callerOf('hoarder', ['exec']), { pipeline: MAX_LIVE_PROCESSES + 8, window: 4, line: slotLine('process') }, 10_000, undefined, { spawning: slotsOf('hoarder') });
  assert.equal(r.error, null, String(r.error));
  assert.deepEqual(r.answers, [{ ok: MAX_LIVE_PROCESSES, [String(GUEST_ERR.QUOTA)]: 8 }]);
  assert.deepEqual(services.usage('hoarder'), { execs: 0, processes: 0 });
});

test('the slots are the tenant\'s: what another call of the tenant holds counts against the child', async () => {
  const held = Array.from({ length: MAX_CONCURRENT_EXECS - 2 }, () => services.takeSlot('exec', 'sharer')!);
  const r = await forged(brokers, callerOf('sharer', ['exec']), { pipeline: 5, window: 2, line: slotLine('exec') }, 10_000, undefined, { spawning: slotsOf('sharer') });
  assert.equal(r.error, null, String(r.error));
  assert.deepEqual(r.answers, [{ ok: 2, [String(GUEST_ERR.QUOTA)]: 3 }]);
  assert.deepEqual(services.usage('sharer'), { execs: MAX_CONCURRENT_EXECS - 2, processes: 0 });
  for (const release of held) release();
  assert.deepEqual(services.usage('sharer'), { execs: 0, processes: 0 });
});

test('a release of a slot never held, or released twice, kills the child and leaves the counters alone', async () => {
  const other = services.takeSlot('exec', 'victim')!;
  const never = await forged(brokers, callerOf('victim', ['exec']), { lines: [JSON.stringify({ kind: 'release', id: 7 })], hang: true }, 10_000, undefined, { spawning: slotsOf('victim') });
  assert.ok(isCode('INTERNAL')(never.error), String(never.error));
  assert.match((never.error as Error).message, /a release of no slot held/);
  assert.deepEqual(services.usage('victim'), { execs: 1, processes: 0 });
  const twice = await forged(
    brokers,
    callerOf('victim', ['exec']),
    { lines: [JSON.stringify({ kind: 'slot', id: 1, slot: 'exec' })], later: [JSON.stringify({ kind: 'release', id: 1 }), JSON.stringify({ kind: 'release', id: 1 })], laterMs: 200, await: 99 },
    10_000,
    undefined,
    { spawning: slotsOf('victim') },
  );
  assert.ok(isCode('INTERNAL')(twice.error), String(twice.error));
  assert.deepEqual(services.usage('victim'), { execs: 1, processes: 0 });
  other();
  assert.deepEqual(services.usage('victim'), { execs: 0, processes: 0 });
});

test('a slot of a kind that does not exist is a malformed line: the child is killed', async () => {
  const r = await forged(brokers, callerOf('mallory', ['exec']), { lines: [JSON.stringify({ kind: 'slot', id: 1, slot: 'root' })], hang: true }, 10_000, undefined, { spawning: slotsOf('mallory') });
  assert.ok(isCode('INTERNAL')(r.error), String(r.error));
  assert.deepEqual(services.usage('mallory'), { execs: 0, processes: 0 });
});

test('an `admit` line is answered by the parent\'s cadence as the call: an ungranted cap DENIED and recorded there; a malformed one kills the child', async () => {
  records.length = 0;
  const caller = callerOf('mallory', ['commands']);
  const desk: SlotDesk = { slot: () => null, admit: (cap, op, bytes, max) => brokers.cadence.admit({ tenant: caller.tenant, instance: caller.instance, caps: caller.policy.caps, marks: { tier: 'os_process' } }, cap, op, { bytes, max }) };
  const line = (id: number, cap: string, op: string) => JSON.stringify({ kind: 'admit', id, cap, op, bytes: 0, max: 1 });
  const r = await forged(brokers, caller, { lines: [line(1, 'commands', 'run_command'), line(2, 'exec', 'exec'), line(3, 'parallel', 'run_command_many')], await: 3 }, 10_000, undefined, { spawning: desk });
  assert.equal(r.error, null, String(r.error));
  assert.deepEqual(r.answers!.map((a) => [a.id, a.ok, a.errno]).sort(), [[1, true, undefined], [2, false, GUEST_ERR.DENIED], [3, false, GUEST_ERR.DENIED]]);
  assert.deepEqual(records.filter((x) => x.kind === 'denied').map((x) => [x.tenant, x.detail['broker'], x.detail['code'], x.detail['tier']]), [
    ['mallory', 'exec', 'DENIED', 'os_process'],
    ['mallory', 'parallel', 'DENIED', 'os_process'],
  ]);
  for (const bad of [line(1, 'kv', 'kv_get'), JSON.stringify({ kind: 'admit', id: 1, cap: 'exec', op: 'exec', bytes: -1, max: 1 })]) {
    const killed = await forged(brokers, caller, { lines: [bad], hang: true }, 10_000, undefined, { spawning: desk });
    assert.ok(isCode('INTERNAL')(killed.error), String(killed.error));
  }
});
