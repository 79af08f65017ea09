// Mount copy-in and write-back at the unit level, over an in-memory VFS: what the guest's changes
// become on the host (mount-writeback.ts), including type swaps and a mount at /.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { O_CREAT, O_TRUNC, Vfs } from '../../src/storage/index.ts';
import { checkMount, copyIn, parseMount } from '../../src/engine/mounts.ts';
import { writeBack } from '../../src/engine/mount-writeback.ts';
import { tempDir } from '../helpers/tmp.ts';

const put = (vfs: Vfs, path: string, text: string): void => {
  vfs.write(vfs.open('workspace', path, O_CREAT | O_TRUNC).ino, 0, new TextEncoder().encode(text));
};

function hostTree() {
  const dir = tempDir('membrane-wb-');
  writeFileSync(join(dir, 'x'), 'file x\n');
  mkdirSync(join(dir, 'd'));
  writeFileSync(join(dir, 'd', 'inner.txt'), 'inner\n');
  writeFileSync(join(dir, 'same.txt'), 'unchanged\n');
  return dir;
}

for (const guestPath of ['/data', '/']) {
  test(`write-back at ${guestPath}: a file that became a directory and a directory that became a file come out whole`, () => {
    const dir = hostTree();
    const at = (p: string) => (guestPath === '/' ? `/${p}` : `${guestPath}/${p}`);
    const vfs = Vfs.open({ file: ':memory:' });
    try {
      const [snap] = copyIn(vfs, [checkMount({ hostDir: dir, guestPath, readOnly: false })]);
      const sameIno = statSync(join(dir, 'same.txt')).ino;
      vfs.unlink('workspace', at('x'));
      vfs.mkdir('workspace', at('x'));
      put(vfs, at('x/new.txt'), 'new in x\n');
      vfs.unlink('workspace', at('d/inner.txt'));
      vfs.rmdir('workspace', at('d'));
      put(vfs, at('d'), 'd is a file now\n');
      const report = writeBack(vfs, snap!);
      assert.deepEqual(report.warnings, []);
      assert.equal(readFileSync(join(dir, 'x', 'new.txt'), 'utf8'), 'new in x\n');
      assert.equal(readFileSync(join(dir, 'd'), 'utf8'), 'd is a file now\n');
      assert.equal(statSync(join(dir, 'same.txt')).ino, sameIno, 'an unchanged file is not rewritten');
      assert.deepEqual(readdirSync(dir).sort(), ['d', 'same.txt', 'x']);
      assert.deepEqual(report, { written: 2, deleted: 3, warnings: [] }, 'x and d/inner.txt unlinked, d removed');
    } finally {
      vfs.close();
    }
  });
}

test('a guest that removed the mount point removed its files on the host (and said so); a failed lookup is never INTERNAL', () => {
  const dir = hostTree();
  const vfs = Vfs.open({ file: ':memory:' });
  try {
    const [snap] = copyIn(vfs, [checkMount({ hostDir: dir, guestPath: '/data', readOnly: false })]);
    for (const f of ['/data/x', '/data/d/inner.txt', '/data/same.txt']) vfs.unlink('workspace', f);
    vfs.rmdir('workspace', '/data/d');
    vfs.rmdir('workspace', '/data');
    vfs.symlink('/elsewhere', 'workspace', '/data');
    const report = writeBack(vfs, snap!);
    assert.deepEqual(readdirSync(dir), []);
    assert.equal(report.deleted, 4);
    assert.match(report.warnings.join('\n'), /removed the mount point/);
  } finally {
    vfs.close();
  }
});

test('a VFS that already holds files under the mount point (a named VFS, an earlier run) shows the host directory exactly; nothing stale is written back', () => {
  const dir = hostTree();
  const vfs = Vfs.open({ file: ':memory:' });
  try {
    vfs.mkdir('workspace', '/data');
    vfs.mkdir('workspace', '/data/old');
    put(vfs, '/data/old/stale.txt', 'removed on the host since\n');
    put(vfs, '/data/x', 'stale x\n');
    put(vfs, '/keep.txt', 'outside the mount point\n');
    const [snap] = copyIn(vfs, [checkMount({ hostDir: dir, guestPath: '/data', readOnly: false })]);
    assert.throws(() => vfs.stat('workspace', '/data/old'), /ENOENT/);
    assert.equal(new TextDecoder().decode(vfs.read(vfs.stat('workspace', '/data/x').ino, 0, 100)), 'file x\n');
    assert.equal(vfs.stat('workspace', '/keep.txt').kind, 'file');
    assert.deepEqual(writeBack(vfs, snap!), { written: 0, deleted: 0, warnings: [] });
    assert.deepEqual(readdirSync(dir).sort(), ['d', 'same.txt', 'x']);
  } finally {
    vfs.close();
  }
});

test('mount points may be / but never nest, repeat, or sit in /tmp or /memory', () => {
  const dir = tempDir('membrane-wb-');
  assert.equal(parseMount(`${dir}:/`).guestPath, '/');
  assert.equal(parseMount(`${dir}:/:ro`).readOnly, true);
  const vfs = Vfs.open({ file: ':memory:' });
  try {
    for (const pair of [['/', '/data'], ['/a', '/a/b'], ['/a', '/a']]) {
      assert.throws(() => copyIn(vfs, pair.map((g) => checkMount({ hostDir: dir, guestPath: g, readOnly: true }))), /may not nest or repeat/, pair.join(' '));
    }
    assert.doesNotThrow(() => copyIn(vfs, ['/a', '/ab'].map((g) => checkMount({ hostDir: dir, guestPath: g, readOnly: true }))));
  } finally {
    vfs.close();
  }
  for (const g of ['/tmp', '/memory/x']) assert.throws(() => parseMount(`${dir}:${g}`), /outside \/tmp and \/memory/);
});
