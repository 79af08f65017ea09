// Attack: poison the sysroot every build shares — have clang write its object into /sysroot, have
// llvm-ar add a member to (or create) an archive under /sysroot/lib, remove a header — so that the
// next build, maybe another tenant's, compiles against planted code.
// Now: the sysroot is an image VFS opened read-only by SQLite and mounted without mutating rights:
// every write from a toolchain command fails "Read-only file system" (EROFS); commands that are not
// toolchain commands do not see /sysroot at all; the image file on the host is byte-identical after,
// a later build still compiles, and two concurrent builds served by the one image both succeed.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { createEngine } from '../../src/index.ts';
import { TOOLCHAIN_CACHE } from '../helpers/toolchain.ts';
import { requireToolchain } from '../../src/build/toolchain.ts';
import { runShell } from '../../src/shell/index.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-home-');
process.env['MEMBRANE_AUDIT_KEY'] = '6b'.repeat(32);
// The toolchain cache is shared by the test files that build (its one-time costs are not under test here).
const engine = createEngine({ poolSize: 2, cacheDir: TOOLCHAIN_CACHE });
after(() => engine.close());

const sh = (script: string) => runShell(engine, engine.commands, script, { vfs: 'sysroot-write', profile: 'posix', timeoutMs: 60_000 });
const HELLO = '#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n';
const imageHash = (): string => createHash('sha256').update(readFileSync(requireToolchain(engine.config.cacheDir).sysroot().file)).digest('hex');
let before = '';

test('setup: a source and its object in the shell\'s VFS; the image\'s hash', async () => {
  const r = await sh("echo 'int main(void){return 0;}' > hello.c; clang -c hello.c -o hello.o; echo rc=$?");
  assert.equal(r.stdout, 'rc=0\n', r.stderr + JSON.stringify(r.error));
  before = imageHash();
});

test('clang -c hello.c -o /sysroot/evil.o fails: Read-only file system', async () => {
  const r = await sh('clang -c hello.c -o /sysroot/evil.o; echo rc=$?');
  assert.equal(r.stdout, 'rc=1\n');
  assert.match(r.stderr, /unable to open output file '\/sysroot\/evil\.o': 'Read-only file system'/);
  const deeper = await sh('clang -c hello.c -o /sysroot/include/stdio.h; echo rc=$?');
  assert.equal(deeper.stdout, 'rc=1\n');
  assert.match(deeper.stderr, /Read-only file system/);
});

test('llvm-ar cannot create an archive in /sysroot/lib nor add a member to libc.a', async () => {
  const created = await sh('llvm-ar rcs /sysroot/lib/evil.a hello.o; echo rc=$?');
  assert.equal(created.stdout, 'rc=1\n');
  assert.match(created.stderr, /\/sysroot\/lib\/evil\.a: Read-only file system/);
  const libc = await sh('llvm-ar rcs /sysroot/lib/wasm32-wasip1/libc.a hello.o; echo rc=$?');
  assert.equal(libc.stdout, 'rc=1\n');
  assert.match(libc.stderr, /Read-only file system/);
});

test('ordinary commands do not see /sysroot: rm and mv find nothing to change', async () => {
  const r = await sh('rm /sysroot/include/stdio.h; echo rc=$?; mv hello.o /sysroot/x.o; echo rc=$?');
  assert.equal(r.stdout, 'rc=1\nrc=1\n');
  assert.match(r.stderr, /No such file or directory/);
});

test('the image on the host is unchanged, and a later build still compiles against intact headers and libc', async () => {
  assert.equal(imageHash(), before, 'the sysroot image file changed');
  const r = await engine.build({ sources: { 'hello.c': HELLO } });
  assert.equal(r.ok, true, JSON.stringify(r.error) + r.stderr);
  assert.equal((await engine.run(r.wasm!, {})).stdout, 'hello\n');
  const members = await sh('llvm-ar t /sysroot/lib/wasm32-wasip1/libc.a > members.txt; echo rc=$?; grep -c hello.o members.txt; wc -l members.txt');
  const [rc, planted, count] = members.stdout.split('\n');
  assert.equal(rc, 'rc=0', members.stderr);
  assert.equal(planted, '0', 'libc.a holds no planted member');
  assert.ok(Number.parseInt(count ?? '', 10) > 100, `libc.a still lists its members: ${members.stdout}`);
});

test('two concurrent builds of different sources share the image and both give their own output', async () => {
  const src = (word: string) => `#include <stdio.h>\n#include <string.h>\nint main(void) { printf("%s %zu\\n", "${word}", strlen("${word}")); return 0; }\n`;
  const [a, b] = await Promise.all([
    engine.build({ sources: { 'a.c': src('alpha') } }),
    engine.build({ sources: { 'b.c': src('bravo-charlie') } }),
  ]);
  assert.equal(a.ok, true, JSON.stringify(a.error) + a.stderr);
  assert.equal(b.ok, true, JSON.stringify(b.error) + b.stderr);
  assert.equal((await engine.run(a.wasm!, {})).stdout, 'alpha 5\n');
  assert.equal((await engine.run(b.wasm!, {})).stdout, 'bravo-charlie 13\n');
  assert.equal(imageHash(), before);
});
