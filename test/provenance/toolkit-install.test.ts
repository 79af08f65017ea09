// Installing a toolkit under its declared caps: its commands run for a snippet (commands.run)
// under the caller's grant cut to the declaration; `membrane verify` checks a manifest's command
// modules against the declaration; `membrane run --toolkit` refuses one that imports beyond it.
import assert from 'node:assert/strict';
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import { CommandRegistry } from '../../src/engine/registry.ts';
import { installToolkit } from '../../src/engine/toolkit-install.ts';
import { testEngine } from '../helpers/engine.ts';
import { runCli } from '../helpers/cli.ts';
import { tempDir } from '../helpers/tmp.ts';

const HOME = tempDir('membrane-toolkit-install-');
process.env['MEMBRANE_HOME'] = HOME;
const DIR = tempDir('membrane-toolkit-files-');
const BIN = new URL('../../commands/bin/', import.meta.url).pathname;
const CAT = new Uint8Array(readFileSync(join(BIN, 'cat.wasm')));

test('an installed toolkit command runs for a snippet under the declared grant', async () => {
  const commands = CommandRegistry.withBuiltins();
  const declared = installToolkit(commands, 'readers', ['vfs'], { readit: CAT });
  assert.deepEqual(declared, { toolkit: 'readers', caps: ['vfs'], hostCaps: [] });
  const engine = testEngine({ poolSize: 1, commands });
  const r = await engine.exec({ language: 'js', profile: 'minimal', code: "vfs.write('/n.txt', 'from the vfs'); commands.run('readit', ['/n.txt']).stdout" });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(r.result, 'from the vfs');
});

test('membrane verify checks a manifest\'s command modules; run --toolkit refuses an import beyond the declaration', async () => {
  copyFileSync(join(BIN, 'cat.wasm'), join(DIR, 'cat.wasm'));
  writeFileSync(join(DIR, 'narrow.json'), JSON.stringify({ name: 'narrow', caps: ['kv'], commands: { readit: 'cat.wasm' } }));
  writeFileSync(join(DIR, 'fits.toml'), 'name = "fits"\ncaps = ["vfs"]\n[commands]\nreadit = "cat.wasm"\n');
  const env = { MEMBRANE_HOME: HOME };
  const narrow = await runCli(['verify', join(DIR, 'narrow.json')], env);
  assert.equal(narrow.code, 1);
  assert.match(narrow.stdout, /not grantable: .*command \\?"readit\\?" imports beyond its declaration: wasi_snapshot_preview1\.fd_prestat_get needs cap \\?"vfs\\?"/);
  const fits = await runCli(['verify', join(DIR, 'fits.toml')], env);
  assert.equal(fits.code, 0, fits.stdout + fits.stderr);
  const hello = new URL('../fixtures/c/hello.wasm', import.meta.url).pathname;
  const refused = await runCli(['run', hello, '--toolkit', join(DIR, 'narrow.json')], env);
  assert.notEqual(refused.code, 0);
  assert.match(refused.stderr, /LINK_UNSATISFIED: toolkit "narrow" command "readit" imports beyond its declaration: .*declares caps \[kv\], narrower than its module needs/);
  const ran = await runCli(['run', hello, '--toolkit', join(DIR, 'fits.toml')], env);
  assert.equal(ran.code, 0, ran.stderr);
});
