// `membrane run component.wasm`: a component is detected by its header and runs through the
// component lane; one importing outside its world exits with LINK_UNSATISFIED's code.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli } from '../helpers/cli.ts';
import { ERROR_TABLE } from '../../src/errors.ts';
import { FIXTURES } from '../helpers/wat.ts';
import { tempDir } from '../helpers/tmp.ts';

const HOME = tempDir('membrane-cli-home-');
const membrane = (args: string[]) => runCli(args, { MEMBRANE_HOME: HOME });
const K = (n: string) => join(FIXTURES, 'components', `${n}.component.wasm`);

test('membrane run hello.component.wasm prints hello with args; --json carries fuelUsed', async () => {
  const r = await membrane(['run', K('hello'), '--json', '--', 'x']);
  const out = JSON.parse(r.stdout) as { ok: boolean; stdout: string; fuelUsed: number };
  assert.equal(out.ok, true, r.stdout + r.stderr);
  assert.match(out.stdout, /^hello from a wasm guest\narg 1: x\n$/);
  assert.ok(out.fuelUsed > 0);
  assert.equal(r.code, 0);
});

test('membrane run kv.component.wasm --profile compute exits with LINK_UNSATISFIED and prints nothing of the guest', async () => {
  const r = await membrane(['run', K('kv'), '--profile', 'compute']);
  assert.equal(r.code, ERROR_TABLE.LINK_UNSATISFIED.exitCode);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /membrane:engine\/kv@0\.1\.0.*cap "kv".*minimal, network, posix/);
});

test('membrane inspect COMPONENT names its interface imports, the caps they need and the profiles that run it', async () => {
  const kv = JSON.parse((await membrane(['inspect', K('kv'), '--json'])).stdout) as { component: boolean; caps: string[]; profiles: string[] };
  assert.equal(kv.component, true);
  assert.deepEqual(kv.caps, ['kv']);
  assert.deepEqual(kv.profiles, ['minimal', 'network', 'posix']);
  const tcp = await membrane(['inspect', K('tcp')]);
  assert.match(tcp.stdout, /wasi:sockets\/tcp@0\.2\.0 instance {2}\[net\]/);
  assert.match(tcp.stdout, /runs under: network, posix/);
  const udp = await membrane(['inspect', K('udp')]);
  assert.match(udp.stdout, /wasi:sockets\/udp@0\.2\.0 instance {2}\[net, not linkable\]/);
  assert.match(udp.stdout, /runs under: no profile/);
});
