// Attack: a guest hammers a broker, and an operator must cut a principal off. The cadence
// answers RATE_LIMITED past the configured count (one audit record per window, the rest
// counted) and REVOKED once the principal is revoked — the tenant, or one instance of it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createEngine, type Engine } from '../../src/index.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { openDatabase } from '../../src/storage/sqlite.ts';
import { tempDir } from '../helpers/tmp.ts';

const guest = new Uint8Array(readFileSync(new URL('../fixtures/c/brokers.wasm', import.meta.url)));
let engine: Engine;
let home: string;

before(() => {
  home = tempDir('membrane-broker-flood-');
  process.env['MEMBRANE_HOME'] = home;
  engine = createEngine({ poolSize: 1, brokers: { rate: { perBroker: { kv: { limit: 50, windowMs: 60_000 } } } } });
});
after(() => engine.close());

function audit(): AuditLog {
  return new AuditLog(openDatabase(join(home, 'engine.sqlite')));
}

test('the kv rate limit answers RATE_LIMITED at the configured count, recorded once per window', async () => {
  const r = await engine.run(guest, { profile: 'minimal', tenant: 'hammer', argv: ['hammer', '80'] });
  assert.equal(r.stdout, 'ok-or-notfound 50 rate-limited 30\n');
  const again = await engine.run(guest, { profile: 'minimal', tenant: 'hammer', argv: ['hammer', '5'] });
  assert.equal(again.stdout, 'ok-or-notfound 0 rate-limited 5\n');
  const other = await engine.run(guest, { profile: 'minimal', tenant: 'calm', argv: ['hammer', '5'] });
  assert.equal(other.stdout, 'ok-or-notfound 5 rate-limited 0\n');
  const denied = audit().tail({ tenant: 'hammer', kind: 'denied' });
  assert.equal(denied.length, 1);
  assert.equal(denied[0]!.detail['code'], 'RATE_LIMITED');
  assert.equal(denied[0]!.detail['broker'], 'kv');
});

test('revoking a tenant stops its broker calls with REVOKED (audited) until restored; others are unaffected', async () => {
  const as = (tenant: string, id?: string) =>
    engine.run(guest, { profile: 'minimal', tenant, ...(id ? { id } : {}), argv: ['q', 'push', 'jobs', 'x'] }).then((r) => r.stdout);
  assert.equal(await as('rogue'), 'push 0\n');
  engine.revoke({ tenant: 'rogue' });
  assert.equal(await as('rogue'), `push ${GUEST_ERR.REVOKED}\n`);
  assert.equal(await as('bystander'), 'push 0\n');
  engine.restore({ tenant: 'rogue' });
  assert.equal(await as('rogue'), 'push 0\n');
  engine.revoke({ tenant: 'rogue', instance: 'rogue-1' });
  assert.equal(await as('rogue', 'rogue-1'), `push ${GUEST_ERR.REVOKED}\n`);
  assert.equal(await as('rogue', 'rogue-2'), 'push 0\n');
  const kinds = audit().tail({ tenant: 'rogue' }).map((r) => `${r.kind}:${String(r.detail['code'] ?? '')}`);
  assert.deepEqual(kinds, ['revoke:', 'denied:REVOKED', 'restore:', 'revoke:', 'denied:REVOKED']);
});

test('a revoked tenant\'s own secrets are zeroized: signing fails even after restore', async () => {
  const e = createEngine({ poolSize: 1, brokers: { secrets: { mine: { value: 'k', tenants: ['gone'] } } } });
  try {
    const sign = () => e.run(guest, { profile: 'minimal', tenant: 'gone', argv: ['sign', 'mine', 'm'] }).then((r) => r.stdout);
    assert.match(await sign(), /^[0-9a-f]{64}\n$/);
    e.revoke({ tenant: 'gone' });
    e.restore({ tenant: 'gone' });
    assert.equal(await sign(), `error ${GUEST_ERR.NOT_FOUND}\n`);
  } finally {
    await e.close();
  }
});
