// Attack (issue #22): someone who can write inside $MEMBRANE_HOME plants a symbolic link where
// Membrane keeps a file — vfs/NAME.sqlite, its -wal, engine.sqlite, audit.key, tokens.sqlite, a
// cache file, the vfs directory itself — so that Membrane creates or rewrites a database at the
// link's target outside the home. Every such open is refused (POLICY_INVALID, naming the file
// relative to the home, never a host path), and the target outside is left untouched.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { createEngine, type Engine } from '../../src/index.ts';
import { AuditLog, AUDIT_KEY_ENV, loadAuditKey } from '../../src/storage/audit.ts';
import { readCachedWasm, writeCacheFile } from '../../src/storage/cache-file.ts';
import { openDatabase } from '../../src/storage/sqlite.ts';
import { Vfs } from '../../src/storage/vfs.ts';
import { TokenStore, tokensFile } from '../../src/interfaces/http/tokens.ts';
import { tempDir } from '../helpers/tmp.ts';

const fileio = new Uint8Array(readFileSync(new URL('../../bench/io/fileio.wasm', import.meta.url)));
const BAIT = 'the attacker wants this file rewritten\n';
let outside: string;

before(() => {
  outside = tempDir('membrane-plant-target-');
});

/** A fresh home with a file outside it that a planted link points at. */
function setup(): { home: string; target: string } {
  const home = tempDir('membrane-plant-home-');
  process.env['MEMBRANE_HOME'] = home;
  process.env[AUDIT_KEY_ENV] = '1d'.repeat(32);
  const target = join(outside, `target-${Math.random().toString(36).slice(2)}`);
  writeFileSync(target, BAIT);
  return { home, target };
}

function untouched(target: string): void {
  assert.equal(readFileSync(target, 'utf8'), BAIT, 'the link target outside the home was changed');
  for (const s of ['-wal', '-shm', '-journal']) assert.equal(existsSync(target + s), false, `SQLite made ${target}${s}`);
}

function refused(fn: () => unknown, name: string, home: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof SandboxError, String(e));
    assert.equal(e.code, 'POLICY_INVALID');
    assert.ok(e.message.includes(name), e.message);
    assert.ok(!e.message.includes(home) && !e.message.includes(outside), `a host path leaked: ${e.message}`);
    return true;
  });
}

test('a link planted at vfs/NAME.sqlite (to a file, or dangling) is refused; the target is untouched, nothing is created', () => {
  const { home, target } = setup();
  mkdirSync(join(home, 'vfs'), { mode: 0o700 });
  symlinkSync(target, join(home, 'vfs', 'planted.sqlite'));
  refused(() => Vfs.open({ name: 'planted' }), 'vfs/planted.sqlite', home);
  untouched(target);
  const ghost = join(outside, `ghost-${Math.random().toString(36).slice(2)}.sqlite`);
  symlinkSync(ghost, join(home, 'vfs', 'dangling.sqlite'));
  refused(() => Vfs.open({ name: 'dangling' }), 'vfs/dangling.sqlite', home);
  assert.equal(existsSync(ghost), false, 'a dangling link made Membrane create its target');
});

test('a link planted at a database\'s -wal, -shm or -journal is refused before SQLite follows it', () => {
  const { home, target } = setup();
  for (const suffix of ['-wal', '-shm', '-journal']) {
    const name = `side${suffix.slice(1)}`;
    mkdirSync(join(home, 'vfs'), { recursive: true, mode: 0o700 });
    symlinkSync(target, join(home, 'vfs', `${name}.sqlite${suffix}`));
    refused(() => Vfs.open({ name }), `vfs/${name}.sqlite${suffix}`, home);
  }
  untouched(target);
});

test('a directory, not a file, at vfs/NAME.sqlite is refused; a link in place of the vfs directory is refused (its target keeps its mode)', () => {
  const { home } = setup();
  mkdirSync(join(home, 'vfs', 'adir.sqlite'), { recursive: true });
  refused(() => Vfs.open({ name: 'adir' }), 'vfs/adir.sqlite', home);
  const other = setup();
  const dir = mkdtempSync(join(outside, 'dir-'));
  const mode = statSync(dir).mode & 0o777;
  symlinkSync(dir, join(other.home, 'vfs'));
  refused(() => Vfs.open({ name: 'x' }), 'vfs', other.home);
  assert.equal(statSync(dir).mode & 0o777, mode, 'chmod followed the link');
  assert.equal(existsSync(join(dir, 'x.sqlite')), false);
});

test('a link planted at engine.sqlite is refused by the audit log and by a guest\'s kv call; the target is untouched', async () => {
  const { home, target } = setup();
  symlinkSync(target, join(home, 'engine.sqlite'));
  refused(() => AuditLog.open(), 'engine.sqlite', home);
  refused(() => openDatabase(join(home, 'engine.sqlite'), { readonly: true }), 'engine.sqlite', home);
  const engine: Engine = createEngine({ poolSize: 0 });
  try {
    const r = await engine.exec({ language: 'js', code: "kv.put('k', 'v'); 'stored'", profile: 'minimal', tenant: 't' });
    assert.notEqual(r.result, 'stored');
    assert.ok(r.error, 'the kv call cannot have succeeded');
    assert.ok(!JSON.stringify(r).includes(home) && !JSON.stringify(r).includes(outside), 'no host path reaches the caller');
  } finally {
    await engine.close();
  }
  untouched(target);
});

test('a link planted at audit.key is refused (to a key-shaped file, or dangling); nothing is written through it', () => {
  const { home, target } = setup();
  delete process.env[AUDIT_KEY_ENV];
  writeFileSync(target, `${'ab'.repeat(32)}\n`, { mode: 0o600 });
  symlinkSync(target, join(home, 'audit.key'));
  refused(() => loadAuditKey(), 'audit.key', home);
  assert.equal(readFileSync(target, 'utf8'), `${'ab'.repeat(32)}\n`);
  const other = setup();
  delete process.env[AUDIT_KEY_ENV];
  const ghost = join(outside, `key-${Math.random().toString(36).slice(2)}`);
  symlinkSync(ghost, join(other.home, 'audit.key'));
  refused(() => loadAuditKey(), 'audit.key', other.home);
  assert.equal(existsSync(ghost), false, 'the key was written through a dangling link');
});

test('a link planted at tokens.sqlite is refused; a link in the module cache is neither read nor written through', () => {
  const { home, target } = setup();
  symlinkSync(target, tokensFile(home));
  refused(() => new TokenStore(tokensFile(home)), 'tokens.sqlite', home);
  untouched(target);

  const cache = join(home, 'cache');
  mkdirSync(cache, { mode: 0o700 });
  const wasm = Buffer.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]);
  const decoy = join(outside, `decoy-${Math.random().toString(36).slice(2)}.wasm`);
  writeFileSync(decoy, wasm);
  symlinkSync(decoy, join(cache, 'm.wasm'));
  assert.equal(readCachedWasm(join(cache, 'm.wasm')), null, 'a cache file behind a link is not read');
  assert.equal(writeCacheFile(join(cache, 'm.wasm'), new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 9])), true);
  assert.deepEqual(readFileSync(decoy), wasm, 'the write replaced the link, not its target');
  assert.equal(statSync(join(cache, 'm.wasm')).isFile(), true);
});

test('a guest run on a named VFS whose file is a planted link fails POLICY_INVALID without a host path; the target is untouched', async () => {
  const { home, target } = setup();
  mkdirSync(join(home, 'vfs'), { mode: 0o700 });
  symlinkSync(target, join(home, 'vfs', 'shared.sqlite'));
  const engine: Engine = createEngine({ poolSize: 0 });
  try {
    const r = await engine.run(fileio, { profile: 'compute', vfs: 'shared', argv: ['small', '/tmp'] });
    assert.equal(r.ok, false);
    assert.equal(r.error?.code, 'POLICY_INVALID', JSON.stringify(r.error));
    assert.match(r.error.message, /shared\.sqlite/);
    assert.ok(!JSON.stringify(r).includes(home) && !JSON.stringify(r).includes(outside), JSON.stringify(r.error));
    const s = await engine.exec({ language: 'js', code: "vfs.write('/workspace/x', 'y')", profile: 'minimal', vfs: 'shared' });
    assert.ok(s.error, 'the snippet cannot have written');
    assert.ok(!JSON.stringify(s).includes(home) && !JSON.stringify(s).includes(outside), JSON.stringify(s.error));
  } finally {
    await engine.close();
  }
  untouched(target);
});

after(() => {
  delete process.env[AUDIT_KEY_ENV];
});

test('a link planted in place of a cache directory (cache/, cache/python/, cache/rewritten/) is refused: nothing is written through it', async () => {
  const { home } = setup();
  const elsewhere = mkdtempSync(join(outside, 'planted-dir-'));
  // The whole cache directory is a link.
  symlinkSync(elsewhere, join(home, 'cache'));
  assert.equal(writeCacheFile(join(home, 'cache', 'python', 'p.wasm'), new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0])), false);
  assert.deepEqual(readdirSync(elsewhere), [], 'nothing was created through the planted cache link');
  // A subdirectory of a real cache directory is a link: the engine's module cache skips the write.
  const { home: home2 } = setup();
  mkdirSync(join(home2, 'cache'), { mode: 0o700 });
  symlinkSync(elsewhere, join(home2, 'cache', 'rewritten'));
  const e = createEngine({ poolSize: 1, cacheDir: join(home2, 'cache') });
  try {
    const r = await e.run(fileio, { argv: ['fileio', 'small', '3'] });
    assert.ok(r.ok || r.error?.code !== 'INTERNAL', JSON.stringify(r.error));
  } finally {
    await e.close();
  }
  assert.deepEqual(readdirSync(elsewhere), [], 'no cache entry was written through the planted rewritten/ link');
});
