// echo, cat, wc, head, tail: output byte-exact with GNU coreutils for the common cases.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withSandbox } from './harness.ts';

const LINES = Array.from({ length: 15 }, (_, i) => `line ${i + 1}\n`).join('');

test('echo joins its arguments with spaces and ends with a newline', () => withSandbox(async (sb) => {
  assert.deepEqual(await sb.run('echo', ['hello', 'world']), { status: 0, stdout: 'hello world\n', stderr: '' });
  assert.equal((await sb.run('echo')).stdout, '\n');
}));

test('echo -n leaves out the newline; an unknown option is printed as text', () => withSandbox(async (sb) => {
  assert.equal((await sb.run('echo', ['-n', 'a', 'b'])).stdout, 'a b');
  assert.equal((await sb.run('echo', ['-nn', 'x'])).stdout, 'x');
  assert.equal((await sb.run('echo', ['-x', 'y'])).stdout, '-x y\n');
  assert.equal((await sb.run('echo', ['--', 'a'])).stdout, '-- a\n');
}));

test('cat concatenates files and "-" as stdin, in order', () => withSandbox(async (sb) => {
  sb.write({ 'a.txt': 'one\n', 'dir/b.txt': 'two' });
  assert.deepEqual(await sb.run('cat', ['a.txt', '-', 'dir/b.txt'], 'in\n'), { status: 0, stdout: 'one\nin\ntwo', stderr: '' });
  assert.equal((await sb.run('cat', ['/a.txt'])).stdout, 'one\n');
}));

test('cat with no operand copies stdin, binary-safe', () => withSandbox(async (sb) => {
  const bytes = Buffer.from(new Uint8Array(200_000).map((_, i) => (i * 7 + (i >> 8)) & 0xff));
  assert.deepEqual(await sb.runBytes('cat', [], bytes), { status: 0, stdout: bytes });
  sb.write({ 'bin.dat': bytes });
  assert.deepEqual(await sb.runBytes('cat', ['bin.dat', '-']), { status: 0, stdout: bytes });
}));

test('cat reports a missing file, keeps going, and exits 1', () => withSandbox(async (sb) => {
  sb.write({ 'a.txt': 'A\n' });
  assert.deepEqual(await sb.run('cat', ['nope', 'a.txt']), {
    status: 1, stdout: 'A\n', stderr: 'cat: nope: No such file or directory\n',
  });
}));

test('wc on stdin pads to width 7; a single count prints the bare number', () => withSandbox(async (sb) => {
  assert.equal((await sb.run('wc', [], 'a b\nc\n')).stdout, '      2       3       6\n');
  assert.equal((await sb.run('wc', ['-l'], 'a\nb\n')).stdout, '2\n');
  assert.equal((await sb.run('wc', ['-w'], ' a  b\tc\n')).stdout, '3\n');
  assert.equal((await sb.run('wc', ['-c'], 'hello\n')).stdout, '6\n');
  assert.equal((await sb.run('wc', ['-c'], '')).stdout, '0\n');
}));

test('wc on files: width from the total size, names, and a total line', () => withSandbox(async (sb) => {
  sb.write({ 'a.txt': 'one\ntwo three\nfour\none\n', 'n.txt': '10\n9\n-3\n2.5\n10\nabc\n 7\n-0\n' });
  assert.equal((await sb.run('wc', ['a.txt'])).stdout, ' 4  5 23 a.txt\n');
  assert.equal((await sb.run('wc', ['-w', 'a.txt'])).stdout, '5 a.txt\n');
  assert.equal((await sb.run('wc', ['-lc', 'a.txt'])).stdout, ' 4 23 a.txt\n');
  assert.equal((await sb.run('wc', ['a.txt', 'n.txt'])).stdout, ' 4  5 23 a.txt\n 8  8 25 n.txt\n12 13 48 total\n');
  assert.equal((await sb.run('wc', ['a.txt', '-'], 'xx yy\n')).stdout, '      4       5      23 a.txt\n      1       2       6 -\n      5       7      29 total\n');
}));

test('wc reports a missing file and exits 1', () => withSandbox(async (sb) => {
  const r = await sb.run('wc', ['-l', 'nope']);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, 'wc: nope: No such file or directory\n');
}));

test('head prints the first 10 lines by default, -n N, -N, and -n 0', () => withSandbox(async (sb) => {
  sb.write({ 'l.txt': LINES });
  const ten = LINES.split('\n').slice(0, 10).join('\n') + '\n';
  assert.equal((await sb.run('head', [], LINES)).stdout, ten);
  assert.equal((await sb.run('head', ['l.txt'])).stdout, ten);
  assert.equal((await sb.run('head', ['-n', '2', 'l.txt'])).stdout, 'line 1\nline 2\n');
  assert.equal((await sb.run('head', ['-n3'], LINES)).stdout, 'line 1\nline 2\nline 3\n');
  assert.equal((await sb.run('head', ['-1', 'l.txt'])).stdout, 'line 1\n');
  assert.equal((await sb.run('head', ['-n', '0', 'l.txt'])).stdout, '');
  assert.equal((await sb.run('head', ['-n', '99'], 'a\nb')).stdout, 'a\nb');
}));

test('head and tail label several files like GNU', () => withSandbox(async (sb) => {
  sb.write({ 'a.txt': '1\n2\n', 'b.txt': 'x\n' });
  assert.equal((await sb.run('head', ['-n', '1', 'a.txt', 'b.txt'])).stdout, '==> a.txt <==\n1\n\n==> b.txt <==\nx\n');
  assert.equal((await sb.run('tail', ['-n', '1', 'a.txt', '-'], 'z\n')).stdout, '==> a.txt <==\n2\n\n==> standard input <==\nz\n');
}));

test('head and tail reject a bad count with status 2', () => withSandbox(async (sb) => {
  const h = await sb.run('head', ['-n', 'x']);
  assert.equal(h.status, 2);
  assert.match(h.stderr, /^head: invalid number of lines: 'x'\n/);
  assert.equal((await sb.run('tail', ['-n', '1x'])).status, 2);
}));

test('tail prints the last 10 lines by default, -n N, -N, -n +N', () => withSandbox(async (sb) => {
  sb.write({ 'l.txt': LINES, 'nonl.txt': 'x\ny' });
  assert.equal((await sb.run('tail', [], LINES)).stdout, LINES.split('\n').slice(5).join('\n'));
  assert.equal((await sb.run('tail', ['-n', '2', 'l.txt'])).stdout, 'line 14\nline 15\n');
  assert.equal((await sb.run('tail', ['-3'], '1\n2\n3\n4\n')).stdout, '2\n3\n4\n');
  assert.equal((await sb.run('tail', ['-n', '+14', 'l.txt'])).stdout, 'line 14\nline 15\n');
  assert.equal((await sb.run('tail', ['-n', '1', 'nonl.txt'])).stdout, 'y');
  assert.equal((await sb.run('tail', ['-n', '0', 'l.txt'])).stdout, '');
  assert.equal((await sb.run('tail', ['-n', '50'], 'a\nb\n')).stdout, 'a\nb\n');
}));

test('head and tail report a missing file and exit 1', () => withSandbox(async (sb) => {
  assert.deepEqual(await sb.run('head', ['nope']), { status: 1, stdout: '', stderr: 'head: nope: No such file or directory\n' });
  assert.deepEqual(await sb.run('tail', ['nope']), { status: 1, stdout: '', stderr: 'tail: nope: No such file or directory\n' });
}));
