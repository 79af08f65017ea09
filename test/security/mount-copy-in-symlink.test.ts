// Attack: a mounted host directory holds symlinks to files and directories outside it (planted
// by whoever prepared the directory). The copy in never follows them: the guest sees neither the
// link nor what it points at, and the run reports how many entries it skipped.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-home-');
const engine = testEngine({ poolSize: 1 });
const command = (name: string) => new Uint8Array(readFileSync(new URL(`../../commands/bin/${name}.wasm`, import.meta.url)));

test('symlinks in a mount pointing outside it are not copied in, nor followed', async () => {
  const outside = tempDir('membrane-outside-');
  writeFileSync(join(outside, 'secret.txt'), 'OUTSIDE-SECRET\n');
  mkdirSync(join(outside, 'dir'));
  writeFileSync(join(outside, 'dir', 'inner.txt'), 'OUTSIDE-INNER\n');
  const mount = tempDir('membrane-mount-');
  writeFileSync(join(mount, 'own.txt'), 'mine\n');
  symlinkSync(join(outside, 'secret.txt'), join(mount, 'leak'));
  symlinkSync(join(outside, 'dir'), join(mount, 'leakdir'));
  symlinkSync('../../../../../../etc/passwd', join(mount, 'passwd'));
  for (const m of [`${mount}:/data`, `${mount}:/`]) {
    const at = m.endsWith(':/') ? '' : '/data';
    const ls = await engine.run(command('ls'), { argv: [at || '/'], mounts: [m] });
    assert.equal(ls.stdout, 'own.txt\n', m);
    assert.match(ls.warnings.join('\n'), /skipped 3 entries/);
    for (const p of ['leak', 'leakdir/inner.txt', 'passwd']) {
      const r = await engine.run(command('cat'), { argv: [`${at}/${p}`], mounts: [m] });
      assert.notEqual(r.exitCode, 0, `${m} ${p}`);
      assert.doesNotMatch(r.stdout, /OUTSIDE|root:/);
    }
  }
});
