// run_command and exec from a guest (test/fixtures/c/nest.c through sdk/c/membrane.h): the
// response layout, the retry rule, the caller's VFS, fuel billed to the caller, _steps.jsonl.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { CommandRegistry, createEngine, type Engine } from '../../src/index.ts';
import { decodeRequest, decodeResponse, encodeRequest, encodeResponse, GUEST_ERR } from '../../src/abi/command.ts';
import { Vfs, resolveVfs } from '../../src/storage/index.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';

const fixture = (n: string) => new Uint8Array(readFileSync(new URL(`../fixtures/c/${n}.wasm`, import.meta.url)));
const nest = fixture('nest');
let engine: Engine;

before(() => {
  process.env['MEMBRANE_HOME'] = tempDir('membrane-cmds-');
  const registry = CommandRegistry.withBuiltins();
  registry.register('nest', nest);
  engine = createEngine({ commands: registry, poolSize: 1 });
});
after(() => engine.close());

test('the request and response layouts round-trip and reject malformed bytes', () => {
  const req = encodeRequest(['grep', '-c', 'x'], 'x\ny\nx\n');
  assert.deepEqual(decodeRequest(req), { name: 'grep', args: ['-c', 'x'], stdin: new TextEncoder().encode('x\ny\nx\n') });
  assert.equal(decodeRequest(req.subarray(0, req.length - 1)), GUEST_ERR.INVALID);
  assert.equal(decodeRequest(new Uint8Array([2, 0, 1, 0])), GUEST_ERR.INVALID);
  assert.equal(decodeRequest(encodeRequest([])), GUEST_ERR.INVALID);
  assert.equal(decodeRequest(encodeRequest(['a\0b'])), GUEST_ERR.INVALID);
  const res = { status: 3, error: '', stdout: new Uint8Array([1, 2]), stderr: new Uint8Array([3]), stdoutTruncated: true, stderrTruncated: false };
  assert.deepEqual(decodeResponse(encodeResponse(res)), res);
});

test('run_command runs a registered command with argv and stdin and returns its output', async () => {
  const r = await engine.run(nest, { profile: 'minimal', argv: ['run', 'wc', '-c'] });
  assert.equal(r.ok, true, r.error?.message);
  assert.equal(r.stdout, '6\nstatus=0 error=\n');
});

test('a buffer too small gets the size, and the retry is served without running again', async () => {
  const r = await engine.run(nest, { profile: 'minimal', argv: ['small', 'seq', '1', '5'] });
  assert.equal(r.stdout, 'need=30 got=30\n1\n2\n3\n4\n5\nstatus=0 error=\n');
});

test('an unknown command is NOT_FOUND and nothing runs', async () => {
  const r = await engine.run(nest, { profile: 'minimal', argv: ['run', 'nosuch'] });
  assert.equal(r.stdout, `error ${GUEST_ERR.NOT_FOUND}\n`);
  const path = await engine.run(nest, { profile: 'minimal', argv: ['run', '../bin/echo'] });
  assert.equal(path.stdout, `error ${GUEST_ERR.NOT_FOUND}\n`);
});

test('a command exiting non-zero reports its status; argv is a structure, not a shell line', async () => {
  const r = await engine.run(nest, { profile: 'minimal', argv: ['run', 'grep', 'zzz'] });
  assert.equal(r.stdout, 'status=1 error=\n');
  const literal = await engine.run(nest, { profile: 'minimal', argv: ['exec', 'echo', 'a; rm -rf / | $(x)'] });
  assert.equal(literal.stdout, 'a; rm -rf / | $(x)\nstatus=0 error=\n');
});

test('a nested command works on the caller\'s VFS and exec appends one line per call to _steps.jsonl', async () => {
  const name = 'cmds-steps';
  await engine.run(nest, { profile: 'minimal', vfs: name, argv: ['exec', 'mkdir', '/made'] });
  await engine.run(nest, { profile: 'minimal', vfs: name, argv: ['exec', 'ls', '/'] }).then((r) => assert.match(r.stdout, /made/));
  await engine.run(nest, { profile: 'minimal', vfs: name, argv: ['exec', 'nosuch'] });
  const vfs = Vfs.open({ file: resolveVfs({ name }).file });
  try {
    const st = vfs.stat('workspace', '_steps.jsonl');
    const lines = new TextDecoder().decode(vfs.read(st.ino, 0, st.size)).trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(lines.length, 3);
    assert.deepEqual(lines[0].argv, ['mkdir', '/made']);
    assert.equal(lines[0].status, 0);
    assert.equal(lines[0].depth, 1);
    assert.ok(lines[0].fuelUsed > 0 && typeof lines[0].durationMs === 'number' && typeof lines[0].time === 'string');
    assert.deepEqual(lines[2], { ...lines[2], argv: ['nosuch'], refused: 'NOT_FOUND' });
  } finally {
    vfs.close();
  }
});

test('a nested command\'s fuel is billed to its caller and bounded by what the caller has left', async () => {
  const small = await engine.run(nest, { profile: 'minimal', argv: ['run', 'seq', '1', '10'] });
  const big = await engine.run(nest, { profile: 'minimal', argv: ['run', 'seq', '1', '20000'] });
  assert.ok(big.fuelUsed > small.fuelUsed + 100_000, `${big.fuelUsed} vs ${small.fuelUsed}`);
  const starved = await engine.run(nest, { profile: 'minimal', fuel: 200_000, argv: ['run', 'seq', '1', '1000000'] });
  assert.equal(starved.ok, false);
  assert.equal(starved.error?.code, 'FUEL_EXHAUSTED');
  assert.equal(starved.fuelUsed, 200_000);
});

test('a nested command cannot outlive its caller\'s deadline', async () => {
  const t = performance.now();
  const r = await engine.run(nest, { profile: 'minimal', timeoutMs: 300, argv: ['run', 'nest', 'spin', '5000'] });
  assert.equal(r.error?.code, 'TIMEOUT');
  assert.ok(performance.now() - t < 300 + LOAD_SLACK_MS);
});

test('without the commands cap, run_command is absent: the module does not link', async () => {
  const r = await engine.run(nest, { profile: 'compute', argv: ['run', 'echo'] });
  assert.equal(r.error?.code, 'LINK_UNSATISFIED');
  assert.match(r.error?.message ?? '', /membrane\.run_command: needs cap "commands"/);
});
