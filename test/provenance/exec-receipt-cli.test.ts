// `membrane exec --receipt`, `membrane receipt verify` and `membrane replay --source` end to end.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli } from '../helpers/cli.ts';
import { tempDir } from '../helpers/tmp.ts';

const HOME = tempDir('membrane-exec-receipt-cli-');
const DIR = tempDir('membrane-exec-receipt-cli-files-');
const env = { MEMBRANE_HOME: HOME, MEMBRANE_ENGINE_SIGNING_KEY: '' };

test('exec --receipt writes a receipt that verifies; replay --source reproduces a pure snippet', async () => {
  const src = join(DIR, 'pure.js');
  writeFileSync(src, 'let s = 0; for (let i = 0; i < 1000; i++) s += i; console.log(context.who); s');
  const file = join(DIR, 'pure.receipt.json');
  const ran = await runCli(['exec', '--lang', 'js', src, '--context', '{"who":"me"}', '--receipt', file], env);
  assert.equal(ran.code, 0, ran.stderr);
  assert.deepEqual(JSON.parse(readFileSync(`${file}.input.json`, 'utf8')), { context: { who: 'me' } });
  const ok = await runCli(['receipt', 'verify', file], env);
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /^ok: signed by "?did:key:z6Mk/);
  const replayed = await runCli(['replay', file, '--source', src, '--input', `${file}.input.json`, '--json'], env);
  assert.equal(replayed.code, 0, replayed.stdout + replayed.stderr);
  assert.deepEqual(JSON.parse(replayed.stdout), { replayed: true, reason: null, outputMatches: true, fuelMatches: true, outcomeMatches: true });
  const noSource = await runCli(['replay', file], env);
  assert.equal(noSource.code, 2);
  assert.match(noSource.stderr, /--source FILE or -c CODE/);
});

test('replay refuses a snippet that made power calls, naming them', async () => {
  const file = join(DIR, 'kv.receipt.json');
  const code = "kv.put('x', '1'); kv.get('x')";
  const ran = await runCli(['exec', '--lang', 'js', '-c', code, '--profile', 'minimal', '--receipt', file], env);
  assert.equal(ran.code, 0, ran.stderr);
  const refused = await runCli(['replay', file, '-c', code], env);
  assert.equal(refused.code, 1);
  assert.match(refused.stdout, /^refused: the snippet made 2 power call\(s\) \(kv\.get ×1, kv\.put ×1\)/);
});
