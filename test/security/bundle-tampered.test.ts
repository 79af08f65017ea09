// A tampered .mbundle is refused before anything is restored: a file's bytes swapped, a manifest
// field edited, a file added to the zip that the manifest does not list, the signature flipped.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { unzipSync, zipSync, type Zippable } from 'fflate';
import { createBundle, restoreBundle } from '../../src/provenance/bundle.ts';
import { listing, populate, testSigner } from '../helpers/bundle.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-bundle-tamper-');
populate('tamper-src');
const GOOD = createBundle('tamper-src', testSigner());
const EMPTY = listing('tamper-target');

function repack(edit: (files: Record<string, Uint8Array>) => void): Uint8Array {
  const files = unzipSync(GOOD);
  edit(files);
  return zipSync(files as Zippable);
}

function refused(zip: Uint8Array, pattern: RegExp): void {
  assert.throws(() => restoreBundle(zip, 'tamper-target'), pattern);
  assert.deepEqual(listing('tamper-target'), EMPTY, 'nothing was written');
}

const manifestOf = (files: Record<string, Uint8Array>): { manifest: { entries: { path: string; mode: number }[] }; signature: string } =>
  JSON.parse(new TextDecoder().decode(files['manifest.json'])) as { manifest: { entries: { path: string; mode: number }[] }; signature: string };

test('a file whose bytes were changed is refused', () => {
  refused(repack((f) => (f['vfs/workspace/README'] = new TextEncoder().encode('HELLO\n'))), /vfs\/workspace\/README differs from the signed manifest/);
});

test('a manifest field edited (a mode widened) breaks the signature', () => {
  refused(repack((f) => {
    const env = manifestOf(f);
    env.manifest.entries.find((e) => e.path === '/README')!.mode = 0o777;
    f['manifest.json'] = new TextEncoder().encode(JSON.stringify(env));
  }), /signature does not verify/);
});

test('a zip entry the manifest does not list is refused', () => {
  refused(repack((f) => (f['vfs/workspace/extra'] = new TextEncoder().encode('smuggled'))), /entry "vfs\/workspace\/extra" is not in the signed manifest/);
});

test('a flipped signature is refused', () => {
  refused(repack((f) => {
    const env = manifestOf(f);
    const sig = Buffer.from(env.signature, 'base64url');
    sig[5] = sig[5]! ^ 1;
    env.signature = sig.toString('base64url');
    f['manifest.json'] = new TextEncoder().encode(JSON.stringify(env));
  }), /signature does not verify/);
});

test('a file the manifest lists but the zip lost is refused', () => {
  refused(repack((f) => delete f['vfs/tmp/scratch']), /vfs\/tmp\/scratch is in the manifest but not in the zip/);
});
