// The grant rule every remote interface shares (src/interfaces/grant.ts): a subset can only
// narrow; a cap or profile outside the grant is NOT_CAPABLE naming it, with one audit record;
// timeout and fuel are clamped to the ceiling and the clamp reported.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { AuditLog } from '../../src/storage/audit.ts';
import { resolveGrant } from '../../src/interfaces/grant.ts';
import { SandboxError } from '../../src/errors.ts';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';

const dir = tempDir('membrane-grant-');
const databaseFile = join(dir, 'engine.sqlite');
process.env['MEMBRANE_AUDIT_KEY'] ??= 'a'.repeat(64);
const engine = testEngine({ poolSize: 0, brokers: { databaseFile } });
const grant = { tenant: 'acme', profile: 'compute' as const, surface: 'mcp' };

function caught(f: () => unknown): SandboxError {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof SandboxError);
    return e;
  }
  assert.fail('expected a SandboxError');
}

test('a subset inside the grant narrows; none keeps the grant', () => {
  assert.deepEqual(resolveGrant(engine, grant, { capabilitySubset: ['vfs'] }).caps, ['vfs']);
  assert.deepEqual(resolveGrant(engine, grant, { capabilitySubset: [] }).caps, []);
  const g = resolveGrant(engine, grant, {});
  assert.equal(g.caps, undefined);
  assert.equal(g.profile, 'compute');
  assert.equal(g.timeoutMs, 5000);
});

test('capability_subset ["net"] from a compute grant → NOT_CAPABLE naming net, and one audit record', () => {
  const log = AuditLog.open(databaseFile);
  const before = log.count();
  const e = caught(() => resolveGrant(engine, grant, { capabilitySubset: ['vfs', 'net'] }));
  assert.equal(e.code, 'NOT_CAPABLE');
  assert.match(e.message, /"net"/);
  const recs = log.tail({ tenant: 'acme' });
  assert.equal(log.count(), before + 1);
  const last = recs[recs.length - 1]!;
  assert.equal(last.kind, 'denied');
  assert.deepEqual((last.detail as { caps: string[] }).caps, ['net']);
  log.close();
});

test('a profile above the grant → NOT_CAPABLE; a lower one is allowed with its own ceilings', () => {
  assert.equal(caught(() => resolveGrant(engine, { ...grant, profile: 'minimal' }, { profile: 'posix' })).code, 'NOT_CAPABLE');
  const g = resolveGrant(engine, { ...grant, profile: 'network' }, { profile: 'compute', timeoutMs: 20_000 });
  assert.equal(g.profile, 'compute');
  assert.equal(g.timeoutMs, 5000);
  assert.deepEqual(g.clamped, ['timeout_ms 20000 clamped to 5000']);
});

test('timeout_ms 10 000 000 and fuel 1e15 are clamped and reported; unknown words are POLICY_INVALID', () => {
  const g = resolveGrant(engine, grant, { timeoutMs: 10_000_000, fuel: 1e15 });
  assert.equal(g.timeoutMs, 5000);
  assert.equal(g.fuel, 1e9);
  assert.equal(g.clamped.length, 2);
  assert.equal(caught(() => resolveGrant(engine, grant, { capabilitySubset: ['root'] })).code, 'POLICY_INVALID');
  assert.equal(caught(() => resolveGrant(engine, grant, { timeoutMs: -1 })).code, 'POLICY_INVALID');
});
