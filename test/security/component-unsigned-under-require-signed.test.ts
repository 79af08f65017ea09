// Attack: slip an unsigned program past `requireSigned` by wrapping it as a component. An engine
// told to run only modules signed by a listed DID must refuse an unsigned component exactly as
// it refuses an unsigned core module — NOT_CAPABLE, audited, before anything is transpiled or runs —
// and run the same component when it comes with a valid signed manifest.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { KeyPair, didKey, SIGNING_KEY_ENV } from '../../src/provenance/index.ts';
import { signArtifact } from '../../src/provenance/artifact.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { testEngine } from '../helpers/engine.ts';

process.env['MEMBRANE_HOME'] = mkdtempSync(join(tmpdir(), 'membrane-component-signed-'));
delete process.env[SIGNING_KEY_ENV];
const hello = new Uint8Array(readFileSync(new URL('../fixtures/components/hello.component.wasm', import.meta.url)));
const alice = (() => {
  const keys = new KeyPair(Buffer.alloc(32, 3));
  return { keys, did: didKey(keys.publicKey), source: 'test' };
})();

test('requireSigned: an unsigned component is NOT_CAPABLE and audited; the signed one runs', async () => {
  const engine = testEngine({ requireSigned: [alice.did] });
  try {
    const unsigned = await engine.run(hello, { tenant: 'acme', id: 'unsigned-component' });
    assert.equal(unsigned.ok, false);
    assert.equal(unsigned.error?.code, 'NOT_CAPABLE', JSON.stringify(unsigned.error));
    assert.equal(unsigned.stdout, '');
    assert.equal(unsigned.fuelUsed, 0);

    const dir = mkdtempSync(join(tmpdir(), 'membrane-component-art-'));
    writeFileSync(join(dir, 'hello.wasm'), hello);
    const { signed } = signArtifact(join(dir, 'hello.wasm'), alice);
    const ok = await engine.run(hello, { tenant: 'acme', artifact: signed });
    assert.equal(ok.ok, true, JSON.stringify(ok.error));
    assert.match(ok.stdout, /hello/i);

    const log = AuditLog.open();
    try {
      const refused = log.tail({ kind: 'artifact.refused', limit: 10 });
      assert.equal(refused.length, 1);
      assert.equal(refused[0]!.instance, 'unsigned-component');
    } finally {
      log.close();
    }
  } finally {
    await engine.close();
  }
});

test("a signed component's manifest declares the caps its imports need (kv for membrane:engine/kv)", () => {
  const dir = mkdtempSync(join(tmpdir(), 'membrane-component-caps-'));
  writeFileSync(join(dir, 'kv.wasm'), readFileSync(new URL('../fixtures/components/kv.component.wasm', import.meta.url)));
  assert.deepEqual(signArtifact(join(dir, 'kv.wasm'), alice).signed.manifest.caps, ['kv']);
});
