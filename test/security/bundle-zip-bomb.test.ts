// Zip bombs in a .mbundle are refused from the central directory, before anything is inflated or
// written: a high compression ratio, an entry that inflates past (or short of) its declared size,
// declared sizes over the total cap, and more entries than allowed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { zipSync, type Zippable } from 'fflate';
import { createBundle, restoreBundle } from '../../src/provenance/bundle.ts';
import { MAX_BUNDLE_ENTRIES, MAX_BUNDLE_INFLATED_BYTES, MAX_INFLATE_RATIO } from '../../src/provenance/zip-check.ts';
import { listing, patchDeclared, populate, testSigner } from '../helpers/bundle.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-zip-bomb-');
populate('bomb-src');
const GOOD = createBundle('bomb-src', testSigner());
const EMPTY_TARGET = listing('never-written');

function refusedUntouched(zip: Uint8Array, pattern: RegExp): void {
  assert.throws(() => restoreBundle(zip, 'never-written'), (e: Error & { code?: string }) => e.code === 'POLICY_INVALID' && pattern.test(e.message), String(pattern));
  assert.deepEqual(listing('never-written'), EMPTY_TARGET, 'nothing was written');
}

test(`an entry inflating more than ${MAX_INFLATE_RATIO}:1 (8 MiB of zeros in a few KiB) is refused as a bomb`, () => {
  const files: Zippable = { 'manifest.json': new TextEncoder().encode('{}'), 'vfs/workspace/zeros': [new Uint8Array(8 * 1024 * 1024), { level: 9 }] };
  refusedUntouched(zipSync(files), /would inflate 8388608 bytes from \d+ \(over 200:1: a zip bomb\?\)/);
});

test('an entry that inflates to more than its declared size is refused (declared vs actual)', () => {
  const zip = GOOD.slice();
  patchDeclared(zip, 'vfs/workspace/data.bin', 1000);
  refusedUntouched(zip, /vfs\/workspace\/data\.bin" declares 1000 bytes but inflates to more|declares 1000 bytes, the signed manifest 300000/);
});

test('an entry that inflates to less than its declared size is refused', () => {
  const zip = GOOD.slice();
  patchDeclared(zip, 'vfs/workspace/data.bin', 300_001);
  refusedUntouched(zip, /declares 300001 bytes/);
});

test(`entries declaring more than ${MAX_BUNDLE_INFLATED_BYTES} bytes in all are refused before any is inflated`, () => {
  const files: Zippable = {};
  for (let i = 0; i < 1100; i++) files[`vfs/tmp/f${i}`] = [new Uint8Array(16), { level: 6 }];
  const zip = zipSync(files);
  for (let i = 0; i < 1100; i++) patchDeclared(zip, `vfs/tmp/f${i}`, 1024 * 1024);
  refusedUntouched(zip, /declare more than 1073741824 bytes in all/);
});

test(`a zip claiming more than ${MAX_BUNDLE_ENTRIES} entries is refused from its end record`, () => {
  const zip = GOOD.slice();
  const view = new DataView(zip.buffer);
  let e = zip.length - 22;
  while (view.getUint32(e, true) !== 0x06054b50) e--;
  view.setUint16(e + 8, MAX_BUNDLE_ENTRIES + 1, true);
  view.setUint16(e + 10, MAX_BUNDLE_ENTRIES + 1, true);
  refusedUntouched(zip, /has 50001 entries \(at most 50000\)/);
  // 0xFFFF means "see the ZIP64 record": not accepted at all.
  view.setUint16(e + 10, 0xffff, true);
  refusedUntouched(zip, /ZIP64 archives are not accepted/);
});

test('a file that is not a zip is refused', () => {
  refusedUntouched(new TextEncoder().encode('not a zip at all'.repeat(10)), /not a zip file/);
});
