// The kernel lane's arena (src/abi/kernel-arena.ts): a hostile kernel names output lengths and
// offsets; the host reads only inside the guest memory's current length — an out length that is
// huge, negative or one byte past the end is the call's GUEST_TRAP, never a host read out of
// range — and a caller's input larger than the arena never reaches the guest.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { wat } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';

const engine = testEngine();
const isCode = (code: string) => (e: unknown) => e instanceof SandboxError && e.code === code;

for (const inProcess of [false, true]) {
  const where = inProcess ? 'in process' : 'in a worker';

  for (const entry of ['huge', 'negative', 'past_end']) {
    test(`a kernel ${where} returning an out length "${entry}" of memory is GUEST_TRAP, and it keeps serving`, async () => {
      // past_end: 32768 + 32769 bytes is one byte past the single 64 KiB page.
      const k = await engine.kernel(await wat('kernel'), { inProcess, entry });
      await assert.rejects(k.call(new Uint8Array(8)), isCode('GUEST_TRAP'));
      await assert.rejects(k.call(new Uint8Array(8)), isCode('GUEST_TRAP'));
      await k.close();
    });
  }

  test(`a kernel ${where} whose arena lies past its memory is GUEST_TRAP, not a host write out of range`, async () => {
    const k = await engine.kernel(await wat('kernel'), { inProcess, inOff: 65_530, outOff: 0, inCap: 1024 });
    await assert.rejects(k.call(new Uint8Array(100)), isCode('GUEST_TRAP'));
    const far = await engine.kernel(await wat('kernel'), { inProcess, inOff: 0xffff_fff0, outOff: 0, inCap: 64 });
    await assert.rejects(far.call(new Uint8Array(32)), isCode('GUEST_TRAP'));
    await k.close();
    await far.close();
  });

  test(`a kernel ${where}: an output cap below the memory is OUTPUT_LIMIT`, async () => {
    const k = await engine.kernel(await wat('kernel'), { inProcess, maxOutputBytes: 16 });
    await assert.rejects(k.call(new Uint8Array(17)), isCode('OUTPUT_LIMIT'));
    assert.equal((await k.call(new Uint8Array(16))).length, 16);
    await k.close();
  });
}

test('negative, fractional or huge arena offsets are refused when the kernel is opened', async () => {
  for (const bad of [{ inOff: -1 }, { outOff: 1.5 }, { inOff: 2 ** 40 }, { inCap: Number.NaN }]) {
    await assert.rejects(engine.kernel(await wat('kernel'), bad), isCode('POLICY_INVALID'), JSON.stringify(bad));
  }
});

test('kernel handles are bounded: concurrent opens past maxInstances are refused', async () => {
  const small = (await import('../helpers/engine.ts')).testEngine({ poolSize: 0, maxInstances: 2 });
  const bytes = await wat('kernel');
  const opened = await Promise.allSettled([0, 1, 2, 3].map(() => small.kernel(bytes, { inProcess: true })));
  assert.equal(opened.filter((r) => r.status === 'fulfilled').length, 2);
  assert.ok(opened.filter((r) => r.status === 'rejected').every((r) => isCode('MEMORY_LIMIT')((r as PromiseRejectedResult).reason)));
});
