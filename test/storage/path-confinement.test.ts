/** Path attacks: every shape of guest path resolves inside the VFS volume or fails with an errno. */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { O_CREAT } from '../../src/storage/vfs.ts';
import { MAX_NAME_BYTES, MAX_PATH_BYTES } from '../../src/storage/vfs-path.ts';
import { tempVfs, text, throwsErrno } from './helpers.ts';

function setup() {
  const t = tempVfs();
  const { vfs } = t;
  vfs.mkdir('workspace', '/data');
  const f = vfs.open('workspace', '/data/ok.txt', O_CREAT);
  vfs.write(f.ino, 0, Buffer.from('inside'));
  return t;
}

test('/etc/passwd is the VFS own /etc, which does not exist', () => {
  const { vfs, done } = setup();
  throwsErrno(() => vfs.stat('workspace', '/etc/passwd'), 'ENOENT');
  throwsErrno(() => vfs.open('workspace', '/etc/passwd', 0), 'ENOENT');
  done();
});

test('../../../../etc/passwd stays at the volume root', () => {
  const { vfs, done } = setup();
  throwsErrno(() => vfs.stat('workspace', '../../../../etc/passwd'), 'ENOENT');
  // `..` above the root is the root: the VFS's own file is reachable through any number of them.
  assert.equal(text(vfs.read(vfs.stat('workspace', '../../../../data/ok.txt').ino, 0, 100)), 'inside');
  assert.equal(vfs.stat('workspace', '/../..').ino, vfs.rootIno('workspace'));
  done();
});

test('/data/../../etc/passwd does not climb out', () => {
  const { vfs, done } = setup();
  throwsErrno(() => vfs.stat('workspace', '/data/../../etc/passwd'), 'ENOENT');
  assert.equal(vfs.stat('workspace', '/data/../../data/ok.txt').size, 6);
  done();
});

test('/proc/self/environ is not the host procfs', () => {
  const { vfs, done } = setup();
  throwsErrno(() => vfs.stat('workspace', '/proc/self/environ'), 'ENOENT');
  done();
});

test('a path relative to a start directory stays beneath it: .. past it, absolute paths and absolute symlink targets are ENOTCAPABLE', () => {
  const { vfs, done } = setup();
  const data = vfs.stat('workspace', '/data').ino;
  throwsErrno(() => vfs.stat('workspace', '../../..', { from: data }), 'ENOTCAPABLE');
  throwsErrno(() => vfs.stat('workspace', '..', { from: data }), 'ENOTCAPABLE');
  throwsErrno(() => vfs.stat('workspace', '/data/ok.txt', { from: data }), 'ENOTCAPABLE');
  vfs.symlink('/data/ok.txt', 'workspace', '/data/abs');
  throwsErrno(() => vfs.stat('workspace', 'abs', { from: data }), 'ENOTCAPABLE');
  assert.equal(vfs.stat('workspace', '/data/abs').size, 6, 'from the volume root the same link resolves');
  assert.equal(vfs.stat('workspace', '../../..').ino, vfs.rootIno('workspace'), 'without a start directory .. stops at the root');
  assert.equal(vfs.stat('workspace', 'ok.txt', { from: data }).size, 6);
  throwsErrno(() => vfs.stat('workspace', '../data/ok.txt', { from: vfs.rootIno('workspace') }), 'ENOTCAPABLE');
  throwsErrno(() => vfs.stat('memory', 'x', { from: data }), 'EXDEV');
  done();
});

test('a symlink to /etc resolves to the VFS /etc, never the host', () => {
  const { vfs, done } = setup();
  vfs.symlink('/etc', 'workspace', '/data/etc');
  throwsErrno(() => vfs.stat('workspace', '/data/etc/passwd'), 'ENOENT');
  throwsErrno(() => vfs.open('workspace', '/data/etc/passwd', 0), 'ENOENT');
  // Creating through it creates inside the VFS only when the VFS /etc exists.
  throwsErrno(() => vfs.open('workspace', '/data/etc/passwd', O_CREAT), 'ENOENT');
  vfs.mkdir('workspace', '/etc');
  const made = vfs.open('workspace', '/data/etc/passwd', O_CREAT);
  assert.equal(vfs.stat('workspace', '/etc/passwd').ino, made.ino);
  done();
});

test('a relative symlink climbing out lands at the volume root', () => {
  const { vfs, done } = setup();
  vfs.symlink('../../../../../../etc', 'workspace', '/data/up');
  throwsErrno(() => vfs.stat('workspace', '/data/up/passwd'), 'ENOENT');
  vfs.symlink('../../../../../../', 'workspace', '/data/top');
  assert.equal(vfs.stat('workspace', '/data/top').ino, vfs.rootIno('workspace'));
  assert.equal(vfs.stat('workspace', '/data/top/data/ok.txt').size, 6);
  done();
});

test('a symlink in one volume never reaches another volume', () => {
  const { vfs, done } = setup();
  const m = vfs.open('memory', '/secret', O_CREAT);
  vfs.write(m.ino, 0, Buffer.from('mem'));
  vfs.symlink('/secret', 'workspace', '/s');
  throwsErrno(() => vfs.stat('workspace', '/s'), 'ENOENT');
  assert.equal(vfs.stat('workspace', '/s', { followFinal: false }).kind, 'symlink');
  done();
});

test('symlink loops fail with ELOOP', () => {
  const { vfs, done } = setup();
  vfs.symlink('b', 'workspace', '/a');
  vfs.symlink('a', 'workspace', '/b');
  vfs.symlink('self', 'workspace', '/self');
  throwsErrno(() => vfs.stat('workspace', '/a'), 'ELOOP');
  throwsErrno(() => vfs.stat('workspace', '/self/x'), 'ELOOP');
  throwsErrno(() => vfs.open('workspace', '/a', O_CREAT), 'ELOOP');
  // Not following the final link is fine.
  assert.equal(vfs.readlink('workspace', '/a'), 'b');
  done();
});

test('a chain of 40 symlinks resolves; 41 is ELOOP', () => {
  const { vfs, done } = setup();
  for (let i = 0; i < 41; i++) vfs.symlink(i === 0 ? '/data' : `/l${i - 1}`, 'workspace', `/l${i}`);
  assert.equal(vfs.stat('workspace', '/l39/ok.txt').size, 6);
  throwsErrno(() => vfs.stat('workspace', '/l40/ok.txt'), 'ELOOP');
  done();
});

test('NUL bytes in paths and symlink targets are EINVAL', () => {
  const { vfs, done } = setup();
  throwsErrno(() => vfs.stat('workspace', '/data/ok.txt\0/etc/passwd'), 'EINVAL');
  throwsErrno(() => vfs.open('workspace', 'a\0b', O_CREAT), 'EINVAL');
  throwsErrno(() => vfs.symlink('/etc\0', 'workspace', '/n'), 'EINVAL');
  throwsErrno(() => vfs.mkdir('workspace', '\0'), 'EINVAL');
  done();
});

test('very long names and paths are ENAMETOOLONG', () => {
  const { vfs, done } = setup();
  const ok = 'n'.repeat(MAX_NAME_BYTES);
  vfs.mkdir('workspace', `/${ok}`);
  throwsErrno(() => vfs.mkdir('workspace', `/${ok}x`), 'ENAMETOOLONG');
  throwsErrno(() => vfs.mkdir('workspace', `/${'é'.repeat(128)}`), 'ENAMETOOLONG'); // 256 bytes
  throwsErrno(() => vfs.stat('workspace', '/a'.repeat(MAX_PATH_BYTES / 2 + 1)), 'ENAMETOOLONG');
  throwsErrno(() => vfs.stat('workspace', '/'.repeat(MAX_PATH_BYTES + 1)), 'ENAMETOOLONG');
  throwsErrno(() => vfs.symlink('x'.repeat(MAX_PATH_BYTES + 1), 'workspace', '/long'), 'ENAMETOOLONG');
  done();
});

test('percent-encoded and odd names are just names', () => {
  const { vfs, done } = setup();
  for (const name of ['%2e%2e', '..%2f..%2fetc', '%2F', '...', '. .', '\\..\\..', 'a\\b']) {
    const f = vfs.open('workspace', `/data/${name}`, O_CREAT);
    assert.equal(vfs.stat('workspace', `/data/${name}`).ino, f.ino);
  }
  throwsErrno(() => vfs.stat('workspace', '/data/%2e%2e/ok.txt'), 'ENOTDIR');
  const names = vfs.readdir(vfs.stat('workspace', '/data').ino).map((e) => e.name);
  assert.ok(names.includes('%2e%2e') && names.includes('\\..\\..'));
  done();
});

test('trailing slash on a file is ENOTDIR; . and .. cannot be removed or created', () => {
  const { vfs, done } = setup();
  throwsErrno(() => vfs.stat('workspace', '/data/ok.txt/'), 'ENOTDIR');
  throwsErrno(() => vfs.stat('workspace', '/data/ok.txt/..'), 'ENOTDIR');
  throwsErrno(() => vfs.rmdir('workspace', '/data/.'), 'EINVAL');
  throwsErrno(() => vfs.rmdir('workspace', '/'), 'EINVAL');
  throwsErrno(() => vfs.mkdir('workspace', '/data/..'), 'EEXIST');
  throwsErrno(() => vfs.unlink('workspace', '/'), 'EISDIR');
  throwsErrno(() => vfs.stat('workspace', ''), 'ENOENT');
  done();
});
