// The reach wall on files, for components: the C escape program (test/fixtures/c/escape.c) as a
// command component talks wasi:filesystem (through the preview 1 adapter) to our p2
// implementation over the VFS. Absolute paths, `..` chains, /proc and planted symlinks reach
// nothing of the host; its own write lands in its VFS.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { component } from '../helpers/components.ts';
import { Vfs } from '../../src/storage/index.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-home-');
const engine = testEngine({ poolSize: 1 });
const mkdir = new Uint8Array(readFileSync(new URL('../../commands/bin/mkdir.wasm', import.meta.url)));

test('wasi:filesystem traversal (.., absolute paths, symlinks) from a component stays in the VFS', async () => {
  assert.equal((await engine.run(mkdir, { argv: ['/data'], vfs: 'component-escape' })).exitCode, 0);
  const r = await engine.run(component('escape'), { vfs: 'component-escape' });
  assert.equal(r.exitCode, 0, JSON.stringify(r.error) + r.stdout);
  const lines = Object.fromEntries(r.stdout.trim().split('\n').map((l) => [l.slice(0, l.indexOf(':')), l]));
  assert.doesNotMatch(r.stdout, /READ|root:x?:0:|PATH=|HOME=/, 'every attempt ends in an errno');
  for (const k of ['absolute', 'dotdot', 'data-dotdot', 'proc', 'symlink-abs', 'symlink-rel', 'raw-absolute', 'raw-dotdot', 'raw-symlink', 'cwd-dotdot', 'list-data-up']) {
    assert.match(lines[k] ?? `${k}: missing`, /-> errno \d+$/, lines[k]);
  }
  assert.notEqual(lines['symlink-abs-make'], 'symlink-abs-make: 0', 'a symlink to an absolute target is refused');
  assert.equal(lines['symlink-rel-make'], 'symlink-rel-make: 0');
  assert.match(lines['list-root'] ?? '', /-> LIST \. \.\. data$/, 'the root is the VFS root');
  assert.match(lines['list-data'] ?? '', /-> LIST \. \.\. up-link ok\.txt$/);
  const vfs = Vfs.open({ name: 'component-escape' });
  try {
    assert.equal(new TextDecoder().decode(vfs.read(vfs.stat('workspace', '/data/ok.txt').ino, 0, 100)), 'written from inside the sandbox\n');
    assert.throws(() => vfs.readlink('workspace', '/data/etc-link'), /ENOENT/);
  } finally {
    vfs.close();
  }
});
