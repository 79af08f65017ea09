import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse, ShellSyntaxError } from '../../src/shell/index.ts';

const words = (src: string) =>
  parse(src).map((a) => a.first.map((c) => c.words.map((w) => w.map((p) => (p.kind === 'text' ? p.text : `$${p.name}`)).join(''))));

test('pipes, lists and operators', () => {
  const s = parse('a | b c && d || e; f\ng');
  assert.equal(s.length, 3);
  assert.equal(s[0]!.first.length, 2);
  assert.deepEqual(s[0]!.rest.map((r) => r.op), ['&&', '||']);
});

test('quoting: single quotes are literal, double quotes expand, backslashes escape', () => {
  assert.deepEqual(words(`echo 'a $X "b"' "c $X \\"d\\"" e\\ f`), [[['echo', 'a $X "b"', 'c $X "d"', 'e f']]]);
  assert.deepEqual(words(`echo "" ''`), [[['echo', '', '']]]);
});

test('assignments, variables and redirections', () => {
  const [cmd] = parse('A=1 B="x y" cmd ${A}z $? < in > out >> log')[0]!.first;
  assert.deepEqual(cmd!.assigns.map((a) => a.name), ['A', 'B']);
  assert.deepEqual(cmd!.redirects.map((r) => r.op), ['<', '>', '>>']);
  assert.equal(cmd!.words.length, 3);
});

test('comments are ignored; a # inside a word is text', () => {
  assert.deepEqual(words('echo a#b # comment'), [[['echo', 'a#b']]]);
});

test('what the shell does not do is a syntax error, never a host action', () => {
  for (const bad of ['a &', 'echo `id`', '(a)', "echo 'open", 'echo "open', 'a |', '| a', 'a >', 'a && || b']) {
    assert.throws(() => parse(bad), ShellSyntaxError, bad);
  }
});
