// The CLI end to end, as a user runs it: `membrane run|inspect|profiles|sh|instrument`, JSON shape, exit codes.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli } from '../helpers/cli.ts';
import { ERROR_TABLE } from '../../src/errors.ts';
import { FIXTURES } from '../helpers/wat.ts';
import { tempDir } from '../helpers/tmp.ts';

const HOME = tempDir('membrane-cli-home-');
const W = (n: string) => join(FIXTURES, 'wat', `${n}.wat`);
const C = (n: string) => join(FIXTURES, 'c', `${n}.wasm`);


const membrane = (args: string[]) => runCli(args, { MEMBRANE_HOME: HOME });

const RESULT_KEYS = ['ok', 'result', 'exitCode', 'stdout', 'stderr', 'fuelUsed', 'durationMs', 'memoryBytes', 'profile', 'warnings', 'error'];

// Bounds with the slack a loaded 2-core machine needs: they catch a deadline that is not enforced
// (a spinner runs for the profile's 30 s), not its precision — bench/ measures the overshoot.
test('a spinning export with --timeout 800 returns TIMEOUT, stopped at the deadline, in well under the profile\'s 30 s', async () => {
  // warm the bundle so the timing measures the run, as a user's second invocation would
  await membrane(['profiles']);
  const r = await membrane(['run', W('spin'), '--invoke', 'run', '--profile', 'network', '--timeout', '800', '--json']);
  const out = JSON.parse(r.stdout) as Record<string, unknown>;
  assert.equal((out['error'] as { code: string }).code, 'TIMEOUT');
  assert.equal(out['ok'], false);
  assert.equal(out['profile'], 'network');
  assert.ok((out['durationMs'] as number) >= 800 && (out['durationMs'] as number) < 5000, `stopped at ${String(out['durationMs'])} ms`);
  assert.equal(r.code, ERROR_TABLE.TIMEOUT.exitCode);
  assert.ok(r.ms < 8000, `the process took ${r.ms.toFixed(0)} ms`);
  for (const k of Object.keys(out)) assert.ok(RESULT_KEYS.includes(k), `unexpected key ${k}`);
});

test('a WASI hello world prints its line and exits 0; arguments after -- reach the guest', async () => {
  const r = await membrane(['run', C('hello'), '--env', 'WHO=cli', '--', 'a', 'b']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'hello from a wasm guest\narg 1: a\narg 2: b\nWHO=cli\n');
});

test('proc_exit(7) becomes the process exit code 7', async () => {
  const r = await membrane(['run', C('exit7')]);
  assert.equal(r.code, 7);
  assert.equal(r.stderr, 'exiting with 7\n');
  const j = await membrane(['run', C('exit7'), '--json']);
  assert.equal(j.code, 7);
  assert.equal(JSON.parse(j.stdout).exitCode, 7);
});

test('--invoke prints the result; --json has exactly the documented keys', async () => {
  const r = await membrane(['run', W('noop'), '--invoke', 'add', '--arg', '40', '--arg', '2']);
  assert.equal(r.code, 0);
  assert.equal(r.stdout, '42\n');
  const j = JSON.parse((await membrane(['run', W('noop'), '--invoke', 'add', '--arg', '1', '--arg', '2', '--json'])).stdout);
  assert.deepEqual(Object.keys(j).sort(), ['durationMs', 'fuelUsed', 'memoryBytes', 'ok', 'profile', 'result', 'stderr', 'stdout', 'warnings']);
  assert.equal(j.result, 3);
});

test('--profile bogus warns on stderr and runs under compute; --strict-profiles refuses', async () => {
  const r = await membrane(['run', W('noop'), '--invoke', 'noop', '--profile', 'bogus']);
  assert.equal(r.code, 0);
  assert.match(r.stderr, /warning: unknown profile "bogus": running under "compute"/);
  const s = await membrane(['run', W('noop'), '--invoke', 'noop', '--profile', 'bogus', '--strict-profiles', '--json']);
  assert.equal(s.code, ERROR_TABLE.POLICY_INVALID.exitCode);
  assert.equal(JSON.parse(s.stdout).error.code, 'POLICY_INVALID');
});

test('every error code has its own exit code', async () => {
  const codes = Object.values(ERROR_TABLE).map((r) => r.exitCode);
  assert.equal(new Set(codes).size, codes.length);
  assert.ok(codes.every((c) => c > 2 && c < 126));
  const link = await membrane(['run', W('kv-import'), '--invoke', 'run']);
  assert.equal(link.code, ERROR_TABLE.LINK_UNSATISFIED.exitCode);
  assert.match(link.stderr, /LINK_UNSATISFIED: .*membrane\.kv_get/);
  const mem = await membrane(['run', W('grow-loop'), '--invoke', 'run']);
  assert.equal(mem.code, ERROR_TABLE.MEMORY_LIMIT.exitCode);
});

test('inspect names imports, the caps they need and the least-privileged profiles', async () => {
  const kv = JSON.parse((await membrane(['inspect', W('kv-import'), '--json'])).stdout);
  assert.deepEqual(kv.caps, ['kv']);
  assert.deepEqual(kv.profiles, ['minimal', 'network', 'posix']);
  const hello = JSON.parse((await membrane(['inspect', C('hello'), '--json'])).stdout);
  assert.deepEqual(hello.caps, []);
  assert.deepEqual(hello.profiles, ['compute', 'minimal', 'network', 'posix']);
  assert.ok(hello.exports.some((e: { name: string }) => e.name === '_start'));
  const sys = await membrane(['inspect', W('env-system')]);
  assert.equal(sys.code, 0);
  assert.match(sys.stdout, /runs under: no profile\n\s+- env\.system: no capability grants this/);
});

test('profiles prints the policy literal', async () => {
  const j = JSON.parse((await membrane(['profiles', '--json'])).stdout);
  assert.deepEqual(j.map((p: { name: string; allowHttp: boolean }) => [p.name, p.allowHttp]), [
    ['compute', false],
    ['minimal', false],
    ['network', true],
    ['posix', true],
  ]);
  const t = await membrane(['profiles']);
  assert.match(t.stdout, /^compute\s+64 MiB\s+5000 ms/m);
});

test('usage errors exit 2 with a hint', async () => {
  const r = await membrane(['run']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /Try 'membrane run --help'/);
  const h = await membrane(['--help']);
  assert.equal(h.code, 0);
  assert.match(h.stdout, /Exit codes:/);
});

test('--stdin feeds a file to the guest', async () => {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const file = join(tempDir('membrane-cli-'), 'in.txt');
  writeFileSync(file, 'quiet words\n');
  const r = await membrane(['run', C('upper'), '--stdin', file]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'QUIET WORDS\n');
  assert.equal(r.stderr, '12 bytes\n');
});

test('--fuel caps the work; --no-fuel turns metering off; instrument writes a metered module', async () => {
  const r = JSON.parse((await membrane(['run', W('count'), '--invoke', 'count', '--arg', '1000000000', '--fuel', '1000000', '--json'])).stdout);
  assert.equal(r.error.code, 'FUEL_EXHAUSTED');
  assert.equal(r.fuelUsed, 1000000);
  const off = JSON.parse((await membrane(['run', W('count'), '--invoke', 'count', '--arg', '10', '--no-fuel', '--json'])).stdout);
  assert.equal(off.result, 45);
  assert.equal(off.fuelUsed, 0);
  const out = join(HOME, 'hello.metered.wasm');
  const inst = await membrane(['instrument', C('hello'), '-o', out, '--json']);
  assert.equal(inst.code, 0, inst.stderr);
  const stats = JSON.parse(inst.stdout);
  assert.ok(stats.functions > 0 && stats.outputBytes > stats.inputBytes && stats.ms >= 0);
  const { readFileSync } = await import('node:fs');
  assert.ok(WebAssembly.validate(readFileSync(out)));
});

test('run --mount: a guest works on a copy of the host directory and its changes come back', async () => {
  const { mkdtempSync: mk, writeFileSync, readFileSync: read } = await import('node:fs');
  const dir = mk(join(tmpdir(), 'membrane-cli-mount-'));
  writeFileSync(join(dir, 'a.txt'), 'alpha\n');
  const CMD = (n: string) => join(FIXTURES, '..', '..', 'commands', 'bin', `${n}.wasm`);
  const r = await membrane(['run', CMD('cp'), '--mount', `${dir}:/data`, '--', '/data/a.txt', '/data/b.txt']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(read(join(dir, 'b.txt'), 'utf8'), 'alpha\n');
});

test('run --mount HOSTDIR:/: the host directory is the workspace root, and write-back works there too', async () => {
  const { mkdtempSync: mk, writeFileSync, readFileSync: read, readdirSync } = await import('node:fs');
  const dir = mk(join(tmpdir(), 'membrane-cli-mount-root-'));
  writeFileSync(join(dir, 'a.txt'), 'alpha\n');
  const CMD = (n: string) => join(FIXTURES, '..', '..', 'commands', 'bin', `${n}.wasm`);
  const ls = await membrane(['run', CMD('ls'), '--mount', `${dir}:/`, '--', '/']);
  assert.equal(ls.stdout, 'a.txt\n', ls.stderr);
  const r = await membrane(['run', CMD('cp'), '--mount', `${dir}:/`, '--', '/a.txt', '/b.txt']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(read(join(dir, 'b.txt'), 'utf8'), 'alpha\n');
  assert.deepEqual(readdirSync(dir).sort(), ['a.txt', 'b.txt']);
  const nested = await membrane(['run', CMD('ls'), '--mount', `${dir}:/`, '--mount', `${dir}:/data`, '--json']);
  assert.equal(JSON.parse(nested.stdout).error.code, 'POLICY_INVALID');
});

test('membrane sh runs pipelines of sandboxed commands; an unknown command exits 127', async () => {
  const a = await membrane(['sh', '-c', 'echo hello | wc -c']);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(a.stdout, '6\n');
  assert.equal((await membrane(['sh', '-c', 'seq 1 100 | grep 7 | wc -l'])).stdout, '19\n');
  const missing = await membrane(['sh', '-c', 'nosuch']);
  assert.equal(missing.code, 127);
  assert.equal(missing.stderr, 'sh: nosuch: command not found\n');
});

test('membrane sh: a syntax error exits 2 and runs nothing', async () => {
  const r = await membrane(['sh', '-c', 'echo `id`']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /membrane sh: syntax error at 5: '`' is not supported/);
  assert.equal(r.stdout, '');
});

test('--register adds a command guests may run (run) and the shell may resolve (sh)', async () => {
  const r = await membrane(['run', C('nest'), '--profile', 'minimal', '--register', `nest=${C('nest')}`, '--', 'exec', 'nest', 'run', 'echo', 'hi']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'hi\nstatus=0 error=\nstatus=0 error=\n');
  const sh = await membrane(['sh', '--register', `up=${C('upper')}`, '-c', 'echo hello | up']);
  assert.equal(sh.stdout, 'HELLO\n');
  const bad = await membrane(['sh', '--register', 'no-file', '-c', 'echo']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--register expects NAME=FILE\.wasm/);
});

test('run: the network guard refuses loopback unless --allow-cidr admits it', async () => {
  const server = createServer((_req, res) => res.end('local service'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const refused = await membrane(['run', C('netfetch'), '--profile', 'network', '--', 'fetch', url]);
    assert.equal(refused.stdout, 'error -1\n');
    const allowed = await membrane(['run', C('netfetch'), '--profile', 'network', '--allow-cidr', '127.0.0.1/32', '--', 'fetch', url]);
    assert.match(allowed.stdout, /"status":200.*"body":"local service"/);
  } finally {
    server.close();
  }
});
