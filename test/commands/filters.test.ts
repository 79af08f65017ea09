// grep, sort, uniq, tr: flags, statuses and GNU-exact output (sort compares as under LC_ALL=C).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withSandbox } from './harness.ts';

const A = 'one\ntwo three\nfour\none\n';
const NUMS = '10\n9\n-3\n2.5\n10\nabc\n 7\n-0\n';

test('grep prints matching lines and exits 0; no match exits 1', () => withSandbox(async (sb) => {
  sb.write({ 'a.txt': A });
  assert.deepEqual(await sb.run('grep', ['o', 'a.txt']), { status: 0, stdout: 'one\ntwo three\nfour\none\n', stderr: '' });
  assert.deepEqual(await sb.run('grep', ['zzz', 'a.txt']), { status: 1, stdout: '', stderr: '' });
  assert.equal((await sb.run('grep', ['hr'], A)).stdout, 'two three\n');
}));

test('grep uses basic regular expressions, and -E extended ones', () => withSandbox(async (sb) => {
  assert.equal((await sb.run('grep', ['^t.o'], A)).stdout, 'two three\n');
  assert.equal((await sb.run('grep', ['e$'], A)).stdout, 'one\ntwo three\none\n');
  assert.equal((await sb.run('grep', ['o\\{2\\}'], 'foo\nfo\n')).stdout, 'foo\n');
  assert.equal((await sb.run('grep', ['one|four'], A)).status, 1);
  assert.equal((await sb.run('grep', ['-E', 'one|four'], A)).stdout, 'one\nfour\none\n');
}));

test('grep -F matches a fixed string; regex metacharacters are literal', () => withSandbox(async (sb) => {
  assert.equal((await sb.run('grep', ['-F', 'a.b'], 'a.b\naxb\n')).stdout, 'a.b\n');
  assert.equal((await sb.run('grep', ['a.b'], 'a.b\naxb\n')).stdout, 'a.b\naxb\n');
  assert.equal((await sb.run('grep', ['-F', '['], 'x[y\n')).stdout, 'x[y\n');
}));

test('grep -i ignores case, with and without -F', () => withSandbox(async (sb) => {
  assert.equal((await sb.run('grep', ['-i', 'ONE'], A)).stdout, 'one\none\n');
  assert.equal((await sb.run('grep', ['-iF', 'TWO'], A)).stdout, 'two three\n');
}));

test('grep -v inverts, -c counts, -n numbers lines', () => withSandbox(async (sb) => {
  sb.write({ 'a.txt': A, 'u.txt': 'a\nb\n' });
  assert.equal((await sb.run('grep', ['-v', 'o', 'a.txt'])).status, 1);
  assert.equal((await sb.run('grep', ['-v', 'one'], A)).stdout, 'two three\nfour\n');
  assert.equal((await sb.run('grep', ['-c', 'one'], A)).stdout, '2\n');
  assert.deepEqual(await sb.run('grep', ['-c', 'zzz'], A), { status: 1, stdout: '0\n', stderr: '' });
  assert.equal((await sb.run('grep', ['-c', 'o', 'a.txt', 'u.txt'])).stdout, 'a.txt:4\nu.txt:0\n');
  assert.equal((await sb.run('grep', ['-n', 'f'], A)).stdout, '3:four\n');
  assert.equal((await sb.run('grep', ['-vn', 'o'], 'x\no\ny\n')).stdout, '1:x\n3:y\n');
  assert.equal((await sb.run('grep', ['-n', 'one', 'a.txt', 'u.txt'])).stdout, 'a.txt:1:one\na.txt:4:one\n');
}));

test('grep -q prints nothing; -e gives the pattern', () => withSandbox(async (sb) => {
  assert.deepEqual(await sb.run('grep', ['-q', 'one'], A), { status: 0, stdout: '', stderr: '' });
  assert.equal((await sb.run('grep', ['-e', '-x'], 'a-x\nb\n')).stdout, 'a-x\n');
}));

test('grep: a missing file is status 2, a missing pattern a usage error', () => withSandbox(async (sb) => {
  assert.deepEqual(await sb.run('grep', ['x', 'nope']), { status: 2, stdout: '', stderr: 'grep: nope: No such file or directory\n' });
  assert.equal((await sb.run('grep')).status, 2);
  assert.equal((await sb.run('grep', ['a\\{'])).status, 2);
}));

test('sort orders lines byte-wise; -r reverses; -u drops duplicates', () => withSandbox(async (sb) => {
  sb.write({ 'a.txt': A, 'b.txt': 'Zeta\nalpha\n' });
  assert.equal((await sb.run('sort', ['a.txt'])).stdout, 'four\none\none\ntwo three\n');
  assert.equal((await sb.run('sort', ['-r', 'a.txt'])).stdout, 'two three\none\none\nfour\n');
  assert.equal((await sb.run('sort', ['-u', 'a.txt'])).stdout, 'four\none\ntwo three\n');
  assert.equal((await sb.run('sort', ['a.txt', 'b.txt'])).stdout, 'Zeta\nalpha\nfour\none\none\ntwo three\n');
  assert.equal((await sb.run('sort', [], 'b\na')).stdout, 'a\nb\n');
  assert.equal((await sb.run('sort', [], '')).stdout, '');
}));

test('sort -n compares leading numbers, ties broken byte-wise; -nu keeps the first of equal numbers', () => withSandbox(async (sb) => {
  assert.equal((await sb.run('sort', ['-n'], NUMS)).stdout, '-3\n-0\nabc\n2.5\n 7\n9\n10\n10\n');
  assert.equal((await sb.run('sort', ['-nr'], NUMS)).stdout, '10\n10\n9\n 7\n2.5\nabc\n-0\n-3\n');
  assert.equal((await sb.run('sort', ['-nu'], NUMS)).stdout, '-3\nabc\n2.5\n 7\n9\n10\n');
  assert.equal((await sb.run('sort', ['-n'], '10\n010\n9\n1e3\n')).stdout, '1e3\n9\n010\n10\n');
  assert.equal((await sb.run('sort', ['-n'], '100\n20\n3\n')).stdout, '3\n20\n100\n');
}));

test('sort: a missing file is status 2', () => withSandbox(async (sb) => {
  assert.deepEqual(await sb.run('sort', ['nope']), { status: 2, stdout: '', stderr: 'sort: nope: No such file or directory\n' });
  assert.equal((await sb.run('sort', ['-z'])).status, 2);
}));

test('uniq collapses adjacent duplicates; -c counts; -d keeps repeated runs', () => withSandbox(async (sb) => {
  sb.write({ 'u.txt': 'a\na\nb\nc\nc\nc\nd\n' });
  assert.equal((await sb.run('uniq', ['u.txt'])).stdout, 'a\nb\nc\nd\n');
  assert.equal((await sb.run('uniq', [], 'x\ny\nx\n')).stdout, 'x\ny\nx\n');
  assert.equal((await sb.run('uniq', ['-c', 'u.txt'])).stdout, '      2 a\n      1 b\n      3 c\n      1 d\n');
  assert.equal((await sb.run('uniq', ['-d', 'u.txt'])).stdout, 'a\nc\n');
  assert.equal((await sb.run('uniq', ['-cd', 'u.txt'])).stdout, '      2 a\n      3 c\n');
  assert.equal((await sb.run('uniq', ['-u', 'u.txt'])).stdout, 'b\nd\n');
  assert.equal((await sb.run('uniq', [], 'a\na')).stdout, 'a\n');
}));

test('uniq: a missing file is status 1, two operands too many for this uniq', () => withSandbox(async (sb) => {
  assert.deepEqual(await sb.run('uniq', ['nope']), { status: 1, stdout: '', stderr: 'uniq: nope: No such file or directory\n' });
  assert.equal((await sb.run('uniq', ['a', 'b', 'c'])).status, 2);
}));

test('tr translates sets with ranges, classes and escapes', () => withSandbox(async (sb) => {
  assert.equal((await sb.run('tr', ['a-z', 'A-Z'], 'hello World\n')).stdout, 'HELLO WORLD\n');
  assert.equal((await sb.run('tr', ['[:lower:]', '[:upper:]'], 'abc\n')).stdout, 'ABC\n');
  assert.equal((await sb.run('tr', ['abc', 'x'], 'aabbcc\n')).stdout, 'xxxxxx\n');
  assert.equal((await sb.run('tr', ['\\n', ','], 'a\nb\n')).stdout, 'a,b,');
  assert.equal((await sb.run('tr', ['a-c', 'A-C'], 'abcd')).stdout, 'ABCd');
}));

test('tr -d deletes, -s squeezes, -ds does both', () => withSandbox(async (sb) => {
  assert.equal((await sb.run('tr', ['-d', 'lo'], 'hello World\n')).stdout, 'he Wrd\n');
  assert.equal((await sb.run('tr', ['-d', '[:digit:]'], 'a1b22c\n')).stdout, 'abc\n');
  assert.equal((await sb.run('tr', ['-s', ' '], 'a   b    c\n')).stdout, 'a b c\n');
  assert.equal((await sb.run('tr', ['-s', 'a-z', 'A-Z'], 'aabbcc  dd\n')).stdout, 'ABC  D\n');
  assert.equal((await sb.run('tr', ['-ds', 'a', 'b'], 'aabbba\n')).stdout, 'b\n');
}));

test('tr: missing sets and reversed ranges are errors', () => withSandbox(async (sb) => {
  assert.equal((await sb.run('tr', ['a'])).status, 2);
  assert.equal((await sb.run('tr')).status, 2);
  const r = await sb.run('tr', ['z-a', 'x']);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /^tr: range-endpoints of 'z-a' are in reverse collating sequence order\n$/);
}));
