// A zip entry that is a symbolic link (Unix mode S_IFLNK in its external attributes) is refused:
// a bundle carries VFS symlinks only as signed manifest entries, never as zip links.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { zipSync } from 'fflate';
import { restoreBundle } from '../../src/provenance/bundle.ts';
import { listing } from '../helpers/bundle.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-zip-symlink-');

test('a symlink entry pointing at /etc/passwd is refused before anything is written', () => {
  const empty = listing('link-target');
  const zip = zipSync({
    'manifest.json': new TextEncoder().encode('{}'),
    'vfs/workspace/passwd': [new TextEncoder().encode('/etc/passwd'), { os: 3, attrs: (0o120777 << 16) >>> 0 }],
  });
  assert.throws(() => restoreBundle(zip, 'link-target'), /entry "vfs\/workspace\/passwd" is a symbolic link/);
  assert.deepEqual(listing('link-target'), empty);
});
