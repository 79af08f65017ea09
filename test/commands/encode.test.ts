// sha256sum, base64, seq. SHA-256 is checked against node:crypto over every padding boundary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { withSandbox } from './harness.ts';

const sha = (data: string | Uint8Array): string => createHash('sha256').update(data).digest('hex');

test('sha256sum of "abc" and of nothing are the FIPS 180-4 values', () => withSandbox(async (sb) => {
  assert.equal((await sb.run('sha256sum', [], 'abc')).stdout, 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  -\n');
  assert.equal((await sb.run('sha256sum', ['-'])).stdout, 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  -\n');
}));

test('sha256sum agrees with node:crypto for lengths 0..130 and 1 MiB', () => withSandbox(async (sb) => {
  const files: Record<string, Uint8Array> = {};
  for (let n = 0; n <= 130; n++) files[`f${n}`] = new Uint8Array(n).map((_, i) => (i * 31 + n) & 0xff);
  files['big'] = new Uint8Array(1 << 20).map((_, i) => (i ^ (i >> 9)) & 0xff);
  sb.write(files);
  const names = Object.keys(files);
  const r = await sb.run('sha256sum', names);
  assert.equal(r.status, 0);
  assert.equal(r.stdout, names.map((name) => `${sha(files[name] ?? new Uint8Array())}  ${name}\n`).join(''));
}));

test('sha256sum reports a missing file, keeps going, and exits 1', () => withSandbox(async (sb) => {
  sb.write({ 'a.txt': 'a' });
  assert.deepEqual(await sb.run('sha256sum', ['nope', 'a.txt']), {
    status: 1, stdout: `${sha('a')}  a.txt\n`, stderr: 'sha256sum: nope: No such file or directory\n',
  });
  assert.equal((await sb.run('sha256sum', ['-x'])).status, 2);
}));

test('base64 encodes, wrapping at 76 columns; -w sets the width, -w 0 never wraps', () => withSandbox(async (sb) => {
  assert.equal((await sb.run('base64', [], 'hello\n')).stdout, 'aGVsbG8K\n');
  assert.equal((await sb.run('base64', [], '')).stdout, '');
  const long = 'x'.repeat(200);
  const encoded = Buffer.from(long).toString('base64');
  assert.equal((await sb.run('base64', [], long)).stdout, encoded.match(/.{1,76}/g)?.join('\n') + '\n');
  assert.equal((await sb.run('base64', ['-w', '0'], 'hello')).stdout, 'aGVsbG8=');
  assert.equal((await sb.run('base64', ['-w', '10'], 'hello world')).stdout, 'aGVsbG8gd2\n9ybGQ=\n');
  sb.write({ 'f': 'ab' });
  assert.equal((await sb.run('base64', ['f'])).stdout, 'YWI=\n');
}));

test('base64 -d decodes (newlines ignored) and round-trips binary data', () => withSandbox(async (sb) => {
  assert.equal((await sb.run('base64', ['-d'], 'aGVsbG8K\n')).stdout, 'hello\n');
  assert.equal((await sb.run('base64', ['-d'], 'aGVs\nbG8=\n')).stdout, 'hello');
  const bytes = Buffer.from(new Uint8Array(5000).map((_, i) => (i * 13) & 0xff));
  const encoded = (await sb.run('base64', [], bytes)).stdout;
  assert.deepEqual(await sb.runBytes('base64', ['-d'], encoded), { status: 0, stdout: bytes });
}));

test('base64 -d rejects bytes outside the alphabet and bad padding', () => withSandbox(async (sb) => {
  assert.deepEqual(await sb.run('base64', ['-d'], 'a$b'), { status: 1, stdout: '', stderr: 'base64: invalid input\n' });
  assert.equal((await sb.run('base64', ['-d'], 'aGVsbG8=x')).status, 1);
  assert.equal((await sb.run('base64', ['-d'], 'aGVsbG8')).status, 1);
  assert.equal((await sb.run('base64', ['-w', 'x'])).status, 2);
}));

test('seq LAST, FIRST LAST, FIRST INCR LAST', () => withSandbox(async (sb) => {
  assert.equal((await sb.run('seq', ['5'])).stdout, '1\n2\n3\n4\n5\n');
  assert.equal((await sb.run('seq', ['2', '5'])).stdout, '2\n3\n4\n5\n');
  assert.equal((await sb.run('seq', ['10', '-3', '1'])).stdout, '10\n7\n4\n1\n');
  assert.equal((await sb.run('seq', ['-3', '-1'])).stdout, '-3\n-2\n-1\n');
  assert.deepEqual(await sb.run('seq', ['5', '1']), { status: 0, stdout: '', stderr: '' });
  assert.equal((await sb.run('seq', ['1', '100'])).stdout.split('\n').length, 101);
}));

test('seq with fractions prints the precision of FIRST and INCR', () => withSandbox(async (sb) => {
  assert.equal((await sb.run('seq', ['0', '0.1', '1'])).stdout, '0.0\n0.1\n0.2\n0.3\n0.4\n0.5\n0.6\n0.7\n0.8\n0.9\n1.0\n');
  assert.equal((await sb.run('seq', ['1.5', '4'])).stdout, '1.5\n2.5\n3.5\n');
}));

test('seq -s separates, -w pads to equal width', () => withSandbox(async (sb) => {
  assert.equal((await sb.run('seq', ['-s', ',', '3'])).stdout, '1,2,3\n');
  assert.equal((await sb.run('seq', ['-w', '8', '11'])).stdout, '08\n09\n10\n11\n');
}));

test('seq rejects a missing operand, a non-number and a zero increment', () => withSandbox(async (sb) => {
  assert.equal((await sb.run('seq')).status, 2);
  assert.match((await sb.run('seq', ['x'])).stderr, /^seq: invalid floating point argument: 'x'\n/);
  assert.equal((await sb.run('seq', ['1', '0', '5'])).status, 2);
  assert.equal((await sb.run('seq', ['1', '2', '3', '4'])).status, 2);
}));
