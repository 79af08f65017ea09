// A `.wat` with a syntax error: run, inspect and instrument report wabt's FILE:LINE:COL and
// reason as INVALID_MODULE (exit 66), not a bare "parseWat failed:"; the text a hostile file puts
// in the message cannot drive the terminal.
import assert from 'node:assert/strict';
import { writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { compileWat, watError } from '../../src/interfaces/cli/wat.ts';
import { SandboxError } from '../../src/errors.ts';
import { runCli } from '../helpers/cli.ts';
import { tempDir } from '../helpers/tmp.ts';

const DIR = tempDir('membrane-wat-');
const membrane = (args: string[]) => runCli(args, { MEMBRANE_HOME: DIR });
// 12 characters: a name length wabt itself garbles in its messages.
const BAD = join(DIR, 'bad-wat1.wat');
writeFileSync(BAD, '(module\n  (func (export "f")\n    foo))\n');

test('run, inspect and instrument: INVALID_MODULE with FILE:3:5 and wabt\'s reason, exit 66', async () => {
  const want = `membrane: INVALID_MODULE: ${BAD}:3:5: error: unexpected token foo, expected ).\n`;
  const run = await membrane(['run', BAD]);
  assert.equal(run.code, 66);
  assert.equal(run.stderr, want);
  const inspect = await membrane(['inspect', BAD]);
  assert.equal(inspect.code, 66);
  assert.equal(inspect.stderr, want);
  const out = join(DIR, 'out.wasm');
  const inst = await membrane(['instrument', BAD, '-o', out]);
  assert.equal(inst.code, 66);
  assert.equal(inst.stderr, want);
  assert.ok(!existsSync(out), 'no output for a module that does not parse');
});

test('run --json: the position is in the error details', async () => {
  const r = await membrane(['run', BAD, '--json']);
  const out = JSON.parse(r.stdout) as { error: { code: string; message: string; details: { line: number; column: number } } };
  assert.equal(out.error.code, 'INVALID_MODULE');
  assert.deepEqual(out.error.details, { line: 3, column: 5 });
  assert.match(out.error.message, /bad-wat1\.wat:3:5: error: unexpected token foo/);
});

test('an undefined name and several errors: each with its position, at most three, then a count', async () => {
  await assert.rejects(compileWat('u.wat', '(module (func (call $nope)))'), (e: SandboxError) => {
    assert.equal(e.code, 'INVALID_MODULE');
    assert.match(e.message, /^u\.wat:1:21: error: undefined function variable "\$nope"/);
    return true;
  });
  const many = '(module\n' + Array.from({ length: 6 }, (_, i) => `  (func $f${i} (call $missing${i}))\n`).join('') + ')';
  await assert.rejects(compileWat('m.wat', many), (e: SandboxError) => {
    assert.equal(e.message.split('; ').length, 3);
    assert.match(e.message, /\(and 3 more\)$/);
    return true;
  });
});

test('control and bidi characters from a hostile file are escaped in the message', async () => {
  const evil = join(DIR, 'evil.wat');
  writeFileSync(evil, '(module\n  (func "\u001b[2J\u202e" x))\n');
  const r = await membrane(['run', evil]);
  assert.equal(r.code, 66);
  assert.ok(!/[\u001b\u202e]/.test(r.stderr), JSON.stringify(r.stderr));
  assert.match(r.stderr, /evil\.wat:2:\d+: error: /);
  const e = watError('a\u001b.wat', new Error('parseWat failed:\nx.wat:1:2: error: bad \u009b token\n'));
  assert.equal(e.message, 'a\\u001b.wat:1:2: error: bad \\u009b token');
});

test('a valid .wat still runs', async () => {
  const ok = join(DIR, 'ok.wat');
  writeFileSync(ok, '(module (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add))');
  const r = await membrane(['run', ok, '--invoke', 'add', '--arg', '2', '--arg', '40']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, '42\n');
});
