// A forged audit anchor from an embedder's sink: its `seal` answers something a receipt must not
// carry — a built-in log anchor's shape (posing as the engine's keyed log), a negative or
// fractional seq, a digest with control characters or past 256 characters, a promise, a throw.
// The receipt is still signed and returned, with `audit: null` and a warning; it never carries
// the answer. And a receipt whose anchor was swapped afterwards fails verification.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkReceipt, parseReceipt } from '../../src/provenance/receipt.ts';
import { testEngine } from '../helpers/engine.ts';
import { wat } from '../helpers/wat.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-forged-anchor-');

const ANSWERS: [string, () => unknown][] = [
  ['a built-in log anchor', () => ({ seq: 5, mac: 'a'.repeat(64), keyId: '0123456789abcdef' })],
  ['a negative seq', () => ({ seq: -1, digest: 'x' })],
  ['a fractional seq', () => ({ seq: 1.5, digest: 'x' })],
  ['a digest with a newline', () => ({ seq: 1, digest: 'ok\nforged: true' })],
  ['a digest past 256 characters', () => ({ seq: 1, digest: 'x'.repeat(257) })],
  ['an empty digest', () => ({ seq: 1, digest: '' })],
  ['a promise', () => Promise.resolve({ seq: 1, digest: 'x' })],
  ['a throw', () => {
    throw new Error('sink down at /srv/secret/path');
  }],
];

test('a sink seal answer a receipt cannot carry leaves the receipt unanchored, with a warning', async () => {
  for (const [what, answer] of ANSWERS) {
    const sink = { append: () => {}, seal: answer as () => { seq: number; digest: string } };
    const engine = testEngine({ poolSize: 1, brokers: { audit: () => sink } });
    const r = await engine.run(await wat('count'), { invoke: 'count', args: [3n], receipt: true });
    assert.equal(r.ok, true, what);
    assert.equal(r.receipt!.receipt.audit, null, `${what} was carried`);
    assert.ok(r.warnings.some((w) => /the receipt is not anchored in the audit log/.test(w)), what);
    assert.ok(!r.warnings.some((w) => w.includes('/srv/secret')), 'the sink\'s own message is not passed on');
    assert.equal(checkReceipt(parseReceipt(JSON.stringify(r.receipt))).valid, true, what);
    await engine.close();
  }
});

test('swapping the anchor of a signed receipt fails verification', async () => {
  const sink = { append: () => {}, seal: () => ({ seq: 7, digest: 'chain-head-7' }) };
  const engine = testEngine({ poolSize: 1, brokers: { audit: () => sink } });
  const r = await engine.run(await wat('count'), { invoke: 'count', args: [3n], receipt: true });
  const text = JSON.stringify(r.receipt);
  assert.deepEqual(r.receipt!.receipt.audit, { sink: 'embedder', record: (r.receipt!.receipt.audit as { record: string }).record, seq: 7, digest: 'chain-head-7' });
  for (const swap of [{ seq: 8 }, { digest: 'chain-head-8' }, { record: 'f'.repeat(64) }]) {
    const copy = JSON.parse(text) as { receipt: { audit: Record<string, unknown> } };
    Object.assign(copy.receipt.audit, swap);
    assert.equal(checkReceipt(parseReceipt(JSON.stringify(copy))).valid, false, JSON.stringify(swap));
  }
  const asLog = JSON.parse(text) as { receipt: Record<string, unknown> };
  asLog.receipt['audit'] = { seq: 7, mac: 'a'.repeat(64), keyId: 'k' };
  assert.equal(checkReceipt(parseReceipt(JSON.stringify(asLog))).valid, false);
});
