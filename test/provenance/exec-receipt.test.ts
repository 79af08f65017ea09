// Exec receipts: `engine.exec({ ..., receipt: true })` for JS and Python snippets — the receipt
// verifies offline, its facts are the call's (source, context, output hashes, grant, fuel, power
// calls by name, audit anchor); a pure snippet replays to the same output hash; one that made
// power calls is refused replay, naming them.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { checkReceipt, parseReceipt } from '../../src/provenance/receipt.ts';
import { execInputHash, execOutputHash, sourceHash, type SignedExecReceipt } from '../../src/provenance/exec-receipt.ts';
import { ENGINE_KEY_ENV, engineIdentity } from '../../src/provenance/identity.ts';
import { replayExecReceipt } from '../../src/engine/receipts.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';
import { TOOLCHAIN_CACHE } from '../helpers/toolchain.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-exec-receipt-');
delete process.env[ENGINE_KEY_ENV];
// The C snippet below builds with the toolchain every build test shares (the rewritten LLVM module,
// paid once per machine), not a fresh copy of it.
const engine = testEngine({ poolSize: 1, cacheDir: TOOLCHAIN_CACHE });

const receiptOf = (r: { receipt?: SignedExecReceipt }): SignedExecReceipt => {
  assert.ok(r.receipt, 'a receipt was returned');
  return r.receipt;
};

test('a JS snippet\'s receipt holds the call\'s facts and verifies offline', async () => {
  const code = "console.log('hi', context.n); context.n * 2";
  const r = await engine.exec({ language: 'js', code, context: { n: 21 }, tenant: 'acme', receipt: true });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  const signed = receiptOf(r);
  const rc = signed.receipt;
  assert.equal(rc.type, 'membrane/exec-receipt');
  assert.equal(rc.engine.did, engineIdentity().did);
  assert.equal(rc.tenant, 'acme');
  assert.deepEqual(rc.source, { sha256: sourceHash(code), bytes: Buffer.byteLength(code), language: 'js' });
  assert.equal(rc.input.sha256, execInputHash({ n: 21 }));
  assert.equal(rc.output.sha256, execOutputHash({ stdout: 'hi 21\n', stderr: '', result: 42 }));
  const hex = (t: string): string => createHash('sha256').update(t).digest('hex');
  assert.deepEqual(rc.output, { sha256: rc.output.sha256, stdout: hex('hi 21\n'), stderr: hex(''), result: hex('42') });
  assert.equal(rc.fuelUsed, r.fuelUsed);
  assert.ok(rc.fuelUsed > 0);
  assert.deepEqual(rc.outcome, { ok: true, error: null });
  assert.deepEqual(rc.powerCalls, {});
  assert.equal(rc.profile, 'compute');
  assert.equal(rc.persistentState, false);
  assert.ok(rc.audit && 'mac' in rc.audit);
  const log = AuditLog.open();
  try {
    const rec = log.tail({ kind: 'exec.receipt', limit: 1 })[0]!;
    assert.equal(rec.seq, rc.audit.seq);
    assert.equal(rec.detail['output'], rc.output.sha256);
    assert.equal(log.verify().ok, true);
  } finally {
    log.close();
  }
  assert.deepEqual(checkReceipt(parseReceipt(JSON.stringify(signed))), { valid: true, signer: rc.engine.did, reason: null });
  // A call without `receipt` returns none.
  assert.equal((await engine.exec({ language: 'js', code: '1' })).receipt, undefined);
});

test('power calls are counted by name, refused ones too, and such a snippet is refused replay, naming them', async () => {
  const code = "kv.put('k', 'v'); kv.get('k'); kv.get('k'); try { fetch('http://127.0.0.1:1/') } catch {} ; 1";
  const r = await engine.exec({ language: 'js', code, profile: 'network', tenant: 'acme', receipt: true });
  const rc = receiptOf(r).receipt;
  assert.equal(rc.powerCalls['kv.get'], 2);
  assert.equal(rc.powerCalls['kv.put'], 1);
  assert.equal(rc.powerCalls['net.fetch'], 1); // refused by the network guard, counted all the same
  const report = await replayExecReceipt((o) => engine.exec(o), receiptOf(r), code, undefined);
  assert.equal(report.replayed, false);
  assert.match(report.reason!, /made \d+ power call\(s\) \(.*kv\.get ×2.*\): its output depended on the world outside/);
});

test('a pure JS snippet replays to the same output hash; another source or context is refused', async () => {
  const code = 'let s = 0; for (let i = 0; i < 10000; i++) s += i; console.log(context.tag); s';
  const r = await engine.exec({ language: 'js', code, context: { tag: 'x' }, receipt: true, fuel: 1e8 });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  const signed = receiptOf(r);
  assert.equal(signed.receipt.limits.fuel, 1e8);
  const again = await replayExecReceipt((o) => engine.exec(o), signed, code, { tag: 'x' });
  assert.deepEqual(again, { replayed: true, reason: null, outputMatches: true, fuelMatches: true, outcomeMatches: true });
  assert.match((await replayExecReceipt((o) => engine.exec(o), signed, `${code};`, { tag: 'x' })).reason!, /source is not the one/);
  assert.match((await replayExecReceipt((o) => engine.exec(o), signed, code, { tag: 'y' })).reason!, /context is not the one/);
});

test('a Python snippet gets a receipt too; its replay reproduces the output', async () => {
  const code = 'print(sum(range(100)))\ncontext["k"] + 1';
  const r = await engine.exec({ language: 'python', code, context: { k: 1 }, receipt: true, timeoutMs: 60_000 });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  const signed = receiptOf(r);
  assert.equal(signed.receipt.source.language, 'python');
  assert.equal(signed.receipt.output.sha256, execOutputHash({ stdout: '4950\n', stderr: '', result: 2 }));
  const again = await replayExecReceipt((o) => engine.exec({ ...o, timeoutMs: 60_000 }), signed, code, { k: 1 });
  assert.equal(again.replayed, true);
  assert.equal(again.outputMatches, true, again.reason ?? '');
});

test('a failed snippet\'s receipt names its error; a C snippet gets no receipt and a warning says so', async () => {
  const r = await engine.exec({ language: 'js', code: "throw new Error('no')", receipt: true });
  assert.equal(r.ok, false);
  assert.deepEqual(receiptOf(r).receipt.outcome, { ok: false, error: 'GUEST_EXCEPTION' });
  const c = await engine.exec({ language: 'c', code: 'int main(void){return 0;}', receipt: true, signal: AbortSignal.abort() });
  assert.equal(c.receipt, undefined);
  assert.ok(c.warnings.some((w) => /no receipt: exec receipts cover js, ts and python/.test(w)), JSON.stringify(c.warnings));
});

test('an embedder host function call counts under its cap and function name; the receipt lists the host cap', async () => {
  const hosted = testEngine({ poolSize: 1, hostFunctions: { 'acme:orders': { getOrder: (args) => ({ order: args }) } } });
  const r = await hosted.exec({ language: 'js', caps: ['acme:orders'], code: 'acme_orders.getOrder({ id: 1 })', receipt: true });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  const rc = receiptOf(r).receipt;
  assert.deepEqual(rc.powerCalls, { 'acme:orders.getOrder': 1 });
  assert.deepEqual(rc.hostCaps, ['acme:orders']);
  assert.equal(checkReceipt(parseReceipt(JSON.stringify(r.receipt))).valid, true);
});
