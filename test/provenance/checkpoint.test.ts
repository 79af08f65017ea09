// Audit checkpoints signed with the engine's Ed25519 key: checked offline by anyone, and against
// the log with the audit key; an edited field or another signer is refused.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { AuditLog, AUDIT_KEY_ENV } from '../../src/storage/audit.ts';
import { KeyPair, didKey, engineIdentity, ENGINE_KEY_ENV, signCheckpointEd25519, checkSignedCheckpoint } from '../../src/provenance/index.ts';
import { runCli } from '../helpers/cli.ts';
import { tempDir } from '../helpers/tmp.ts';

const HOME = tempDir('membrane-checkpoint-');
process.env['MEMBRANE_HOME'] = HOME;
delete process.env[AUDIT_KEY_ENV];
delete process.env[ENGINE_KEY_ENV];
const env = { MEMBRANE_HOME: HOME, [AUDIT_KEY_ENV]: '', [ENGINE_KEY_ENV]: '' };

test('an Ed25519-signed checkpoint verifies offline and against the log; edits and other keys are refused', () => {
  const log = AuditLog.open();
  log.append({ tenant: 'acme', kind: 'engine.start', detail: {} });
  const cp = log.checkpoint();
  const engine = engineIdentity();
  const signed = signCheckpointEd25519(cp, engine);
  assert.equal(signed.signer, engine.did);
  const ok = checkSignedCheckpoint(JSON.parse(JSON.stringify(signed)));
  assert.ok(typeof ok !== 'string');
  assert.deepEqual(ok.checkpoint, cp);
  assert.deepEqual(log.verifyCheckpoint(ok.checkpoint), { ok: true, records: 2 });
  for (const field of ['seq', 'mac', 'time', 'keyId', 'sig'] as const) {
    const edited = JSON.parse(JSON.stringify(signed)) as { checkpoint: Record<string, unknown> };
    const old = edited.checkpoint[field];
    edited.checkpoint[field] = typeof old === 'number' ? old + 1 : `${String(old).slice(0, -1)}${String(old).endsWith('0') ? '1' : '0'}`;
    assert.match(String(checkSignedCheckpoint(edited)), /Ed25519 signature does not verify/, field);
  }
  const mallory = new KeyPair(Buffer.alloc(32, 7));
  assert.match(String(checkSignedCheckpoint({ ...signed, signer: didKey(mallory.publicKey) })), /does not verify/);
  assert.match(String(checkSignedCheckpoint(signed, [didKey(mallory.publicKey)])), /not one of the trusted DIDs/);
  assert.match(String(checkSignedCheckpoint({ ...signed, extra: 1 })), /exactly the fields/);
  log.close();
});

test('membrane audit checkpoint --signed, verify --checkpoint (with the log) and --offline', async () => {
  const cp = await runCli(['audit', 'checkpoint', '--signed'], env);
  assert.equal(cp.code, 0, cp.stderr);
  const file = join(HOME, 'signed-checkpoint.json');
  writeFileSync(file, cp.stdout);
  const signed = JSON.parse(cp.stdout) as { signer: string; checkpoint: { seq: number } };
  assert.equal(signed.signer, engineIdentity().did);
  const withLog = await runCli(['audit', 'verify', '--checkpoint', file], env);
  assert.equal(withLog.code, 0, withLog.stdout + withLog.stderr);
  assert.match(withLog.stdout, /^ok: \d+ records/);
  // Offline: no audit key needed (a wrong one set), no log read.
  const offline = await runCli(['audit', 'verify', '--checkpoint', file, '--offline'], { ...env, [AUDIT_KEY_ENV]: '00'.repeat(32), MEMBRANE_HOME: tempDir('membrane-elsewhere-') });
  assert.equal(offline.code, 0, offline.stdout + offline.stderr);
  assert.match(offline.stdout, new RegExp(`^ok: checkpoint of seq ${signed.checkpoint.seq} signed by did:key:z6Mk`));
  const edited = readFileSync(file, 'utf8').replace(`"seq":${signed.checkpoint.seq}`, `"seq":${signed.checkpoint.seq + 1}`);
  writeFileSync(file, edited);
  const refused = await runCli(['audit', 'verify', '--checkpoint', file, '--offline'], env);
  assert.equal(refused.code, 1);
  assert.match(refused.stdout, /checkpoint rejected: the checkpoint's Ed25519 signature does not verify/);
});
