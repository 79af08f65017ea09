// The build lane (issue #16): C and C++ compiled and linked inside the sandbox by LLVM running as
// a fuel-metered WASI guest — engine.build, exec --lang c|cpp, the shell's clang/wasm-ld/llvm-ar,
// and a guest's own commands — with structured diagnostics in guest paths only.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createEngine, type Engine } from '../../src/index.ts';
import { runShell } from '../../src/shell/index.ts';
import { BROKEN_C, HELLO_C, TOOLCHAIN_CACHE, VECTOR_CPP } from '../helpers/toolchain.ts';
import { tempDir } from '../helpers/tmp.ts';

let engine: Engine;
const home = tempDir('membrane-build-');

before(() => {
  process.env['MEMBRANE_HOME'] = home;
  process.env['MEMBRANE_AUDIT_KEY'] = '6b'.repeat(32);
  // A C++ compile with <iostream> is ~7e9 fuel — seconds on a quiet machine, a minute or more on a
  // loaded 2-core CI runner: posix's time is raised here so the test checks the build, not the load.
  engine = createEngine({ poolSize: 1, cacheDir: TOOLCHAIN_CACHE, operatorLimits: { posix: { timeoutMs: 300_000 } } });
});
after(() => engine.close());

/** No host path (the repo, the home, the temp dir, node_modules) anywhere in a result. */
function assertNoHostPath(value: unknown): void {
  const text = JSON.stringify(value, (_k, v: unknown) => (v instanceof Uint8Array ? `<${v.length} bytes>` : v));
  for (const p of [process.cwd(), home, homedir(), TOOLCHAIN_CACHE, 'node_modules', '/work/']) assert.ok(!text.includes(p), `host path ${p} in ${text.slice(0, 300)}`);
}

test('C: engine.build compiles and links hello.c; the module runs and prints its line', async () => {
  const r = await engine.build({ sources: { 'hello.c': HELLO_C } });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.ok(r.wasm && r.wasm.length > 1000);
  // Compile, link plan (made once per process for these flags, then kept: PlanCache), link.
  assert.match(r.steps.map((s) => s.tool).join(' '), /^clang (clang )?wasm-ld$/);
  assert.ok(r.fuelUsed > 1e6, `fuel counted: ${r.fuelUsed}`);
  assert.equal(r.fuelUsed, r.steps.reduce((n, s) => n + s.fuelUsed, 0));
  const run = await engine.run(r.wasm);
  assert.equal(run.stdout, 'hello from in-sandbox clang 42\n');
  assertNoHostPath(r);
});

test('C: the same sources build to the same bytes', async () => {
  const a = await engine.build({ sources: { 'hello.c': HELLO_C, 'util/x.h': '#define X 1\n' }, args: ['-Iutil'] });
  const b = await engine.build({ sources: { 'hello.c': HELLO_C, 'util/x.h': '#define X 1\n' }, args: ['-Iutil'] });
  assert.equal(a.ok && b.ok, true);
  assert.deepEqual(a.wasm, b.wasm);
});

test('C++: <vector> and <iostream> build and run', async () => {
  const r = await engine.build({ sources: { 'main.cpp': VECTOR_CPP } });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(r.steps[0]!.tool, 'clang++');
  const run = await engine.run(r.wasm!);
  assert.equal(run.stdout, 'sum 6\n');
});

test('a compile error is BUILD_FAILED with structured diagnostics naming hello.c:3:5, and no host path', async () => {
  const r = await engine.build({ sources: { 'hello.c': BROKEN_C } });
  assert.equal(r.ok, false);
  assert.equal(r.error?.code, 'BUILD_FAILED');
  assert.equal(r.wasm, undefined);
  const d = r.diagnostics.find((x) => x.severity === 'error');
  assert.deepEqual([d?.file, d?.line, d?.column, d?.tool], ['hello.c', 3, 5, 'clang']);
  assert.match(d!.message, /undeclared_thing/);
  assert.match(r.error!.message, /hello\.c:3:5/);
  assert.ok(Array.isArray(r.error!.details?.['diagnostics']));
  assert.match(r.stderr, /hello\.c:3:5: error/);
  assertNoHostPath(r);
});

test('a link error is BUILD_FAILED with the linker diagnostic', async () => {
  const r = await engine.build({ sources: { 'a.c': 'int missing(void);\nint main(void) { return missing(); }\n' } });
  assert.equal(r.error?.code, 'BUILD_FAILED');
  assert.ok(r.diagnostics.some((d) => d.tool === 'wasm-ld' && /undefined symbol: missing/.test(d.message)), JSON.stringify(r.diagnostics));
  assertNoHostPath(r);
});

test('bad requests are refused before anything runs', async () => {
  const cases: Record<string, string>[] = [{}, { '../x.c': 'int main(){}' }, { '/etc/x.c': 'int main(){}' }, { 'sysroot/x.c': 'int main(){}' }, { 'x.py': 'print(1)' }, { 'x.h': '' }];
  for (const sources of cases) {
    const r = await engine.build({ sources });
    assert.equal(r.error?.code, 'POLICY_INVALID', JSON.stringify(sources));
    assert.equal(r.steps.length, 0);
  }
  const o = await engine.build({ sources: { 'a.c': 'int main(){}' }, args: ['-o', '/sysroot/x'] });
  assert.equal(o.error?.code, 'POLICY_INVALID');
});

test('one budget: a build whose fuel runs out mid-way is FUEL_EXHAUSTED, and its deadline covers every step', async () => {
  const fuel = await engine.build({ sources: { 'hello.c': HELLO_C }, fuel: 5e6 });
  assert.equal(fuel.error?.code, 'FUEL_EXHAUSTED');
  assert.ok(fuel.fuelUsed <= 5e6, `${fuel.fuelUsed}`);
  const time = await engine.build({ sources: { 'main.cpp': VECTOR_CPP }, timeoutMs: 300 });
  assert.equal(time.error?.code, 'TIMEOUT');
  assert.ok(time.durationMs < 300 + 5000, `${time.durationMs}`);
});

test('exec --lang c: compiles and runs; result is the exit status; fuel counts both steps (lane units); context is stdin', async () => {
  const r = await engine.exec({
    language: 'c',
    code: '#include <stdio.h>\nint main(void) { char b[64] = {0}; fgets(b, sizeof b, stdin); printf("got %s\\n", b); return 0; }\n',
    context: { n: 1 },
  });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(r.result, 0);
  assert.equal(r.stdout, 'got {"n":1}\n');
  // The compile alone is ~1e8 wasm fuel: in lane units (1 000 wasm units each) that is ~1e5.
  assert.ok(r.fuelUsed > 1e4, `fuel ${r.fuelUsed}`);
  const exit = await engine.exec({ language: 'c', code: 'int main(void) { return 3; }' });
  assert.equal(exit.error?.code, 'GUEST_EXIT');
  assert.equal(exit.result, 3);
  const bad = await engine.exec({ language: 'cpp', code: 'int main() { return nope; }' });
  assert.equal(bad.error?.code, 'BUILD_FAILED');
  assert.match(bad.stderr, /main\.cpp:1:21: error/);
});

test('exec --lang c: one deadline covers the compile and the run — a spinning program ends TIMEOUT at the call budget', async () => {
  const t0 = performance.now();
  const r = await engine.exec({ language: 'c', code: 'int main(void) { volatile int x = 0; for (;;) x++; }', timeoutMs: 3000 });
  const took = performance.now() - t0;
  assert.equal(r.error?.code, 'TIMEOUT');
  assert.ok(took < 3000 + 4000, `took ${took.toFixed(0)} ms`);
  assert.ok(r.durationMs >= 2500, `the budget was shared, not restarted: ${r.durationMs}`);
});

test('the shell: clang plans and runs its jobs, ./hello.wasm runs from the VFS, clang++ -c and llvm-ar work on VFS files', async () => {
  const script = [
    "echo '#include <stdio.h>' > h.c",
    "echo 'int main(void) { puts(\"built in the shell\"); return 0; }' >> h.c",
    'clang -O2 h.c -o h.wasm && ./h.wasm',
    'clang++ -O1 -x c++ -c h.c -o h.o && llvm-ar rc libh.a h.o && ls',
    './missing.wasm; echo status $?',
    'ls /tmp; echo end',
  ].join('\n');
  const r = await runShell(engine, engine.commands, script, { profile: 'posix' });
  // The driver's intermediate object in /tmp is removed after the link, as clang would.
  assert.equal(r.stdout, 'built in the shell\nh.c\nh.o\nh.wasm\nlibh.a\nstatus 127\nend\n', r.stderr);
});

test("a guest's own commands cap can build: a JS snippet compiles and links in its VFS, then runs ./k.wasm by path", async () => {
  const link = ['-L/sysroot/lib/wasm32-wasip1', '/sysroot/lib/wasm32-wasip1/crt1-command.o', 'k.o', '-lc', '/sysroot/lib/wasm32-unknown-wasip1/libclang_rt.builtins.a', '-o', 'k.wasm'];
  const r = await engine.exec({
    language: 'js',
    profile: 'posix',
    code: [
      `vfs.write('/k.c', '#include <stdio.h>\\nint main(void) { puts("k ran"); return 0; }\\n');`,
      "const c = commands.run('clang', ['-c', '-O2', 'k.c', '-o', 'k.o']);",
      `const l = commands.run('wasm-ld', ${JSON.stringify(link)});`,
      "const x = exec.run('./k.wasm');",
      '[c.status, l.status, x.status, x.stdout]',
    ].join('\n'),
  });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.deepEqual(r.result, [0, 0, 0, 'k ran\n']);
  const missing = await engine.exec({ language: 'js', profile: 'posix', code: "try { commands.run('./nope.wasm') } catch (e) { e.code }" });
  assert.equal(missing.result, 'NOT_FOUND');
});

test('a core guest builds and runs: exec clang and wasm-ld on its VFS, then run_command ./k.wasm by path', async () => {
  const nest = new Uint8Array(readFileSync(new URL('../fixtures/c/nest.wasm', import.meta.url)));
  const vfs = `core-build-${process.pid}`;
  const step = async (...argv: string[]): Promise<string> => {
    const r = await engine.run(nest, { profile: 'posix', vfs, argv });
    assert.equal(r.ok, true, `${argv.join(' ')}: ${r.stdout} ${JSON.stringify(r.error)}`);
    return r.stdout;
  };
  const write = engine.exec({ language: 'js', profile: 'posix', vfs, code: `vfs.write('/k.c', '#include <stdio.h>\\nint main(void) { puts("core-built"); return 0; }\\n')` });
  assert.equal((await write).ok, true);
  assert.match(await step('exec', 'clang', '-c', '-O2', 'k.c', '-o', 'k.o'), /status=0 error=\n$/);
  const link = ['-L/sysroot/lib/wasm32-wasip1', '/sysroot/lib/wasm32-wasip1/crt1-command.o', 'k.o', '-lc', '/sysroot/lib/wasm32-unknown-wasip1/libclang_rt.builtins.a', '-o', 'k.wasm'];
  assert.match(await step('exec', 'wasm-ld', ...link), /status=0 error=\n$/);
  assert.equal(await step('run', './k.wasm'), 'core-built\nstatus=0 error=\n');
});
