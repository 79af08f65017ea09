// Attack: a tenant fills the engine's shared stores — a queue past its depth, one message or value
// past its size cap — to exhaust the host's database. Each cap answers QUOTA or TOO_LARGE and
// stores nothing beyond it (the 10 000-key kv quota: test/engine/brokers.test.ts).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { createEngine, type Engine } from '../../src/index.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { KV_MAX_VALUE_BYTES } from '../../src/storage/kv.ts';
import { QUEUE_MAX_DEPTH, QUEUE_MAX_MESSAGE_BYTES } from '../../src/storage/queue.ts';
import { tempDir } from '../helpers/tmp.ts';

const guest = new Uint8Array(readFileSync(new URL('../fixtures/c/brokers.wasm', import.meta.url)));
let engine: Engine;

before(() => {
  process.env['MEMBRANE_HOME'] = tempDir('membrane-store-flood-');
  engine = createEngine({ poolSize: 1 });
});
after(() => engine.close());

const run = (tenant: string, ...argv: string[]) => engine.run(guest, { profile: 'network', tenant, argv }).then((r) => r.stdout);

test(`a queue stops at ${QUEUE_MAX_DEPTH} messages with QUOTA; another tenant's queue of the same name is untouched`, async () => {
  assert.equal(await run('filler', 'qflood', String(QUEUE_MAX_DEPTH + 10)), `pushed ${QUEUE_MAX_DEPTH} first error ${GUEST_ERR.QUOTA}\n`);
  assert.equal(await run('filler', 'q', 'len', 'flood'), `len ${QUEUE_MAX_DEPTH}\n`);
  assert.equal(await run('neighbour', 'qflood', '3'), 'pushed 3 first error 0\n');
});

test('a queue message or a kv value one byte over its cap is TOO_LARGE and stores nothing', async () => {
  assert.equal(await run('big', 'bigmsg', String(QUEUE_MAX_MESSAGE_BYTES + 1)), `bigmsg ${GUEST_ERR.TOO_LARGE}\n`);
  assert.equal(await run('big', 'q', 'len', 'big'), 'len 0\n');
  assert.equal(await run('big', 'bigmsg', String(QUEUE_MAX_MESSAGE_BYTES)), 'bigmsg 0\n');
  assert.equal(await run('big', 'bigval', String(KV_MAX_VALUE_BYTES + 1)), `bigval ${GUEST_ERR.TOO_LARGE}\n`);
  assert.equal(await run('big', 'kv', 'get', 'big'), `get error ${GUEST_ERR.NOT_FOUND}\n`);
  assert.equal(await run('big', 'bigval', String(KV_MAX_VALUE_BYTES)), 'bigval 0\n');
});
