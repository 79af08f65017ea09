// resolveAndCheck: one resolution, every address checked, refused names, fail-closed resolution,
// and a PinnedAddress only the guard can make.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NetError, PinnedAddress, REFUSED_NAMES, resolveAndCheck, type Resolver } from '../../src/net/index.ts';
import { tableResolver } from './servers.ts';

const denied = (e: unknown) => e instanceof NetError && e.code === 'DENIED';

test('a name is resolved exactly once and pinned to its first address', async () => {
  const resolver = tableResolver({ 'example.test': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'] });
  const pin = await resolveAndCheck('Example.TEST.', { resolver });
  assert.deepEqual({ ...pin }, { host: 'example.test', address: '93.184.216.34', family: 4, literal: false });
  assert.deepEqual(resolver.calls, { 'example.test': 1 });
});

test('a name with ANY refused address is refused, whatever its other addresses', async () => {
  for (const bad of ['127.0.0.1', '10.0.0.1', '169.254.169.254', '::1', '::ffff:127.0.0.1', 'fd00::1', 'not-an-ip']) {
    const resolver = tableResolver({ 'mixed.test': ['93.184.216.34', bad] });
    await assert.rejects(resolveAndCheck('mixed.test', { resolver }), denied, bad);
  }
});

test('a resolution that fails, is empty, or never answers before the signal is refused', async () => {
  await assert.rejects(resolveAndCheck('missing.test', { resolver: tableResolver({}) }), denied);
  await assert.rejects(resolveAndCheck('empty.test', { resolver: async () => [] }), denied);
  const thrower: Resolver = () => {
    throw new Error('sync throw');
  };
  await assert.rejects(resolveAndCheck('sync.test', { resolver: thrower }), denied);
  const never: Resolver = () => new Promise(() => {});
  const ac = new AbortController();
  setTimeout(() => ac.abort(new NetError('TIMEOUT', 'test deadline')), 20);
  await assert.rejects(resolveAndCheck('slow.test', { resolver: never, signal: ac.signal }), (e: unknown) => e instanceof NetError && e.code === 'TIMEOUT');
});

test('known metadata and local names are refused before any resolution, even when allowlisted', async () => {
  const names = [...REFUSED_NAMES, 'METADATA.google.internal.', 'foo.localhost', 'db.internal', 'printer.local', 'nas.home.arpa', 'kubernetes', 'intranet'];
  for (const name of names) {
    const resolver = tableResolver({ [name.toLowerCase().replace(/\.$/, '')]: ['93.184.216.34'] });
    await assert.rejects(resolveAndCheck(name, { resolver, allowCidrs: ['0.0.0.0/0'] }), denied, name);
    assert.deepEqual(resolver.calls, {}, `${name} must not be resolved`);
  }
});

test('IP literals are checked without resolving; obfuscated ones are normalized first', async () => {
  const resolver = tableResolver({});
  for (const host of ['127.0.0.1', '2130706433', '0x7f.1', '0177.0.0.1', '127.1', '[::ffff:127.0.0.1]', '::ffff:7f00:1', '169.254.169.254', 'fe80::1%eth0']) {
    await assert.rejects(resolveAndCheck(host, { resolver }), denied, host);
  }
  const pin = await resolveAndCheck('0x7f.1', { resolver, allowCidrs: ['127.0.0.1/32'] });
  assert.deepEqual({ ...pin }, { host: '127.0.0.1', address: '127.0.0.1', family: 4, literal: true });
  assert.equal((await resolveAndCheck('8.8.8.8', { resolver })).literal, true);
  assert.deepEqual(resolver.calls, {});
});

test('the allowlist admits a resolved address, and only within its range', async () => {
  const resolver = tableResolver({ 'svc.test': ['127.0.0.1'], 'other.test': ['127.0.0.2'] });
  assert.equal((await resolveAndCheck('svc.test', { resolver, allowCidrs: ['127.0.0.1/32'] })).address, '127.0.0.1');
  await assert.rejects(resolveAndCheck('other.test', { resolver, allowCidrs: ['127.0.0.1/32'] }), denied);
});

test('a PinnedAddress cannot be made outside the guard', () => {
  const Ctor = PinnedAddress as unknown as new (...args: unknown[]) => PinnedAddress;
  assert.throws(() => new Ctor(Symbol('PinnedAddress'), 'x.test', '127.0.0.1', 4, false), TypeError);
});
