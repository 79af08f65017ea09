// Attack: a forged or garbled held-run frame on the channel makes a listening pool worker run
// another module (or anything at all). After a fresh run a pool worker listens on the channel
// for its next held run (bridge/frames.ts); main claims it and writes the run there instead
// of posting a message. A frame that is not a well-formed held run — wrong kind byte, lengths
// past the frame, bad JSON, a spec whose walls JSON lost, an id the worker was never given —
// must be INTERNAL and run nothing; a well-formed one runs exactly the module it names. The spec's
// fixed part travels once and is named by a spec id after (bridge/held-specs.ts): a spec id the
// worker was never given, or a fixed part that lost a wall, is INTERNAL too.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { watText } from '../helpers/wat.ts';
import { moduleId, type HeldRunMessage } from '../../src/engine/bridge/held-modules.ts';
import { writeHeld } from '../../src/engine/bridge/held-frame.ts';
import { fixedOf, ownText } from '../../src/engine/bridge/held-specs.ts';
import { State } from '../../src/engine/bridge/channel.ts';
import { WorkerHandle, type HostHandler } from '../../src/engine/bridge/worker-handle.ts';
import { locateWorker } from '../../src/engine/worker-file.ts';
import { PROTOCOL_VERSION } from '../../src/engine/bridge/protocol.ts';
import { answer, forgedSpec } from '../helpers/forged-run.ts';

const spec = forgedSpec();
const entry = { kind: 'invoke' as const, export: 'run', args: [] };
const budget = { ms: 5000, fuel: 1e9 };
const noHost: HostHandler = () => ({ v: PROTOCOL_VERSION, kind: 'host-reply', ok: false, errno: -1 });

/** Claim the listening worker (waiting for it to listen) and post whatever `write` puts in the data region. */
async function sendRaw(h: WorkerHandle, write: () => void): Promise<void> {
  const until = performance.now() + 5000;
  while (!h.channel.claimListener()) {
    assert.ok(performance.now() < until, 'the worker never listened after its run');
    await new Promise((r) => setTimeout(r, 1));
  }
  h.channel.clearInterrupt();
  write();
  h.channel.set(State.JOB);
}

test('garbled held-run frames on the channel are INTERNAL and run nothing; a good one runs its own module', async () => {
  const h = await WorkerHandle.spawn(await locateWorker(), { heapMb: 64, stackMb: 4, spinMs: 0.1, idleWaitMs: 5000 });
  try {
    const a = new WebAssembly.Module((await watText(answer(41))) as Uint8Array<ArrayBuffer>);
    const b = new WebAssembly.Module((await watText(answer(42))) as Uint8Array<ArrayBuffer>);
    for (const [job, mod] of [[1, a], [2, b]] as const) {
      h.postRun(mod, { job, spec, entry, budget });
      const r = await h.awaitDone(performance.now() + 5000, noHost);
      assert.equal(r.kind === 'done' && r.frame.outcome.ok, true);
    }
    const fixed = JSON.stringify(fixedOf(spec));
    const own = ownText(spec)!;
    const good: HeldRunMessage = { v: PROTOCOL_VERSION, kind: 'run-held', moduleId: moduleId(a), job: 3, specId: 1e9, fixed, forgetSpec: null, own, stdin: null, entry, budget, stream: false };
    const ch = h.channel;
    const HEAD = 50; // the held frame's fixed-size head: kind, flags, six f64 (held-frame.ts)
    const garbles: Array<[string, () => void]> = [
      ['wrong kind byte', () => (writeHeld(ch, good), (ch.data[0] = 2))],
      ['spec length past the frame', () => (writeHeld(ch, good), ch.view.setUint32(HEAD, 1 << 20, true))],
      ['frame length cut short', () => (writeHeld(ch, good), ch.setFrameLength(20))],
      ['spec not JSON', () => writeHeld(ch, { ...good, fixed: '{"profile":' })],
      ['own part not JSON', () => writeHeld(ch, { ...good, own: '["forged",' })],
      ['own part of the wrong shape', () => writeHeld(ch, { ...good, own: JSON.stringify(['forged', 'mallory', 'argv', [], 0]) })],
      ['entry not JSON', () => (writeHeld(ch, good), ch.data.fill(0x7b, HEAD + 12 + fixed.length + own.length, HEAD + 16 + fixed.length + own.length))],
      ['a wall JSON lost', () => writeHeld(ch, { ...good, specId: 1e9 + 1, fixed: JSON.stringify({ ...fixedOf(spec), maxMemoryPages: null }) })],
      ['an output cap JSON lost', () => writeHeld(ch, { ...good, specId: 1e9 + 2, fixed: JSON.stringify({ ...fixedOf(spec), output: { limitBytes: null, failOnLimit: false } }) })],
      ['a spec id never given', () => writeHeld(ch, { ...good, specId: 1e9 + 3, fixed: null })],
      ['a spec id whose part was refused', () => writeHeld(ch, { ...good, specId: 1e9 + 1, fixed: null })],
      ['an id never given', () => writeHeld(ch, { ...good, moduleId: moduleId(b) + 1000 })],
      ['random bytes', () => (ch.data.set(Uint8Array.from({ length: 200 }, (_, i) => (i * 97 + 13) & 255)), ch.setFrameLength(200))],
    ];
    let job = 10;
    for (const [what, write] of garbles) {
      await sendRaw(h, write);
      const r = await h.awaitDone(performance.now() + 5000, noHost);
      assert.equal(r.kind, 'done', what);
      assert.equal(r.kind === 'done' && !r.frame.outcome.ok && r.frame.outcome.error.code, 'INTERNAL', `${what}: ${JSON.stringify(r.kind === 'done' && r.frame.outcome)}`);
      // The worker stays sound: the next well-formed run on the channel runs the module it names.
      const mod = job % 2 === 0 ? a : b;
      // Every other one names its spec part by id only, as main does once the worker holds it.
      await sendRaw(h, () => writeHeld(ch, { ...good, job: ++job, moduleId: moduleId(mod), fixed: job % 2 === 0 ? null : fixed }));
      const ok = await h.awaitDone(performance.now() + 5000, noHost);
      assert.equal(ok.kind === 'done' && ok.frame.outcome.ok && ok.frame.outcome.values[0]?.v, mod === a ? 41 : 42, `after ${what}`);
    }
  } finally {
    await h.terminate();
  }
});
