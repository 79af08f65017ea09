// Receipts anchored in an embedder's own audit sink (brokers.audit): without `seal`, the receipt
// carries the hash of the record the sink was handed; with `seal`, also the sink's position and
// digest (here the sink keeps its own sha256 hash chain, and the anchor checks against it). With
// the engine's own log in another database file (brokers.databaseFile), the receipt is anchored
// there.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { test } from 'node:test';
import { recordHash, sinkRecordMatches, type AnchoredEvent, type SinkAnchor } from '../../src/provenance/anchor.ts';
import { checkReceipt, parseReceipt } from '../../src/provenance/receipt.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { testEngine } from '../helpers/engine.ts';
import { wat } from '../helpers/wat.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-receipt-anchor-');

/** An embedder's sink: an array, and (optionally) its own hash chain over canonical records. */
function chainSink(withSeal: boolean) {
  const events: AnchoredEvent[] = [];
  const heads: string[] = [];
  const append = (e: AnchoredEvent): void => {
    events.push(structuredClone(e));
    const prev = heads[heads.length - 1] ?? '0'.repeat(64);
    heads.push(createHash('sha256').update(prev).update(recordHash(e)).digest('hex'));
  };
  const sink = withSeal ? { append, seal: (e: AnchoredEvent) => (append(e), { seq: events.length, digest: heads[heads.length - 1]! }) } : { append };
  return { events, heads, sink };
}

test('a sink without seal: the receipt carries the hash of the record the sink holds', async () => {
  const s = chainSink(false);
  const engine = testEngine({ poolSize: 1, brokers: { audit: () => s.sink } });
  const r = await engine.run(await wat('count'), { invoke: 'count', args: [100n], receipt: true, tenant: 'acme' });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  const anchor = r.receipt!.receipt.audit as SinkAnchor;
  assert.equal(anchor.sink, 'embedder');
  assert.equal(anchor.seq, null);
  assert.equal(anchor.digest, null);
  const stored = s.events.filter((e) => e.kind === 'run.receipt');
  assert.equal(stored.length, 1);
  assert.equal(stored[0]!.detail['output'], r.receipt!.receipt.output.sha256);
  assert.equal(sinkRecordMatches(anchor, stored[0]!), true);
  assert.equal(sinkRecordMatches(anchor, { ...stored[0]!, detail: { ...stored[0]!.detail, fuelUsed: 1 } }), false, 'an edited stored record no longer matches');
  assert.equal(checkReceipt(parseReceipt(JSON.stringify(r.receipt))).valid, true);
});

test('a sink with seal: the receipt carries its seq and chain digest, and they check against its chain', async () => {
  const s = chainSink(true);
  const engine = testEngine({ poolSize: 1, brokers: { audit: () => s.sink } });
  const r = await engine.run(await wat('count'), { invoke: 'count', args: [10n], receipt: true });
  const x = await engine.exec({ language: 'js', code: '6 * 7', receipt: true });
  for (const signed of [r.receipt!, x.receipt!]) {
    const anchor = signed.receipt.audit as SinkAnchor;
    assert.ok(anchor.seq !== null && anchor.seq >= 1);
    const stored = s.events[anchor.seq! - 1]!;
    assert.equal(sinkRecordMatches(anchor, stored), true);
    assert.equal(anchor.digest, s.heads[anchor.seq! - 1]);
    assert.equal(checkReceipt(parseReceipt(JSON.stringify(signed))).valid, true);
  }
  assert.equal((x.receipt!.receipt.audit as SinkAnchor).seq, s.events.findIndex((e) => e.kind === 'exec.receipt') + 1);
});

test('brokers.databaseFile: the receipt is anchored in that database\'s log', async () => {
  const file = join(tempDir('membrane-receipt-db-'), 'other.sqlite');
  const engine = testEngine({ poolSize: 1, brokers: { databaseFile: file } });
  const r = await engine.run(await wat('count'), { invoke: 'count', args: [10n], receipt: true });
  const anchor = r.receipt!.receipt.audit!;
  assert.ok('mac' in anchor);
  const log = AuditLog.open(file);
  try {
    const rec = log.tail({ kind: 'run.receipt', limit: 1 })[0]!;
    assert.equal(rec.seq, anchor.seq);
    assert.equal(anchor.keyId, log.keyId());
    assert.equal(log.verify().ok, true);
  } finally {
    log.close();
  }
});
