// A JS snippet cannot make the host hold more than its caps by handing things out of its linear
// memory: an 8 MiB string logged 200 times keeps 1 MiB of stdout, a result of 6 Mi characters
// is dropped with a warning, a 16 MiB error message arrives cut to 2 000 characters, and a 12 MiB
// power request is refused TOO_LARGE without being copied out. The guest side cuts each before
// the host copies it (guest.ts, interpreter.ts). Issue #12, finding 2 (what the host holds).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';

const engine = testEngine({ poolSize: 1 });
const js = (code: string, profile = 'compute') => engine.exec({ language: 'js', code, profile, timeoutMs: 20_000 });

test('an 8 MiB string logged 200 times keeps 1 MiB of stdout and says what it dropped', async () => {
  const r = await js("const s = 'x'.repeat(8 * 1024 * 1024); for (let i = 0; i < 200; i++) console.log(s); 'done'");
  assert.equal(r.result, 'done', JSON.stringify(r.error));
  assert.equal(Buffer.byteLength(r.stdout), 1024 * 1024);
  assert.ok(r.warnings.some((w) => /stdout truncated at 1048576 bytes/.test(w)), JSON.stringify(r.warnings));
});

test('console.error of a huge string after stdout filled still caps stderr separately', async () => {
  const r = await js("console.log('a'.repeat(2 * 1024 * 1024)); console.error('é'.repeat(3 * 1024 * 1024)); 1");
  assert.equal(r.result, 1);
  assert.equal(Buffer.byteLength(r.stdout), 1024 * 1024);
  assert.ok(Buffer.byteLength(r.stderr) <= 1024 * 1024);
  assert.ok(r.stderr.length > 500_000 && /^é+$/.test(r.stderr), 'kept whole characters only');
});

test('a result of 6 Mi characters is dropped with a warning, the call still succeeds', async () => {
  const r = await js("'y'.repeat(6 * 1024 * 1024)");
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal('result' in r, false);
  assert.ok(r.warnings.some((w) => /larger than 4194304 characters/.test(w)), JSON.stringify(r.warnings));
});

test('an uncaught error with a 16 MiB message arrives cut to 4 KiB', async () => {
  const r = await js("throw new Error('z'.repeat(16 * 1024 * 1024))");
  assert.equal(r.error?.code, 'GUEST_EXCEPTION');
  const message = r.error!.details!['message'] as string;
  assert.equal(message.length, 4096);
  assert.ok(Buffer.byteLength(r.error!.message) <= 4096 + 'Error: '.length, String(r.error!.message.length));
});

test('a 12 MiB kv.put is refused TOO_LARGE without being carried', async () => {
  const r = await js("try { kv.put('k', 'v'.repeat(12 * 1024 * 1024)); 'stored' } catch (e) { e.code }", 'minimal');
  assert.equal(r.result, 'TOO_LARGE', JSON.stringify(r));
});
