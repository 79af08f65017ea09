// Attack: one tenant's guest reaches for another tenant's keys and queues. No import takes a
// tenant — the engine captured it at start — so the same names address different data.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { createEngine, type Engine } from '../../src/index.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { tempDir } from '../helpers/tmp.ts';

const guest = new Uint8Array(readFileSync(new URL('../fixtures/c/brokers.wasm', import.meta.url)));
let engine: Engine;

before(() => {
  process.env['MEMBRANE_HOME'] = tempDir('membrane-tenants-');
  engine = createEngine({ poolSize: 2 });
});
after(() => engine.close());

test('tenant B cannot read, list, delete or overwrite tenant A\'s keys, even with A\'s key names', async () => {
  const as = (tenant: string, ...argv: string[]) => engine.run(guest, { profile: 'minimal', tenant, argv }).then((r) => r.stdout);
  assert.equal(await as('tenant-a', 'kv', 'put', 'secret-plan', 'A only'), 'put 0\n');
  // Two instances at once, one per tenant, asking for the same key.
  const [seenByA, seenByB] = await Promise.all([as('tenant-a', 'kv', 'get', 'secret-plan'), as('tenant-b', 'kv', 'get', 'secret-plan')]);
  assert.equal(seenByA, 'get A only\n');
  assert.equal(seenByB, `get error ${GUEST_ERR.NOT_FOUND}\n`);
  assert.equal(await as('tenant-b', 'kv', 'list', ''), 'list []\n');
  assert.equal(await as('tenant-b', 'kv', 'del', 'secret-plan'), `del ${GUEST_ERR.NOT_FOUND}\n`);
  assert.equal(await as('tenant-b', 'kv', 'put', 'secret-plan', 'B'), 'put 0\n');
  assert.equal(await as('tenant-a', 'kv', 'get', 'secret-plan'), 'get A only\n');
  // Names that look like escapes are plain keys.
  assert.equal(await as('tenant-b', 'kv', 'get', '../tenant-a/secret-plan'), `get error ${GUEST_ERR.NOT_FOUND}\n`);
  assert.equal(await as('tenant-b', 'kv', 'list', 'secret'), 'list ["secret-plan"]\n');
});

test('tenant B cannot pop or count tenant A\'s queue', async () => {
  const as = (tenant: string, ...argv: string[]) => engine.run(guest, { profile: 'minimal', tenant, argv }).then((r) => r.stdout);
  assert.equal(await as('tenant-a', 'q', 'push', 'inbox', 'for A'), 'push 0\n');
  assert.equal(await as('tenant-b', 'q', 'len', 'inbox'), 'len 0\n');
  assert.equal(await as('tenant-b', 'q', 'pop', 'inbox'), `pop error ${GUEST_ERR.NOT_FOUND}\n`);
  assert.equal(await as('tenant-a', 'q', 'pop', 'inbox'), 'pop for A\n');
});
