// A forged exec receipt: someone edits a receipt to claim a snippet made no power calls (so it
// "replays"), ran with other caps, on another source, or was anchored elsewhere — every edit of
// every field, an added or dropped field, a receipt signed by another key, and hostile shapes
// (power names, counts, anchors) are refused by `checkReceipt` before anything trusts them.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { test } from 'node:test';
import { checkReceipt, parseReceipt, signExecReceipt } from '../../src/provenance/receipt.ts';
import type { ExecReceipt, SignedExecReceipt } from '../../src/provenance/exec-receipt.ts';
import { ENGINE_KEY_ENV } from '../../src/provenance/identity.ts';
import { KeyPair } from '../../src/provenance/keys.ts';
import { didKey } from '../../src/provenance/did.ts';
import { replayExecReceipt } from '../../src/engine/receipts.ts';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-forged-exec-receipt-');
delete process.env[ENGINE_KEY_ENV];
const engine = testEngine({ poolSize: 1 });

function leaves(value: unknown, path: string[] = []): string[][] {
  if (value !== null && typeof value === 'object' && !(Array.isArray(value) && value.length === 0) && Object.keys(value).length > 0) return Object.entries(value).flatMap(([k, v]) => leaves(v, [...path, k]));
  return [path];
}

function edit(r: Record<string, unknown>, path: string[]): void {
  let at = r;
  for (const k of path.slice(0, -1)) at = at[k] as Record<string, unknown>;
  const last = path[path.length - 1]!;
  const old = at[last];
  at[last] = typeof old === 'number' ? old + 1 : typeof old === 'boolean' ? !old : old === null ? 0 : Array.isArray(old) ? ['kv'] : typeof old === 'object' ? { 'kv.get': 1 } : `${String(old)}x`;
}

test('editing any field of an exec receipt — the power count above all — fails verification, and the replay with it', async () => {
  const code = "kv.put('a', 'b'); kv.get('a')";
  const r = await engine.exec({ language: 'js', code, profile: 'minimal', receipt: true });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  const signed = r.receipt!;
  const text = JSON.stringify(signed);
  assert.equal(checkReceipt(parseReceipt(text)).valid, true);
  const paths = leaves(signed.receipt);
  assert.ok(paths.length >= 25, `${paths.length} fields`);
  for (const p of paths) {
    const copy = JSON.parse(text) as { receipt: Record<string, unknown> };
    edit(copy.receipt, p);
    assert.equal(checkReceipt(parseReceipt(JSON.stringify(copy))).valid, false, `editing ${p.join('.')} was not detected`);
  }
  // The forgery that matters: claim no power calls, so the snippet would "replay".
  const pure = JSON.parse(text) as { receipt: Record<string, unknown> };
  pure.receipt['powerCalls'] = {};
  const check = checkReceipt(parseReceipt(JSON.stringify(pure)));
  assert.equal(check.valid, false);
  assert.match(check.reason!, /signature does not verify/);
  // Dropping or adding a field is refused by shape, before the signature.
  const dropped = JSON.parse(text) as { receipt: Record<string, unknown> };
  delete dropped.receipt['powerCalls'];
  assert.match(checkReceipt(parseReceipt(JSON.stringify(dropped))).reason!, /exactly the fields/);
  const added = JSON.parse(text) as { receipt: Record<string, unknown> };
  added.receipt['replayable'] = true;
  assert.match(checkReceipt(parseReceipt(JSON.stringify(added))).reason!, /exactly the fields/);
  // Honest but impure: replay refuses.
  const report = await replayExecReceipt((o) => engine.exec(o), signed, code, undefined);
  assert.equal(report.replayed, false);
});

test('a receipt re-signed by another key verifies only as that key, and fails --trust', async () => {
  const r = await engine.exec({ language: 'js', code: '1 + 1', receipt: true });
  const mine = r.receipt!;
  const other = new KeyPair(randomBytes(32));
  const did = didKey(other.publicKey);
  const forged = signExecReceipt({ ...mine.receipt, engine: { ...mine.receipt.engine, did }, fuelUsed: 0 }, { did, keys: other, source: 'test' });
  assert.equal(checkReceipt(forged).valid, true); // a valid signature by someone else…
  const trusted = checkReceipt(forged, [mine.receipt.engine.did]);
  assert.equal(trusted.valid, false); // …is not the engine's
  assert.match(trusted.reason!, /not one of the trusted DIDs/);
  // Keeping the engine's DID but signing with another key fails outright.
  const swapped: SignedExecReceipt = { receipt: mine.receipt, signature: other.sign(Buffer.from('x')) };
  assert.equal(checkReceipt(swapped).valid, false);
});

test('hostile shapes are refused before any signature check', () => {
  const base: ExecReceipt = {
    v: 1, type: 'membrane/exec-receipt', engine: { version: '0', did: 'did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp' }, tenant: 't',
    source: { sha256: 'a'.repeat(64), bytes: 1, language: 'js' }, input: { sha256: 'b'.repeat(64) }, profile: 'compute', caps: [], hostCaps: [],
    limits: { memoryBytes: 1, timeoutMs: 1, fuel: 1 }, fuelMetered: true, fuelUsed: 0, output: { sha256: 'c'.repeat(64), stdout: 'd'.repeat(64), stderr: 'd'.repeat(64), result: 'd'.repeat(64) }, outcome: { ok: true, error: null },
    powerCalls: {}, persistentState: false, audit: null, time: 't',
  };
  const reason = (r: Record<string, unknown>): string | null => {
    const p = parseReceipt(JSON.stringify({ receipt: r, signature: 'AA' }));
    return typeof p === 'string' ? p : null;
  };
  assert.equal(reason(base as unknown as Record<string, unknown>), null);
  const bad: [string, Record<string, unknown>][] = [
    ['a negative power count', { ...base, powerCalls: { 'kv.get': -1 } }],
    ['a zero power count', { ...base, powerCalls: { 'kv.get': 0 } }],
    ['a fractional count', { ...base, powerCalls: { 'kv.get': 1.5 } }],
    ['a power name with a newline', { ...base, powerCalls: { 'kv.get\nforged': 1 } }],
    ['too many power names', { ...base, powerCalls: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`kv.op${i}`, 1])) }],
    ['powerCalls as an array', { ...base, powerCalls: [] }],
    ['an unknown language', { ...base, source: { ...base.source, language: 'sh' } }],
    ['a short hash', { ...base, output: { ...base.output, sha256: 'c'.repeat(63) } }],
    ['an output without its parts', { ...base, output: { sha256: 'c'.repeat(64) } }],
    ['an output with an extra part', { ...base, output: { ...base.output, exitCode: 'e'.repeat(64) } }],
    ['an anchor with a forged extra field', { ...base, audit: { seq: 1, mac: 'd'.repeat(64), keyId: 'k', trusted: true } }],
    ['a log anchor whose mac is not hex', { ...base, audit: { seq: 1, mac: 'zz', keyId: 'k' } }],
    ['a sink anchor with half an answer', { ...base, audit: { sink: 'embedder', record: 'e'.repeat(64), seq: 3, digest: null } }],
    ['a sink anchor naming another sink', { ...base, audit: { sink: 'engine', record: 'e'.repeat(64), seq: null, digest: null } }],
  ];
  for (const [what, r] of bad) assert.notEqual(reason(r), null, `${what} was accepted`);
  // Lane powers and host cap functions are power names.
  assert.equal(reason({ ...base, powerCalls: { 'kv.get': 2, 'acme:orders.getOrder': 1, '(other)': 3 } }), null);
});
