// Attack: a forged job on the remote queue asks a worker for more than its operator allows (a
// huge timeout, fuel and memory, a profile's caps widened). The worker checks the job
// (protocol.ts) and resolves its limits against its own engine's profile: they only lower.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkJob, REMOTE_VERSION, sha256Hex } from '../../src/fabric/remote/protocol.ts';
import { resolvePolicy } from '../../src/policy/resolve.ts';
import { PROFILES } from '../../src/policy/profiles.ts';

test('a forged job cannot raise the worker\'s timeout, fuel, memory or caps', () => {
  const job = checkJob({ v: REMOTE_VERSION, module: sha256Hex(new Uint8Array(1)), tenant: 't', argv: [], stdin: '', profile: 'compute', caps: ['vfs', 'net', 'kv'], timeoutMs: 1e12, fuel: 1e18, memoryBytes: 2 ** 40 });
  // What the worker's engine.run does with it (src/engine/remote-worker.ts passes exactly these).
  const p = resolvePolicy({ profile: job.profile, caps: job.caps!, timeoutMs: job.timeoutMs!, fuel: job.fuel!, memoryBytes: job.memoryBytes! }, { operatorLimits: {} });
  assert.ok(p.timeoutMs <= PROFILES.compute.timeoutMs);
  assert.ok(p.fuel <= PROFILES.compute.fuel);
  assert.ok(p.memoryBytes <= PROFILES.compute.memoryBytes);
  assert.deepEqual([...p.caps], ['vfs']);
});

test('a forged job cannot name a host cap, an unknown profile or a path as its module', () => {
  const base = { v: REMOTE_VERSION, module: sha256Hex(new Uint8Array(1)), tenant: 't', argv: [], stdin: '', profile: 'compute' };
  assert.throws(() => checkJob({ ...base, caps: ['acme:payments'] }), /caps/);
  assert.throws(() => checkJob({ ...base, profile: 'operator' }), /profile/);
  assert.throws(() => checkJob({ ...base, module: '/etc/passwd' }), /sha256/);
  assert.throws(() => checkJob({ ...base, vfsFile: '/etc/shadow' }), /unknown field/);
});
