// The examples and pipelines, simulated by feeding each command's stdout to the next
// one's stdin; plus the shared conventions (usage errors exit 2 with "name: ..." on stderr).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { COMMAND_NAMES, withSandbox } from './harness.ts';

test('echo hello | wc -c prints 6', () => withSandbox(async (sb) => {
  assert.deepEqual(await sb.pipe([['echo', 'hello'], ['wc', '-c']]), { status: 0, stdout: '6\n', stderr: '' });
}));

test('seq 1 100 | grep 7 | wc -l prints 19', () => withSandbox(async (sb) => {
  assert.deepEqual(await sb.pipe([['seq', '1', '100'], ['grep', '7'], ['wc', '-l']]), { status: 0, stdout: '19\n', stderr: '' });
}));

test('a 10-stage pipeline', () => withSandbox(async (sb) => {
  // seq 1 200 | grep 1 | sort -r | head -n 40 | tail -n 30 | tr 0-9 a-j | sort | uniq -c | base64 | sha256sum
  const stages = [
    ['seq', '1', '200'], ['grep', '1'], ['sort', '-r'], ['head', '-n', '40'], ['tail', '-n', '30'],
    ['tr', '0-9', 'a-j'], ['sort'], ['uniq', '-c'], ['base64'], ['base64', '-d'],
  ] as const;
  const r = await sb.pipe(stages);
  assert.equal(r.status, 0);
  const expected = Array.from({ length: 200 }, (_, i) => String(i + 1))
    .filter((s) => s.includes('1'))
    .sort()
    .reverse()
    .slice(0, 40)
    .slice(-30)
    .map((s) => s.replace(/[0-9]/g, (d) => String.fromCharCode(97 + Number(d))))
    .sort()
    .map((s) => `      1 ${s}\n`)
    .join('');
  assert.equal(r.stdout, expected);
  assert.equal(stages.length, 10);
}));

test('files written by one command are read by the next', () => withSandbox(async (sb) => {
  sb.write({ 'words.txt': 'pear\napple\npear\nfig\n' });
  assert.equal((await sb.run('mkdir', ['-p', 'out/sorted'])).status, 0);
  assert.equal((await sb.run('cp', ['words.txt', 'out/sorted/w.txt'])).status, 0);
  assert.equal((await sb.pipe([['cat', 'out/sorted/w.txt'], ['sort'], ['uniq', '-c'], ['sort', '-rn'], ['head', '-n', '1']])).stdout, '      2 pear\n');
  assert.equal((await sb.run('mv', ['out/sorted/w.txt', 'w2.txt'])).status, 0);
  assert.equal((await sb.run('ls', ['out/sorted'])).stdout, '');
  assert.equal((await sb.run('rm', ['-r', 'out'])).status, 0);
  assert.equal((await sb.run('ls')).stdout, 'w2.txt\nwords.txt\n');
}));

test('every command rejects an unknown option with status 2 and a "name: " message', () => withSandbox(async (sb) => {
  const takesOptions = COMMAND_NAMES.filter((name) => name !== 'echo' && name !== 'cat');
  for (const name of takesOptions) {
    const r = await sb.run(name, ['-Z', 'x', 'y']);
    assert.equal(r.status, 2, `${name} exit status`);
    assert.ok(r.stderr.startsWith(`${name}: `), `${name} stderr: ${r.stderr}`);
    assert.equal(r.stdout, '', `${name} stdout`);
  }
}));
