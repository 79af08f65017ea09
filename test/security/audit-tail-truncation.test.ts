// Attack: cut the newest audit records (what the intruder did) and put back a genuine older head
// row saved earlier, so the chain verifies on its own — or restore an older copy of the whole
// database, or drop the log and let Membrane start a new one. A signed checkpoint kept elsewhere
// (`membrane audit checkpoint`) catches each: `membrane audit verify --checkpoint FILE` fails
// because the log no longer reaches the checkpointed record. A forged or edited checkpoint is
// refused too.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { AuditLog, AUDIT_KEY_ENV, type AuditCheckpoint, type AuditVerification } from '../../src/storage/audit.ts';
import { openDatabase } from '../../src/storage/sqlite.ts';
import { runCli, type Ran } from '../helpers/cli.ts';
import { tempDir } from '../helpers/tmp.ts';

const KEY_HEX = '3c'.repeat(32);
const KEY = Buffer.from(KEY_HEX, 'hex');

function cli(home: string, args: string[]): Promise<Ran> {
  return runCli(args, { MEMBRANE_HOME: home, [AUDIT_KEY_ENV]: KEY_HEX });
}

function fresh(): { home: string; file: string; log: AuditLog } {
  const home = tempDir('membrane-audit-trunc-');
  const file = join(home, 'engine.sqlite');
  return { home, file, log: AuditLog.open(file, { key: KEY }) };
}

const append = (log: AuditLog, n: number): void => {
  for (let i = 0; i < n; i++) log.append({ tenant: 'acme', kind: 'denied', detail: { i } });
};

function expectFail(r: AuditVerification, seq: number, problem: string): void {
  assert.equal(r.ok, false, 'the truncation went unnoticed');
  if (r.ok) return;
  assert.deepEqual([r.seq, r.problem], [seq, problem], r.reason);
}

test('tail cut below a checkpoint with an older genuine head put back: verify alone passes (the known limit), --checkpoint fails', async () => {
  const { home, file, log } = fresh();
  append(log, 2); // seq 3
  const db = openDatabase(file);
  const oldHead = db.prepare('SELECT seq, mac, head_mac FROM audit_head').raw().get() as unknown[];
  append(log, 3); // seq 6
  const cp = await cli(home, ['audit', 'checkpoint']);
  assert.equal(cp.code, 0, cp.stderr);
  const checkpoint = JSON.parse(cp.stdout) as AuditCheckpoint;
  assert.deepEqual([checkpoint.v, checkpoint.alg, checkpoint.seq, checkpoint.keyId], [1, 'hmac-sha256', 6, log.keyId()]);
  const cpFile = join(home, 'checkpoint.json');
  writeFileSync(cpFile, cp.stdout);
  append(log, 3); // seq 9: the log moves on past the checkpoint
  assert.equal((await cli(home, ['audit', 'verify', '--checkpoint', cpFile])).code, 0, 'a log that grew past the checkpoint still reaches it');
  assert.deepEqual(log.verifyCheckpoint(checkpoint), { ok: true, records: 9 });

  db.prepare('DELETE FROM audit WHERE seq > 3').run();
  db.prepare('UPDATE audit_head SET seq = ?, mac = ?, head_mac = ?').run(...oldHead);
  db.close();
  assert.deepEqual(log.verify(), { ok: true, records: 3 }, 'the chain alone cannot see a cut tail with a genuine older head');
  expectFail(log.verifyCheckpoint(checkpoint), 6, 'truncated');
  const r = await cli(home, ['audit', 'verify', '--checkpoint', cpFile]);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stdout, /^tampered at seq 6: truncated: the log ends at seq 3, before the checkpoint's seq 6/);
  log.close();
});

test('restoring an older copy of the whole database is caught by a later checkpoint', () => {
  const { home, file, log } = fresh();
  append(log, 3);
  log.close();
  const backup = join(home, 'backup.sqlite');
  copyFileSync(file, backup);
  const again = AuditLog.open(file, { key: KEY });
  append(again, 2);
  const checkpoint = again.checkpoint();
  again.close();
  copyFileSync(backup, file);
  const restored = AuditLog.open(file, { key: KEY });
  assert.deepEqual(restored.verify(), { ok: true, records: 4 });
  expectFail(restored.verifyCheckpoint(checkpoint), 6, 'truncated');
  // Same length again, but not the same records: the MAC at the checkpoint's seq differs.
  append(restored, 2);
  expectFail(restored.verifyCheckpoint(checkpoint), 6, 'checkpoint');
  restored.close();
});

test('a log dropped and restarted by Membrane does not reach a checkpoint of the old one', () => {
  const { file, log } = fresh();
  const atGenesis = log.checkpoint();
  append(log, 2);
  const later = log.checkpoint();
  log.close();
  const db = openDatabase(file);
  db.exec('DROP TABLE audit; DROP TABLE audit_head; DROP TABLE audit_format');
  db.close();
  const restarted = AuditLog.open(file, { key: KEY });
  assert.deepEqual(restarted.verify(), { ok: true, records: 1 });
  expectFail(restarted.verifyCheckpoint(later), 3, 'truncated');
  append(restarted, 3);
  expectFail(restarted.verifyCheckpoint(atGenesis), 1, 'checkpoint');
  restarted.close();
});

test('an edited, forged or foreign checkpoint is refused; a tampered log gets no checkpoint', async () => {
  const { home, log } = fresh();
  append(log, 4);
  const good = log.checkpoint();
  assert.deepEqual(log.verifyCheckpoint(good), { ok: true, records: 5 });
  const bad: Array<[unknown, RegExp]> = [
    [{ ...good, seq: 2 }, /signature does not verify/],
    [{ ...good, mac: '0'.repeat(64) }, /signature does not verify/],
    [{ ...good, time: '2000-01-01T00:00:00.000Z' }, /signature does not verify/],
    [{ ...good, sig: 'f'.repeat(64) }, /signature does not verify/],
    [{ ...good, alg: 'none' }, /unsupported checkpoint signature algorithm/],
    [{ ...good, v: 2 }, /unsupported checkpoint version/],
    [{ ...good, extra: 1 }, /exactly the fields/],
    [{ ...good, keyId: 'ffffffffffffffff' }, /another audit key/],
    [{ ...good, seq: '5' }, /seq is not a positive integer/],
    [[good], /not a JSON object/],
    [null, /not a JSON object/],
  ];
  for (const [cp, reason] of bad) {
    const r = log.verifyCheckpoint(cp);
    assert.equal(r.ok, false, JSON.stringify(cp));
    if (!r.ok) {
      assert.equal(r.problem, 'checkpoint');
      assert.match(r.reason, reason);
    }
  }
  const other = new AuditLog(openDatabase(':memory:'), { key: Buffer.alloc(32, 1) }, true);
  append(other, 4);
  assert.match(String((log.verifyCheckpoint(other.checkpoint()) as { reason: string }).reason), /another audit key/);
  other.close();

  const edited = join(home, 'edited.json');
  writeFileSync(edited, JSON.stringify({ ...good, seq: 1 }));
  const r = await cli(home, ['audit', 'verify', '--checkpoint', edited]);
  assert.equal(r.code, 1);
  assert.match(r.stdout, /^checkpoint rejected: .*signature does not verify/);
  const notJson = join(home, 'not.json');
  writeFileSync(notJson, 'seq=5');
  assert.equal((await cli(home, ['audit', 'verify', '--checkpoint', notJson])).code, 64, 'a file that is not a checkpoint is POLICY_INVALID');
  writeFileSync(notJson, ' '.repeat(10_000));
  assert.equal((await cli(home, ['audit', 'verify', '--checkpoint', notJson])).code, 64, 'an oversized file is not read as a checkpoint');

  const db = openDatabase(join(home, 'engine.sqlite'));
  db.prepare("UPDATE audit SET detail = '{\"i\":9}' WHERE seq = 3").run();
  db.close();
  assert.throws(() => log.checkpoint(), (e: unknown) => e instanceof SandboxError && /does not verify/.test(e.message));
  const refused = await cli(home, ['audit', 'checkpoint']);
  assert.equal(refused.code, 1);
  assert.match(refused.stdout, /tampered at seq 3: edited/);
  log.close();
});

test('a checkpoint path that is a FIFO or a device is refused at once, never waited on', async () => {
  const { home, log } = fresh();
  append(log, 2);
  log.close();
  const fifo = join(home, 'checkpoint.fifo');
  execFileSync('mkfifo', [fifo]);
  for (const path of [fifo, '/dev/zero']) {
    const r = await runCli(['audit', 'verify', '--checkpoint', path], { MEMBRANE_HOME: home, [AUDIT_KEY_ENV]: KEY_HEX }, 15_000);
    assert.equal(r.code, 64, `${path}: ${r.stderr}`);
    assert.match(r.stderr, /not a regular file/);
    assert.ok(r.ms < 10_000, `${path}: took ${r.ms} ms`);
  }
});
