// `membrane exec` end to end (issue #6 must-shows 1 and 3): JS, TS and Python snippets from the
// command line, --json, and runaways ending with TIMEOUT or FUEL_EXHAUSTED in bounded time.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli } from '../helpers/cli.ts';
import { ERROR_TABLE } from '../../src/errors.ts';

const HOME = mkdtempSync(join(tmpdir(), 'membrane-exec-cli-'));

const membrane = (args: string[]) => runCli(args, { MEMBRANE_HOME: HOME });

test('--lang js -c "1+1" → result 2; --json has the documented keys', async () => {
  const r = await membrane(['exec', '--lang', 'js', '-c', '1+1', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as Record<string, unknown>;
  assert.equal(out['ok'], true);
  assert.equal(out['result'], 2);
  for (const k of ['stdout', 'stderr', 'fuelUsed', 'durationMs', 'profile', 'warnings']) assert.ok(k in out, k);
});

test('--lang ts strips types inside the sandbox: const x: number = 2; x * 21 → 42', async () => {
  const r = await membrane(['exec', '--lang', 'ts', '-c', 'const x: number = 2; x * 21']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, '42\n');
});

test('--context is a read-only value named context', async () => {
  const r = await membrane(['exec', '--lang', 'js', '-c', 'context.n * 2', '--context', '{"n":21}', '--json']);
  assert.equal((JSON.parse(r.stdout) as { result: number }).result, 42);
});

test('a JS runaway ends with TIMEOUT under a short --timeout, or FUEL_EXHAUSTED under --fuel', async () => {
  // QuickJS spends ~1e10 fuel a second here, so the profile's 1e9 lasts ~0.1 s: a 30 ms deadline comes first.
  const t = await membrane(['exec', '--lang', 'js', '-c', 'for(;;){}', '--timeout', '30']);
  assert.equal(t.code, ERROR_TABLE.TIMEOUT.exitCode, t.stderr);
  assert.match(t.stderr, /TIMEOUT/);
  const f = await membrane(['exec', '--lang', 'js', '-c', 'for(;;){}', '--fuel', '1e7']);
  assert.equal(f.code, ERROR_TABLE.FUEL_EXHAUSTED.exitCode, f.stderr);
});

test('usage: a language is required; unknown languages are refused', async () => {
  assert.equal((await membrane(['exec', '-c', '1'])).code, 2);
  const r = await membrane(['exec', '--lang', 'ruby', '-c', '1', '--json']);
  assert.equal((JSON.parse(r.stdout) as { error: { code: string } }).error.code, 'POLICY_INVALID');
});

test('--lang python -c "print(sum(range(10)))" --json → stdout 45; --fuel 1e7 on a runaway → FUEL_EXHAUSTED', async () => {
  const r = await membrane(['exec', '--lang', 'python', '-c', 'print(sum(range(10)))', '--json']);
  assert.equal(r.code, 0, `${r.stderr}\n${r.stdout}`);
  const out = JSON.parse(r.stdout) as { ok: boolean; stdout: string };
  assert.equal(out.ok, true);
  assert.equal(out.stdout, '45\n');
  const f = await membrane(['exec', '--lang', 'python', '-c', 'while True: pass', '--fuel', '1e7']);
  assert.equal(f.code, ERROR_TABLE.FUEL_EXHAUSTED.exitCode, f.stderr);
  assert.match(f.stderr, /starting the python interpreter pool: 1\/1 ready/);
});
