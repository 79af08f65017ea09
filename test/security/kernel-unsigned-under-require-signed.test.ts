// Attack: run an unsigned module past `requireSigned` by opening it as a kernel (in a worker or
// in process) instead of running it. The kernel lane must refuse it like `engine.run` does —
// NOT_CAPABLE, audited, nothing instantiated — and open the same module with its signed manifest.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { KeyPair, didKey, SIGNING_KEY_ENV } from '../../src/provenance/index.ts';
import { signArtifact } from '../../src/provenance/artifact.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { testEngine } from '../helpers/engine.ts';
import { wat } from '../helpers/wat.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-kernel-signed-');
delete process.env[SIGNING_KEY_ENV];
const alice = (() => {
  const keys = new KeyPair(Buffer.alloc(32, 6));
  return { keys, did: didKey(keys.publicKey), source: 'test' };
})();

test('requireSigned on kernels: unsigned → NOT_CAPABLE in both placements, audited; signed → opens and runs', async () => {
  const engine = testEngine({ requireSigned: [alice.did] });
  try {
    const bytes = await wat('kernel');
    await assert.rejects(engine.kernel(bytes, { id: 'k-worker', tenant: 'acme' }), { code: 'NOT_CAPABLE' });
    await assert.rejects(engine.kernel(bytes, { id: 'k-inproc', tenant: 'acme', inProcess: true }), { code: 'NOT_CAPABLE' });
    const dir = tempDir('membrane-kernel-art-');
    writeFileSync(join(dir, 'kernel.wasm'), bytes);
    const { signed } = signArtifact(join(dir, 'kernel.wasm'), alice);
    const k = await engine.kernel(bytes, { inProcess: true, artifact: signed, tenant: 'acme' });
    const out = await k.call(new TextEncoder().encode('abc'));
    assert.ok(out instanceof Uint8Array);
    const log = AuditLog.open();
    try {
      assert.deepEqual(log.tail({ kind: 'artifact.refused', limit: 10 }).map((r) => r.instance).sort(), ['k-inproc', 'k-worker']);
    } finally {
      log.close();
    }
  } finally {
    await engine.close();
  }
});
