// The reach wall on files: a guest granted `vfs` sees only its own SQLite VFS. Every path shape
// that points at the host (absolute, `..` chains, /proc, symlinks it plants) resolves inside the
// VFS or fails with a WASI errno, through the engine end to end.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { cGuest } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';
import { Vfs } from '../../src/storage/index.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-home-');
const engine = testEngine({ poolSize: 1 });
const command = (name: string) => new Uint8Array(readFileSync(new URL(`../../commands/bin/${name}.wasm`, import.meta.url)));

test('a C guest trying /etc/passwd, .. chains, /proc and planted symlinks reads nothing of the host', async () => {
  // /data stands in for a mount (mounts arrive later in issue #4): make it first.
  assert.equal((await engine.run(command('mkdir'), { argv: ['/data'], vfs: 'escape-test' })).exitCode, 0);
  const r = await engine.run(cGuest('escape'), { vfs: 'escape-test' });
  assert.equal(r.exitCode, 0, JSON.stringify(r.error) + r.stderr);
  assert.doesNotMatch(r.stdout, /READ|root:x:/, "every attempt must end in an errno");
  assert.match(r.stdout, /list-data-up: \/data\/..\/.. -> errno 76\n/, "climbing above / is ENOTCAPABLE");
  assert.match(r.stdout, /symlink-abs-make: 76\n/, 'a symlink to an absolute target is refused');
  assert.match(r.stdout, /symlink-rel: \/data\/up-link -> errno 76\n/, 'a link climbing above / is not followed');
  assert.match(r.stdout, /etc\/passwd -> errno/);
  // Its own write landed in its VFS, which the host can open.
  const vfs = Vfs.open({ name: 'escape-test' });
  try {
    const st = vfs.stat('workspace', '/data/ok.txt');
    assert.ok(st.size > 0);
  } finally {
    vfs.close();
  }
});

test('files persist in a named VFS across runs; an unnamed VFS is fresh every time', async () => {
  assert.equal((await engine.run(command('mkdir'), { argv: ['-p', '/proj/src/lib'], vfs: 'persist-test' })).exitCode, 0);
  const ls = await engine.run(command('ls'), { argv: ['/proj/src'], vfs: 'persist-test' });
  assert.equal(ls.stdout, 'lib\n', ls.stderr);
  assert.equal((await engine.run(command('mkdir'), { argv: ['-p', '/proj/x'] })).exitCode, 0);
  const fresh = await engine.run(command('ls'), { argv: ['/proj'] });
  assert.equal(fresh.exitCode, 2, 'ls of a missing directory');
  assert.match(fresh.stderr, /ls: .*proj/);
});

test('without the vfs cap a guest has no filesystem at all: its fs imports do not link', async () => {
  const r = await engine.run(command('ls'), { argv: ['/'], caps: [] });
  assert.equal(r.error?.code, 'LINK_UNSATISFIED');
  assert.match(r.error!.message, /needs cap "vfs"/);
});

test('--mount: the escape guest sees the host directory as /data, reaches nothing else, and its write lands on the host', async () => {
  const { writeFileSync, readFileSync: read, existsSync, mkdirSync, symlinkSync, readdirSync } = await import('node:fs');
  const dir = tempDir('membrane-mount-');
  writeFileSync(join(dir, 'input.txt'), 'from the host\n');
  mkdirSync(join(dir, 'sub'));
  writeFileSync(join(dir, 'sub', 'gone.txt'), 'delete me\n');
  symlinkSync('/etc/passwd', join(dir, 'host-link'));
  const r = await engine.run(cGuest('escape'), { mounts: [`${dir}:/data`] });
  assert.equal(r.exitCode, 0, JSON.stringify(r.error) + r.stderr);
  assert.doesNotMatch(r.stdout, /READ|root:x:/);
  assert.match(r.stdout, /list-data: \/data -> LIST .* input\.txt/);
  assert.doesNotMatch(r.stdout, /host-link/, 'host symlinks are not copied in');
  assert.match(r.warnings.join('\n'), /skipped 1 entries/);
  assert.ok(existsSync(join(dir, 'ok.txt')), 'the guest write landed in the mounted directory');
  // The guest's own symlinks (to /etc and climbing out) are never written back.
  assert.deepEqual(readdirSync(dir).sort(), ['host-link', 'input.txt', 'ok.txt', 'sub']);
  assert.equal(read(join(dir, 'input.txt'), 'utf8'), 'from the host\n');
});

test('a read-only mount is never written back, and a guest removal reaches the host only for read-write mounts', async () => {
  const { writeFileSync, existsSync } = await import('node:fs');
  const ro = tempDir('membrane-mount-ro-');
  const rw = tempDir('membrane-mount-rw-');
  writeFileSync(join(ro, 'keep.txt'), 'x');
  writeFileSync(join(rw, 'drop.txt'), 'x');
  assert.equal((await engine.run(command('rm'), { argv: ['/ro/keep.txt'], mounts: [`${ro}:/ro:ro`] })).exitCode, 0);
  assert.ok(existsSync(join(ro, 'keep.txt')));
  assert.equal((await engine.run(command('rm'), { argv: ['/rw/drop.txt'], mounts: [`${rw}:/rw`] })).exitCode, 0);
  assert.ok(!existsSync(join(rw, 'drop.txt')));
});

test('bad mounts are POLICY_INVALID: outside the workspace, .., missing host dirs, no vfs cap', async () => {
  const dir = tempDir('membrane-mount-');
  for (const m of [`${dir}:/tmp/x`, `${dir}:/memory`, `${dir}:/a/../b`, `${dir}/nope:/data`, 'nocolon']) {
    const r = await engine.run(command('ls'), { mounts: [m] });
    assert.equal(r.error?.code, 'POLICY_INVALID', m);
  }
  // A guest with no filesystem imports still cannot be given a mount without the vfs cap.
  const r = await engine.run(cGuest('hello'), { mounts: [`${dir}:/data`], caps: [] });
  assert.equal(r.error?.code, 'POLICY_INVALID');
  assert.match(r.error!.message, /mounts need the vfs cap/);
});
