// The reach wall on files: a guest granted `vfs` sees only its own SQLite VFS. Every path shape
// that points at the host (absolute, `..` chains, /proc, symlinks it plants) resolves inside the
// VFS or fails with a WASI errno, through the engine end to end.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { cGuest } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';
import { Vfs } from '../../src/storage/index.ts';

process.env['MEMBRANE_HOME'] = mkdtempSync(join(tmpdir(), 'membrane-home-'));
const engine = testEngine({ poolSize: 1 });
const command = (name: string) => new Uint8Array(readFileSync(new URL(`../../commands/bin/${name}.wasm`, import.meta.url)));

test('a C guest trying /etc/passwd, .. chains, /proc and planted symlinks reads nothing of the host', async () => {
  // /data stands in for a mount (mounts arrive later in issue #4): make it first.
  assert.equal((await engine.run(command('mkdir'), { argv: ['/data'], vfs: 'escape-test' })).exitCode, 0);
  const r = await engine.run(cGuest('escape'), { vfs: 'escape-test' });
  assert.equal(r.exitCode, 0, JSON.stringify(r.error) + r.stderr);
  assert.doesNotMatch(r.stdout, /READ|root:x:/, "every attempt must end in an errno");
  assert.match(r.stdout, /list-data-up: \/data\/..\/.. -> LIST . .. data\n/, "climbing above / stays at the VFS root");
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
