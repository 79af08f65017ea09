// Signed run receipts: a receipt verifies offline; editing any field fails; a pure guest replays
// to the same output hash and fuel; a run that called a broker is refused replay, saying why.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { checkReceipt, parseReceipt, type SignedReceipt } from '../../src/provenance/receipt.ts';
import { ENGINE_KEY_ENV, engineIdentity } from '../../src/provenance/identity.ts';
import { replayReceipt, runInputOf } from '../../src/engine/receipts.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { testEngine } from '../helpers/engine.ts';
import { cGuest, wat, watText } from '../helpers/wat.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-receipt-');
delete process.env[ENGINE_KEY_ENV];
const engine = testEngine();

const KV_CALLER = `(module
  (import "membrane" "kv_get" (func $kv_get (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "k")
  (func (export "run") (result i32) (call $kv_get (i32.const 0) (i32.const 1) (i32.const 16) (i32.const 64))))`;

/** Every leaf path of a JSON value, as a setter that changes it. */
function edits(value: unknown, path: string[] = []): { path: string; apply: (r: Record<string, unknown>) => void }[] {
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => edits(v, [...path, k]));
  const set = (r: Record<string, unknown>): void => {
    let at = r as Record<string, unknown>;
    for (const k of path.slice(0, -1)) at = at[k] as Record<string, unknown>;
    const last = path[path.length - 1]!;
    const old = at[last];
    at[last] = typeof old === 'number' ? old + 1 : typeof old === 'boolean' ? !old : old === null ? 0 : `${String(old)}x`;
  };
  return [{ path: path.join('.'), apply: set }];
}

test('a receipt for a pure run verifies offline, and editing any one field fails it', async () => {
  const bytes = await wat('count');
  const r = await engine.run(bytes, { invoke: 'count', args: [1000n], receipt: true, tenant: 'acme' });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  const signed = r.receipt!;
  assert.ok(signed);
  const rc = signed.receipt;
  assert.equal(rc.engine.did, engineIdentity().did);
  assert.equal(rc.hostCalls, 0);
  assert.equal(rc.fuelUsed, r.fuelUsed);
  assert.ok(rc.fuelUsed > 0);
  assert.deepEqual(rc.outcome, { ok: true, exitCode: null, error: null });
  assert.equal(rc.profile, 'compute');
  assert.deepEqual(rc.caps, ['vfs']);
  assert.ok(rc.audit && 'mac' in rc.audit && rc.audit.seq > 1);
  const text = JSON.stringify(signed);
  assert.deepEqual(checkReceipt(parseReceipt(text)), { valid: true, signer: rc.engine.did, reason: null });
  // The audit log holds the receipt's record at its seq.
  const log = AuditLog.open();
  try {
    const rec = log.tail({ kind: 'run.receipt', limit: 1 })[0]!;
    assert.equal(rec.seq, rc.audit!.seq);
    assert.equal(rec.detail['output'], rc.output.sha256);
  } finally {
    log.close();
  }
  const all = edits(signed.receipt);
  assert.ok(all.length >= 20, `${all.length} fields`);
  for (const e of all) {
    const copy = JSON.parse(text) as { receipt: Record<string, unknown> };
    e.apply(copy.receipt);
    const check = checkReceipt(parseReceipt(JSON.stringify(copy)));
    assert.equal(check.valid, false, `editing ${e.path} was not detected`);
  }
  // Adding a field, or a flipped signature, fails too.
  const added = JSON.parse(text) as { receipt: Record<string, unknown> };
  added.receipt['extra'] = 1;
  assert.equal(checkReceipt(parseReceipt(JSON.stringify(added))).valid, false);
  const sig = Buffer.from(signed.signature, 'base64url');
  sig[0] = sig[0]! ^ 1;
  assert.equal(checkReceipt(parseReceipt(JSON.stringify({ ...signed, signature: sig.toString('base64url') }))).valid, false);
  assert.equal(checkReceipt(parseReceipt(text), ['did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp']).valid, false);
});

test('replay reproduces a pure guest\'s output hash and fuel; a wrong module or input is refused', async () => {
  const bytes = cGuest('hello');
  const opts = { argv: ['a', 'b'], stdin: 'in', receipt: true } as const;
  const r = await engine.run(bytes, opts);
  assert.equal(r.ok, true, JSON.stringify(r.error));
  const signed = r.receipt!;
  const report = await replayReceipt((b, o) => engine.run(b, o), signed, bytes, runInputOf(opts));
  assert.deepEqual(report, { replayed: true, reason: null, outputMatches: true, fuelMatches: true, outcomeMatches: true });
  const other = await wat('count');
  assert.match((await replayReceipt((b, o) => engine.run(b, o), signed, other, runInputOf(opts))).reason!, /module is not the one/);
  assert.match((await replayReceipt((b, o) => engine.run(b, o), signed, bytes, { argv: ['a'] })).reason!, /input is not the one/);
});

test('a run that called a broker records it, and replay refuses saying why', async () => {
  const bytes = await watText(KV_CALLER);
  const r = await engine.run(bytes, { invoke: 'run', profile: 'minimal', receipt: true });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  const signed: SignedReceipt = r.receipt!;
  assert.ok(signed.receipt.hostCalls >= 1);
  assert.equal(checkReceipt(signed).valid, true);
  const report = await replayReceipt((b, o) => engine.run(b, o), signed, bytes, { invoke: 'run' });
  assert.equal(report.replayed, false);
  assert.match(report.reason!, /made 1 host call.*cannot be replayed/);
});

test('a run without receipt: true carries none', async () => {
  const r = await engine.run(await wat('count'), { invoke: 'count', args: [3n] });
  assert.equal(r.receipt, undefined);
});

test('a call on a persistent instance can carry a receipt: it verifies, counts its own host calls, and never replays', async () => {
  const { createHash } = await import('node:crypto');
  const bytes = await watText(KV_CALLER);
  const inst = await engine.start('receipted-instance', bytes, { profile: 'minimal', tenant: 'acme' });
  try {
    const plain = await inst.call('run');
    assert.equal(plain.receipt, undefined);
    const r = await inst.call('run', [], { receipt: true, fuel: 1e6 });
    assert.equal(r.ok, true, JSON.stringify(r.error));
    const rc = r.receipt!.receipt;
    assert.equal(checkReceipt(r.receipt!).valid, true);
    assert.equal(rc.id, 'receipted-instance');
    assert.equal(rc.module.sha256, createHash('sha256').update(bytes).digest('hex'));
    assert.equal(rc.hostCalls, 1, 'only this call\'s host calls');
    assert.equal(rc.limits.fuel, 1e6);
    assert.equal(rc.persistentState, true);
    const report = await replayReceipt((b, o) => engine.run(b, o), r.receipt!, bytes, { invoke: 'run' });
    assert.equal(report.replayed, false);
  } finally {
    await inst.stop();
  }
});
