import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { SandboxError } from '../../src/errors.ts';
import { CAP_WORDS, PROFILES, PROFILE_NAMES, allowHttp, profilesGranting, type CapWord } from '../../src/policy/profiles.ts';
import { narrowPolicy, resolvePolicy } from '../../src/policy/resolve.ts';

const MiB = 1024 * 1024;

test('the four profiles carry DESIGN §2 numbers and words', () => {
  assert.deepEqual(
    PROFILE_NAMES.map((n) => [n, PROFILES[n].memoryBytes / MiB, PROFILES[n].timeoutMs, PROFILES[n].fuel, PROFILES[n].caps.join(' ')]),
    [
      ['compute', 64, 5000, 1e9, 'vfs'],
      ['minimal', 64, 5000, 1e9, 'vfs commands exec kv secrets queue tcp udp tls'],
      ['network', 128, 30000, 1e10, 'vfs commands exec kv secrets queue tcp udp tls net llm browse'],
      ['posix', 256, 60000, 1e10, 'vfs commands exec kv secrets queue tcp udp tls net llm browse posix parallel'],
    ],
  );
});

test('the policy literal is frozen', () => {
  assert.throws(() => {
    (PROFILES.compute.caps as CapWord[]).push('net');
  }, TypeError);
  assert.ok(Object.isFrozen(PROFILES.posix));
});

test('allowHttp is true exactly when net or browse is granted (every subset of cap words)', () => {
  fc.assert(
    fc.property(fc.subarray([...CAP_WORDS]), (caps) => {
      assert.equal(allowHttp(caps), caps.includes('net') || caps.includes('browse'));
    }),
  );
  assert.deepEqual(
    PROFILE_NAMES.filter((p) => resolvePolicy({ profile: p }).allowHttp),
    ['network', 'posix'],
  );
});

test('profilesGranting lists the ladder from least privileged', () => {
  assert.deepEqual(profilesGranting(['kv']), ['minimal', 'network', 'posix']);
  assert.deepEqual(profilesGranting(['vfs']), ['compute', 'minimal', 'network', 'posix']);
  assert.deepEqual(profilesGranting(['parallel', 'net']), ['posix']);
});

test('an unknown profile fails closed to compute with a warning', () => {
  const p = resolvePolicy({ profile: 'bogus' });
  assert.equal(p.profile, 'compute');
  assert.deepEqual(p.caps, ['vfs']);
  assert.match(p.warnings.join('\n'), /unknown profile "bogus".*compute/);
});

test('strictProfiles turns an unknown profile into POLICY_INVALID', () => {
  assert.throws(
    () => resolvePolicy({ profile: 'root' }, { strictProfiles: true }),
    (e: unknown) => e instanceof SandboxError && e.code === 'POLICY_INVALID',
  );
});

test('a caller can lower limits but a higher request is clamped with a warning', () => {
  const low = resolvePolicy({ profile: 'minimal', timeoutMs: 800, memoryBytes: 16 * MiB, fuel: 1000 });
  assert.equal(low.timeoutMs, 800);
  assert.equal(low.memoryBytes, 16 * MiB);
  assert.equal(low.fuel, 1000);
  const high = resolvePolicy({ profile: 'compute', timeoutMs: 10_000_000, memoryBytes: 4 * 1024 * MiB });
  assert.equal(high.timeoutMs, 5000);
  assert.equal(high.memoryBytes, 64 * MiB);
  assert.equal(high.warnings.length, 2);
});

test('only the operator can raise a profile', () => {
  const p = resolvePolicy({ profile: 'compute', timeoutMs: 9000 }, { operatorLimits: { compute: { timeoutMs: 10_000 } } });
  assert.equal(p.timeoutMs, 9000);
});

test('invalid numbers and cap words are POLICY_INVALID', () => {
  for (const bad of [{ timeoutMs: -1 }, { timeoutMs: Number.NaN }, { memoryBytes: 0 }, { fuel: Infinity }, { memoryBytes: 1000 }]) {
    assert.throws(() => resolvePolicy({ profile: 'compute', ...bad }), (e: unknown) => e instanceof SandboxError && e.code === 'POLICY_INVALID');
  }
  assert.throws(() => resolvePolicy({ caps: ['root'] }), (e: unknown) => e instanceof SandboxError && e.code === 'POLICY_INVALID');
});

test('narrowing never widens: any request yields a policy within its base (property)', () => {
  const limit = fc.option(fc.integer({ min: 1, max: 2 ** 40 }), { nil: undefined });
  fc.assert(
    fc.property(
      fc.constantFrom(...PROFILE_NAMES),
      fc.record({ timeoutMs: limit, fuel: limit, memoryBytes: fc.option(fc.integer({ min: 65536, max: 2 ** 40 }), { nil: undefined }) }),
      fc.option(fc.subarray([...CAP_WORDS]), { nil: undefined }),
      fc.option(fc.subarray([...CAP_WORDS]), { nil: undefined }),
      (profile, limits, caps1, caps2) => {
        const base = resolvePolicy({ profile });
        const once = narrowPolicy(base, { ...strip(limits), ...(caps1 ? { caps: caps1 } : {}) });
        const twice = narrowPolicy(once, { ...strip(limits), ...(caps2 ? { caps: caps2 } : {}) });
        for (const p of [once, twice]) {
          assert.ok(p.timeoutMs <= base.timeoutMs && p.fuel <= base.fuel && p.memoryBytes <= base.memoryBytes);
          assert.ok(p.caps.every((c) => base.caps.includes(c)));
        }
        assert.ok(twice.caps.every((c) => once.caps.includes(c)));
        assert.equal(twice.allowHttp, allowHttp(twice.caps));
      },
    ),
  );
});

function strip<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
