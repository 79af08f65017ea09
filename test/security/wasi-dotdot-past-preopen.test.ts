// Attack: climb out of a directory descriptor with `..` — past a preopen, or from a
// sub-directory descriptor into its parent — hoping the runtime rebases the path onto the volume
// root (where the attacker planted the file it wants) or walks up. WASI requires such a path to
// fail: every one answers ENOTCAPABLE (76), while `..` that stays beneath the descriptor works.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { pathGuest } from '../helpers/wasi-path-guest.ts';
import { O_CREAT, Vfs } from '../../src/storage/index.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-home-');
const engine = testEngine({ poolSize: 1 });
const VFS = 'dotdot';
const ENOTCAPABLE = 76;

test.before(() => {
  const vfs = Vfs.open({ name: VFS });
  try {
    for (const d of ['/etc', '/jail', '/jail/inner']) vfs.mkdir('workspace', d);
    for (const f of ['/etc/passwd', '/secret', '/jail/own.txt']) vfs.open('workspace', f, O_CREAT);
  } finally {
    vfs.close();
  }
});

const attempt = async (op: Parameters<typeof pathGuest>[0]): Promise<number> => {
  const r = await engine.run(await pathGuest(op), { invoke: 'run', vfs: VFS });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  return r.result as number;
};

test('.. past the / preopen is ENOTCAPABLE, never rebased onto the volume root', async () => {
  for (const p of ['../etc/passwd', '../../../../etc/passwd', 'etc/../../etc/passwd', '..', 'jail/../../secret']) {
    assert.equal(await attempt({ open: p }), ENOTCAPABLE, p);
  }
});

test('.. from a sub-directory descriptor never reaches its parent', async () => {
  for (const p of ['../secret', '../etc/passwd', 'inner/../../secret', '..', '../jail/own.txt']) {
    assert.equal(await attempt({ dir: 'jail', open: p }), ENOTCAPABLE, p);
  }
});

test('.. that stays beneath the descriptor still works', async () => {
  assert.equal(await attempt({ dir: 'jail', open: 'inner/../own.txt' }), 0);
  assert.equal(await attempt({ open: 'jail/inner/../../secret' }), 0);
});
