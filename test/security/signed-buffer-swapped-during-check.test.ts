// Attack: get unsigned code past `requireSigned` by changing the module buffer after the call is
// made, while the signature is being checked (an in-process caller, or a view of memory something
// else writes). The gate verifies a private copy taken before its first await and that copy is
// what is prepared (src/engine/signed.ts), so the signed bytes run — never the changed ones — on
// `engine.run`, `engine.start` and `engine.kernel`.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { KeyPair, didKey, SIGNING_KEY_ENV } from '../../src/provenance/index.ts';
import { signArtifact } from '../../src/provenance/artifact.ts';
import { testEngine } from '../helpers/engine.ts';
import { watText } from '../helpers/wat.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-signed-swap-');
delete process.env[SIGNING_KEY_ENV];
const alice = (() => {
  const keys = new KeyPair(Buffer.alloc(32, 9));
  return { keys, did: didKey(keys.publicKey), source: 'test' };
})();

// `_start` prints "hi!"; `get` answers 41; the kernel's `process` returns 41 bytes of output.
const MODULE = `(module
  (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 64) "hi!\\n")
  (func (export "_start") (i32.store (i32.const 0) (i32.const 64)) (i32.store (i32.const 4) (i32.const 4))
    (drop (call $w (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 16))))
  (func (export "get") (result i32) (i32.const 41)))`;
const KERNEL = `(module (memory (export "memory") 1) (data (i32.const 64) "hi!\\n")
  (func (export "process") (param i32) (result i32) (i32.const 41)))`;

function signed(bytes: Uint8Array): unknown {
  const dir = tempDir('membrane-signed-swap-art-');
  writeFileSync(join(dir, 'm.wasm'), bytes);
  return signArtifact(join(dir, 'm.wasm'), alice).signed;
}

/** Change the buffer at the next microtask and again a little later: both while the call is checked and prepared. */
function tamper(bytes: Uint8Array): void {
  const text = Buffer.from(bytes).indexOf('hi!');
  const constant = Buffer.from(bytes).indexOf(Buffer.from([0x41, 0x29])); // i32.const 41
  assert.ok(text > 0 && constant > 0);
  const edit = (): void => {
    bytes[text + 1] = 0x6f; // "ho!"
    bytes[constant + 1] = 0x2a; // i32.const 42
  };
  queueMicrotask(edit);
  setImmediate(edit);
}

test('a module buffer changed after engine.run/start/kernel was called runs as signed, never as changed', async () => {
  const engine = testEngine({ poolSize: 1, requireSigned: [alice.did] });
  try {
    for (let round = 0; round < 3; round++) {
      const bytes = await watText(MODULE);
      const artifact = signed(bytes);
      const p = engine.run(bytes, { artifact });
      tamper(bytes);
      const r = await p;
      assert.equal(r.ok, true, JSON.stringify(r.error));
      assert.equal(r.stdout, 'hi!\n');
      // The changed buffer itself is refused: its hash is not the manifest's.
      assert.equal((await engine.run(bytes, { artifact })).error?.code, 'NOT_CAPABLE');
    }

    const forStart = await watText(MODULE);
    const started = engine.start('swap-start', forStart, { artifact: signed(forStart) });
    tamper(forStart);
    const inst = await started;
    try {
      const r = await inst.call('get');
      assert.equal(r.ok, true, JSON.stringify(r.error));
      assert.equal(r.result, 41);
    } finally {
      await inst.stop();
    }

    for (const inProcess of [false, true]) {
      const forKernel = await watText(KERNEL);
      const opening = engine.kernel(forKernel, { artifact: signed(forKernel), inProcess });
      tamper(forKernel);
      const k = await opening;
      try {
        assert.equal((await k.call(new Uint8Array(8))).length, 41, `inProcess ${inProcess}`);
      } finally {
        await k.close();
      }
    }
  } finally {
    await engine.close();
  }
});
