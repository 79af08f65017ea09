// Attack: plant a symlink whose target is absolute (`/secret`, `/`) or climbs (`../secret`), then
// open through it from a directory descriptor, hoping the runtime expands it from the volume root
// or walks above the descriptor. WASI requires those to fail (ENOTCAPABLE); creating a symlink
// with an absolute target is refused outright.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { pathGuest } from '../helpers/wasi-path-guest.ts';
import { O_CREAT, Vfs } from '../../src/storage/index.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-home-');
const engine = testEngine({ poolSize: 1 });
const VFS = 'abs-symlink';
const ENOTCAPABLE = 76;

test.before(() => {
  const vfs = Vfs.open({ name: VFS });
  try {
    vfs.mkdir('workspace', '/jail');
    vfs.open('workspace', '/secret', O_CREAT);
    vfs.open('workspace', '/jail/own.txt', O_CREAT);
    // planted by the host API, which accepts any target: the WASI side must still refuse them
    vfs.symlink('/secret', 'workspace', '/jail/abs');
    vfs.symlink('/', 'workspace', '/jail/root');
    vfs.symlink('../secret', 'workspace', '/jail/up');
    vfs.symlink('own.txt', 'workspace', '/jail/ok');
    vfs.symlink('/secret', 'workspace', '/abs-at-root');
  } finally {
    vfs.close();
  }
});

const attempt = async (op: Parameters<typeof pathGuest>[0]): Promise<number> => {
  const r = await engine.run(await pathGuest(op), { invoke: 'run', vfs: VFS });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  return r.result as number;
};

test('an absolute symlink target is ENOTCAPABLE, from a sub-directory descriptor and from the / preopen', async () => {
  assert.equal(await attempt({ dir: 'jail', open: 'abs' }), ENOTCAPABLE);
  assert.equal(await attempt({ dir: 'jail', open: 'root/secret' }), ENOTCAPABLE);
  assert.equal(await attempt({ open: 'jail/abs' }), ENOTCAPABLE);
  assert.equal(await attempt({ open: 'abs-at-root' }), ENOTCAPABLE, 'even where it would name a file inside the preopen');
});

test('a relative symlink climbing above the descriptor is ENOTCAPABLE; one that stays beneath resolves', async () => {
  assert.equal(await attempt({ dir: 'jail', open: 'up' }), ENOTCAPABLE);
  assert.equal(await attempt({ dir: 'jail', open: 'ok' }), 0);
  assert.equal(await attempt({ open: 'jail/up' }), 0, 'from / the same link stays beneath the descriptor');
});

test('path_symlink with an absolute target is refused (ENOTCAPABLE) and creates nothing', async () => {
  assert.equal(await attempt({ dir: 'jail', symlink: { target: '/secret', name: 'planted' } }), ENOTCAPABLE);
  assert.equal(await attempt({ symlink: { target: '/', name: 'planted' } }), ENOTCAPABLE);
  assert.equal(await attempt({ dir: 'jail', open: 'planted', follow: false }), 44);
});
