// Attack: run an unsigned module past `requireSigned` by sending it to the remote tier. A
// `membrane worker` has no trusted DIDs of its own, so the submitting engine must check the
// signature before anything is queued: NOT_CAPABLE, audited — here with a Redis URL nobody listens
// on, so the refusal cannot depend on a queue. (The end-to-end remote suite is test-remote/.)
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KeyPair, didKey, SIGNING_KEY_ENV } from '../../src/provenance/index.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { testEngine } from '../helpers/engine.ts';
import { watText } from '../helpers/wat.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-remote-signed-');
delete process.env[SIGNING_KEY_ENV];
const alice = didKey(new KeyPair(Buffer.alloc(32, 5)).publicKey);

test('requireSigned on the remote tier: an unsigned module is NOT_CAPABLE and audited before anything is queued', { timeout: 60_000 }, async () => {
  const engine = testEngine({ requireSigned: [alice], remote: { redis: 'redis://127.0.0.1:1' } });
  try {
    const bytes = await watText('(module (func (export "_start")))');
    const t0 = performance.now();
    const r = await engine.run(bytes, { tier: 'remote', tenant: 'acme', id: 'remote-unsigned' });
    assert.equal(r.error?.code, 'NOT_CAPABLE', JSON.stringify(r.error));
    assert.ok(performance.now() - t0 < 10_000, 'refused without waiting on a queue');
    const log = AuditLog.open();
    try {
      const refused = log.tail({ kind: 'artifact.refused', limit: 10 });
      assert.equal(refused.length, 1);
      assert.equal(refused[0]!.instance, 'remote-unsigned');
      assert.equal(refused[0]!.detail['tier'], 'remote');
    } finally {
      log.close();
    }
  } finally {
    await engine.close();
  }
});
