// The in-sandbox shell end to end: every command a sandboxed wasm guest, files in the VFS.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CommandRegistry, runShell } from '../../src/shell/index.ts';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-sh-');
const engine = testEngine({ poolSize: 2 });
const registry = CommandRegistry.withBuiltins();
const sh = (script: string, vfs?: string) => runShell(engine, registry, script, vfs ? { vfs } : {});

test('echo hello | wc -c prints 6; seq 1 100 | grep 7 | wc -l prints 19', async () => {
  assert.equal((await sh('echo hello | wc -c')).stdout, '6\n');
  assert.equal((await sh('seq 1 100 | grep 7 | wc -l')).stdout, '19\n');
});

test('a pipeline of 10 commands works', async () => {
  const r = await sh('seq 1 50 | sort -r | head -n 40 | tail -n 30 | grep 1 | sort -n | uniq | tr 1 X | cat | wc -l');
  assert.equal(r.exitCode, 0, r.stderr);
  assert.equal(r.stdout, '4\n', 'the same pipeline in GNU coreutils prints 4 (sort -r is lexical)');
});

test('an unknown command exits 127 with "command not found"', async () => {
  const r = await sh('nosuch arg');
  assert.equal(r.exitCode, 127);
  assert.equal(r.stderr, 'sh: nosuch: command not found\n');
  assert.equal((await sh('nosuch; echo $?')).stdout, '127\n');
});

test('&& and || follow exit statuses; variables and quoting expand', async () => {
  const r = await sh('X="a  b"; grep nope < /dev/null || echo "no match: $X"; true && echo yes; false && echo never');
  assert.equal(r.stdout, 'no match: a  b\nyes\n');
});

test('redirections read and write the VFS, and a named VFS keeps files between scripts', async () => {
  const r = await sh('mkdir -p /notes && echo first > /notes/a.txt && echo second >> /notes/a.txt; wc -l < /notes/a.txt', 'sh-persist');
  assert.equal(r.stdout, '2\n', r.stderr);
  const again = await sh('cat /notes/a.txt | sha256sum', 'sh-persist');
  assert.match(again.stdout, /^[0-9a-f]{64} {2}-\n$/);
  assert.equal((await sh('cat /notes/a.txt')).exitCode, 1, 'a script without a named VFS starts empty');
});

test('a command the sandbox stops ends with status 126 and says why; the script goes on', async () => {
  registry.register('boom', await (await import('../helpers/wat.ts')).watText('(module (memory (export "memory") 1) (func (export "_start") unreachable))'));
  const r = await runShell(engine, registry, 'boom; echo "after $?"');
  assert.equal(r.stdout, 'after 126\n');
  assert.match(r.stderr, /sh: boom: GUEST_TRAP/);
  assert.equal(r.error, undefined);
});

test('a command that spends the script\'s whole budget ends the script with TIMEOUT', async () => {
  registry.register('spin', await (await import('../helpers/wat.ts')).watText('(module (memory (export "memory") 1) (func (export "_start") (loop $l br $l)))'));
  const r = await runShell(engine, registry, 'spin; echo after', { timeoutMs: 100 });
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /sh: spin: TIMEOUT/);
  assert.equal(r.exitCode, 2);
  assert.equal(r.error?.code, 'TIMEOUT');
  assert.match(r.error?.message ?? '', /ran past its 100 ms budget/);
});
