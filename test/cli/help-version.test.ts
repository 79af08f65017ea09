// `membrane --help`, `membrane CMD --help|-h` for every command, `membrane help CMD`,
// `membrane --version|-V`, and unknown commands/options as usage errors pointing at --help.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { COMMAND_HELP } from '../../src/interfaces/cli/help.ts';
import { runCli } from '../helpers/cli.ts';
import { tempDir } from '../helpers/tmp.ts';

const HOME = tempDir('membrane-help-');
const membrane = (args: string[]) => runCli(args, { MEMBRANE_HOME: HOME });
const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const COMMANDS = ['run', 'exec', 'build', 'sh', 'serve', 'mcp', 'instrument', 'inspect', 'audit', 'token', 'profiles', 'agent', 'identity', 'sign', 'verify-artifact', 'receipt', 'replay', 'bundle', 'verify', 'worker'];

test('every command main.ts dispatches has a help entry', async () => {
  const src = readFileSync(new URL('../../src/interfaces/cli/main.ts', import.meta.url), 'utf8');
  const table = /const COMMANDS[^{]*\{([^}]*)\}/.exec(src)![1]!;
  const dispatched = [...table.matchAll(/^\s*'?([a-z-]+)'?:/gm)].map((m) => m[1]!).sort();
  assert.deepEqual(Object.keys(COMMAND_HELP).sort(), dispatched);
  assert.deepEqual([...COMMANDS].sort(), dispatched);
});

test('CMD --help and CMD -h print that command\'s usage, an example and the unit forms on stdout, exit 0', async () => {
  for (const cmd of COMMANDS) {
    for (const flag of ['--help', '-h']) {
      const r = await membrane([cmd, flag]);
      assert.equal(r.code, 0, `${cmd} ${flag}: ${r.stderr}`);
      assert.equal(r.stderr, '', `${cmd} ${flag}`);
      assert.match(r.stdout, new RegExp(`^Usage: membrane ${cmd}\\b`), `${cmd} ${flag}`);
      assert.match(r.stdout, new RegExp(`\\nExample:\\n  membrane ${cmd} `), `${cmd} ${flag}`);
      assert.match(r.stdout, /durations {2}800 \(ms\), 800ms, 5s, 2m/);
    }
  }
});

test('--help after other flags and on a subcommand still prints help (nothing runs); after -- it is the guest\'s', async () => {
  const r = await membrane(['run', 'no-such-file.wasm', '--timeout', 'abc', '--help']);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /--timeout DURATION/);
  const a = await membrane(['audit', 'tail', '--help']);
  assert.equal(a.code, 0);
  assert.match(a.stdout, /^Usage: membrane audit verify/);
  const t = await membrane(['token', 'create', '-h']);
  assert.equal(t.code, 0);
  assert.match(t.stdout, /^Usage: membrane token create/);
  const g = await membrane(['run', 'no-such-file.wasm', '--', '--help']);
  assert.equal(g.code, 66, g.stderr);
  assert.match(g.stderr, /INVALID_MODULE: cannot read module file/);
});

test('the run usage names flags with defaults and units', async () => {
  const r = await membrane(['run', '--help']);
  for (const want of [/--timeout DURATION .*default: the profile's, e\.g\. 5s/, /--memory SIZE .*at least 64KiB/, /--fuel COUNT .*1e9/, /--json/, /--invoke EXPORT/]) assert.match(r.stdout, want);
  const s = await membrane(['serve', '--help']);
  assert.match(s.stdout, /--port N +0\.\.65535 \(default 7070; 0 = any free port\)/);
  assert.match(s.stdout, /Exit: 3 at once when the address cannot be bound/);
});

test('membrane --help, -h and help list every command and the exit codes; help CMD is CMD --help', async () => {
  for (const args of [['--help'], ['-h'], ['help']]) {
    const r = await membrane(args);
    assert.equal(r.code, 0);
    for (const cmd of COMMANDS) assert.match(r.stdout, new RegExp(`^  ${cmd} +\\S`, 'm'), `${args.join(' ')} lists ${cmd}`);
    assert.match(r.stdout, /Exit codes:/);
    assert.match(r.stdout, / {4}3 {2}serve: the address cannot be bound/);
  }
  const one = await membrane(['help', 'exec']);
  assert.equal(one.code, 0);
  assert.equal(one.stdout, (await membrane(['exec', '--help'])).stdout);
  const none = await membrane([]);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /Commands:/);
});

test('--version and -V print package.json\'s version and exit 0', async () => {
  for (const flag of ['--version', '-V']) {
    const r = await membrane([flag]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `membrane ${VERSION}\n`);
  }
});

test('an unknown option is a usage error (2) naming it and pointing at the command\'s --help', async () => {
  const r = await membrane(['run', 'x.wasm', '--bogus']);
  assert.equal(r.code, 2);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr, "membrane run: unknown option '--bogus'\nTry 'membrane run --help'.\n");
  const s = await membrane(['serve', '--prot', '1']);
  assert.equal(s.code, 2);
  assert.match(s.stderr, /unknown option '--prot'\nTry 'membrane serve --help'/);
  const top = await membrane(['--verbose']);
  assert.equal(top.code, 2);
  assert.match(top.stderr, /^membrane: unknown option "--verbose"\nTry 'membrane --help'/);
  const cmd = await membrane(['frobnicate']);
  assert.equal(cmd.code, 2);
  assert.match(cmd.stderr, /^membrane: unknown command "frobnicate"/);
  const h = await membrane(['help', 'frobnicate']);
  assert.equal(h.code, 2);
});
