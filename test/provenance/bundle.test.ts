// Bundles: create → restore is byte-identical (files, modes, mtimes, symlinks, every volume kept
// apart); the page rides along; a VFS that is not empty is not merged into; the CLI end to end.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { unzipSync } from 'fflate';
import { createBundle, restoreBundle } from '../../src/provenance/bundle.ts';
import { SIGNING_KEY_ENV } from '../../src/provenance/index.ts';
import { listing, populate, testSigner } from '../helpers/bundle.ts';
import { runCli } from '../helpers/cli.ts';
import { tempDir } from '../helpers/tmp.ts';

const HOME = tempDir('membrane-bundle-');
process.env['MEMBRANE_HOME'] = HOME;

test('create → restore gives a byte-identical VFS: every file, mode, mtime and symlink, volumes apart', () => {
  populate('source');
  const before = listing('source');
  assert.ok(before.length >= 12, before.join('\n'));
  const html = new TextEncoder().encode('<!doctype html><title>workbook</title>');
  const zip = createBundle('source', testSigner(), { html });
  // Any zip tool can open it: the layout is plain.
  const names = Object.keys(unzipSync(zip)).sort();
  assert.ok(names.includes('manifest.json') && names.includes('index.html') && names.includes('vfs/workspace/src/deep/main.c') && names.includes('vfs/memory/notes/today.txt') && names.includes('vfs/tmp/scratch'), names.join(' '));
  const report = restoreBundle(zip, 'copy');
  assert.equal(report.signer, testSigner().did);
  assert.deepEqual(Buffer.from(report.html!), Buffer.from(html));
  assert.equal(report.symlinks, 1);
  assert.deepEqual(listing('copy'), before);
  assert.throws(() => restoreBundle(zip, 'copy'), /is not empty/);
  assert.throws(() => restoreBundle(zip, 'other', { trust: [testSigner(9).did] }), /not one of the trusted DIDs/);
});

test('membrane bundle create and restore end to end', async () => {
  const env = { MEMBRANE_HOME: HOME, [SIGNING_KEY_ENV]: '' };
  populate('cli-source');
  assert.equal((await runCli(['identity', 'create', '--tenant', 'alice'], env)).code, 0);
  const dir = tempDir('membrane-bundle-cli-');
  const page = join(dir, 'page.html');
  writeFileSync(page, '<p>hi</p>');
  const out = join(dir, 'x.mbundle');
  const made = await runCli(['bundle', 'create', '--vfs', 'cli-source', '--html', page, '--tenant', 'alice', '-o', out], env);
  assert.equal(made.code, 0, made.stderr);
  assert.ok(readFileSync(out).length > 100);
  const restored = await runCli(['bundle', 'restore', out, '--vfs', 'cli-copy', '--json'], env);
  assert.equal(restored.code, 0, restored.stderr);
  assert.equal((JSON.parse(restored.stdout) as { files: number }).files, 6);
  assert.deepEqual(listing('cli-copy'), listing('cli-source'));
  // One byte in the middle of the zip (inside a file's compressed data) flipped: refused, nothing restored.
  const bad = Buffer.from(readFileSync(out));
  bad[Math.floor(bad.length / 2)] = bad[Math.floor(bad.length / 2)]! ^ 0xff;
  writeFileSync(out, bad);
  const refused = await runCli(['bundle', 'restore', out, '--vfs', 'cli-copy2'], env);
  assert.notEqual(refused.code, 0);
  assert.match(refused.stderr, /refusing the bundle/);
});
