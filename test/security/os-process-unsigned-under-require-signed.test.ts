// Attack: run an unsigned module past `requireSigned` by asking for the os_process tier. The
// child process runs its own engine, which has no trusted DIDs of its own: the parent must check
// the signature on the bytes it hands over — NOT_CAPABLE, audited, and no child is spawned —
// and still run the signed module there.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { KeyPair, didKey, SIGNING_KEY_ENV } from '../../src/provenance/index.ts';
import { signArtifact } from '../../src/provenance/artifact.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { testEngine } from '../helpers/engine.ts';
import { watText } from '../helpers/wat.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-os-signed-');
delete process.env[SIGNING_KEY_ENV];
const alice = (() => {
  const keys = new KeyPair(Buffer.alloc(32, 4));
  return { keys, did: didKey(keys.publicKey), source: 'test' };
})();

test('requireSigned on the os_process tier: unsigned → NOT_CAPABLE before any child; signed → runs in the child', { timeout: 120_000 }, async () => {
  const engine = testEngine({ requireSigned: [alice.did] });
  try {
    const bytes = await watText('(module (func (export "f") (result i32) (i32.const 41)))');
    let spawned = 0;
    const unsigned = await engine.run(bytes, { invoke: 'f', tier: 'os_process', tenant: 'acme', id: 'os-unsigned', onChildSpawn: () => void spawned++ } as Parameters<typeof engine.run>[1]);
    assert.equal(unsigned.error?.code, 'NOT_CAPABLE', JSON.stringify(unsigned.error));
    assert.equal(spawned, 0, 'no child process was started for the unsigned module');

    const dir = tempDir('membrane-os-art-');
    writeFileSync(join(dir, 'f.wasm'), bytes);
    const { signed } = signArtifact(join(dir, 'f.wasm'), alice);
    const ok = await engine.run(bytes, { invoke: 'f', tier: 'os_process', tenant: 'acme', artifact: signed } as Parameters<typeof engine.run>[1]);
    assert.equal(ok.ok, true, JSON.stringify(ok.error));
    assert.equal(ok.result, 41);

    const log = AuditLog.open();
    try {
      const refused = log.tail({ kind: 'artifact.refused', limit: 10 });
      assert.equal(refused.length, 1);
      assert.equal(refused[0]!.instance, 'os-unsigned');
      assert.equal(refused[0]!.detail['tier'], 'os_process');
    } finally {
      log.close();
    }
  } finally {
    await engine.close();
  }
});
