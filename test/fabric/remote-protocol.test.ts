// The remote tier without Redis: the worker's checks on a job (untrusted queue input), which
// grants may run again after a worker died, how a failed job maps to one error, and the tier
// check (no URL → TIER_UNAVAILABLE "redis not configured"; options the tier cannot carry are
// refused before anything connects).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkJob, checkReply, retrySafe, grantedCaps, REMOTE_VERSION, MAX_REMOTE_ARGS, sha256Hex, type RemoteJob } from '../../src/fabric/remote/protocol.ts';
import { failedToError } from '../../src/fabric/remote/queue.ts';
import { checkTier } from '../../src/fabric/tiers.ts';
import { Engine } from '../../src/index.ts';
import { SandboxError } from '../../src/errors.ts';

const good: RemoteJob = { v: REMOTE_VERSION, module: sha256Hex(new Uint8Array([0, 97, 115, 109])), tenant: 'alice', argv: ['-c'], stdin: Buffer.from('hi').toString('base64'), profile: 'compute', timeoutMs: 1000 };

function refused(job: unknown, field: RegExp): void {
  assert.throws(() => checkJob(job), (e: unknown) => e instanceof SandboxError && e.code === 'POLICY_INVALID' && field.test(e.message));
}

test('checkJob: a well-formed job comes back as a plain copy', () => {
  const j = checkJob(JSON.parse(JSON.stringify(good)));
  assert.deepEqual(j, good);
  assert.notEqual(j.argv, good.argv);
});

test('checkJob refuses what a forged job could carry: unknown fields, bad hashes, names, words, sizes, limits', () => {
  refused({ ...good, extra: 1 }, /unknown field extra/);
  refused({ ...good, v: 2 }, /wire version/);
  refused({ ...good, module: '../../etc/passwd' }, /sha256/);
  refused({ ...good, tenant: 'a b' }, /tenant/);
  refused({ ...good, tenant: 'x'.repeat(129) }, /tenant/);
  refused({ ...good, profile: 'root' }, /profile/);
  refused({ ...good, caps: ['vfs', 'acme:orders'] }, /caps/);
  refused({ ...good, caps: ['everything'] }, /caps/);
  refused({ ...good, argv: Array.from({ length: MAX_REMOTE_ARGS + 1 }, () => 'a') }, /argv/);
  refused({ ...good, argv: ['x'.repeat(70_000)] }, /argv is too long/);
  refused({ ...good, argv: [1] }, /argv/);
  refused({ ...good, stdin: 'not base64!' }, /stdin/);
  refused({ ...good, env: { 'A=B': 'x' } }, /env/);
  refused({ ...good, timeoutMs: -1 }, /timeoutMs/);
  refused({ ...good, fuel: Infinity }, /fuel/);
  refused({ ...good, memoryBytes: '1e12' }, /memoryBytes/);
  refused(Object.assign(Object.create({ polluted: true }), good), /not an object/);
  refused([good], /not an object/);
  refused(null, /not an object/);
});

test('retrySafe: only grants whose effects end with the run (vfs, commands, exec) may run a second time', () => {
  assert.equal(retrySafe({ profile: 'compute' }), true);
  assert.equal(retrySafe({ profile: 'network', caps: ['vfs'] }), true);
  assert.equal(retrySafe({ profile: 'minimal' }), false);
  assert.equal(retrySafe({ profile: 'network', caps: ['vfs', 'kv'] }), false);
  assert.equal(retrySafe({ profile: 'posix', caps: ['net'] }), false);
  // caps narrow the profile, never widen it
  assert.deepEqual(grantedCaps({ profile: 'compute', caps: ['vfs', 'net'] }), ['vfs']);
});

test('a failed job maps to one error: stalled twice or a refused retry → INSTANCE_DEAD; anything else is not leaked', () => {
  assert.equal(failedToError('job stalled more than allowable limit', true).code, 'INSTANCE_DEAD');
  const dead = failedToError('INSTANCE_DEAD: the remote worker died running the job; its grant may have had effects', false);
  assert.equal(dead.code, 'INSTANCE_DEAD');
  assert.equal(failedToError('POLICY_INVALID: remote job refused: caps', false).code, 'POLICY_INVALID');
  const other = failedToError('Error: ENOENT /home/worker/secret/path', true);
  assert.equal(other.code, 'INTERNAL');
  assert.doesNotMatch(other.message, /secret/);
});

test('checkReply: a reply of another version or shape is INTERNAL', () => {
  assert.throws(() => checkReply({ v: 99 }), /does not read/);
  assert.throws(() => checkReply({ v: REMOTE_VERSION, ok: 'yes' }), /malformed/);
});

test('checkTier: remote without a Redis URL is TIER_UNAVAILABLE "redis not configured"; with one it runs', () => {
  assert.throws(() => checkTier('remote'), (e: unknown) => e instanceof SandboxError && e.code === 'TIER_UNAVAILABLE' && e.details?.['reason'] === 'redis not configured');
  assert.equal(checkTier('remote', { redisUrl: 'redis://127.0.0.1:6379' }), 'remote');
});

test('an engine without remote: run and fanout on the remote tier are TIER_UNAVAILABLE; with remote, what cannot travel is refused before connecting', async () => {
  const local = new Engine({ cacheDir: false, poolSize: 0 });
  // Port 1: nothing listens; nothing must try to connect for these refusals.
  const remote = new Engine({ cacheDir: false, poolSize: 0, remote: { redis: 'redis://127.0.0.1:1' } });
  try {
    const r = await local.run(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]), { tier: 'remote' });
    assert.equal(r.ok, false);
    assert.equal(r.error?.code, 'TIER_UNAVAILABLE');
    assert.match(r.error!.message, /redis not configured/);
    await assert.rejects(local.fanout({ command: 'cat', inputs: ['x'], tier: 'remote' }), /redis not configured/);
    const m = await remote.run(new Uint8Array(8), { tier: 'remote', invoke: 'f' });
    assert.equal(m.error?.code, 'POLICY_INVALID');
    assert.match(m.error!.message, /does not carry invoke/);
    const h = await remote.run(new Uint8Array(8), { tier: 'remote', profile: 'compute', caps: ['vfs', 'acme:orders'] });
    assert.equal(h.ok, false);
    await assert.rejects(remote.fanout({ kernel: new Uint8Array(8), inputs: ['x'], tier: 'remote' }), /a kernel keeps one instance across calls; the remote tier runs one call per job/);
  } finally {
    await Promise.all([local.close(), remote.close()]);
  }
  assert.throws(() => new Engine({ remote: { redis: 'http://example.com' } }), /redis:\/\//);
});
