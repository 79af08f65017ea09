// The kv, queue and secrets brokers from a C guest (test/fixtures/c/brokers.c): values,
// limits, the answer convention (sizes asked for, nothing consumed), and the audit records.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createHmac } from 'node:crypto';
import { after, before, test } from 'node:test';
import { createEngine, type Engine } from '../../src/index.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { KV_MAX_KEYS } from '../../src/storage/kv.ts';
import { memoryTempDir } from '../helpers/tmp.ts';

const guest = new Uint8Array(readFileSync(new URL('../fixtures/c/brokers.wasm', import.meta.url)));
let engine: Engine;
const SECRET = 'correct horse battery staple';

before(() => {
  // The 10 000-key flood is 10 000 SQLite commits, each fsynced (the default durability): a few
  // seconds on an idle disk, ~50 s on a busy one. Durability is not what this file tests, so the
  // home is in memory where the machine has one (the same commits, without the disk); elsewhere
  // it can take past 30 s on a loaded 2-core machine, so this engine's operator raises `network`'s
  // time ceiling.
  process.env['MEMBRANE_HOME'] = memoryTempDir('membrane-brokers-');
  engine = createEngine({
    poolSize: 1,
    operatorLimits: { network: { timeoutMs: 180_000 } },
    brokers: { secrets: { signer: SECRET, scoped: { value: 'only-acme', tenants: ['acme'] } } },
  });
});
after(() => engine.close());

const run = async (tenant: string, ...argv: string[]) => {
  // `network`: the same caps as minimal plus a long budget for the 10 000-key flood.
  const r = await engine.run(guest, { profile: 'network', tenant, argv });
  assert.equal(r.ok, true, r.error?.message);
  return r.stdout;
};

test('kv: put, get, list by prefix, delete; a missing key is NOT_FOUND', async () => {
  assert.equal(await run('t-kv', 'kv', 'put', 'user:1', 'ada'), 'put 0\n');
  assert.equal(await run('t-kv', 'kv', 'put', 'user:2', 'bob'), 'put 0\n');
  assert.equal(await run('t-kv', 'kv', 'put', 'other', 'x'), 'put 0\n');
  assert.equal(await run('t-kv', 'kv', 'get', 'user:1'), 'get ada\n');
  assert.equal(await run('t-kv', 'kv', 'list', 'user:'), 'list ["user:1","user:2"]\n');
  assert.equal(await run('t-kv', 'kv', 'list', 'us%'), 'list []\n');
  assert.equal(await run('t-kv', 'kv', 'del', 'user:1'), 'del 0\n');
  assert.equal(await run('t-kv', 'kv', 'get', 'user:1'), `get error ${GUEST_ERR.NOT_FOUND}\n`);
  assert.equal(await run('t-kv', 'kv', 'del', 'user:1'), `del ${GUEST_ERR.NOT_FOUND}\n`);
});

test(`kv: at most ${KV_MAX_KEYS} keys per tenant (QUOTA); an oversized key is TOO_LARGE`, async () => {
  assert.equal(await run('t-flood', 'kvflood', String(KV_MAX_KEYS + 5)), `stored ${KV_MAX_KEYS} first error ${GUEST_ERR.QUOTA}\n`);
  assert.equal(await run('t-flood', 'kv', 'put', 'k'.repeat(1025), 'v'), `put ${GUEST_ERR.TOO_LARGE}\n`);
  // Overwriting an existing key at the quota is fine; another tenant is unaffected.
  assert.equal(await run('t-flood', 'kv', 'put', 'flood-0', 'again'), 'put 0\n');
  assert.equal(await run('t-other', 'kv', 'put', 'k', 'v'), 'put 0\n');
});

test('queue: FIFO per tenant; a message that does not fit stays queued until the retry', async () => {
  assert.equal(await run('t-q', 'q', 'push', 'jobs', 'first'), 'push 0\n');
  assert.equal(await run('t-q', 'q', 'push', 'jobs', 'second'), 'push 0\n');
  assert.equal(await run('t-q', 'q', 'len', 'jobs'), 'len 2\n');
  assert.equal(await run('t-q', 'q', 'popsmall', 'jobs'), 'need 5 len 2\npop first\n');
  assert.equal(await run('t-q', 'q', 'pop', 'jobs'), 'pop second\n');
  assert.equal(await run('t-q', 'q', 'pop', 'jobs'), `pop error ${GUEST_ERR.NOT_FOUND}\n`);
});

test('secrets: secret_sign is HMAC-SHA256 under the named secret; scoping and unknown names are NOT_FOUND', async () => {
  const expected = createHmac('sha256', SECRET).update('hello').digest('hex');
  assert.equal(await run('t-s', 'sign', 'signer', 'hello'), `${expected}\n`);
  assert.equal(await run('t-s', 'sign', 'nosuch', 'hello'), `error ${GUEST_ERR.NOT_FOUND}\n`);
  assert.equal(await run('t-s', 'sign', 'scoped', 'hello'), `error ${GUEST_ERR.NOT_FOUND}\n`);
  assert.equal(await run('acme', 'sign', 'scoped', 'hello'), `${createHmac('sha256', 'only-acme').update('hello').digest('hex')}\n`);
});

test('an ungranted broker is absent: compute cannot even link kv_get', async () => {
  const r = await engine.run(guest, { profile: 'compute', argv: ['kv', 'get', 'x'] });
  assert.equal(r.error?.code, 'LINK_UNSATISFIED');
});
