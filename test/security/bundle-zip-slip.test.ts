// Zip-slip in a .mbundle: entry names or manifest paths that climb out (`..`), are absolute, or
// use `\` are refused before anything is written — even under a valid (attacker's) signature.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { zipSync } from 'fflate';
import { canonicalBytes } from '../../src/provenance/canonical.ts';
import { restoreBundle, BUNDLE_TYPE } from '../../src/provenance/bundle.ts';
import { sha256Hex } from '../../src/provenance/artifact.ts';
import { listing, testSigner } from '../helpers/bundle.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-zip-slip-');
const EMPTY = listing('slip-target');
const data = new TextEncoder().encode('owned');

function signedZip(path: string, zipPath = `vfs/workspace${path}`): Uint8Array {
  const signer = testSigner(5);
  const manifest = {
    v: 1, type: BUNDLE_TYPE, name: 'x', html: null, signer: signer.did, time: new Date().toISOString(),
    entries: [{ volume: 'workspace', path: '/', kind: 'dir', mode: 0o755, mtimeNs: '1' }, { volume: 'workspace', path, kind: 'file', mode: 0o644, mtimeNs: '1', bytes: data.length, sha256: sha256Hex(data) }],
  };
  const env = { manifest, signature: signer.keys.sign(canonicalBytes(manifest)) };
  return zipSync({ 'manifest.json': new TextEncoder().encode(JSON.stringify(env)), [zipPath]: data });
}

for (const name of ['../../etc/passwd', '/etc/passwd', 'vfs/workspace/../../../x', 'vfs\\workspace\\x', 'vfs/workspace/./x', 'vfs//workspace']) {
  test(`zip entry ${JSON.stringify(name)} is refused as zip-slip`, () => {
    const zip = zipSync({ 'manifest.json': new TextEncoder().encode('{}'), [name]: data });
    assert.throws(() => restoreBundle(zip, 'slip-target'), /zip-slip/);
    assert.deepEqual(listing('slip-target'), EMPTY);
  });
}

test('a signed manifest path that climbs out of the volume is refused', () => {
  assert.throws(() => restoreBundle(signedZip('/../x', 'vfs/workspace/x'), 'slip-target'), /not a safe absolute VFS path/);
  assert.throws(() => restoreBundle(signedZip('/a/../../x', 'vfs/workspace/a/x'), 'slip-target'), /not a safe absolute VFS path/);
  assert.deepEqual(listing('slip-target'), EMPTY);
});

test('an entry whose directory the manifest does not list is refused before anything is written', () => {
  assert.throws(() => restoreBundle(signedZip('/missing/x'), 'slip-target'), /its directory \/missing is not in the manifest/);
  assert.deepEqual(listing('slip-target'), EMPTY);
});

test('the same well-formed attacker bundle is accepted only without --trust, and refused with it', () => {
  const zip = signedZip('/fine');
  assert.throws(() => restoreBundle(zip, 'slip-target', { trust: [testSigner(1).did] }), /not one of the trusted DIDs/);
  assert.deepEqual(listing('slip-target'), EMPTY);
  assert.equal(restoreBundle(zip, 'slip-target').files, 1);
});
