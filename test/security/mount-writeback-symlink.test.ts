// Attack: a mounted host directory holds symlinks pointing out of it — a directory link
// (`sub -> /outside`) or a file link (`config -> /outside/target`). If write-back followed them,
// the guest's writes to `/data/sub/x` or `/data/config` would land outside the mount. Write-back
// checks every host component with lstat and skips such paths with a warning; nothing outside
// changes, and no stray temporary files are left.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync, lstatSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-home-');
const engine = testEngine({ poolSize: 1 });
const command = (name: string) => new Uint8Array(readFileSync(new URL(`../../commands/bin/${name}.wasm`, import.meta.url)));

function setup() {
  const outside = tempDir('membrane-outside-');
  const mount = tempDir('membrane-mount-');
  writeFileSync(join(outside, 'target.txt'), 'outside original\n');
  symlinkSync(outside, join(mount, 'sub'));
  symlinkSync(join(outside, 'target.txt'), join(mount, 'config'));
  mkdirSync(join(mount, 'src'));
  writeFileSync(join(mount, 'src', 'payload.txt'), 'guest payload\n');
  return { outside, mount };
}

test('a guest directory written where the host has a directory symlink is not written through it', async () => {
  const { outside, mount } = setup();
  // The copy in skipped the host symlink, so the guest can make a real /data/sub and fill it.
  const r = await engine.run(command('cp'), { argv: ['-r', '/data/src', '/data/sub'], mounts: [`${mount}:/data`] });
  assert.equal(r.exitCode, 0, JSON.stringify(r.error) + r.stderr);
  assert.deepEqual(readdirSync(outside), ['target.txt'], 'nothing was written through the symlink');
  assert.ok(lstatSync(join(mount, 'sub')).isSymbolicLink(), 'the host symlink is left as it was');
  assert.match(r.warnings.join('\n'), /\/data\/sub was not written back: a host path component is a symlink/);
  assert.doesNotMatch(r.warnings.join('\n'), new RegExp(outside), 'warnings never name host paths');
});

test('a guest file written where the host has a file symlink leaves the symlink target unchanged', async () => {
  const { outside, mount } = setup();
  const r = await engine.run(command('cp'), { argv: ['/data/src/payload.txt', '/data/config'], mounts: [`${mount}:/data`] });
  assert.equal(r.exitCode, 0, JSON.stringify(r.error) + r.stderr);
  assert.equal(readFileSync(join(outside, 'target.txt'), 'utf8'), 'outside original\n');
  assert.ok(lstatSync(join(mount, 'config')).isSymbolicLink());
  assert.match(r.warnings.join('\n'), /\/data\/config was not written back: the host entry is a symlink/);
  assert.deepEqual(readdirSync(mount).sort(), ['config', 'src', 'sub'], 'no temporary files left behind');
});

test('the same through a mount at /', async () => {
  const { outside, mount } = setup();
  const r = await engine.run(command('cp'), { argv: ['/src/payload.txt', '/config'], mounts: [`${mount}:/`] });
  assert.equal(r.exitCode, 0, JSON.stringify(r.error) + r.stderr);
  assert.equal(readFileSync(join(outside, 'target.txt'), 'utf8'), 'outside original\n');
  assert.match(r.warnings.join('\n'), /\/config was not written back: the host entry is a symlink/);
});
