// Toolkit verification: declared caps → the profiles that grant them all (minimal first), or the
// unknown word named, or why no profile can; the CLI reads JSON and TOML.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { verifyToolkitCaps } from '../../src/policy/toolkit.ts';
import { runCli } from '../helpers/cli.ts';
import { tempDir } from '../helpers/tmp.ts';

test('caps [vfs, commands, net] are granted by network and posix, network the minimal', () => {
  const v = verifyToolkitCaps(['vfs', 'commands', 'net']);
  assert.deepEqual([v.ok, v.profiles, v.minimal, v.unknown, v.reason], [true, ['network', 'posix'], 'network', [], null]);
  assert.deepEqual(verifyToolkitCaps([]).profiles, ['compute', 'minimal', 'network', 'posix']);
  assert.deepEqual(verifyToolkitCaps(['kv', 'kv']).caps, ['kv']);
  assert.equal(verifyToolkitCaps(['parallel']).minimal, 'posix');
});

test('caps [net, bogus] name bogus and are not ok', () => {
  const v = verifyToolkitCaps(['net', 'bogus']);
  assert.equal(v.ok, false);
  assert.deepEqual(v.unknown, ['bogus']);
  assert.match(v.reason!, /^unknown cap word: bogus \(known: vfs, /);
  assert.deepEqual(verifyToolkitCaps(['net', 7, null]).unknown, ['7', 'null']);
  assert.match(verifyToolkitCaps('net').reason!, /declares no caps list/);
});

test('embedder host caps are reported apart: granted by the operator, not unknown', () => {
  const v = verifyToolkitCaps(['kv', 'acme:geo']);
  assert.deepEqual([v.ok, v.hostCaps, v.unknown, v.minimal], [true, ['acme:geo'], [], 'minimal']);
  assert.deepEqual(verifyToolkitCaps(['membrane:fuel']).unknown, ['membrane:fuel']);
});

test('membrane verify on JSON and TOML manifests', async () => {
  const dir = tempDir('membrane-toolkit-');
  const env = { MEMBRANE_HOME: dir };
  writeFileSync(join(dir, 'kit.json'), JSON.stringify({ name: 'kit', caps: ['vfs', 'commands', 'net'] }));
  writeFileSync(join(dir, 'kit.toml'), 'name = "kit"\ncaps = ["net", "bogus"]\n');
  const ok = await runCli(['verify', join(dir, 'kit.json')], env);
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ok.stdout, 'ok: caps vfs, commands, net are granted by network, posix (minimal: network)\n');
  const bad = await runCli(['verify', join(dir, 'kit.toml'), '--json'], env);
  assert.equal(bad.code, 1, bad.stderr);
  const v = JSON.parse(bad.stdout) as { ok: boolean; unknown: string[] };
  assert.deepEqual([v.ok, v.unknown], [false, ['bogus']]);
  writeFileSync(join(dir, 'broken.toml'), 'caps = [');
  const broken = await runCli(['verify', join(dir, 'broken.toml')], env);
  assert.equal(broken.code, 64);
  assert.match(broken.stderr, /not valid TOML/);
});
