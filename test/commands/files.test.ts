// ls, mkdir, rm, cp, mv against a fresh directory tree per test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withSandbox } from './harness.ts';

const TREE = { 'a.txt': 'hello\n', 'd/b.txt': 'x\n', 'd/.hidden': '', 'd/sub/c.txt': 'c\n' };

test('ls lists one name per line, sorted, hiding dot files', () => withSandbox(async (sb) => {
  sb.write(TREE);
  assert.deepEqual(await sb.run('ls'), { status: 0, stdout: 'a.txt\nd\n', stderr: '' });
  assert.equal((await sb.run('ls', ['d'])).stdout, 'b.txt\nsub\n');
  assert.equal((await sb.run('ls', ['-1', '/d/'])).stdout, 'b.txt\nsub\n');
  assert.equal((await sb.run('ls', ['a.txt'])).stdout, 'a.txt\n');
}));

test('ls -a shows ".", ".." and dot files', () => withSandbox(async (sb) => {
  sb.write(TREE);
  assert.equal((await sb.run('ls', ['-a', 'd'])).stdout, '.\n..\n.hidden\nb.txt\nsub\n');
}));

test('ls with several operands: files first, then "DIR:" sections', () => withSandbox(async (sb) => {
  sb.write(TREE);
  assert.equal((await sb.run('ls', ['d', 'a.txt', 'd/sub'])).stdout, 'a.txt\n\nd:\nb.txt\nsub\n\nd/sub:\nc.txt\n');
}));

test('ls -l prints type, mode placeholder, links, size, UTC time and name', () => withSandbox(async (sb) => {
  sb.write(TREE);
  const lines = (await sb.run('ls', ['-l', 'd'])).stdout.split('\n');
  assert.match(lines[0] ?? '', /^-rw-r--r-- 1 2 \d{4}-\d\d-\d\d \d\d:\d\d b\.txt$/);
  assert.match(lines[1] ?? '', /^drwxr-xr-x \d+ \d+ \d{4}-\d\d-\d\d \d\d:\d\d sub$/);
  assert.equal(lines.length, 3);
  assert.match((await sb.run('ls', ['-la', 'd'])).stdout, /^d.* \.\nd.* \.\.\n-.* \.hidden\n/);
}));

test('ls on a missing operand exits 2 like GNU', () => withSandbox(async (sb) => {
  assert.deepEqual(await sb.run('ls', ['nope']), { status: 2, stdout: '', stderr: "ls: cannot access 'nope': No such file or directory\n" });
}));

test('mkdir creates a directory; an existing one or a missing parent fails', () => withSandbox(async (sb) => {
  assert.equal((await sb.run('mkdir', ['x', 'y'])).status, 0);
  assert.ok(sb.isDirectory('x') && sb.isDirectory('y'));
  assert.deepEqual(await sb.run('mkdir', ['x']), { status: 1, stdout: '', stderr: "mkdir: cannot create directory 'x': File exists\n" });
  assert.deepEqual(await sb.run('mkdir', ['p/q']), { status: 1, stdout: '', stderr: "mkdir: cannot create directory 'p/q': No such file or directory\n" });
  assert.equal((await sb.run('mkdir')).status, 2);
}));

test('mkdir -p creates parents and accepts an existing directory', () => withSandbox(async (sb) => {
  sb.write({ 'f.txt': '' });
  assert.equal((await sb.run('mkdir', ['-p', 'p/q/r'])).status, 0);
  assert.ok(sb.isDirectory('p/q/r'));
  assert.equal((await sb.run('mkdir', ['-p', 'p/q/r', '/p'])).status, 0);
  assert.equal((await sb.run('mkdir', ['-p', 'f.txt/q'])).status, 1);
}));

test('rm removes files; a directory needs -r; missing operands fail unless -f', () => withSandbox(async (sb) => {
  sb.write(TREE);
  assert.equal((await sb.run('rm', ['a.txt'])).status, 0);
  assert.equal(sb.exists('a.txt'), false);
  assert.deepEqual(await sb.run('rm', ['d']), { status: 1, stdout: '', stderr: "rm: cannot remove 'd': Is a directory\n" });
  assert.deepEqual(await sb.run('rm', ['nope']), { status: 1, stdout: '', stderr: "rm: cannot remove 'nope': No such file or directory\n" });
  assert.deepEqual(await sb.run('rm', ['-f', 'nope']), { status: 0, stdout: '', stderr: '' });
  assert.equal((await sb.run('rm', ['-f'])).status, 0);
  assert.equal((await sb.run('rm')).status, 2);
}));

test('rm -r removes a tree, dot files included, and a deep one', () => withSandbox(async (sb) => {
  sb.write(TREE);
  const deep = Array.from({ length: 40 }, (_, i) => `n${i}`).join('/');
  sb.write({ [`deep/${deep}/leaf.txt`]: 'x' });
  assert.equal((await sb.run('rm', ['-r', 'd', 'deep'])).status, 0);
  assert.deepEqual(sb.list(), ['a.txt']);
  assert.equal((await sb.run('rm', ['-rf', 'd', 'a.txt'])).status, 0);
  assert.deepEqual(sb.list(), []);
}));

test('cp copies a file, into a directory, and several files into a directory', () => withSandbox(async (sb) => {
  sb.write(TREE);
  assert.equal((await sb.run('cp', ['a.txt', 'a2.txt'])).status, 0);
  assert.equal(sb.read('a2.txt'), 'hello\n');
  assert.equal((await sb.run('cp', ['a.txt', 'd'])).status, 0);
  assert.equal(sb.read('d/a.txt'), 'hello\n');
  assert.equal((await sb.run('mkdir', ['t'])).status, 0);
  assert.equal((await sb.run('cp', ['a.txt', 'd/b.txt', 't/'])).status, 0);
  assert.deepEqual(sb.list('t'), ['a.txt', 'b.txt']);
  sb.write({ 'a2.txt': 'old contents that are longer\n' });
  assert.equal((await sb.run('cp', ['a.txt', 'a2.txt'])).status, 0);
  assert.equal(sb.read('a2.txt'), 'hello\n');
}));

test('cp refuses a directory without -r, a missing source, and a non-directory target', () => withSandbox(async (sb) => {
  sb.write(TREE);
  assert.deepEqual(await sb.run('cp', ['d', 'e']), { status: 1, stdout: '', stderr: "cp: -r not specified; omitting directory 'd'\n" });
  assert.deepEqual(await sb.run('cp', ['nope', 'e']), { status: 1, stdout: '', stderr: "cp: cannot stat 'nope': No such file or directory\n" });
  assert.deepEqual(await sb.run('cp', ['a.txt', 'd/b.txt', 'a.txt']), { status: 1, stdout: '', stderr: "cp: target 'a.txt' is not a directory\n" });
  assert.equal((await sb.run('cp', ['a.txt'])).status, 2);
}));

test('cp -r copies a tree, and into an existing directory', () => withSandbox(async (sb) => {
  sb.write(TREE);
  assert.equal((await sb.run('cp', ['-r', 'd', 'e'])).status, 0);
  assert.equal((await sb.run('ls', ['-a', 'e', 'e/sub'])).stdout, 'e:\n.\n..\n.hidden\nb.txt\nsub\n\ne/sub:\n.\n..\nc.txt\n');
  assert.equal(sb.read('e/sub/c.txt'), 'c\n');
  assert.equal((await sb.run('cp', ['-r', 'd', 'e'])).status, 0);
  assert.equal(sb.read('e/d/sub/c.txt'), 'c\n');
}));

test('mv renames, moves into a directory, and moves directories', () => withSandbox(async (sb) => {
  sb.write(TREE);
  assert.equal((await sb.run('mv', ['a.txt', 'b.txt'])).status, 0);
  assert.equal(sb.read('b.txt'), 'hello\n');
  assert.equal(sb.exists('a.txt'), false);
  assert.equal((await sb.run('mv', ['b.txt', 'd'])).status, 0);
  assert.equal(sb.read('d/b.txt'), 'hello\n');
  assert.equal((await sb.run('mv', ['d', 'e'])).status, 0);
  assert.equal(sb.read('e/sub/c.txt'), 'c\n');
  sb.write({ 'f1': '1', 'f2': '2' });
  assert.equal((await sb.run('mv', ['f1', 'f2', 'e/sub'])).status, 0);
  assert.deepEqual(sb.list('e/sub'), ['c.txt', 'f1', 'f2']);
}));

test('mv reports a missing source and a non-directory target', () => withSandbox(async (sb) => {
  sb.write({ 'a': '', 'b': '' });
  assert.deepEqual(await sb.run('mv', ['nope', 'z']), { status: 1, stdout: '', stderr: "mv: cannot stat 'nope': No such file or directory\n" });
  assert.deepEqual(await sb.run('mv', ['a', 'b', 'b']), { status: 1, stdout: '', stderr: "mv: target 'b' is not a directory\n" });
  assert.equal((await sb.run('mv', ['a'])).status, 2);
}));
