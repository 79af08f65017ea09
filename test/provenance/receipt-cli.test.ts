// `membrane run --receipt`, `membrane receipt verify` and `membrane replay` end to end.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli } from '../helpers/cli.ts';
import { tempDir } from '../helpers/tmp.ts';

const HOME = tempDir('membrane-receipt-cli-');
const DIR = tempDir('membrane-receipt-cli-files-');
const env = { MEMBRANE_HOME: HOME, MEMBRANE_ENGINE_SIGNING_KEY: '' };
const HELLO = new URL('../fixtures/c/hello.wasm', import.meta.url).pathname;

test('run --receipt, receipt verify, an edited receipt, and replay of a pure guest', async () => {
  const file = join(DIR, 'hello.receipt.json');
  const ran = await runCli(['run', HELLO, '--receipt', file, '--', 'x', 'y'], env);
  assert.equal(ran.code, 0, ran.stderr);
  const ok = await runCli(['receipt', 'verify', file], env);
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /^ok: signed by "?did:key:z6Mk/);

  const replayed = await runCli(['replay', file, '--module', HELLO, '--input', `${file}.input.json`, '--json'], env);
  assert.equal(replayed.code, 0, replayed.stdout + replayed.stderr);
  assert.deepEqual(JSON.parse(replayed.stdout), { replayed: true, reason: null, outputMatches: true, fuelMatches: true, outcomeMatches: true });

  const noInput = await runCli(['replay', file, '--module', HELLO], env);
  assert.equal(noInput.code, 1);
  assert.match(noInput.stdout, /refused: the input is not the one/);

  const edited = JSON.parse(readFileSync(file, 'utf8')) as { receipt: { fuelUsed: number } };
  edited.receipt.fuelUsed -= 1;
  const bad = join(DIR, 'edited.json');
  writeFileSync(bad, JSON.stringify(edited));
  const rejected = await runCli(['receipt', 'verify', bad], env);
  assert.equal(rejected.code, 1);
  assert.match(rejected.stdout, /^invalid: .*signature does not verify/);
  const refused = await runCli(['replay', bad, '--module', HELLO, '--input', `${file}.input.json`], env);
  assert.equal(refused.code, 1);
  assert.match(refused.stdout, /refused: the receipt does not verify/);
});
