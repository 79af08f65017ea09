// The CLI's one numeric-flag parser (src/interfaces/cli/units.ts): every accepted form, and every
// bad input a UsageError naming the flag — overflow, 2^53, fractional bytes, signs, junk.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_DURATION_MS, count, duration, limitFlags, optional, size } from '../../src/interfaces/cli/units.ts';
import { UsageError } from '../../src/interfaces/cli/usage.ts';

const rejects = (fn: () => unknown, flag: string, why?: RegExp): void => {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof UsageError, `not a UsageError: ${String(e)}`);
    assert.match(e.message, new RegExp(`^--${flag} expects `));
    if (why) assert.match(e.message, why);
    return true;
  });
};

test('durations: bare milliseconds, ms, s, m, h, fractions and exponents that land on whole ms', () => {
  assert.equal(duration('timeout', '800'), 800);
  assert.equal(duration('timeout', '800ms'), 800);
  assert.equal(duration('timeout', '5s'), 5000);
  assert.equal(duration('timeout', '2m'), 120_000);
  assert.equal(duration('timeout', '1h'), 3_600_000);
  assert.equal(duration('timeout', '1.5s'), 1500);
  assert.equal(duration('timeout', '0.001s'), 1);
  assert.equal(duration('timeout', '1_000ms'), 1000);
  assert.equal(duration('timeout', '2e3'), 2000);
  assert.equal(duration('timeout', '5S'), 5000);
  assert.equal(duration('timeout', '1.1s'), 1100, 'exact decimal arithmetic, no float rounding');
  assert.equal(duration('timeout', String(MAX_DURATION_MS)), MAX_DURATION_MS);
});

test('durations: junk, signs, sub-millisecond, zero and past the timer limit are usage errors', () => {
  for (const bad of ['abc', '', ' ', '-1', '+5', 'NaN', 'Infinity', '5xs', '5 s', 's', '1..2s', '1e', '_1', '1__0', '0x10', '1e999', '1e999999999']) rejects(() => duration('timeout', bad), 'timeout');
  rejects(() => duration('timeout', '0.5ms'), 'timeout', /not a whole number of ms/);
  rejects(() => duration('timeout', '1.0001s'), 'timeout', /not a whole number/);
  rejects(() => duration('timeout', '0'), 'timeout', /too small/);
  rejects(() => duration('timeout', String(MAX_DURATION_MS + 1)), 'timeout', /too large/);
  rejects(() => duration('timeout', '25d'), 'timeout');
  rejects(() => duration('timeout', '1000h'), 'timeout', /too large/);
  rejects(() => duration('timeout', undefined), 'timeout', /got nothing/);
});

test('sizes: bare bytes, binary and SI units, exact fractions', () => {
  assert.equal(size('memory', '65536'), 65536);
  assert.equal(size('memory', '64KiB'), 65536);
  assert.equal(size('memory', '64MiB'), 64 * 2 ** 20);
  assert.equal(size('memory', '1GiB'), 2 ** 30);
  assert.equal(size('memory', '1gib'), 2 ** 30);
  assert.equal(size('memory', '64MB'), 64_000_000);
  assert.equal(size('memory', '1.5MiB'), 1.5 * 2 ** 20);
  assert.equal(size('memory', '100B'), 100);
  assert.equal(size('memory', '8TiB'), 8 * 2 ** 40);
});

test('sizes: fractional bytes, overflow past 2^53 and unknown units are usage errors', () => {
  rejects(() => size('memory', '0.5B'), 'memory', /not a whole number of bytes/);
  rejects(() => size('memory', '1.0000001KiB'), 'memory', /not a whole number of bytes/);
  rejects(() => size('memory', '9007199254740992'), 'memory', /too large/);
  rejects(() => size('memory', '99999999999999999999GiB'), 'memory', /too large/);
  rejects(() => size('memory', '1e999'), 'memory', /too large/);
  for (const bad of ['64M', '64K', '64mibs', '-64MiB', 'MiB', '64 MiB', '١٢٣']) rejects(() => size('memory', bad), 'memory');
  rejects(() => size('memory', '1000', { min: 65536 }), 'memory', /65536 bytes to .*too small/);
});

test('counts: plain, underscores and exponents; the largest safe integer and no further', () => {
  assert.equal(count('fuel', '1000000'), 1e6);
  assert.equal(count('fuel', '1_000_000'), 1e6);
  assert.equal(count('fuel', '1e9'), 1e9);
  assert.equal(count('fuel', '1E9'), 1e9);
  assert.equal(count('fuel', '2.5e3'), 2500);
  assert.equal(count('fuel', '9007199254740991'), Number.MAX_SAFE_INTEGER);
  rejects(() => count('fuel', '9007199254740992'), 'fuel', /too large/);
  rejects(() => count('fuel', '1e16'), 'fuel', /too large/);
  rejects(() => count('fuel', '1.5'), 'fuel', /not a whole number/);
  rejects(() => count('fuel', '1e-3'), 'fuel', /not a whole number/);
  rejects(() => count('fuel', '1k'), 'fuel');
  rejects(() => count('port', '65536', { min: 0, max: 65535 }), 'port', /too large/);
  assert.equal(count('port', '0', { min: 0, max: 65535 }), 0);
});

test('an echoed bad value is cut short and cannot drive the terminal', () => {
  assert.throws(() => duration('timeout', `\u001b[31m${'9'.repeat(500)}`), (e: Error) => {
    assert.ok(!e.message.includes('\u001b'));
    assert.ok(e.message.length < 300, `${e.message.length} characters`);
    return true;
  });
  assert.throws(() => size('memory', '1\u202eMiB'), (e: Error) => !e.message.includes('\u202e'));
});

test('limitFlags: only the flags given; memory at least one wasm page; fuel at least 1', () => {
  assert.deepEqual(limitFlags({}), {});
  assert.deepEqual(limitFlags({ timeout: '5s', fuel: '1e9', memory: '64MiB' }), { timeoutMs: 5000, fuel: 1e9, memoryBytes: 64 * 2 ** 20 });
  rejects(() => limitFlags({ memory: '32KiB' }), 'memory', /too small/);
  rejects(() => limitFlags({ fuel: '0' }), 'fuel', /too small/);
  assert.equal(optional('port', undefined, 'count'), undefined);
});
