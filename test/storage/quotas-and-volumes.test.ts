/** Quotas (bytes, inodes), the three volumes, clearing tmp, and persistence across reopening. */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { O_CREAT, Vfs, VOLUMES, resolveVfs, DEFAULT_MAX_BYTES, DEFAULT_MAX_INODES } from '../../src/storage/vfs.ts';
import { SandboxError } from '../../src/errors.ts';
import { tempVfs, text, throwsErrno } from './helpers.ts';

test('quota defaults: 256 MiB and 100 000 inodes', () => {
  const c = resolveVfs({ file: ':memory:' });
  assert.equal(c.maxBytes, DEFAULT_MAX_BYTES);
  assert.equal(DEFAULT_MAX_BYTES, 256 * 1024 * 1024);
  assert.equal(c.maxInodes, DEFAULT_MAX_INODES);
  assert.equal(DEFAULT_MAX_INODES, 100_000);
  assert.ok(Object.isFrozen(c));
  assert.throws(() => resolveVfs({ file: ':memory:', maxBytes: -1 }), (e: unknown) => e instanceof SandboxError && e.code === 'POLICY_INVALID');
});

test('writing past the byte quota is ENOSPC; freeing space allows writing again', () => {
  const { vfs, done } = tempVfs({ maxBytes: 1000 });
  const f = vfs.open('workspace', '/a', O_CREAT);
  vfs.write(f.ino, 0, new Uint8Array(600));
  const g = vfs.open('tmp', '/b', O_CREAT);
  throwsErrno(() => vfs.write(g.ino, 0, new Uint8Array(401)), 'ENOSPC');
  vfs.write(g.ino, 0, new Uint8Array(400));
  throwsErrno(() => vfs.write(g.ino, 400, new Uint8Array(1)), 'ENOSPC');
  throwsErrno(() => vfs.truncate(f.ino, 601), 'ENOSPC');
  throwsErrno(() => vfs.write(f.ino, 10_000, new Uint8Array(1)), 'ENOSPC'); // sparse size counts
  vfs.write(f.ino, 0, new Uint8Array(600)); // overwriting in place costs nothing
  vfs.unlink('workspace', '/a');
  assert.equal(vfs.getUsage().bytes, 400);
  vfs.write(g.ino, 400, new Uint8Array(600));
  done();
});

test('creating past the inode quota is ENOSPC', () => {
  const { vfs, done } = tempVfs({ maxInodes: 10 }); // 3 are the volume roots
  for (let i = 0; i < 7; i++) vfs.open('workspace', `/f${i}`, O_CREAT);
  throwsErrno(() => vfs.open('workspace', '/f7', O_CREAT), 'ENOSPC');
  throwsErrno(() => vfs.mkdir('workspace', '/d'), 'ENOSPC');
  throwsErrno(() => vfs.symlink('x', 'workspace', '/s'), 'ENOSPC');
  vfs.unlink('workspace', '/f0');
  vfs.mkdir('workspace', '/d');
  assert.equal(vfs.getUsage().inodes, 10);
  done();
});

test('volumes are separate trees', () => {
  const { vfs, done } = tempVfs();
  for (const v of VOLUMES) {
    const f = vfs.open(v, '/name', O_CREAT);
    vfs.write(f.ino, 0, Buffer.from(v));
  }
  for (const v of VOLUMES) assert.equal(text(vfs.read(vfs.stat(v, '/name').ino, 0, 20)), v);
  throwsErrno(() => vfs.stat('nope' as never, '/'), 'ENOTCAPABLE');
  done();
});

test('clearVolume("tmp") empties tmp and leaves the other volumes alone', () => {
  const { vfs, done } = tempVfs();
  vfs.mkdir('tmp', '/deep');
  vfs.mkdir('tmp', '/deep/er');
  const t = vfs.open('tmp', '/deep/er/f', O_CREAT);
  vfs.write(t.ino, 0, new Uint8Array(5000));
  vfs.symlink('/deep', 'tmp', '/l');
  const w = vfs.open('workspace', '/keep', O_CREAT);
  vfs.write(w.ino, 0, Buffer.from('kept'));
  vfs.clearVolume('tmp');
  assert.deepEqual(vfs.readdir(vfs.rootIno('tmp')), []);
  throwsErrno(() => vfs.read(t.ino, 0, 1), 'EBADF');
  assert.equal(text(vfs.read(vfs.stat('workspace', '/keep').ino, 0, 10)), 'kept');
  assert.deepEqual({ ...vfs.getUsage(), maxBytes: 0, maxInodes: 0 }, { bytes: 4, inodes: 4, maxBytes: 0, maxInodes: 0 });
  assert.equal(vfs.stat('tmp', '/').nlink, 2);
  vfs.mkdir('tmp', '/deep'); // usable again
  done();
});

test('workspace and memory persist across close and reopen', () => {
  const { vfs, file, done } = tempVfs();
  const f = vfs.open('memory', '/state.json', O_CREAT);
  vfs.write(f.ino, 0, Buffer.from('{"n":1}'));
  vfs.mkdir('workspace', '/w');
  vfs.close();
  const again = Vfs.open({ file });
  assert.equal(text(again.read(again.stat('memory', '/state.json').ino, 0, 100)), '{"n":1}');
  assert.equal(again.stat('workspace', '/w').kind, 'dir');
  assert.equal(again.getUsage().inodes, 5);
  again.close();
  done();
});
