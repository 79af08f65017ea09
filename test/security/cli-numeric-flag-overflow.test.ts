// Attack: hostile or mistyped numbers on the command line — junk, signs, NaN, 1e999, 2^53,
// fractional bytes, values past a flag's range — aimed at every numeric flag of every command.
// Each is a usage error (exit 2) naming the flag and the accepted forms; none reaches the engine
// (no INTERNAL, exit 79) and none runs the guest.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli } from '../helpers/cli.ts';
import { FIXTURES } from '../helpers/wat.ts';
import { tempDir } from '../helpers/tmp.ts';

const HOME = tempDir('membrane-numeric-');
const membrane = (args: string[]) => runCli(args, { MEMBRANE_HOME: HOME }, 60_000);
const NOOP = join(FIXTURES, 'wat', 'noop.wat');

const CASES: Array<{ cmd: string[]; flag: string; values: string[] }> = [
  { cmd: ['run', NOOP, '--invoke', 'noop'], flag: 'timeout', values: ['abc', 'NaN', '1e999', '5xs', '', '0', '0.5ms', '2147483648'] },
  { cmd: ['run', NOOP, '--invoke', 'noop'], flag: 'memory', values: ['-1', '0.5B', '1e999', '9007199254740992', '64M', '1KiB'] },
  { cmd: ['run', NOOP, '--invoke', 'noop'], flag: 'fuel', values: ['-1', '1.5', '9007199254740992', 'Infinity', '0'] },
  { cmd: ['exec', '--lang', 'js', '-c', '1'], flag: 'timeout', values: ['abc', '1e999'] },
  { cmd: ['exec', '--lang', 'js', '-c', '1'], flag: 'memory', values: ['64mibs', '0.5B'] },
  { cmd: ['exec', '--lang', 'js', '-c', '1'], flag: 'fuel', values: ['1e16'] },
  { cmd: ['sh', '-c', 'echo hi'], flag: 'timeout', values: ['NaN', '-5s'] },
  { cmd: ['serve'], flag: 'port', values: ['65536', '80.5', 'http', '-1'] },
  { cmd: ['audit', 'tail'], flag: 'limit', values: ['0', '10001', '1e999'] },
];

for (const { cmd, flag, values } of CASES) {
  test(`${cmd[0]} --${flag}: ${values.map((v) => JSON.stringify(v)).join(' ')} are usage errors naming the flag`, async () => {
    for (const v of values) {
      const r = await membrane([...cmd, `--${flag}=${v}`]);
      assert.equal(r.code, 2, `--${flag}=${v}: exit ${r.code}, ${r.stderr}`);
      assert.equal(r.stdout, '', `--${flag}=${v} ran something`);
      assert.match(r.stderr, new RegExp(`^membrane ${cmd[0]}: --${flag} expects (a duration|a size|a whole number)`), `--${flag}=${v}: ${r.stderr}`);
      assert.match(r.stderr, new RegExp(`Try 'membrane ${cmd[0]} --help'`));
    }
  });
}

test('the human forms reach the engine as the numbers they name', async () => {
  const r = await membrane(['run', join(FIXTURES, 'wat', 'count.wat'), '--invoke', 'count', '--arg', '1000000000', '--fuel', '1_000_000', '--memory', '64MiB', '--timeout', '1m', '--json']);
  const out = JSON.parse(r.stdout) as { error: { code: string }; fuelUsed: number; memoryBytes: number };
  assert.equal(out.error.code, 'FUEL_EXHAUSTED');
  assert.equal(out.fuelUsed, 1e6);
});
