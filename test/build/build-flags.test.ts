import assert from 'node:assert/strict';
import { existsSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { compileFlags } from '../../src/build/driver.ts';
import { findToolchain } from '../../src/build/toolchain.ts';
import { createEngine } from '../../src/index.ts';
import { tempDir } from '../helpers/tmp.ts';

test('a compile step gets the caller flags without the link-only ones', () => {
  assert.deepEqual(
    compileFlags(['-Wall', '-Werror', '-I', 'inc', '-Wl,--strip-all', '-Wl,-z,stack-size=1048576', '-nostdlib', '-Xlinker', '--no-entry', '-lm', '-Llib', '-mexec-model=reactor', '-z', 'stack-size=1', '-msimd128', '-DX=1']),
    ['-Wall', '-Werror', '-I', 'inc', '-msimd128', '-DX=1'],
  );
  // A value that only looks like a link flag is still the compile flag's value.
  assert.deepEqual(compileFlags(['-I', 'lib', '-include', 'x.h']), ['-I', 'lib', '-include', 'x.h']);
});

// A cache directory whose parents do not exist yet, as under a fresh $MEMBRANE_HOME. findToolchain
// keeps its first answer per process, so the engine below builds with this image too.
const home = tempDir('membrane-home-');
const cacheDir = join(home, 'home', 'cache');
const toolchain = findToolchain(cacheDir);
const skip = toolchain ? false : '@yowasp/clang is not installed';

test('the sysroot image is built under a cache directory whose parents do not exist yet', { skip }, () => {
  const image = toolchain!.sysroot().file;
  assert.ok(image.startsWith(join(cacheDir, 'toolchains')));
  assert.ok(existsSync(image));
  assert.equal(statSync(join(cacheDir, 'toolchains')).mode & 0o777, 0o700);
});

const engine = createEngine();
after(async () => {
  await engine.close();
  rmSync(home, { recursive: true, force: true });
});

test('-Werror with link flags builds (they reach only the link), and -nostdlib -Wl,--no-entry links a module of exports only', { skip, timeout: 180_000 }, async () => {
  const cmd = await engine.build({
    sources: { 'src/main.c': '#include "util.h"\nint main(void) { return twice(21) == 42 ? 0 : 1; }\n', 'inc/util.h': 'static inline int twice(int x) { return 2 * x; }\n' },
    args: ['-Wall', '-Wextra', '-Werror', '-I', 'inc', '-Wl,-z,stack-size=1048576', '-Wl,--strip-all'],
  });
  assert.equal(cmd.ok, true, cmd.stderr);
  assert.equal(cmd.stderr, '');
  assert.ok(WebAssembly.Module.exports(new WebAssembly.Module(new Uint8Array(cmd.wasm!))).some((e) => e.name === '_start'));

  const kernel = { sources: { 'k.c': '__attribute__((export_name("add"))) int add(int a, int b) { return a + b; }\n' }, args: ['-Werror', '-nostdlib', '-Wl,--no-entry'] };
  const a = await engine.build(kernel);
  assert.equal(a.ok, true, a.stderr);
  assert.equal(a.stderr, '');
  const mod = new WebAssembly.Module(new Uint8Array(a.wasm!));
  assert.deepEqual(WebAssembly.Module.imports(mod), []);
  assert.deepEqual(WebAssembly.Module.exports(mod).map((e) => e.name).sort(), ['add', 'memory']);
  const b = await engine.build(kernel);
  assert.deepEqual(b.wasm, a.wasm, 'the same input builds to the same bytes');
});
