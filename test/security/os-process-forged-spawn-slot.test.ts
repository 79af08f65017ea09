// Attack: on the os_process tier the tenant's exec and live-process slots are the parent engine's,
// and a child asks for them on its broker link (`slot` / `release` lines). A hijacked child
// (test/fixtures/os-process/forger.mjs) forges those lines: more slots than the tenant may hold,
// a release of a slot it never got (to push the tenant's counter below what its other calls
// hold), a release twice, a slot of a kind that does not exist. The parent counts as the call's
// tenant: past the cap the answer is QUOTA; a release of no slot held kills the child (INTERNAL)
// and touches no counter; every slot the call still holds comes back when the call ends.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { HostServices, MAX_CONCURRENT_EXECS, MAX_LIVE_PROCESSES, type HostServicesDeps } from '../../src/engine/bridge/host-services.ts';
import { callerOf, forged, testBrokers, type Record_ } from '../helpers/forged-child.ts';

const records: Record_[] = [];
const brokers = testBrokers(records);
// The parent's per-tenant counters (HostServices.takeSlot is all the proxy uses of them).
const services = new HostServices({} as HostServicesDeps);
const slotsOf = (tenant: string) => (kind: 'exec' | 'process') => services.takeSlot(kind, tenant);
/** A slot request line for the forger's pipeline (it numbers "ID"). */
const slotLine = (kind: string): string => JSON.stringify({ kind: 'slot', id: 'ID', slot: kind });
const isCode = (code: string) => (e: unknown) => e instanceof SandboxError && e.code === code;

test(`a child asking for ${MAX_LIVE_PROCESSES + 8} live processes gets ${MAX_LIVE_PROCESSES}, then QUOTA; all come back when its call ends`, async () => {
  const r = await forged(brokers, callerOf('hoarder', ['exec']), { pipeline: MAX_LIVE_PROCESSES + 8, window: 4, line: slotLine('process') }, 10_000, undefined, slotsOf('hoarder'));
  assert.equal(r.error, null, String(r.error));
  assert.deepEqual(r.answers, [{ ok: MAX_LIVE_PROCESSES, [String(GUEST_ERR.QUOTA)]: 8 }]);
  assert.deepEqual(services.usage('hoarder'), { execs: 0, processes: 0 });
});

test('the slots are the tenant\'s: what another call of the tenant holds counts against the child', async () => {
  const held = Array.from({ length: MAX_CONCURRENT_EXECS - 2 }, () => services.takeSlot('exec', 'sharer')!);
  const r = await forged(brokers, callerOf('sharer', ['exec']), { pipeline: 5, window: 2, line: slotLine('exec') }, 10_000, undefined, slotsOf('sharer'));
  assert.equal(r.error, null, String(r.error));
  assert.deepEqual(r.answers, [{ ok: 2, [String(GUEST_ERR.QUOTA)]: 3 }]);
  assert.deepEqual(services.usage('sharer'), { execs: MAX_CONCURRENT_EXECS - 2, processes: 0 });
  for (const release of held) release();
  assert.deepEqual(services.usage('sharer'), { execs: 0, processes: 0 });
});

test('a release of a slot never held, or released twice, kills the child and leaves the counters alone', async () => {
  const other = services.takeSlot('exec', 'victim')!;
  const never = await forged(brokers, callerOf('victim', ['exec']), { lines: [JSON.stringify({ kind: 'release', id: 7 })], hang: true }, 10_000, undefined, slotsOf('victim'));
  assert.ok(isCode('INTERNAL')(never.error), String(never.error));
  assert.match((never.error as Error).message, /a release of no slot held/);
  assert.deepEqual(services.usage('victim'), { execs: 1, processes: 0 });
  const twice = await forged(
    brokers,
    callerOf('victim', ['exec']),
    { lines: [JSON.stringify({ kind: 'slot', id: 1, slot: 'exec' })], later: [JSON.stringify({ kind: 'release', id: 1 }), JSON.stringify({ kind: 'release', id: 1 })], laterMs: 200, await: 99 },
    10_000,
    undefined,
    slotsOf('victim'),
  );
  assert.ok(isCode('INTERNAL')(twice.error), String(twice.error));
  assert.deepEqual(services.usage('victim'), { execs: 1, processes: 0 });
  other();
  assert.deepEqual(services.usage('victim'), { execs: 0, processes: 0 });
});

test('a slot of a kind that does not exist is a malformed line: the child is killed', async () => {
  const r = await forged(brokers, callerOf('mallory', ['exec']), { lines: [JSON.stringify({ kind: 'slot', id: 1, slot: 'root' })], hang: true }, 10_000, undefined, slotsOf('mallory'));
  assert.ok(isCode('INTERNAL')(r.error), String(r.error));
  assert.deepEqual(services.usage('mallory'), { execs: 0, processes: 0 });
});
