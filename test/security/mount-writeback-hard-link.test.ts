// Attack: a mounted host directory holds hard links to files elsewhere (pnpm stores, `cp -al`
// trees, or a planted link to ~/.ssh/authorized_keys). If write-back wrote into the existing inode,
// the guest's write to the link's path would rewrite the outside file. Write-back replaces the
// directory entry instead: the outside file keeps its bytes, the mount's entry becomes a fresh inode.
import assert from 'node:assert/strict';
import { chmodSync, linkSync, readFileSync, statSync, writeFileSync, existsSync } from 'node:fs';
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
  writeFileSync(join(outside, 'authorized_keys'), 'ssh-ed25519 AAAA the-owner\n');
  chmodSync(join(outside, 'authorized_keys'), 0o640);
  linkSync(join(outside, 'authorized_keys'), join(mount, 'keys.txt'));
  writeFileSync(join(mount, 'evil.txt'), 'ssh-ed25519 BBBB the-attacker\n');
  return { outside, mount, target: join(outside, 'authorized_keys') };
}

test('writing a hard-linked file of the mount leaves the outside file unchanged; the mount gets a fresh inode with the new bytes', async () => {
  const { mount, target } = setup();
  const before = statSync(target);
  const r = await engine.run(command('cp'), { argv: ['/data/evil.txt', '/data/keys.txt'], mounts: [`${mount}:/data`] });
  assert.equal(r.exitCode, 0, JSON.stringify(r.error) + r.stderr);
  assert.equal(readFileSync(target, 'utf8'), 'ssh-ed25519 AAAA the-owner\n', 'the outside file is untouched');
  assert.equal(statSync(target).ino, before.ino);
  assert.equal(statSync(target).nlink, 1, 'the mount no longer links to it');
  const entry = statSync(join(mount, 'keys.txt'));
  assert.notEqual(entry.ino, before.ino, 'the mount entry is a new inode');
  assert.equal(readFileSync(join(mount, 'keys.txt'), 'utf8'), 'ssh-ed25519 BBBB the-attacker\n');
  assert.equal(entry.mode & 0o777, 0o640, "the replaced file keeps the old entry's mode");
});

test('a mount at / writes back by replacing entries too', async () => {
  const { mount, target } = setup();
  const r = await engine.run(command('cp'), { argv: ['/evil.txt', '/keys.txt'], mounts: [`${mount}:/`] });
  assert.equal(r.exitCode, 0, JSON.stringify(r.error) + r.stderr);
  assert.equal(readFileSync(target, 'utf8'), 'ssh-ed25519 AAAA the-owner\n');
  assert.equal(readFileSync(join(mount, 'keys.txt'), 'utf8'), 'ssh-ed25519 BBBB the-attacker\n');
});

test('a hard-linked file the guest did not change stays the same inode (untouched, still linked)', async () => {
  const { mount, target } = setup();
  const before = statSync(target);
  const r = await engine.run(command('cat'), { argv: ['/data/keys.txt'], mounts: [`${mount}:/data`] });
  assert.equal(r.stdout, 'ssh-ed25519 AAAA the-owner\n');
  assert.equal(statSync(join(mount, 'keys.txt')).ino, before.ino);
  assert.equal(statSync(target).nlink, 2);
});

test('removing a hard-linked file removes the mount entry, never the outside file', async () => {
  const { mount, target } = setup();
  const r = await engine.run(command('rm'), { argv: ['/data/keys.txt'], mounts: [`${mount}:/data`] });
  assert.equal(r.exitCode, 0, JSON.stringify(r.error) + r.stderr);
  assert.equal(existsSync(join(mount, 'keys.txt')), false);
  assert.equal(readFileSync(target, 'utf8'), 'ssh-ed25519 AAAA the-owner\n');
  assert.equal(statSync(target).nlink, 1);
});
