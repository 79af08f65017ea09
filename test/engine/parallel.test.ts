// run_command_many (the parallel cap) from a C guest: one command over many inputs on the pool,
// results in input order, a per-task timeout, the input cap, and the layouts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CommandRegistry, createEngine, type Engine } from '../../src/index.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { MAX_PARALLEL_INPUTS, decodeManyRequest, encodeManyRequest } from '../../src/brokers/parallel.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';

const nest = new Uint8Array(readFileSync(new URL('../fixtures/c/nest.wasm', import.meta.url)));
const fanout = new Uint8Array(readFileSync(new URL('../fixtures/c/fanout.wasm', import.meta.url)));
let engine: Engine;

before(() => {
  process.env['MEMBRANE_HOME'] = tempDir('membrane-parallel-');
  const registry = CommandRegistry.withBuiltins();
  registry.register('nest', nest);
  engine = createEngine({ commands: registry, poolSize: 2 });
});
after(() => engine.close());

test('the request layout round-trips and rejects trailing bytes', () => {
  const req = encodeManyRequest(['wc', '-c'], ['a', 'bb'], 250);
  const d = decodeManyRequest(req);
  assert.ok(typeof d !== 'number');
  assert.deepEqual(d.request.name, 'wc');
  assert.deepEqual(d.request.args, ['-c']);
  assert.equal(d.timeoutMs, 250);
  assert.deepEqual(d.inputs.map((i) => new TextDecoder().decode(i)), ['a', 'bb']);
  assert.equal(decodeManyRequest(new Uint8Array([...req, 0])), GUEST_ERR.INVALID);
});

test('one command over many inputs: each input is one task\'s stdin, answers in input order', async () => {
  const r = await engine.run(fanout, { profile: 'posix', argv: ['12', '0', 'wc', '-c'] });
  assert.equal(r.ok, true, r.error?.message);
  const expected = Array.from({ length: 12 }, (_, i) => `task ${i} status 0 error  out ${`line ${i}\n`.length}\n`).join('');
  assert.equal(r.stdout, expected);
});

test('a task past its own timeout ends with TIMEOUT while the call goes on', async () => {
  const t = performance.now();
  const r = await engine.run(fanout, { profile: 'posix', argv: ['3', '200', 'nest', 'spin', '5000'] });
  assert.equal(r.stdout, 'task 0 status -1 error TIMEOUT out \ntask 1 status -1 error TIMEOUT out \ntask 2 status -1 error TIMEOUT out \n');
  assert.ok(performance.now() - t < 200 + LOAD_SLACK_MS);
});

test(`more than ${MAX_PARALLEL_INPUTS} inputs is TOO_LARGE and runs nothing; an unknown command is NOT_FOUND`, async () => {
  const r = await engine.run(fanout, { profile: 'posix', argv: [String(MAX_PARALLEL_INPUTS + 1), '0', 'wc', '-c'] });
  assert.equal(r.stdout, `error ${GUEST_ERR.TOO_LARGE}\n`);
  const missing = await engine.run(fanout, { profile: 'posix', argv: ['2', '0', 'nosuch'] });
  assert.equal(missing.stdout, `error ${GUEST_ERR.NOT_FOUND}\n`);
});

test('without the parallel cap, run_command_many is absent', async () => {
  const r = await engine.run(fanout, { profile: 'minimal', argv: ['2', '0', 'wc'] });
  assert.equal(r.error?.code, 'LINK_UNSATISFIED');
  assert.match(r.error?.message ?? '', /run_command_many: needs cap "parallel"/);
});
