// Attack: a module that arrives already metered — to bring its own fuel budget, skip metering, or
// get metered twice. `membrane run` runs a file written by `membrane instrument` by running its
// embedded original through the engine's own metering (once, against this run's fuel); a metered
// file whose code no longer matches its original, or metering without an original, is refused.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ORIGINAL_SECTION, runnableModule, withOriginal } from '../../src/interfaces/cli/instrumented.ts';
import { instrumentFuel } from '../../src/wasm/index.ts';
import { runCli } from '../helpers/cli.ts';
import { FIXTURES, wat, watText } from '../helpers/wat.ts';
import { tempDir } from '../helpers/tmp.ts';

const DIR = tempDir('membrane-instrumented-');
const membrane = (args: string[]) => runCli(args, { MEMBRANE_HOME: DIR });
const W = (n: string) => join(FIXTURES, 'wat', `${n}.wat`);
const ECHO = join(FIXTURES, '..', '..', 'commands', 'bin', 'echo.wasm');

async function instrumented(input: string, name: string): Promise<string> {
  const out = join(DIR, name);
  const r = await membrane(['instrument', input, '-o', out]);
  assert.equal(r.code, 0, r.stderr);
  return out;
}

test('instrument → run: the same stdout, result and exact fuel as running the original', async () => {
  const echo = await instrumented(ECHO, 'echo.metered.wasm');
  const a = await membrane(['run', ECHO, '--json', '--', 'hello', 'metered']);
  const b = await membrane(['run', echo, '--json', '--', 'hello', 'metered']);
  assert.equal(b.code, 0, b.stderr);
  const [ja, jb] = [JSON.parse(a.stdout), JSON.parse(b.stdout)];
  assert.equal(jb.stdout, 'hello metered\n');
  assert.equal(jb.stdout, ja.stdout);
  assert.equal(jb.fuelUsed, ja.fuelUsed, 'metered once: the same fuel as the original');
  const count = await instrumented(W('count'), 'count.metered.wasm');
  const c0 = JSON.parse((await membrane(['run', W('count'), '--invoke', 'count', '--arg', '1000', '--json'])).stdout);
  const c1 = JSON.parse((await membrane(['run', count, '--invoke', 'count', '--arg', '1000', '--json'])).stdout);
  assert.equal(c1.result, 499500);
  assert.equal(c1.fuelUsed, c0.fuelUsed);
});

test('an instrumented spinner still runs out of this run\'s fuel, and of time without fuel', async () => {
  const spin = await instrumented(W('spin'), 'spin.metered.wasm');
  const f = await membrane(['run', spin, '--invoke', 'run', '--fuel', '1e6', '--json']);
  const out = JSON.parse(f.stdout);
  assert.equal(out.error.code, 'FUEL_EXHAUSTED');
  assert.equal(out.fuelUsed, 1e6);
  assert.equal(f.code, 69);
  const t = await membrane(['run', spin, '--invoke', 'run', '--no-fuel', '--timeout', '500ms', '--json']);
  assert.equal(JSON.parse(t.stdout).error.code, 'TIMEOUT');
  assert.equal(t.code, 68);
});

test('inspect shows an instrumented file as its original, marked instrumented', async () => {
  const kv = await instrumented(W('kv-import'), 'kv.metered.wasm');
  const plain = JSON.parse((await membrane(['inspect', W('kv-import'), '--json'])).stdout);
  const r = await membrane(['inspect', kv, '--json']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { ...plain, instrumented: true });
  assert.match((await membrane(['inspect', kv])).stdout, /^written by 'membrane instrument': its original/);
});

test('instrumenting an instrumented file meters its original again: the same bytes', async () => {
  const once = await instrumented(W('count'), 'count1.wasm');
  const twice = await instrumented(once, 'count2.wasm');
  assert.deepEqual(readFileSync(twice), readFileSync(once));
});

test('metered code changed after instrument (a cheaper loop, a swapped original) is refused', async () => {
  const original = await wat('count');
  const metered = instrumentFuel(original).bytes;
  // Another module's metering with count's original: the code that would run is not what is shown.
  const other = instrumentFuel(await wat('spin')).bytes;
  const swapped = join(DIR, 'swapped.wasm');
  writeFileSync(swapped, withOriginal(other, original));
  const r = await membrane(['run', swapped, '--invoke', 'run']);
  assert.equal(r.code, 66, r.stderr);
  assert.match(r.stderr, /INVALID_MODULE: the metered code does not match its membrane\.original section/);
  // One byte of the metered code changed (an i64 constant of a charge).
  const patched = withOriginal(metered, original);
  const at = patched.indexOf(0x42, 200); // an i64.const in the code section
  assert.ok(at > 0 && at < metered.length);
  patched[at + 1] = patched[at + 1]! ^ 1;
  assert.throws(() => runnableModule(patched), /does not match/);
  // The original section not last: something after it could be what runs.
  const trailing = new Uint8Array([...withOriginal(metered, original), 0, 2, 1, 0x61]);
  assert.throws(() => runnableModule(trailing), new RegExp(`${ORIGINAL_SECTION.replace('.', '\\.')} section must be the module's last`));
});

test('a hand-made module declaring the fuel counter without an original is refused, naming the reason', async () => {
  const bytes = await watText(`(module
    (import "membrane:fuel" "refill" (func $refill (param i64) (result i64)))
    (global $fuel (export "__membrane_fuel") (mut i64) (i64.const 9223372036854775807))
    (func (export "run") (loop $l br $l)))`);
  const file = join(DIR, 'own-budget.wasm');
  writeFileSync(file, bytes);
  const r = await membrane(['run', file, '--invoke', 'run', '--timeout', '2s']);
  assert.equal(r.code, 66, r.stderr);
  assert.match(r.stderr, /INVALID_MODULE: the module already carries fuel metering .* but not the original/);
});

test('a plain module passes through untouched', async () => {
  const bytes = await wat('noop');
  assert.equal(runnableModule(bytes), bytes);
});
