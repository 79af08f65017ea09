// `membrane exec` end to end (issue #6 must-shows 1 and 3): JS, TS and Python snippets from the
// command line, --json, and runaways ending with TIMEOUT (the profile's fuel, in interpreter units,
// outlasts a 1 s deadline) or FUEL_EXHAUSTED under --fuel, in bounded time.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCli } from '../helpers/cli.ts';
import { ERROR_TABLE } from '../../src/errors.ts';
import { tempDir } from '../helpers/tmp.ts';

const HOME = tempDir('membrane-exec-cli-');

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

test('a JS runaway: --timeout 1000 → TIMEOUT (well before the profile\'s 5 s) under the default profile; --fuel 1e7 → FUEL_EXHAUSTED', async () => {
  const t = await membrane(['exec', '--lang', 'js', '-c', 'for(;;){}', '--timeout', '1000', '--json']);
  assert.equal(t.code, ERROR_TABLE.TIMEOUT.exitCode, t.stderr);
  const out = JSON.parse(t.stdout) as { error: { code: string }; durationMs: number; fuelUsed: number };
  assert.equal(out.error.code, 'TIMEOUT');
  // Slack for a loaded 2-core box: this catches an unenforced deadline; bench/ measures precision.
  assert.ok(out.durationMs >= 950 && out.durationMs < 4500, `ended after ${out.durationMs} ms`);
  assert.ok(out.fuelUsed > 0 && out.fuelUsed < 1e9, `fuelUsed ${out.fuelUsed} (interpreter units)`);
  const f = await membrane(['exec', '--lang', 'js', '-c', 'for(;;){}', '--fuel', '1e7', '--json']);
  assert.equal(f.code, ERROR_TABLE.FUEL_EXHAUSTED.exitCode, f.stderr);
  const fo = JSON.parse(f.stdout) as { error: { message: string }; fuelUsed: number };
  assert.match(fo.error.message, /more than its 10000000 units of fuel/);
  assert.ok(fo.fuelUsed >= 1e7 && fo.fuelUsed < 1.01e7, `fuelUsed ${fo.fuelUsed}`);
});

test('usage: a language is required; unknown languages are refused', async () => {
  assert.equal((await membrane(['exec', '-c', '1'])).code, 2);
  const r = await membrane(['exec', '--lang', 'ruby', '-c', '1', '--json']);
  assert.equal((JSON.parse(r.stdout) as { error: { code: string } }).error.code, 'POLICY_INVALID');
});

test('--lang python -c "print(sum(range(10)))" --json → stdout 45; a runaway: --timeout 1000 → TIMEOUT (well before the profile\'s 5 s), --fuel 1e7 → FUEL_EXHAUSTED', async () => {
  const r = await membrane(['exec', '--lang', 'python', '-c', 'print(sum(range(10)))', '--json']);
  assert.equal(r.code, 0, `${r.stderr}\n${r.stdout}`);
  const out = JSON.parse(r.stdout) as { ok: boolean; stdout: string };
  assert.equal(out.ok, true);
  assert.equal(out.stdout, '45\n');
  const t = await membrane(['exec', '--lang', 'python', '-c', 'while True: pass', '--timeout', '1000', '--json']);
  assert.equal(t.code, ERROR_TABLE.TIMEOUT.exitCode, t.stderr);
  const to = JSON.parse(t.stdout) as { error: { code: string }; durationMs: number };
  assert.equal(to.error.code, 'TIMEOUT');
  assert.ok(to.durationMs >= 950 && to.durationMs < 4500, `ended after ${to.durationMs} ms`);
  const f = await membrane(['exec', '--lang', 'python', '-c', 'while True: pass', '--fuel', '1e7']);
  assert.equal(f.code, ERROR_TABLE.FUEL_EXHAUSTED.exitCode, f.stderr);
  assert.match(f.stderr, /starting the python interpreter pool: 1\/1 ready/);
});

test('--vfs NAME: a file a snippet writes stays in that VFS; `membrane run cat.wasm --vfs NAME` and the next snippet read it', async () => {
  const w = await membrane(['exec', '--lang', 'js', '-c', "vfs.write('/from-cli.txt', 'kept\\n'); commands.run('cat', ['/from-cli.txt']).stdout", '--profile', 'minimal', '--vfs', 'cli-notes', '--json']);
  assert.equal(w.code, 0, w.stderr);
  assert.equal((JSON.parse(w.stdout) as { result: string }).result, 'kept\n');
  const cat = await membrane(['run', new URL('../../commands/bin/cat.wasm', import.meta.url).pathname, '--vfs', 'cli-notes', '--', '/from-cli.txt']);
  assert.equal(cat.stdout, 'kept\n', cat.stderr);
  const r = await membrane(['exec', '--lang', 'python', '-c', "import membrane\nmembrane.vfs.read('/from-cli.txt')", '--vfs', 'cli-notes', '--json']);
  assert.equal((JSON.parse(r.stdout) as { result: string }).result, 'kept\n', r.stderr);
  const bad = await membrane(['exec', '--lang', 'js', '-c', '1', '--vfs', '../escape', '--json']);
  assert.equal((JSON.parse(bad.stdout) as { error: { code: string } }).error.code, 'POLICY_INVALID');
});
