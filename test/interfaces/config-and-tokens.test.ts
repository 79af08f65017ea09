// The operator's config file (JSON or TOML, strict) and the token store (hashes only, 0600).
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { engineOptionsFrom, loadConfig } from '../../src/interfaces/config.ts';
import { TokenStore } from '../../src/interfaces/http/tokens.ts';
import { SandboxError } from '../../src/errors.ts';
import { openDatabase } from '../../src/storage/sqlite.ts';
import { tempDir } from '../helpers/tmp.ts';

const dir = tempDir('membrane-config-');

function refused(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof SandboxError);
    assert.equal(e.code, 'POLICY_INVALID');
    return e.message;
  }
  assert.fail('expected POLICY_INVALID');
}

test('a TOML config: grant, allowCidrs, secrets (file relative to the config, env prefix), limits', () => {
  writeFileSync(join(dir, 'secrets.json'), JSON.stringify({ signing: 'from-file' }));
  const file = join(dir, 'membrane.toml');
  writeFileSync(
    file,
    ['profile = "minimal"', '[server]', 'port = 0', '[net]', 'allowCidrs = ["127.0.0.1/32"]', '[secrets]', 'file = "secrets.json"', 'envPrefix = "ACME_SECRET_"', '[limits]', 'maxInstances = 8', 'bodyBytes = 4096', '[limits.rate]', 'limit = 10', '[limits.storeQuotas]', 'kvBytes = 1000000', 'queues = 5', '[limits.operatorLimits.network]', 'timeoutMs = 45000'].join('\n'),
  );
  const c = loadConfig(file);
  assert.equal(c.profile, 'minimal');
  assert.equal(c.limits?.bodyBytes, 4096);
  process.env['ACME_SECRET_WEBHOOK'] = 'from-env';
  try {
    const o = engineOptionsFrom(c);
    assert.equal(o.maxInstances, 8);
    assert.deepEqual(o.operatorLimits, { network: { timeoutMs: 45000 } });
    assert.deepEqual(o.brokers?.net?.allowCidrs, ['127.0.0.1/32']);
    assert.deepEqual(o.brokers?.rate, { limit: 10 });
    assert.deepEqual(o.brokers?.quotas, { kvBytes: 1000000, queues: 5 });
    assert.deepEqual(Object.keys(o.brokers?.secrets ?? {}).sort(), ['signing', 'webhook']);
  } finally {
    delete process.env['ACME_SECRET_WEBHOOK'];
  }
});

test('the same config as JSON; no config means no CIDRs and no widened limits', () => {
  const file = join(dir, 'membrane.json');
  writeFileSync(file, JSON.stringify({ net: { allowCidrs: ['10.0.0.0/8'] }, limits: { maxInFlight: 4 } }));
  assert.deepEqual(engineOptionsFrom(loadConfig(file)).brokers?.net?.allowCidrs, ['10.0.0.0/8']);
  const none = engineOptionsFrom(null);
  assert.deepEqual(none.brokers?.net?.allowCidrs, []);
  assert.equal(none.operatorLimits, undefined);
});

test('unknown keys, wrong types and bad files are refused with a message naming the problem', () => {
  const write = (name: string, text: string): string => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };
  assert.match(refused(() => loadConfig(write('a.toml', 'prfile = "compute"'))), /a\.toml: unknown key "prfile" in the top level/);
  assert.match(refused(() => loadConfig(write('b.json', '{"limits":{"bodyBytes":-1}}'))), /limits\.bodyBytes/);
  assert.match(refused(() => loadConfig(write('c.json', '{"limits":{"operatorLimits":{"root":{}}}}'))), /unknown key "root" in limits\.operatorLimits/);
  assert.match(refused(() => loadConfig(write('d.json', '{"profile":"root"}'))), /profile/);
  assert.match(refused(() => loadConfig(write('e.toml', '[net\n'))), /e\.toml is not valid TOML/);
  assert.match(refused(() => loadConfig(join(dir, 'missing.json'))), /cannot read the config file "missing\.json"/);
});

test('tokens are stored as SHA-256 hashes in a 0600 file; check is exact; revoke is immediate', () => {
  const file = join(dir, 'tokens.sqlite');
  const store = new TokenStore(file);
  const t = store.create('acme', 'network');
  assert.match(t.token, /^mbt_[A-Za-z0-9_-]{43}$/);
  assert.deepEqual(store.check(t.token), { id: t.id, tenant: 'acme', profile: 'network', hostCaps: [] });
  assert.equal(store.check(`${t.token.slice(0, -1)}${t.token.endsWith('A') ? 'B' : 'A'}`), null);
  assert.equal(store.check(''), null);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  const other = new TokenStore(file); // another process's view (`membrane token revoke`)
  assert.equal(other.revoke(t.id), true);
  assert.equal(store.check(t.token), null);
  other.close();
  store.close();
  const bytes = readFileSync(file);
  assert.ok(!bytes.includes(Buffer.from(t.token.slice(4))), 'the token text is not in the database');
  assert.match(refused(() => new TokenStore(file).create('bad tenant name', 'compute')), /tenant/);
});

test('tokens carry host caps; a tokens.sqlite from before host caps gains the column and its tokens grant none', () => {
  const file = join(dir, 'old-tokens.sqlite');
  const old = openDatabase(file);
  old.exec(`CREATE TABLE tokens (id TEXT PRIMARY KEY, hash BLOB NOT NULL UNIQUE, tenant TEXT NOT NULL, profile TEXT NOT NULL,
    created TEXT NOT NULL, revoked INTEGER NOT NULL DEFAULT 0) STRICT`);
  old.close();
  const store = new TokenStore(file);
  const plain = store.create('acme', 'compute');
  const granted = store.create('acme', 'compute', ['acme:orders', 'acme:orders', 'acme:billing']);
  assert.deepEqual(store.check(plain.token)?.hostCaps, []);
  assert.deepEqual(store.check(granted.token)?.hostCaps, ['acme:orders', 'acme:billing']);
  assert.deepEqual(
    store.list().map((t) => t.hostCaps).sort((a, b) => a.length - b.length),
    [[], ['acme:orders', 'acme:billing']],
  );
  assert.match(refused(() => store.create('acme', 'compute', ['kv'])), /vendor:name/);
  assert.match(refused(() => store.create('acme', 'compute', ['membrane:fuel'])), /reserved/);
  store.close();
});
